package jsonpatch

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// checkUnnormalized runs Apply and ApplyUnnormalized on doc and fails
// unless ApplyUnnormalized's result, when ok and IsNormalized, is Apply's
// (Apply succeeding), and doc is left unchanged. It reports whether
// ApplyUnnormalized vouched for its result.
func checkUnnormalized(t testing.TB, doc map[string]any, ops []Operation) (vouched bool) {
	t.Helper()
	before := valuetest.DeepCopy(doc)
	want, wantErr := Apply(doc, ops)
	got, ok := ApplyUnnormalized(doc, ops)
	if !valuetest.BitsEqual(doc, before) {
		t.Fatalf("the document was modified: %#v, was %#v", doc, before)
	}
	if !ok {
		if got != nil {
			t.Fatalf("ok=false with a result %#v", got)
		}
		return false
	}
	if !IsNormalized(got) {
		return false
	}
	if wantErr != nil {
		t.Fatalf("ApplyUnnormalized vouched for %#v, Apply failed: %v\ndoc: %#v\nops: %+v", got, wantErr, before, ops)
	}
	if !valuetest.BitsEqual(got, want) {
		t.Fatalf("ApplyUnnormalized vouched for\n%#v\nApply gave\n%#v\ndoc: %#v\nops: %+v", got, want, before, ops)
	}
	return true
}

func TestApplyUnnormalizedBailsOut(t *testing.T) {
	add := func(path string, v any) Operation { return Operation{Op: "add", Path: path, Value: v, HasValue: true} }
	rep := func(path string, v any) Operation {
		return Operation{Op: "replace", Path: path, Value: v, HasValue: true}
	}
	rm := func(path string) Operation { return Operation{Op: "remove", Path: path} }
	tests := []struct {
		name string
		doc  map[string]any
		ops  []Operation
	}{
		{"nil document", nil, []Operation{add("/a", "x")}},
		{"test", map[string]any{"a": "x"}, []Operation{{Op: "test", Path: "/a", Value: "x", HasValue: true}}},
		{"copy", map[string]any{"a": "x"}, []Operation{{Op: "copy", From: "/a", Path: "/b"}}},
		{"move", map[string]any{"a": "x"}, []Operation{{Op: "move", From: "/a", Path: "/b"}}},
		{"unknown op", map[string]any{"a": "x"}, []Operation{{Op: "bogus", Path: "/a"}}},
		{"test after a valid op", map[string]any{"a": "x"}, []Operation{add("/b", "y"), {Op: "test", Path: "/a", Value: "x", HasValue: true}}},
		{"missing path", map[string]any{}, []Operation{add("/a/b", "x")}},
		{"remove of a missing key", map[string]any{}, []Operation{rm("/a")}},
		{"invalid value", map[string]any{}, []Operation{add("/a", math.NaN())}},
		{"panic below a null value", map[string]any{}, []Operation{add("/a", nil), add("/a/b", "x")}},
		{"root replaced by an array", map[string]any{"a": "x"}, []Operation{rep("", []any{})}},
		{"through a nil map", map[string]any{"m": map[string]any(nil)}, []Operation{add("/m/a", "x")}},
		{"through a nil slice", map[string]any{"s": []any(nil)}, []Operation{add("/s/-", "x")}},
		{"through a typed map", map[string]any{"m": map[string]string{"a": "b"}}, []Operation{add("/m/c", "d")}},
		{"through a typed slice", map[string]any{"s": []string{"a"}}, []Operation{add("/s/-", "d")}},
		{"removing NaN", map[string]any{"a": math.NaN()}, []Operation{rm("/a")}},
		{"replacing +Inf", map[string]any{"a": math.Inf(1)}, []Operation{rep("/a", int64(1))}},
		{"adding over -Inf", map[string]any{"a": math.Inf(-1)}, []Operation{add("/a", int64(1))}},
		{"removing nested NaN", map[string]any{"a": []any{map[string]any{"b": math.NaN()}}}, []Operation{rm("/a/0")}},
		{"replacing NaN in a list", map[string]any{"a": []any{math.NaN()}}, []Operation{rep("/a/0", "x")}},
		{"removing a Go int", map[string]any{"a": 5}, []Operation{rm("/a")}},
		{"removing a func", map[string]any{"a": func() {}}, []Operation{rm("/a")}},
		{"removing an invalid key", map[string]any{"a": map[string]any{"k\xff": "v"}}, []Operation{rm("/a")}},
		{"replacing the root with NaN inside", map[string]any{"a": math.NaN()}, []Operation{rep("", map[string]any{})}},
		// Normalizing renames "k\xff" onto "k\uFFFD" (sorting last, it
		// wins): Apply fails to add below the string, which a remove of
		// the whole map must not hide.
		{"colliding keys", map[string]any{"p": map[string]any{"k\uFFFD": map[string]any{}, "k\xff": "s"}},
			[]Operation{add("/p/k\uFFFD/b", int64(1)), rm("/p")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := ApplyUnnormalized(tt.doc, tt.ops); ok {
				t.Fatalf("ok with %#v", got)
			}
			checkUnnormalized(t, tt.doc, tt.ops)
		})
	}
}

