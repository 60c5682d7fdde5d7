package kindschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/common"
	celopenapi "k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// TestDefinitionsAreGenerated runs the generator (which checks every
// kind's declaration type against upstream's resolver) and compares its
// output with the embedded file byte for byte. It builds
// k8s.io/kubernetes/pkg/generated/openapi, fetching through the module
// proxy what go.mod does not list: skipped with -short, and when it fails
// with the proxy off.
func TestDefinitionsAreGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds k8s.io/kubernetes' OpenAPI definitions")
	}
	out := filepath.Join(t.TempDir(), "definitions.json")
	cmd := exec.Command("go", "run", "../openapigen", "-out", out)
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		if proxy, _ := exec.Command("go", "env", "GOPROXY").Output(); strings.TrimSpace(string(proxy)) == "off" {
			t.Skipf("the generator needs modules go.mod does not list, and GOPROXY=off: %v\n%s", err, b)
		}
		t.Fatalf("go run ../openapigen: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, definitionsJSON) {
		t.Error("zz_generated_definitions.json is not what the generator writes: go generate ./costs/internal/kindschema")
	}
}

// TestDefinitionsAreTheServedOpenAPI holds the embedded definitions to the
// OpenAPI v3 documents of k8s.io/kubernetes (api/openapi-spec/v3, what
// kube-apiserver serves, in the module cache): for each kind, the
// declaration type built through upstream's path from the served
// documents is the one built from the embedded definitions once their
// enums are dropped (the documents are written with the OpenAPIEnums
// feature off; a kube-apiserver with its default features serves them,
// and the type checker's definitions have them).
func TestDefinitionsAreTheServedOpenAPI(t *testing.T) {
	dir := kubernetesDir(t)
	served := servedSchemas(t, filepath.Join(dir, "api", "openapi-spec", "v3"))
	d, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	dropped := map[string]*spec.Schema{}
	for _, n := range d.Names() {
		s, _, err := d.Definition(n)
		if err != nil {
			t.Fatal(err)
		}
		dropped[n] = dropEnums(s)
	}
	b, err := Encode(d.Kinds(), dropped)
	if err != nil {
		t.Fatal(err)
	}
	noEnums, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Pod"},
		{Version: "v1", Kind: "ConfigMap"},
		{Version: "v1", Kind: "Service"},
		{Version: "v1", Kind: "Namespace"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "batch", Version: "v1", Kind: "CronJob"},
		{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
	} {
		t.Run(gvk.Kind, func(t *testing.T) {
			name := ""
			for _, k := range d.Kinds() {
				if k.GroupVersionKind() == gvk {
					name = k.Definition
				}
			}
			if name == "" {
				t.Fatalf("no kind %s embedded", gvk)
			}
			full, err := resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
				s, ok := served[strings.TrimPrefix(ref, "#/components/schemas/")]
				if !ok {
					return nil, false
				}
				c := *s
				return &c, true
			}, "#/components/schemas/"+name)
			if err != nil {
				t.Fatal(err)
			}
			want := Describe(common.SchemaDeclType(&celopenapi.Schema{Schema: full}, true))
			got, err := noEnums.DeclType(gvk)
			if err != nil {
				t.Fatal(err)
			}
			if g := Describe(got); g != want {
				t.Errorf("declaration types differ:\n%s", firstDifference(g, want))
			}
		})
	}
}

// TestDeclTypeSizes pins what upstream's path gives for the inputs the
// cost of a Pod policy most often depends on.
func TestDeclTypeSizes(t *testing.T) {
	d, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	pod, err := d.DeclType(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	if err != nil {
		t.Fatal(err)
	}
	at := func(path ...string) (string, int64) {
		t := pod
		for _, p := range path {
			switch p {
			case "@items":
				t = t.ElemType
			default:
				f, ok := t.Fields[p]
				if !ok {
					return "missing", -1
				}
				t = f.Type
			}
		}
		return t.CelType().String(), t.MaxElements
	}
	cases := []struct {
		path     []string
		wantType string
		wantMax  int64
	}{
		// (3 MiB - 2) / (len("{}") + 1): a Container's one required
		// field, name, has a default ("") and so no minimum size.
		{[]string{"spec", "containers"}, "list(object)", 1048575},
		// (3 MiB - 2) / (18 + 1): "preference" is required without a
		// default (2 + len("preference") + len("{}") + 4 = 18); "weight"
		// has one (0).
		{[]string{"spec", "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"}, "list(object)", 165564},
		// The longest enum value ("IfNotPresent").
		{[]string{"spec", "containers", "@items", "imagePullPolicy"}, "string", 12},
		{[]string{"spec", "containers", "@items", "image"}, "string", 3145726},
		{[]string{"metadata", "creationTimestamp"}, "google.protobuf.Timestamp", 32},
		{[]string{"metadata", "labels"}, "map(string, string)", 393215},
	}
	for _, c := range cases {
		typ, max := at(c.path...)
		if typ != c.wantType || max != c.wantMax {
			t.Errorf("%s: %s max %d, want %s max %d", strings.Join(c.path, "."), typ, max, c.wantType, c.wantMax)
		}
	}
	if _, err := d.DeclType(schema.GroupVersionKind{Version: "v1", Kind: "Nope"}); err == nil {
		t.Error("an unknown kind has a declaration type")
	}
}

func TestParseRejectsAKindWithoutDefinition(t *testing.T) {
	_, err := Parse([]byte(`{"kinds":[{"version":"v1","kind":"Pod","definition":"io.k8s.api.core.v1.Pod"}],"definitions":{}}`))
	if err == nil || !strings.Contains(err.Error(), `no definition "io.k8s.api.core.v1.Pod"`) {
		t.Errorf("err %v", err)
	}
}

// kubernetesDir is the k8s.io/kubernetes module of the build in the
// module cache; the test is skipped when it is not there.
func kubernetesDir(t *testing.T) string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("k8s.io/kubernetes is not in the module cache: %v", err)
	}
	return dir
}

func servedSchemas(t *testing.T, dir string) map[string]*spec.Schema {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no OpenAPI v3 documents in %s: %v", dir, err)
	}
	out := map[string]*spec.Schema{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Components struct {
				Schemas map[string]*spec.Schema `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for n, s := range doc.Components.Schemas {
			out[n] = s
		}
	}
	return out
}

func dropEnums(s *spec.Schema) *spec.Schema {
	c := *s
	c.Enum = nil
	if c.Items != nil && c.Items.Schema != nil {
		c.Items = &spec.SchemaOrArray{Schema: dropEnums(c.Items.Schema)}
	}
	if c.AdditionalProperties != nil && c.AdditionalProperties.Schema != nil {
		c.AdditionalProperties = &spec.SchemaOrBool{Allows: c.AdditionalProperties.Allows, Schema: dropEnums(c.AdditionalProperties.Schema)}
	}
	if c.Properties != nil {
		c.Properties = make(map[string]spec.Schema, len(s.Properties))
		for n, p := range s.Properties {
			c.Properties[n] = *dropEnums(&p)
		}
	}
	return &c
}

func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, g[i], w[i])
		}
	}
	return "lengths differ"
}
