package lsp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
)

// applyCEL applies an expression's edits.
func applyCEL(expr string, edits []celEdit) string {
	r := []rune(expr)
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		r = append(r[:e.from:e.from], append([]rune(e.text), r[e.to:]...)...)
	}
	return string(r)
}

func TestGuardFix(t *testing.T) {
	for _, tc := range []struct {
		expr, field, want string
	}{
		{`object.metadata.labels["team"] == "a"`, "labels", `(has(object.metadata.labels) && "team" in object.metadata.labels && object.metadata.labels["team"] == "a")`},
		{`"a" != object.metadata.labels["team"]`, "labels", `(!(has(object.metadata.labels) && "team" in object.metadata.labels) || "a" != object.metadata.labels["team"])`},
		{`object.spec.containers.all(c, c.securityContext.privileged == true)`, "securityContext", `object.spec.containers.all(c, (has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged == true))`},
		{`object.spec.template.spec.nodeSelector['zone'] == 'eu' && size(object.metadata.name) > 3`, "nodeSelector", `(has(object.spec.template.spec.nodeSelector) && 'zone' in object.spec.template.spec.nodeSelector && object.spec.template.spec.nodeSelector['zone'] == 'eu') && size(object.metadata.name) > 3`},
		{`"team" in object.metadata.labels`, "labels", `(has(object.metadata.labels) && "team" in object.metadata.labels)`},
		{`x == 1 || "k" in object.metadata.annotations`, "annotations", `x == 1 || (has(object.metadata.annotations) && "k" in object.metadata.annotations)`},
		{`object.spec.volumes[0].name == "v"`, "volumes", ""},
		// Not certain: no rewrite.
		{`object.metadata.labels["team"] == variables.team`, "labels", ""},
		{`object.metadata.labels["team"].startsWith("a")`, "labels", ""},
		{`"team" in object.metadata.labels.map(k, k)`, "labels", ""},
		{`size(object.spec.volumes) > 0`, "volumes", ""},
	} {
		at := strings.Index(tc.expr, "."+tc.field) + 1
		edits, title, ok := guardFix(tc.expr, len([]rune(tc.expr[:at])))
		got := ""
		if ok {
			got = applyCEL(tc.expr, edits)
			if title == "" {
				t.Errorf("%s: no title", tc.expr)
			}
			if _, ok := parseCEL(got); !ok {
				t.Errorf("%s: the fix %q does not parse", tc.expr, got)
			}
		}
		if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.expr, got, tc.want)
		}
	}
}

func TestJSONPatchFix(t *testing.T) {
	lists := map[string]bool{"spec.tolerations": true, "spec.dnsConfig.nameservers": true, "spec.template.spec.tolerations": true}
	isList := func(p []string) bool { return lists[strings.Join(p, ".")] }
	for _, tc := range []struct{ expr, want string }{
		{`Object{spec: Object.spec{tolerations: [Object.spec.tolerations{key: "a", operator: "Exists"}]}}`,
			"(object.?spec.hasValue() ? [] : [JSONPatch{op: \"add\", path: \"/spec\", value: {}}]) +\n" +
				`[JSONPatch{op: "add", path: "/spec/tolerations", value: [Object.spec.tolerations{key: "a", operator: "Exists"}]}]`},
		{"Object{\n  spec: Object.spec{\n    dnsConfig: Object.spec.dnsConfig{nameservers: [\"1.1.1.1\", \"8.8.8.8\"]}}}",
			"(object.?spec.hasValue() ? [] : [JSONPatch{op: \"add\", path: \"/spec\", value: {}}]) +\n" +
				"(object.?spec.?dnsConfig.hasValue() ? [] : [JSONPatch{op: \"add\", path: \"/spec/dnsConfig\", value: {}}]) +\n" +
				"[JSONPatch{op: \"add\", path: \"/spec/dnsConfig/nameservers\", value: [\"1.1.1.1\", \"8.8.8.8\"]}]"},
		// Not certain: other fields beside the list, a list not literal,
		// a field that is no list.
		{`Object{spec: Object.spec{tolerations: [], nodeName: "n"}}`, ""},
		{`Object{spec: Object.spec{tolerations: variables.t}}`, ""},
		{`Object{spec: Object.spec{nodeName: "x"}}`, ""},
	} {
		at := strings.Index(tc.expr, "[")
		if at < 0 {
			at = strings.LastIndex(tc.expr, ": ") + 2
		}
		got, ok := jsonPatchFix(tc.expr, len([]rune(tc.expr[:at])), isList)
		if !ok {
			got = ""
		}
		if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.expr, got, tc.want)
		}
	}
}