func TestApplyUnnormalizedIsApply(t *testing.T) {
	negZero := math.Copysign(0, -1)
	add := func(path string, v any) Operation { return Operation{Op: "add", Path: path, Value: v, HasValue: true} }
	tests := []struct {
		name string
		doc  map[string]any
		ops  []Operation
		// normalized tells whether the result is IsNormalized.
		normalized bool
	}{
		{"label", map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}, "n": 1.5},
			[]Operation{add("/metadata/labels/c", "d")}, true},
		{"list", map[string]any{"l": []any{int64(1), "x"}}, []Operation{add("/l/-", int64(2)), add("/l/0", nil), {Op: "remove", Path: "/l/1"}}, true},
		{"replace of a missing key adds it", map[string]any{}, []Operation{{Op: "replace", Path: "/a", Value: 2.0, HasValue: true}}, true},
		{"no operations", map[string]any{"a": "b"}, nil, true},
		{"-0 value", map[string]any{"a": "b"}, []Operation{add("/z", negZero)}, true},
		{"null value", map[string]any{"a": "b"}, []Operation{add("/z", nil)}, true},
		{"dropping what normalizing changes", map[string]any{"a": 2.0, "b": "x\xff", "c": map[string]any(nil), "d": []any{0.0, negZero}},
			[]Operation{{Op: "remove", Path: "/a"}, {Op: "replace", Path: "/b", Value: "y", HasValue: true}, add("/c", int64(1)), {Op: "remove", Path: "/d"}}, true},
		{"keeping a whole float", map[string]any{"a": 2.0}, []Operation{add("/b", "x")}, false},
		{"keeping 0", map[string]any{"a": 0.0}, []Operation{add("/b", "x")}, false},
		{"keeping -0", map[string]any{"a": negZero}, []Operation{add("/b", "x")}, false},
		{"keeping -0 with a null value", map[string]any{"a": negZero}, []Operation{add("/b", nil)}, true}, // finalized to int64 0
		{"keeping an invalid string", map[string]any{"a": "\xff"}, []Operation{add("/b", "x")}, false},
		{"keeping an invalid key", map[string]any{"a\xff": "x"}, []Operation{add("/a\uFFFD", "y")}, false},
		{"keeping NaN", map[string]any{"a": math.NaN()}, []Operation{add("/b", "x")}, false},
		{"keeping a nil map", map[string]any{"a": map[string]any(nil)}, []Operation{add("/b", "x")}, false},
		{"keeping a Go int", map[string]any{"a": 1}, []Operation{add("/b", "x")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ApplyUnnormalized(tt.doc, tt.ops)
			if !ok {
				t.Fatal("not ok")
			}
			if IsNormalized(got) != tt.normalized {
				t.Fatalf("IsNormalized(%#v) = %v", got, !tt.normalized)
			}
			if checkUnnormalized(t, tt.doc, tt.ops) != tt.normalized {
				t.Fatal("vouched differently")
			}
		})
	}
}

