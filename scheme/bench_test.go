package scheme

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
)

// BenchmarkNormalize compares Normalize with the typed round trip it
// replaces, on real objects as the API server sends them (already
// normalized) and as JSON decodes them.
func BenchmarkNormalize(b *testing.B) {
	s := New()
	for _, in := range testobjects.Inputs(b) {
		if in.GVK == testobjects.CRGVK {
			continue
		}
		normalized, err := s.normalizeReference(in.Obj, in.GVK)
		if err != nil {
			b.Fatal(err)
		}
		for _, impl := range []struct {
			name string
			f    func(map[string]any, schema.GroupVersionKind) (map[string]any, error)
		}{{"typed", s.normalizeReference}, {"planned", s.Normalize}, {"fixed", func(obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
			// The strict decode walk after a JSON patch (decodeFixed).
			if _, ok := s.plans.decodeFixed(s.types, obj, gvk); !ok {
				b.Fatal("decodeFixed refused a normalized object")
			}
			return nil, nil
		}}} {
			b.Run("impl="+impl.name+"/input="+strings.ReplaceAll(in.Name, " ", ""), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := impl.f(normalized, in.GVK); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
