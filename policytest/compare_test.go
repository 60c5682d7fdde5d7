package policytest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/applyconfig"
)

func mustYAML(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestProjectionComparesListsByTheirSchemaKeys(t *testing.T) {
	pod := `apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web, tier: front}}
spec:
  containers:
  - name: app
    image: nginx:1.27
    ports: [{containerPort: 80, protocol: TCP}]
  - name: log-shipper
    image: registry.example.com/log-shipper:1.4.2
  tolerations: [{key: a, operator: Exists}, {key: b, operator: Exists}]
`
	widget := `apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec:
  items: [{name: x, size: 1}, {name: w2, size: 2}]
`
	schemas := applyconfig.NewSchemas()
	cases := []struct {
		name     string
		object   string
		gvk      schema.GroupVersionKind
		want     string
		contains bool
		diff     []string
	}{
		{name: "containers in another order match by name", object: pod, gvk: schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
			want: "spec: {containers: [{name: log-shipper, image: registry.example.com/log-shipper:1.4.2}, {name: app}]}", contains: true},
		{name: "a subset of labels", object: pod, gvk: schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
			want: "metadata: {labels: {tier: front}}", contains: true},
		{name: "a port matched on a part of its keys", object: pod, gvk: schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
			want: "spec: {containers: [{name: app, ports: [{containerPort: 80}]}]}", contains: true},
		{name: "a wrong image shows in the diff", object: pod, gvk: schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
			want: "spec: {containers: [{name: log-shipper, image: busybox}]}", diff: []string{"-  - image: busybox", "+  - image: registry.example.com/log-shipper:1.4.2"}},
		{name: "a missing container shows next to the one that is there", object: pod, gvk: schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
			want: "spec: {containers: [{name: app}, {name: sidecar}]}", diff: []string{"-  - name: sidecar", "+  - name: log-shipper"}},
		{name: "a missing label", object: pod, gvk: schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
			want: "metadata: {labels: {team: a}}", diff: []string{"-    team: a"}},
		{name: "an atomic list compares by position", object: pod, gvk: schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
			want: "spec: {tolerations: [{key: b}, {key: a}]}", diff: []string{"+  - key: a", "-  - key: a"}},
		{name: "a kind without schema compares by position (prefix elements)", object: widget, gvk: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
			want: "spec: {items: [{name: x}]}", diff: []string{"+  - name: w2", "+    size: 2"}},
		{name: "a kind without schema, every element given", object: widget, gvk: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
			want: "spec: {items: [{name: x}, {size: 2}]}", contains: true},
		{name: "numbers compare whatever their Go type", object: widget, gvk: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
			want: "spec: {items: [{size: 1.0}, {size: 2}]}", contains: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, want := mustYAML(t, tc.object), mustYAML(t, tc.want)
			ls := schemaFor(schemas, tc.gvk, obj)
			got := ls.project(ls.tr, want, obj)
			if equal(want, got) != tc.contains {
				t.Fatalf("contains = %v, want %v; projection:\n%v", !tc.contains, tc.contains, got)
			}
			d := diffText(want, got)
			for _, w := range tc.diff {
				if !strings.Contains(d, w+"\n") {
					t.Errorf("diff lacks %q:\n%s", w, d)
				}
			}
		})
	}
}

func TestCheckPatchComparesByEffect(t *testing.T) {
	before := mustYAML(t, "metadata: {name: a, labels: {x: '1'}}\nspec: {list: [1, 2]}")
	after := mustYAML(t, "metadata: {name: a, labels: {x: '1', b: '2', z: '3'}}\nspec: {list: [1, 2, 3]}")
	cases := []struct {
		name  string
		patch string
		ok    bool
	}{
		{"the operations in another order", `[{op: add, path: /spec/list/-, value: 3}, {op: add, path: /metadata/labels/z, value: "3"}, {op: add, path: /metadata/labels/b, value: "2"}]`, true},
		{"a replace of the whole map", `[{op: replace, path: /metadata/labels, value: {x: "1", b: "2", z: "3"}}, {op: add, path: /spec/list/2, value: 3}]`, true},
		{"a missing operation", `[{op: add, path: /metadata/labels/b, value: "2"}, {op: add, path: /spec/list/-, value: 3}]`, false},
		{"a patch that does not apply", `[{op: remove, path: /metadata/annotations}]`, false},
		{"the empty patch", `[]`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p Patch
			if err := yaml.Unmarshal([]byte(tc.patch), &p); err != nil {
				t.Fatal(err)
			}
			f, ok := checkPatch(p, before, after)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v: %s", ok, tc.ok, f)
			}
			if !ok && !strings.Contains(f.Message, `actual patch: [`) {
				t.Errorf("the failure does not show the actual patch: %s", f)
			}
		})
	}
}
