package applyconfig

import (
	"math/rand/v2"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// TestValidBesideOnRealObjects holds validBeside, whose walk skips the
// entries and items that are the reference's very values (sameMerged), to
// validValue and to structured-merge-diff's validation over the schema
// (refValidValue) on every real built-in object of testobjects, as the
// converter writes it and as JSON decodes it: each beside itself, beside
// a deep copy of itself (equal scalars, no shared map or slice), and
// chains of random perturbations beside the step before and the original
// (what an admission's next merge sees: the previous result, changed in
// some subtrees and sharing the rest).
func TestValidBesideOnRealObjects(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 4))
	n := valuetest.Sweep(3000, 300)
	ends, invalid := 0, 0
	forTypedInputs(t, func(t *testing.T, obj map[string]any, root *rootType) {
		pt, s, tr := root.plan, root.s, root.tr
		check := func(v, ref map[string]any) {
			t.Helper()
			if !validValue(pt, ref, true) {
				return
			}
			got := validBeside(pt, v, ref)
			if want := validValue(pt, v, true); got != want {
				t.Fatalf("validBeside = %v, validValue %v: %#v\nbeside %#v", got, want, v, ref)
			}
			if want := refValidValue(s, tr, v, true); got != want {
				t.Fatalf("validBeside = %v, reference %v: %#v\nbeside %#v", got, want, v, ref)
			}
		}
		copied := runtime.DeepCopyJSON(obj)
		check(obj, obj)
		check(copied, obj)
		check(obj, copied)
		for range n {
			prev, cur := obj, obj
			for range 1 + rng.IntN(6) {
				next := retouch(rng, cur)
				if rng.IntN(3) == 0 {
					next = perturb(rng, cur)
				}
				prev, cur = cur, next.(map[string]any)
				check(cur, prev)
				check(cur, obj)
				check(cur, copied)
			}
			ends++
			if !validValue(pt, cur, true) {
				invalid++
			}
		}
	})
	if invalid == 0 || invalid*10 > ends*9 {
		t.Errorf("%d of %d chains end invalid: the comparison is weak", invalid, ends)
	}
}

// forTypedInputs runs f, as a subtest of t, on every real built-in object
// of testobjects that the schema types (as the converter writes it and as
// JSON decodes it), with its kind's root type; it fails t when fewer than
// 16 inputs have one.
func forTypedInputs(t *testing.T, f func(t *testing.T, obj map[string]any, root *rootType)) {
	reg := sharedSchemas(t)
	kinds := 0
	for _, in := range testobjects.Inputs(t) {
		m, err := reg.Merger(in.GVK)
		if err != nil || m.root == nil || !validValue(m.root.plan, in.Obj, true) {
			continue // the custom resource is not of the Widget schema
		}
		kinds++
		t.Run(in.Name, func(t *testing.T) { f(t, in.Obj, m.root) })
	}
	if kinds < 16 {
		t.Fatalf("only %d inputs have a schema", kinds)
	}
}

// retouch returns v with one string leaf somewhere inside it changed to
// another string, the maps and lists on its path copied and the rest
// shared: a change that keeps a valid object valid, as a mutation's
// successor shares what the mutation did not touch. Without a string on
// the path taken, the copies only.
func retouch(rng *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for k, fv := range x {
			out[k] = fv
			keys = append(keys, k)
		}
		if len(keys) > 0 {
			slices.Sort(keys)
			k := keys[rng.IntN(len(keys))]
			out[k] = retouch(rng, x[k])
		}
		return out
	case []any:
		out := slices.Clone(x)
		if len(out) > 0 {
			i := rng.IntN(len(out))
			out[i] = retouch(rng, out[i])
		}
		return out
	case string:
		return x + "-" + string(rune('a'+rng.IntN(26)))
	}
	return v
}

// BenchmarkValidBeside validates a real Pod and Deployment changed in a
// few subtrees (retouch: the maps and lists on the changed paths copied,
// the rest shared) beside the object they were changed from, as the
// admission's next merge validates its live object beside the last merge
// result.
func BenchmarkValidBeside(b *testing.B) {
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
		v := in.Obj
		for range 3 {
			v = retouch(rng, v).(map[string]any)
		}
		if !validBeside(m.root.plan, v, in.Obj) {
			b.Fatal("the retouched object does not validate")
		}
		b.Run(in.Name, func(b *testing.B) {
			for b.Loop() {
				validBeside(m.root.plan, v, in.Obj)
			}
		})
	}
}
