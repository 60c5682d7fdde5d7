package jsonvalue

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// TestJSONEqualIsSemanticDeepEqual compares SemanticEqual with
// apiequality.Semantic.DeepEqual on real objects, their shared-structure
// perturbations (as mutation results) and deep copies, and on odd pairs.
func TestJSONEqualIsSemanticDeepEqual(t *testing.T) {
	nan := math.NaN()
	shared := map[string]any{"a": nan}
	for i, c := range []struct{ a, b any }{
		{map[string]any(nil), map[string]any{}},
		{[]any(nil), []any{}},
		{int64(1), float64(1)},
		{nan, nan},
		{shared, shared},
		{map[string]any{"x": shared}, map[string]any{"x": shared}},
		{map[string]any{"x": []any{shared}}, map[string]any{"x": []any{map[string]any{"a": nan}}}},
		{nil, map[string]any(nil)},
		{[]any{nil}, []any{nil}},
		{[]byte("a"), []byte("a")},
		{int(1), int64(1)},
		{map[string]any{"a": nil}, map[string]any{"b": nil}},
	} {
		if got, want := SemanticEqual(c.a, c.b), apiequality.Semantic.DeepEqual(c.a, c.b); got != want {
			t.Errorf("case %d: SemanticEqual(%#v, %#v) = %v, Semantic.DeepEqual says %v", i, c.a, c.b, got, want)
		}
	}

	inputs := testobjects.Inputs(t)
	r := rand.New(rand.NewPCG(11, 2026))
	equal := 0
	for i := 0; i < 2000; i++ {
		in := inputs[r.IntN(len(inputs))]
		a := valuetest.DeepCopy(in.Obj)
		var b any = a
		switch r.IntN(3) {
		case 0:
			b = valuetest.DeepCopy(a)
		case 1:
			for k := r.IntN(2); k >= 0; k-- {
				b = testobjects.PerturbShared(r, b)
			}
		default:
			b = testobjects.Perturb(r, valuetest.DeepCopy(a))
		}
		got, want := SemanticEqual(a, b), apiequality.Semantic.DeepEqual(a, b)
		if got != want {
			t.Fatalf("%d %s: jsonEqual = %v, Semantic.DeepEqual = %v\na: %#v\nb: %#v", i, in.Name, got, want, a, b)
		}
		if got {
			equal++
		}
	}
	if equal == 0 || equal == 2000 {
		t.Fatalf("%d of 2000 pairs equal: the test does not exercise both answers", equal)
	}
}

// TestIdentical: the same JSON value bit for bit, where SemanticEqual and
// Equal see equal values.
func TestIdentical(t *testing.T) {
	nan := math.NaN()
	for i, c := range []struct {
		a, b any
		want bool
	}{
		{map[string]any{"a": []any{int64(1), "x", nil}}, map[string]any{"a": []any{int64(1), "x", nil}}, true},
		{math.Copysign(0, -1), 0.0, false},
		{nan, nan, true},
		{map[string]any(nil), map[string]any{}, false},
		{[]any(nil), []any{}, false},
		{int64(1), 1.0, false},
		{map[string]any{"a": 1.5}, map[string]any{"a": 1.5}, true},
		{[]byte("a"), []byte("a"), false},
	} {
		if got := Identical(c.a, c.b); got != c.want {
			t.Errorf("case %d: Identical(%#v, %#v) = %v, want %v", i, c.a, c.b, got, c.want)
		}
	}
}

// TestValueEqual: JSONEqual on pairs that differ as Go values only, as
// JSON texts, and values that are not JSON-shaped.
func TestValueEqual(t *testing.T) {
	m := map[string]any{"a": int64(1)}
	l := []any{"x"}
	cases := []struct {
		a, b any
		want bool
	}{
		{nil, nil, true},
		{nil, map[string]any(nil), true},
		{[]any(nil), nil, true},
		{map[string]any(nil), []any(nil), true},
		{map[string]any{}, nil, false},
		{[]any{}, nil, false},
		{map[string]any{}, []any{}, false},
		{int64(1), 1.0, true},
		{1.0, int64(1), true},
		{int64(0), math.Copysign(0, -1), true},
		{int64(1), 1.5, false},
		{int64(9007199254740993), 9007199254740992.0, false},
		{1e19, int64(math.MaxInt64), false},
		{"1", int64(1), false},
		{true, "true", false},
		{m, m, true},
		{m, map[string]any{"a": 1.0}, true},
		{m, map[string]any{"a": int64(1), "b": nil}, false},
		{map[string]any{"a": nil}, map[string]any{"b": nil}, false},
		{l, l, true},
		{l, []any{"x"}, true},
		{l, []any{"x", "y"}, false},
		{l[:0], []any{}, true},
		{1, 1, false}, // not a JSON-shaped value
	}
	for _, tc := range cases {
		if got := JSONEqual(tc.a, tc.b); got != tc.want {
			t.Errorf("JSONEqual(%#v, %#v) = %v", tc.a, tc.b, got)
		}
		if got := JSONEqual(tc.b, tc.a); got != tc.want {
			t.Errorf("JSONEqual(%#v, %#v) = %v", tc.b, tc.a, got)
		}
	}
}

// TestSameSliceAndMap holds the sharing rule: the very same backing array
// or map, and nil told from empty (null is not [] or {}).
func TestSameSliceAndMap(t *testing.T) {
	s := []any{"a", "b"}
	m := map[string]any{"a": "b"}
	for _, c := range []struct {
		name string
		got  bool
		want bool
	}{
		{"a slice and itself", SameSlice(s, s), true},
		{"a slice and its prefix", SameSlice(s, s[:1]), false},
		{"a slice and an equal copy", SameSlice(s, []any{"a", "b"}), false},
		{"nil and nil slices", SameSlice(nil, nil), true},
		{"two empty slices", SameSlice([]any{}, make([]any, 0, 4)), true},
		{"a nil and an empty slice", SameSlice(nil, []any{}), false},
		{"an empty and a nil slice", SameSlice(s[:0], nil), false},
		{"a map and itself", SameMap(m, m), true},
		{"a map and an equal copy", SameMap(m, map[string]any{"a": "b"}), false},
		{"nil and nil maps", SameMap(nil, nil), true},
		{"a nil and an empty map", SameMap(nil, map[string]any{}), false},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}
