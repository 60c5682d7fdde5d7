package manifest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func mustParse(t *testing.T, file, data string) *Set {
	t.Helper()
	set, err := Parse(file, []byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return set
}

func parseErr(t *testing.T, file, data string) (*Set, string) {
	t.Helper()
	set, err := Parse(file, []byte(data))
	if err == nil {
		t.Fatalf("Parse: want an error")
	}
	if _, ok := err.(ErrorList); !ok {
		t.Fatalf("error is %T, want ErrorList", err)
	}
	return set, err.Error()
}

// TestVersionsLoadIdentically loads the same policy and binding written in
// v1, v1beta1 and v1alpha1 and checks that every field arrives in the v1
// representation exactly as written.
func TestVersionsLoadIdentically(t *testing.T) {
	v1data, err := os.ReadFile("testdata/versions/policy-v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want []map[string]any
	for _, doc := range strings.Split(string(v1data), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		want = append(want, m)
	}
	for _, v := range []string{"v1", "v1beta1", "v1alpha1"} {
		t.Run(v, func(t *testing.T) {
			set, err := Load(context.Background(), []string{"testdata/versions/policy-" + v + ".yaml"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(set.Policies) != 1 || len(set.Bindings) != 1 || len(set.Objects) != 0 {
				t.Fatalf("got %d policies, %d bindings, %d objects", len(set.Policies), len(set.Bindings), len(set.Objects))
			}
			p, b := set.Policies[0], set.Bindings[0]
			if p.APIVersion != "admissionregistration.k8s.io/"+v || b.APIVersion != p.APIVersion {
				t.Errorf("APIVersion = %q, %q", p.APIVersion, b.APIVersion)
			}
			if p.Source.String() != "testdata/versions/policy-"+v+".yaml#0" || b.Source.String() != "testdata/versions/policy-"+v+".yaml#1" {
				t.Errorf("sources %s, %s", p.Source, b.Source)
			}
			for i, obj := range []any{p.Policy, b.Binding} {
				js, _ := json.Marshal(obj)
				var got map[string]any
				_ = json.Unmarshal(js, &got)
				w := want[i]
				if !reflect.DeepEqual(got, w) {
					gy, _ := yaml.Marshal(got)
					wy, _ := yaml.Marshal(w)
					t.Errorf("object %d:\ngot:\n%s\nwant:\n%s", i, gy, wy)
				}
			}
		})
	}
}

const minimalPolicy = `apiVersion: admissionregistration.k8s.io/%s
kind: MutatingAdmissionPolicy
metadata: {name: p}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[]"}
  reinvocationPolicy: Never
`

func TestDefaulting(t *testing.T) {
	for _, v := range []string{"v1", "v1beta1", "v1alpha1"} {
		t.Run(v, func(t *testing.T) {
			set := mustParse(t, "p.yaml", strings.ReplaceAll(minimalPolicy, "%s", v))
			s := set.Policies[0].Policy.Spec
			if s.FailurePolicy == nil || *s.FailurePolicy != v1.Fail {
				t.Errorf("failurePolicy = %v", s.FailurePolicy)
			}
			mc := s.MatchConstraints
			if mc.MatchPolicy == nil || *mc.MatchPolicy != v1.Equivalent {
				t.Errorf("matchPolicy = %v", mc.MatchPolicy)
			}
			if !reflect.DeepEqual(mc.NamespaceSelector, &metav1.LabelSelector{}) || !reflect.DeepEqual(mc.ObjectSelector, &metav1.LabelSelector{}) {
				t.Errorf("selectors = %v, %v", mc.NamespaceSelector, mc.ObjectSelector)
			}
			if sc := mc.ResourceRules[0].Scope; sc == nil || *sc != v1.AllScopes {
				t.Errorf("scope = %v", sc)
			}
		})
	}
	t.Run("reinvocationPolicy is not defaulted", func(t *testing.T) {
		_, msg := parseErr(t, "p.yaml", strings.ReplaceAll(strings.ReplaceAll(minimalPolicy, "%s", "v1"), "  reinvocationPolicy: Never\n", ""))
		if want := `p.yaml#0: MutatingAdmissionPolicy "p": spec.reinvocationPolicy: Required value`; msg != want {
			t.Errorf("got %q, want %q", msg, want)
		}
	})
	binding := `apiVersion: admissionregistration.k8s.io/%s
kind: MutatingAdmissionPolicyBinding
metadata: {name: b}
spec:
  policyName: p
  paramRef: {name: cfg}
  matchResources:
    excludeResourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
`
	t.Run("v1alpha1 paramRef defaults to Deny", func(t *testing.T) {
		set := mustParse(t, "b.yaml", strings.ReplaceAll(binding, "%s", "v1alpha1"))
		b := set.Bindings[0].Binding
		if a := b.Spec.ParamRef.ParameterNotFoundAction; a == nil || *a != v1.DenyAction {
			t.Errorf("parameterNotFoundAction = %v", a)
		}
		mr := b.Spec.MatchResources
		if *mr.MatchPolicy != v1.Equivalent || mr.NamespaceSelector == nil || mr.ObjectSelector == nil || *mr.ExcludeResourceRules[0].Scope != v1.AllScopes {
			t.Errorf("matchResources not defaulted: %+v", mr)
		}
	})
	for _, v := range []string{"v1", "v1beta1"} {
		t.Run(v+" paramRef has no default", func(t *testing.T) {
			_, msg := parseErr(t, "b.yaml", strings.ReplaceAll(binding, "%s", v))
			if want := `b.yaml#0: MutatingAdmissionPolicyBinding "b": spec.paramRef.parameterNotFoundAction: Required value`; msg != want {
				t.Errorf("got %q, want %q", msg, want)
			}
		})
	}
	t.Run("binding without matchResources stays without", func(t *testing.T) {
		set := mustParse(t, "b.yaml", "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: p}\n")
		if set.Bindings[0].Binding.Spec.MatchResources != nil {
			t.Error("matchResources was defaulted into existence")
		}
	})
}

var parseErrorCases = []struct {
	name string
	data string
	want string
}{
	{"every field error of a document at once", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: x}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [DELETE], resources: [pods]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: "Object{}"}
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: ""}
`, `bad.yaml#0: MutatingAdmissionPolicy "x": spec.matchConstraints.resourceRules.operations: Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE"
bad.yaml#0: MutatingAdmissionPolicy "x": spec.mutations[1].applyConfiguration.expression: Required value
bad.yaml#0: MutatingAdmissionPolicy "x": spec.reinvocationPolicy: Required value`},
	{"errors of several documents", "kind: ConfigMap\n---\napiVersion: v1\n---\n{}\n",
		"bad.yaml#0 (line 1): invalid object: apiVersion not set\nbad.yaml#1 (line 3): invalid object: kind not set\nbad.yaml#2 (line 5): invalid object: apiVersion not set, kind not set"},
	{"unknown field", `apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: b, colour: red}
spec:
  policyName: p
  paramRefs: {}
`, `bad.yaml#0: MutatingAdmissionPolicyBinding "b": strict decoding error: unknown field "metadata.colour", unknown field "spec.paramRefs"`},
	{"unknown field in a nested list", strings.ReplaceAll(minimalPolicy, "%s", "v1alpha1") + "  extra: 1\n" + "",
		`bad.yaml#0: MutatingAdmissionPolicy "p": strict decoding error: unknown field "spec.extra"`},
	{"wrong type", "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicy\nmetadata: {name: x}\nspec: {mutations: 3}\n",
		`bad.yaml#0: MutatingAdmissionPolicy "x": json: cannot unmarshal number into Go struct field MutatingAdmissionPolicySpec.spec.mutations of type []v1.Mutation`},
	{"duplicate key", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nkind: Secret\n",
		`bad.yaml#0 (line 4): yaml: unmarshal errors:` + "\n" + `  line 4: key "kind" already set in map`},
	{"unregistered version", "apiVersion: admissionregistration.k8s.io/v2\nkind: MutatingAdmissionPolicy\nmetadata: {name: x}\n",
		`bad.yaml#0: MutatingAdmissionPolicy "x": no kind "MutatingAdmissionPolicy" is registered for version "admissionregistration.k8s.io/v2"`},
	{"syntax error names the file line", "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n   bad: indent\n",
		`bad.yaml#1 (line 8): yaml: line 8: mapping values are not allowed in this context`},
	{"tab indentation", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: a\n",
		`bad.yaml#0 (line 4): yaml: line 4: found character that cannot start any token`},
	{"bad separator", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n--- nope\n",
		`bad.yaml#1 (line 4): invalid YAML document separator: nope`},
	{"scalar document", "just a string\n", `bad.yaml#0 (line 1): document is not an object: json: cannot unmarshal string into Go value of type map[string]interface {}`},
	{"JSON that is not even YAML", "{\"apiVersion\": \"v1\",\n \"kind\": \"ConfigMap\"\n",
		`bad.yaml#0 (line 2): yaml: line 2: did not find expected ',' or '}'`},
	{"duplicate policy names", strings.ReplaceAll(minimalPolicy, "%s", "v1") + "---\n" + strings.ReplaceAll(minimalPolicy, "%s", "v1beta1"),
		`bad.yaml#1: MutatingAdmissionPolicy "p": already defined at bad.yaml#0`},
	{"list item without type", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n- metadata: {name: x}\n",
		`bad.yaml#0[1]: invalid object: apiVersion not set, kind not set`},
}

func TestParseErrors(t *testing.T) {
	tests := parseErrorCases
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, msg := parseErr(t, "bad.yaml", tc.data)
			if msg != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", msg, tc.want)
			}
		})
	}
}

