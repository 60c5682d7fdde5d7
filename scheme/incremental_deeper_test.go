package scheme

import (
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// TestDeeperDiffersIsUnequal holds the deeper looks of diffFields
// (deeperFunc) to their claim: a pair of values they tell differs (so that
// diffFields leaves out its jsonvalue.Equal of the two) is never equal.
// Since the claim can only add changes, never hide one, a wrong claim
// would cost time, not a result; the test holds it all the same, on the
// defaulted real objects of every built-in kind, perturbed as merge
// results are (sharing what did not change) and, one in two, deep-copied
// first in whole or in one top-level field (equal values that are not the
// same maps: the values Equal is there for). For each object:
// nestedInert of every top-level field that differs by reference, every
// change k.changes tells (its top-level and its nested values are not
// equal), and DefaultFrom against the whole object's defaulting
// (checkDefaultFrom).
func TestDeeperDiffersIsUnequal(t *testing.T) {
	s := New()
	r := rand.New(rand.NewPCG(29, 9))
	var bases []testobjects.Input
	for _, in := range testobjects.Inputs(t) {
		if in.GVK == testobjects.CRGVK || s.inert()[in.GVK] == nil {
			continue
		}
		d, err := s.defaultReference(in.Obj, in.GVK)
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, testobjects.Input{Name: in.Name, GVK: in.GVK, Obj: d})
	}
	if len(bases) == 0 {
		t.Fatal("no real object of a kind with inert fields")
	}
	differs, equalCopies := 0, 0
	for i := range 1500 {
		in := bases[r.IntN(len(bases))]
		k := s.inert()[in.GVK]
		var obj any = in.Obj
		switch i % 4 {
		case 1:
			obj = valuetest.DeepCopy(in.Obj)
		case 2:
			keys := sortedKeys(in.Obj)
			f := keys[r.IntN(len(keys))]
			obj, _ = withPath(in.Obj, f, valuetest.DeepCopy(in.Obj[f]), true)
		}
		for range r.IntN(3) {
			obj = testobjects.PerturbShared(r, obj)
		}
		norm, ok := normalizedObject(s, obj, in.GVK)
		if !ok {
			continue
		}
		for f, v := range norm {
			b, inBase := in.Obj[f]
			if !inBase || sameJSON(v, b) {
				continue
			}
			equal := jsonvalue.Equal(v, b)
			if equal {
				equalCopies++
			}
			same, diff := k.nestedInert(f, v, b)
			if diff {
				differs++
			}
			if diff && (same || equal) {
				t.Fatalf("%s (%v): nestedInert(%q) tells same %v, differs %v of values equal %v", in.Name, in.GVK, f, same, diff, equal)
			}
		}
		changes, _ := k.changes(norm, in.Obj, nil)
		for _, c := range changes {
			v, inObj := norm[c.top]
			b, inBase := in.Obj[c.top]
			if inObj && inBase && jsonvalue.Equal(v, b) {
				t.Fatalf("%s (%v): changes tells %v, whose top-level values are equal\nbase: %s\n obj: %s", in.Name, in.GVK, c, mustJSONText(in.Obj), mustJSONText(norm))
			}
			vm, _ := v.(map[string]any)
			bm, _ := b.(map[string]any)
			if c.sub == "" || vm == nil || bm == nil {
				continue
			}
			sv, inObj := vm[c.sub]
			sb, inBase := bm[c.sub]
			if inObj && inBase && jsonvalue.Equal(sv, sb) {
				t.Fatalf("%s (%v): changes tells %v, whose values are equal\nbase: %s\n obj: %s", in.Name, in.GVK, c, mustJSONText(in.Obj), mustJSONText(norm))
			}
		}
		checkDefaultFrom(t, s, norm, in.Obj, in.GVK)
	}
	t.Logf("%d objects: nestedInert told differs %d times; %d top-level values equal but not the same", 1500, differs, equalCopies)
	if differs == 0 || equalCopies == 0 {
		t.Errorf("the objects did not reach both sides: differs %d, equal copies %d", differs, equalCopies)
	}
}

// normalizedObject is obj, when it is an object, normalized as an object
// of kind gvk (ok=false when it is not, or does not normalize).
func normalizedObject(s *Scheme, obj any, gvk schema.GroupVersionKind) (map[string]any, bool) {
	m, ok := obj.(map[string]any)
	if !ok {
		return nil, false
	}
	norm, err := s.Normalize(m, gvk)
	return norm, err == nil
}
