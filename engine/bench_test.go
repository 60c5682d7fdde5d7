package engine

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// BenchmarkNormalize compares Normalize with the typed round trip it
// replaces, on real objects as the API server sends them (already
// normalized) and as JSON decodes them.
func BenchmarkNormalize(b *testing.B) {
	pt := &Patcher{Scheme: scheme.Scheme}
	for _, in := range normalizeInputs(b) {
		if in.gvk == crGVK {
			continue
		}
		normalized, err := pt.normalizeTyped(in.obj, in.gvk)
		if err != nil {
			b.Fatal(err)
		}
		for _, impl := range []struct {
			name string
			f    func(map[string]any, schema.GroupVersionKind) (map[string]any, error)
		}{{"typed", pt.normalizeTyped}, {"planned", pt.Normalize}, {"fixed", func(obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
			// The strict decode walk after a JSON patch (decodeFixed).
			if _, ok := pt.normalizer.decodeFixed(pt.Scheme, obj, gvk); !ok {
				b.Fatal("decodeFixed refused a normalized object")
			}
			return nil, nil
		}}} {
			b.Run("impl="+impl.name+"/input="+strings.ReplaceAll(in.name, " ", ""), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := impl.f(normalized, in.gvk); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkAdmitNonMatching is a Pod CREATE among policies for ConfigMaps:
// the index lookup and the presentation of the object.
func BenchmarkAdmitNonMatching(b *testing.B) {
	ev := newEvaluator(b, mapPolicy("a", "Never", "Fail", counter))
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "shop"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx", "resources": map[string]any{}}}}, "status": map[string]any{}}
	a := createConfigMap()
	a.Kind, a.Resource = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	a.Object = &unstructured.Unstructured{Object: pod}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := ev.Admit(ctx, a)
		if err != nil || len(res.Invocations) != 0 {
			b.Fatal(err, res.Invocations)
		}
	}
}
