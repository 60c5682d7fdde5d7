package scheme

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestDecodeWebhookPatchResult(t *testing.T) {
	s := New()
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	for _, tc := range []struct {
		name     string
		data     string
		gvk      schema.GroupVersionKind
		wantKind schema.GroupVersionKind
		check    func(t *testing.T, m map[string]any)
		err      string
	}{
		{name: "unknown fields are dropped", gvk: pod, wantKind: pod,
			data: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"notAField":1,"containers":[{"name":"c","image":"i"}]}}`,
			check: func(t *testing.T, m map[string]any) {
				if _, ok := m["spec"].(map[string]any)["notAField"]; ok {
					t.Error("unknown field kept")
				}
			}},
		{name: "a value of the wrong type", gvk: pod,
			data: `{"apiVersion":"v1","kind":"Pod","spec":{"priority":"high"}}`, err: "cannot unmarshal"},
		{name: "the document's own kind wins", gvk: pod, wantKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			data: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"},"data":{"a":"b"}}`},
		{name: "a custom resource stays unstructured", gvk: widget, wantKind: widget,
			data: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":3}}`,
			check: func(t *testing.T, m map[string]any) {
				if m["spec"].(map[string]any)["size"] != int64(3) {
					t.Errorf("spec %v", m["spec"])
				}
			}},
		{name: "a document without kind takes the kind decoded into", gvk: pod, wantKind: pod, data: `{"apiVersion":"v1","metadata":{"name":"p"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, kind, err := s.DecodeWebhookPatchResult([]byte(tc.data), tc.gvk)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if kind != tc.wantKind {
				t.Errorf("kind %v, want %v", kind, tc.wantKind)
			}
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
}
