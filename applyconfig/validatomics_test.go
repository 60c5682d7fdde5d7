package applyconfig

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// TestValidAtomicsOnRealObjects holds validAtomics, whose walk only notes
// that it met an atomic and leaves the paths to findAtomics, to
// structured-merge-diff's validation (refValidValue, duplicates refused)
// and to the walk of upstream's findAtomics over the schema
// (refFindAtomics), on patches made from every real built-in object of
// testobjects that the schema types: random parts of the object (what an
// ApplyConfiguration sets: some fields, some items, some of their
// contents), perturbed or not (duplicates, wrong types, unknown fields).
func TestValidAtomicsOnRealObjects(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 5))
	n := valuetest.Sweep(3000, 300)
	valid, withAtomics, several, invalid := 0, 0, 0, 0
	forTypedInputs(t, func(t *testing.T, obj map[string]any, root *rootType) {
		check := func(v map[string]any) {
			t.Helper()
			got, ok := validAtomics(root.plan, v)
			if want := refValidValue(root.s, root.tr, v, false); ok != want {
				t.Fatalf("validAtomics valid = %v, reference %v: %#v", ok, want, v)
			}
			if !ok {
				invalid++
				if got != nil {
					t.Fatalf("atomics %q of an invalid value", got)
				}
				return
			}
			valid++
			if want := refFindAtomics(root.s, root.tr, v); !reflect.DeepEqual(got, want) {
				t.Fatalf("validAtomics = %q, reference %q: %#v", got, want, v)
			}
			if len(got) > 0 {
				withAtomics++
			}
			if len(got) > 1 {
				several++
			}
		}
		check(obj)
		for range n {
			v := partOf(rng, obj).(map[string]any)
			for range rng.IntN(3) {
				v = perturb(rng, v).(map[string]any)
			}
			check(v)
		}
	})
	t.Logf("%d valid patches (%d with atomics, %d with several), %d invalid", valid, withAtomics, several, invalid)
	if withAtomics == 0 || several == 0 || invalid == 0 || withAtomics == valid {
		t.Errorf("valid %d, with atomics %d, with several %d, invalid %d: the comparison is weak", valid, withAtomics, several, invalid)
	}
}

// partOf returns a random part of v, as an ApplyConfiguration sets it:
// each entry of a map kept with probability 1/2 (its value a part of
// itself), a list's items kept or dropped the same way, scalars as they
// are. Nothing of v is modified.
func partOf(rng *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make(map[string]any)
		for _, k := range keys {
			if rng.IntN(2) == 0 {
				out[k] = partOf(rng, x[k])
			}
		}
		return out
	case []any:
		out := []any{}
		for _, item := range x {
			if rng.IntN(2) == 0 {
				out = append(out, partOf(rng, item))
			}
		}
		return out
	}
	return v
}

// BenchmarkValidAtomics validates, and looks for atomics in, patches of a
// real Pod and Deployment: each object's part that holds no atomic
// (labels, annotations, the containers' names, images and env), as the
// merge asks of every patch it is given.
func BenchmarkValidAtomics(b *testing.B) {
	reg := sharedSchemas(b)
	for _, in := range testobjects.Inputs(b) {
		if in.Name != "Pod (JSON)" && in.Name != "Deployment (JSON)" {
			continue
		}
		m, err := reg.Merger(in.GVK)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		var v map[string]any
		for {
			v = partOf(rng, in.Obj).(map[string]any)
			if a, ok := validAtomics(m.root.plan, v); ok && len(a) == 0 && len(v) > 1 {
				break
			}
		}
		b.Run(in.Name, func(b *testing.B) {
			for b.Loop() {
				validAtomics(m.root.plan, v)
			}
		})
	}
}