func TestIsNormalizedFloat(t *testing.T) {
	for f, want := range map[float64]bool{
		1.5: true, -1.5: true, 1e-7: true, 1e20: true, 9223372036854775808.0: true, -9223372036854775808.0 * 2: true,
		0: false, 2: false, -3: false, 9007199254740993: false, -9223372036854775808.0: false,
		math.NaN(): false, math.Inf(1): false, math.Inf(-1): false, math.Copysign(0, -1): false,
	} {
		if got := IsNormalizedFloat(f); got != want {
			t.Errorf("IsNormalizedFloat(%v) = %v", f, got)
		}
		// The definition: the float Apply would leave as it is.
		got, err := Apply(map[string]any{"f": f}, nil)
		same := err == nil && valuetest.BitsEqual(got["f"], f)
		if same != want {
			t.Errorf("Apply keeps %v: %v (%#v, %v)", f, same, got, err)
		}
	}
}

// oddValues are values that normalizing changes or refuses, or that an
// unstructured object may hold all the same.
var oddValues = []func() any{
	func() any { return "a\xffb" },
	func() any { return math.NaN() },
	func() any { return math.Inf(1) },
	func() any { return math.Inf(-1) },
	func() any { return 2.0 },
	func() any { return 0.0 },
	func() any { return math.Copysign(0, -1) },
	func() any { return 1e300 },
	func() any { return -9223372036854775808.0 },
	func() any { return 9223372036854775808.0 },
	func() any { return map[string]any(nil) },
	func() any { return []any(nil) },
	func() any { return map[string]any{"a\xff": int64(1), "a\uFFFD": int64(2)} },
	func() any { return map[string]any{"a\uFFFD": map[string]any{}, "a\xff": "s"} },
	func() any { return map[string]any{"a\xff": map[string]any{"b": 1.5}} },
	func() any { return 5 },
	func() any { return int32(-2) },
	func() any { return float32(1.5) },
	func() any { return map[string]string{"a": "b"} },
	func() any { return []string{"x"} },
	func() any { return json.Number("12") },
	func() any { return json.Number("x") },
	func() any { return []any{2.0, "ok", nil} },
	func() any { return map[string]any{"a": 1.5, "b": []any{}} },
	func() any { return func() {} },
}

var oddKeys = []string{"a\xff", "a\uFFFD", "\xfe", "b"}

// perturbOdd plants one odd value at a random place of v (copied on the
// way, v is not modified).
func perturbOdd(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return oddValues[r.IntN(len(oddValues))]()
		}
		y := make(map[string]any, len(x)+1)
		for k, e := range x {
			y[k] = e
		}
		keys := slices.Sorted(maps.Keys(y))
		switch op := r.IntN(6); {
		case len(keys) == 0 || op == 0:
			y[oddKeys[r.IntN(len(oddKeys))]] = oddValues[r.IntN(len(oddValues))]()
		case op == 1:
			y[keys[r.IntN(len(keys))]] = oddValues[r.IntN(len(oddValues))]()
		default:
			k := keys[r.IntN(len(keys))]
			y[k] = perturbOdd(r, y[k])
		}
		return y
	case []any:
		if x == nil {
			return oddValues[r.IntN(len(oddValues))]()
		}
		y := slices.Clone(x)
		if len(y) == 0 || r.IntN(5) == 0 {
			return append(y, oddValues[r.IntN(len(oddValues))]())
		}
		i := r.IntN(len(y))
		y[i] = perturbOdd(r, y[i])
		return y
	default:
		return oddValues[r.IntN(len(oddValues))]()
	}
}