// fixWorkspace: a policy whose ApplyConfiguration writes the atomic
// tolerations of a Pod, one that writes the atomic nameservers of a
// dnsConfig the Pod may lack, and one whose matchCondition reads a label
// unguarded.
const fixWorkspace = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: tolerate
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{spec: Object.spec{tolerations: [
          Object.spec.tolerations{key: "dedicated", operator: "Equal", value: "batch", effect: "NoSchedule"}]}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: tolerate}
spec: {policyName: tolerate}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: dns
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{spec: Object.spec{dnsConfig: Object.spec.dnsConfig{nameservers: [\"10.0.0.10\"]}}}"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: dns}
spec: {policyName: dns}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: team-a
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  - name: team-a
    expression: 'object.metadata.labels["team"] == "a"'
  reinvocationPolicy: Never
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "add", path: "/metadata/annotations", value: {"team": "a"}}]'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: team-a}
spec: {policyName: team-a}
`

// pods are the objects the fixes are held to: with and without the
// fields the policies write and read.
var fixPods = []string{
	`{apiVersion: v1, kind: Pod, metadata: {name: bare, namespace: default}, spec: {containers: [{name: app, image: nginx}]}}`,
	`{apiVersion: v1, kind: Pod, metadata: {name: full, namespace: default, labels: {team: a}}, spec: {containers: [{name: app, image: nginx}], tolerations: [{key: x, operator: Exists}], dnsConfig: {searches: [svc.local], nameservers: [1.2.3.4]}}}`,
	`{apiVersion: v1, kind: Pod, metadata: {name: other, namespace: default, labels: {team: b}}, spec: {containers: [{name: app, image: nginx}], dnsConfig: {options: [{name: ndots, value: "2"}]}}}`,
}

// TestFixesThroughEngine: the quick fixes of a workspace, asked over the
// protocol, applied, and held to the engine: the JSONPatch a fix writes
// gives on real Pods what the structured-merge-diff merge of the
// ApplyConfiguration gives (kube-apiserver's merge, without the atomic
// guard that makes it refuse the ApplyConfiguration); the guarded read
// admits what the unguarded one admitted where it had a value, and
// skips where it failed.
func TestFixesThroughEngine(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "fix.yaml")
	if err := os.WriteFile(file, []byte(fixWorkspace), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, root)
	ds := c.open(file, fixWorkspace)
	checkRanges(t, fixWorkspace, ds)
	var actions []protocol.CodeAction
	c.call(protocol.MethodTextDocumentCodeAction, protocol.CodeActionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(file)}, Range: protocol.Range{End: protocol.Position{Line: 200}}, Context: protocol.CodeActionContext{Diagnostics: ds}}, &actions)
	fixed := fixWorkspace
	var titles []string
	// Each action applies to the text it was computed for: the last
	// document first keeps the earlier ranges valid.
	for i := len(actions) - 1; i >= 0; i-- {
		titles = append(titles, actions[i].Title)
		fixed = applyEdits(fixed, actions[i].Edit.Changes[uri.File(file)])
	}
	if len(actions) != 3 {
		t.Fatalf("code actions: %v for %+v", titles, ds)
	}
	golden(t, "fix-workspace.yaml.json", strings.Split(fixed, "\n"))
	if ds := c.change(file, fixed, 2); len(ds) != 0 {
		t.Errorf("diagnostics after the fixes: %+v\n%s", ds, fixed)
	}
	c.shutdown()

	before, err := manifest.Parse("before.yaml", []byte(fixWorkspace))
	if err != nil {
		t.Fatal(err)
	}
	after, err := manifest.Parse("after.yaml", []byte(fixed))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := cluster.New(nil, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	chainOf := func(set *manifest.Set, name string) cluster.Chain {
		for _, p := range set.Policies {
			if p.Policy.Name == name {
				var bs []*admissionregistrationv1.MutatingAdmissionPolicyBinding
				for _, b := range set.Bindings {
					if b.Binding.Spec.PolicyName == name {
						bs = append(bs, b.Binding)
					}
				}
				ev, err := cl.Evaluator(comp, []*admissionregistrationv1.MutatingAdmissionPolicy{p.Policy}, bs)
				if err != nil {
					t.Fatal(err)
				}
				return cluster.Chain{Policies: ev}
			}
		}
		t.Fatalf("no policy %s", name)
		return cluster.Chain{}
	}
	admit := func(ch cluster.Chain, obj map[string]any, skip bool) (map[string]any, string) {
		d, err := cl.DecodeSteps(cluster.Request{Object: &unstructured.Unstructured{Object: obj}, SkipAdmissionPlugins: skip})
		if err != nil {
			t.Fatal(err)
		}
		a, err := cl.Admit(context.Background(), ch, d)
		if err != nil {
			t.Fatal(err)
		}
		if a.Result.Denied != nil {
			return nil, a.Result.Denied.Error()
		}
		return a.Result.Object, ""
	}
	schemas := applyconfig.NewSchemas()
	podGVK := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	tc, err := schemas.TypeConverter(podGVK)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range fixPods {
		var pod map[string]any
		if err := sigsyaml.Unmarshal([]byte(src), &pod); err != nil {
			t.Fatal(err)
		}
		name := pod["metadata"].(map[string]any)["name"].(string)
		for _, policy := range []string{"tolerate", "dns"} {
			t.Run(policy+"/"+name, func(t *testing.T) {
				// The ApplyConfiguration: refused by kube-apiserver.
				if _, denied := admit(chainOf(before, policy), deepCopy(pod), false); !strings.Contains(denied, "may not mutate atomic arrays, maps or structs") {
					t.Errorf("the ApplyConfiguration was not refused for its atomic write: %q", denied)
				}
				// The built-in plugins left out on both sides
				// (DefaultTolerationSeconds writes tolerations).
				got, denied := admit(chainOf(after, policy), deepCopy(pod), true)
				if denied != "" {
					t.Fatalf("the JSONPatch: %s", denied)
				}
				// The merge: what the policy sees (the Pod decoded and
				// defaulted), the ApplyConfiguration's value merged as
				// kube-apiserver merges it, then defaulted as the
				// engine defaults a mutation's result.
				live, _ := admit(cluster.Chain{}, deepCopy(pod), true)
				var cp *compiler.Policy
				for _, p := range before.Policies {
					if p.Policy.Name == policy {
						if cp, err = comp.Compile(p.Policy); err != nil {
							t.Fatal(err)
						}
					}
				}
				res, _, err := cp.NewActivation(context.Background(), compiler.Input{Object: live}).Eval(cp.Mutations[0], compiler.PerCallLimit)
				if err != nil || res.Err != nil {
					t.Fatal(err, res.Err)
				}
				patch, err := applyconfig.FromCEL(res.Value)
				if err != nil {
					t.Fatal(err)
				}
				patchObj := &unstructured.Unstructured{Object: patch}
				patchObj.SetGroupVersionKind(podGVK)
				liveTyped, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: live}, typed.AllowDuplicates)
				if err != nil {
					t.Fatal(err)
				}
				patchTyped, err := tc.ObjectToTyped(patchObj)
				if err != nil {
					t.Fatal(err)
				}
				merged, err := liveTyped.Merge(patchTyped)
				if err != nil {
					t.Fatal(err)
				}
				mergedObj, err := tc.TypedToObject(merged)
				if err != nil {
					t.Fatal(err)
				}
				want, denied := admit(cluster.Chain{}, mergedObj.(*unstructured.Unstructured).Object, true)
				if denied != "" {
					t.Fatal(denied)
				}
				if !apiequality.Semantic.DeepEqual(got, want) {
					g, _ := sigsyaml.Marshal(got)
					w, _ := sigsyaml.Marshal(want)
					t.Errorf("the JSONPatch gives\n%s\nthe merge\n%s", g, w)
				}
			})
		}
		t.Run("team-a/"+name, func(t *testing.T) {
			unguarded, deniedBefore := admit(chainOf(before, "team-a"), deepCopy(pod), false)
			guarded, deniedAfter := admit(chainOf(after, "team-a"), deepCopy(pod), false)
			plain, _ := admit(cluster.Chain{}, deepCopy(pod), false)
			if deniedAfter != "" {
				t.Fatalf("the guarded read: %s", deniedAfter)
			}
			switch labels, _ := pod["metadata"].(map[string]any)["labels"].(map[string]any); {
			case labels == nil:
				// The unguarded read fails (failurePolicy Fail), the
				// guarded one does not match.
				if !strings.Contains(deniedBefore, "no such key: labels") {
					t.Errorf("the unguarded read: %q", deniedBefore)
				}
				if !apiequality.Semantic.DeepEqual(guarded, plain) {
					t.Errorf("the guarded read mutated a Pod without labels")
				}
			default:
				if deniedBefore != "" || !apiequality.Semantic.DeepEqual(unguarded, guarded) {
					t.Errorf("the fix changed the outcome: %q\n%v\n%v", deniedBefore, unguarded, guarded)
				}
			}
		})
	}
}

func deepCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}
