package scheme

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// TestSpareUnitsShareNothing is TestSpareTypedSharesNothing for the
// incremental defaulting's unit objects (defaultElement, contextUnchanged:
// unitTyped in a spare object): defaulted real and random objects of every
// kind of unitTable with elements of their unit lists and their context
// fields changed (elementMutator, other objects' values), each DefaultFrom
// held bit for bit to defaultReference, from four goroutines in random
// orders, three times over, every result kept (with a deep copy taken when
// returned) still its copy after all the defaultings that followed.
func TestSpareUnitsShareNothing(t *testing.T) {
	s := New()
	r := rand.New(rand.NewPCG(29, 24))
	type pair struct {
		name      string
		gvk       schema.GroupVersionKind
		obj, base map[string]any
	}
	real := realByKind(t)
	var pairs []pair
	elements := 0
	for i, gvk := range sortedGVKs(s.units()) {
		objs := append(randomObjects(t, gvk, int64(29_000+i), 6), real[gvk]...)
		var bases []map[string]any
		for _, o := range objs {
			if d, err := s.defaultReference(valuetest.DeepCopy(o).(map[string]any), gvk); err == nil {
				bases = append(bases, d)
			}
		}
		if len(bases) == 0 {
			continue
		}
		m := newElementMutator(r, gvk, objs)
		for j := range 16 {
			base := bases[r.IntN(len(bases))]
			obj := base
			if len(m.units) > 0 && j%4 != 3 {
				obj = m.mutate(obj)
			}
			// A context field set to another object's value, or removed.
			for _, u := range s.units()[gvk] {
				fields := sortedKeys(boolKeys(u.context))
				if len(fields) == 0 || r.IntN(2) == 0 {
					continue
				}
				path := strings.Join(u.path, ".") + "." + fields[r.IntN(len(fields))]
				v, present := pathValue(bases[r.IntN(len(bases))], path)
				if next, ok := withPath(obj, path, v, present); ok {
					obj = next
				}
			}
			norm, err := s.Normalize(obj, gvk)
			if err != nil {
				continue
			}
			got, err := s.DefaultFrom(norm, base, gvk)
			if err != nil {
				continue
			}
			if !jsonvalue.SameMap(got, norm) {
				elements++
			}
			pairs = append(pairs, pair{fmt.Sprintf("%v %d", gvk, j), gvk, norm, base})
		}
	}
	if elements == 0 {
		t.Fatal("no DefaultFrom wrote an element")
	}
	results := func(r *rand.Rand) ([]keptResult, error) {
		var out []keptResult
		for _, i := range r.Perm(len(pairs)) {
			p := pairs[i]
			var got map[string]any
			// (Defaulters that write the clock's time: both sides in one
			// second.)
			err := inOneSecond(func() error {
				var err error
				got, err = s.DefaultFrom(p.obj, p.base, p.gvk)
				want, wantErr := s.defaultReference(valuetest.DeepCopy(p.obj).(map[string]any), p.gvk)
				if err != nil || wantErr != nil || !valuetest.BitsEqual(got, want) {
					return fmt.Errorf("%s: DefaultFrom\nbase: %s\n obj: %s\n got: %s\nwant: %s (%v, %v)", p.name, mustJSONText(p.base), mustJSONText(p.obj), mustJSONText(got), mustJSONText(want), err, wantErr)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			out = append(out, keptResult{p.name, got, valuetest.DeepCopy(got)})
		}
		return out, nil
	}
	checkResultsKept(t, 29, results)
	t.Logf("%d mutated objects, %d with elements written", len(pairs), elements)
}