// unnormalizedCase generates a document with zero to three odd values and
// a patch, mostly of add, remove and replace operations, some of them on
// the odd values' paths.
func unnormalizedCase(r *rand.Rand) (map[string]any, []Operation) {
	g := gen{r}
	var doc any = g.doc()
	if r.IntN(4) != 0 {
		// Start from a normalized document (g.doc has whole floats and -0).
		b, err := json.Marshal(doc)
		if err != nil {
			panic(err)
		}
		var m map[string]any
		if err := unmarshalObject(b, &m); err != nil {
			panic(err)
		}
		doc = m
	}
	for i := r.IntN(4); i > 0; i-- {
		doc = perturbOdd(r, doc)
	}
	m := doc.(map[string]any)
	ops := g.ops(m)
	if len(ops) > 2 && r.IntN(2) == 0 {
		ops = ops[:1+r.IntN(2)] // most patches of several operations fail
	}
	if r.IntN(4) != 0 {
		kinds := []string{"add", "remove", "replace"}
		for i := range ops {
			ops[i].Op = kinds[r.IntN(len(kinds))]
		}
	}
	for i := range ops {
		if ops[i].HasValue && r.IntN(15) == 0 {
			ops[i].Value = oddValues[r.IntN(len(oddValues))]()
		}
	}
	return m, ops
}

func TestApplyUnnormalizedRandomized(t *testing.T) {
	n := valuetest.Sweep(30000, 3000) // make test-long: the full sweep
	vouched, clean := 0, 0
	for i := 0; i < n; i++ {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		doc, ops := unnormalizedCase(r)
		if checkUnnormalized(t, doc, ops) {
			vouched++
		}
		// Documents as JSON decoding gives them: ApplyUnnormalized vouches
		// for every patch of add, remove and replace that Apply applies.
		g := gen{r}
		doc = jsonRoundTrip(t, g.doc())
		ops = g.ops(doc)
		kinds := []string{"add", "remove", "replace"}
		for i := range ops {
			ops[i].Op = kinds[r.IntN(len(kinds))]
		}
		if res, err := Apply(doc, ops); err == nil && res != nil {
			clean++
			if !checkUnnormalized(t, doc, ops) {
				t.Fatalf("no answer for a normalized document\ndoc: %#v\nops: %+v", doc, ops)
			}
		}
	}
	if vouched < n/25 || clean < n/25 {
		t.Errorf("ApplyUnnormalized vouched for only %d of %d results (%d clean)", vouched, n, clean)
	}
	t.Logf("vouched for %d of %d perturbed cases, and %d clean ones", vouched, n, clean)
}

// jsonRoundTrip is the document as JSON decoding presents it.
func jsonRoundTrip(t testing.TB, doc map[string]any) map[string]any {
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := unmarshalObject(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// FuzzApplyUnnormalized checks that ApplyUnnormalized's result, when it
// vouches for it and it is a fixed point of normalization, is Apply's, on
// generated documents with odd values and patches.
func FuzzApplyUnnormalized(f *testing.F) {
	for i := uint64(0); i < 16; i++ {
		f.Add(i, i*31+1)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		doc, ops := unnormalizedCase(rand.New(rand.NewPCG(a, b)))
		checkUnnormalized(t, doc, ops)
	})
}

func ExampleApplyUnnormalized() {
	doc := map[string]any{"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"replicas": 2.0}}
	ops := []Operation{{Op: "add", Path: "/metadata/labels", Value: map[string]any{"team": "shop"}, HasValue: true}}
	if out, ok := ApplyUnnormalized(doc, ops); ok && IsNormalized(out) {
		fmt.Println("unnormalized:", out)
	} else {
		out, err := Apply(doc, ops)
		fmt.Println("Apply:", out, err)
	}
	// Output: Apply: map[metadata:map[labels:map[team:shop] name:web] spec:map[replicas:2]] <nil>
}