func TestMultiDocumentsAndLists(t *testing.T) {
	data := `# license header
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: default}
---
# only a comment
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata: {name: ns}
- apiVersion: admissionregistration.k8s.io/v1
  kind: MutatingAdmissionPolicyBinding
  metadata: {name: b}
  spec: {policyName: p}
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyList
items:
- metadata: {name: p}
  spec:
    matchConstraints:
      resourceRules:
      - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
    mutations:
    - {patchType: JSONPatch, jsonPatch: {expression: "[]"}}
    reinvocationPolicy: Never
---
`
	set := mustParse(t, "m.yaml", data)
	var got []string
	for _, o := range set.Objects {
		got = append(got, o.Source.String()+" "+o.Object.GetKind()+"/"+o.Object.GetName())
	}
	for _, b := range set.Bindings {
		got = append(got, b.Source.String()+" binding/"+b.Binding.Name)
	}
	for _, p := range set.Policies {
		got = append(got, p.Source.String()+" policy/"+p.Policy.Name+" "+p.APIVersion)
	}
	want := []string{
		"m.yaml#0 ConfigMap/a",
		"m.yaml#2[0] Namespace/ns",
		"m.yaml#2[1] binding/b",
		"m.yaml#3[0] policy/p admissionregistration.k8s.io/v1beta1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestJSON(t *testing.T) {
	data := `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"n": "1"}}
{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}]}
`
	set := mustParse(t, "a.json", data)
	if len(set.Objects) != 2 || set.Objects[1].Source.String() != "a.json#1[0]" || set.Objects[1].Object.GetKind() != "Secret" {
		t.Fatalf("objects: %+v", set.Objects)
	}
	_, msg := parseErr(t, "b.json", "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\"}\n{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"kind\": \"Secret\"}")
	if want := `b.json#1 (line 2): strict decoding error: duplicate field "kind"`; msg != want {
		t.Errorf("got %q, want %q", msg, want)
	}
	set, msg = parseErr(t, "c.json", "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\"}\n\n{\"apiVersion\": \"v1\",\n \"kind\" \"Secret\"}")
	if want := `c.json#1 (line 4): invalid character '"' after object key`; msg != want {
		t.Errorf("got %q, want %q", msg, want)
	}
	if len(set.Objects) != 1 {
		t.Errorf("the valid first value was lost")
	}
}

func TestLoadDirectoriesAndStdin(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n"
	}
	write("b.yaml", cm("b"))
	write("a.yml", cm("a"))
	write("sub/c.json", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}`)
	write("sub/README.md", "not a manifest")
	write("z/bad.yaml", "apiVersion: v1\nkind: [\n")
	write("z/good.YAML", cm("d"))

	set, err := Load(context.Background(), []string{dir, "-"}, strings.NewReader(cm("stdin")))
	var names []string
	for _, o := range set.Objects {
		rel, _ := filepath.Rel(dir, o.Source.File)
		if o.Source.File == "-" {
			rel = "-"
		}
		names = append(names, rel+":"+o.Object.GetName())
	}
	want := "a.yml:a b.yaml:b sub/c.json:c z/good.YAML:d -:stdin"
	if strings.Join(names, " ") != want {
		t.Errorf("got %s, want %s", strings.Join(names, " "), want)
	}
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "z/bad.yaml")+"#0 (line 2): yaml: line 2: did not find expected node content") {
		t.Errorf("error = %v", err)
	}
	if got := (Source{File: "-", Doc: 0, Item: -1}).String(); got != "<stdin>#0" {
		t.Errorf("stdin source = %q", got)
	}

	if _, err := Load(context.Background(), []string{filepath.Join(dir, "missing.yaml")}, nil); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Load(ctx, []string{dir}, nil); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("cancelled: %v", err)
	}
}

func TestEmptyInputs(t *testing.T) {
	for _, data := range []string{"", "\n\n", "---\n---\n", "# nothing\n", "null\n", "\xef\xbb\xbf"} {
		set := mustParse(t, "e.yaml", data)
		if len(set.Objects)+len(set.Policies)+len(set.Bindings) != 0 {
			t.Errorf("%q: got objects", data)
		}
	}
}

func TestAPIObjectsKeepLoadOrder(t *testing.T) {
	const doc = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: b2}
spec: {policyName: p2}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: p2}
spec:
  matchConstraints: {resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}
  reinvocationPolicy: Never
  mutations:
  - {patchType: ApplyConfiguration, applyConfiguration: {expression: "Object{}"}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: p1}
spec:
  matchConstraints: {resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}
  reinvocationPolicy: Never
  mutations:
  - {patchType: ApplyConfiguration, applyConfiguration: {expression: "Object{}"}}
`
	set, err := Load(context.Background(), []string{"-"}, strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	policies, bindings := set.APIObjects()
	if len(policies) != 2 || policies[0].Name != "p2" || policies[1].Name != "p1" || policies[0] != set.Policies[0].Policy {
		t.Errorf("policies %v", policies)
	}
	if len(bindings) != 1 || bindings[0].Name != "b2" {
		t.Errorf("bindings %v", bindings)
	}
}

func TestDocumentsAreLoadsDocuments(t *testing.T) {
	data := []byte("# license\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n")
	set, err := Parse("f.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	docs := Documents(data)
	if len(set.Objects) != 2 {
		t.Fatalf("%d objects, want 2", len(set.Objects))
	}
	for _, o := range set.Objects {
		i := o.Source.Doc
		if i >= len(docs) || docs[i].Index != i {
			t.Fatalf("object %s: no document %d among %d", o.Source, i, len(docs))
		}
		if !strings.Contains(string(docs[i].Data), "name: "+o.Object.GetName()) {
			t.Errorf("document %d holds %q, not object %s", i, docs[i].Data, o.Object.GetName())
		}
	}
	if docs[0].Line != 4 {
		t.Errorf("first document starts at line %d, want 4", docs[0].Line)
	}
}
