package engine

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/chain"
)

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
	var r chain.Runner
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.Run(ctx, a, ev)
		if err != nil || len(res.Invocations) != 0 {
			b.Fatal(err, res.Invocations)
		}
	}
}
