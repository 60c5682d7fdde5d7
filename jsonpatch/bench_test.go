package jsonpatch

import (
	"encoding/json"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

func BenchmarkApply(b *testing.B) {
	doc, err := runtime.DefaultUnstructuredConverter.ToUnstructured(testDeployment())
	if err != nil {
		b.Fatal(err)
	}
	// Make the object realistically large.
	containers := doc["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
	for i := 0; i < 20; i++ {
		containers = append(containers, map[string]any{"name": "c", "image": "busybox", "args": []any{"a", "b", "c"},
			"env": []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "B", "value": "2"}}})
	}
	doc["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"] = containers
	ops := []Operation{
		{Op: "test", Path: "/spec/replicas", Value: int64(1), HasValue: true},
		{Op: "replace", Path: "/spec/replicas", Value: int64(3), HasValue: true},
		{Op: "add", Path: "/metadata/labels/" + "example.com~1team", Value: "web", HasValue: true},
		{Op: "add", Path: "/spec/template/spec/containers/-", Value: map[string]any{"name": "sidecar", "image": "envoy"}, HasValue: true},
	}
	b.Run("mutatis", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Apply(doc, ops); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("evanphx-roundtrip", func(b *testing.B) {
		p := evanphxPatch(b, ops)
		b.ReportAllocs()
		for b.Loop() {
			data, err := json.Marshal(doc)
			if err != nil {
				b.Fatal(err)
			}
			out, err := p.Apply(data)
			if err != nil {
				b.Fatal(err)
			}
			var m map[string]any
			if err := utiljson.Unmarshal(out, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkApplyLabel is the most common JSON patch, a label added to an
// object as runtime.DefaultUnstructuredConverter presents it: Apply, and
// ApplyUnnormalized with IsNormalized (what a caller checks) for the
// part Apply spends on normalizing the document.
func BenchmarkApplyLabel(b *testing.B) {
	doc, err := runtime.DefaultUnstructuredConverter.ToUnstructured(testDeployment())
	if err != nil {
		b.Fatal(err)
	}
	ops := []Operation{{Op: "add", Path: "/metadata/labels/team", Value: "shop", HasValue: true}}
	b.Run("Apply", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Apply(doc, ops); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ApplyUnnormalized", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := ApplyUnnormalized(doc, ops); !ok {
				b.Fatal("not ok")
			}
		}
	})
	b.Run("ApplyUnnormalized+IsNormalized", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if out, ok := ApplyUnnormalized(doc, ops); !ok || !IsNormalized(out) {
				b.Fatal("not ok")
			}
		}
	})
}

// BenchmarkConvertValueObject converts what a JSONPatch value reads from
// the object, cel-go's view of a Deployment's Go map, both ways: directly
// (convertValue) and by upstream's structpb round trip (reference).
func BenchmarkConvertValueObject(b *testing.B) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(testDeployment())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		v    any
	}{
		{"object", u},
		{"object.metadata", u["metadata"]},
		{"object.spec.template.spec.containers", u["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"]},
	} {
		v := types.DefaultTypeAdapter.NativeToValue(c.v)
		for _, conv := range []struct {
			name string
			f    func(ref.Val) (any, error)
		}{{"direct", convertValue}, {"reference", convertValueReference}} {
			b.Run(c.name+"/"+conv.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := conv.f(v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
