package jsonpatch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"k8s.io/apiserver/pkg/cel/mutation"
	"k8s.io/apiserver/pkg/cel/mutation/dynamic"

	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// checkConvertValueFast asserts that convertValueFast answers v as
// convertValueReference does, bit for bit, or declines; it returns whether
// it answered.
func checkConvertValueFast(t *testing.T, v ref.Val) bool {
	t.Helper()
	got, ok := convertValueFast(v)
	want, err := convertValueReference(v)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("convertValueFast answered %#v where the reference fails: %v", got, err)
	}
	if !valuetest.BitsEqual(got, want) {
		t.Fatalf("convertValueFast %#v\nreference %#v", got, want)
	}
	return true
}

// TestConvertValueFastIsReference evaluates JSONPatch values in
// kube-apiserver's own JSONPatch environment (evalPatch: the object is a
// ConfigMap) and holds the direct conversion to the structpb one: the
// values of CEL literals, Object{…} values and what expressions read from
// the object take the direct path; the others are declined and FromCEL
// asks upstream.
func TestConvertValueFastIsReference(t *testing.T) {
	for _, c := range []struct {
		value string
		fast  bool
	}{
		{`"s"`, true},
		{`"é\u2028<&>"`, true},
		{`null`, true},
		{`true`, true},
		{`0`, true},
		{`-1`, true},
		{`9007199254740991`, true},
		{`-9007199254740991`, true},
		{`9007199254740992`, true},
		{`-9223372036854775808`, true},
		{`9223372036854775807`, true},
		{`0u`, true},
		{`9007199254740991u`, true},
		{`9007199254740992u`, true},
		{`18446744073709551615u`, true},
		{`2.0`, true},
		{`2.5`, true},
		{`-0.0`, true},
		{`1e21`, true},
		{`1e20`, true},
		{`-9.3e18`, true},
		{`9.2e18`, true},
		{`1e-7`, true},
		{`[]`, true},
		{`{}`, true},
		{`[dyn(1), dyn("a"), dyn(2.5), dyn(null), dyn(true), dyn([dyn(1), dyn([2])]), dyn({"k": [3u]})]`, true},
		{`{"a": dyn({"b": [dyn(1), dyn({"c": null})]}), "d": dyn(-0.0)}`, true},
		// From TestConvertValueIsUpstreams (branch io).
		{`1e-300`, true},
		{`[dyn(1), dyn("a"), dyn(2.5), dyn(-0.0), dyn(null), dyn(false), dyn([dyn(1), dyn([2])]), dyn({"k": [{"j": 9007199254740993}]})]`, true},
		{`{"a": dyn({"b": 1.0}), "c": dyn([dyn(1), dyn(2u)]), "d": dyn(null)}`, true},
		{`Object.spec{}`, true},
		{`Object.spec{replicas: 2, paused: false, ratio: 0.5, whole: 3.0, neg: -0.0, big: 9007199254740993, huge: 9223372036854775807,
			selector: Object.spec.selector{matchLabels: {"a": "b"}}, names: ["x", "y"], empty: [],
			items: [Object.spec.items{name: "i", n: 1}], byKey: {"k": Object.spec.byKey{v: 2.0}}}`, true},
		{`[Object.spec.tolerations{key: "k", operator: "Exists"}, Object.spec.tolerations{}]`, true},
		{`{"k": Object.spec.x{a: [1.5, 2.0]}}`, true},
		// What expressions read from the object: cel-go's views of the Go
		// maps and slices the object is bound as (goMapViewType,
		// goListViewType), converted directly (goViewAsJSON).
		{`object`, true},
		{`object.metadata`, true},
		{`object.data`, true},
		{`[object.metadata, object.data.k]`, true},
		{`{"m": object.metadata, "l": dyn([object.data])}`, true},
		{`[object, object.metadata, dyn(object.data)]`, true},
		{`{"a": dyn({"b": dyn([object.data, dyn({})])}), "c": dyn([])}`, true},
		{`Object.spec{x: object.data.k, y: [object.metadata.name]}`, true},
		{`[1, 2].map(i, i * 2)`, true},
		{`[1, 2].map(i, {"v": i})`, true},
		{`Object.spec{replicas: 2, selector: Object.spec.selector{matchLabels: {"a": "b"}}, names: ["x"]}`, true},
		{`Object.spec{x: 9007199254740993, y: -0.0, z: 2.0, l: [], m: {}, n: [Object.spec.n{a: 1}]}`, true},
		{`Object.spec{x: 9223372036854775807}`, true},
		{`[Object.spec{a: 1}, Object.spec{b: [1, 2]}]`, true},
		{`{"o": Object.spec{a: "b"}}`, true},
		// Declined: the reference has the answer or the error.
		{`b"hi"`, false},
		{`timestamp("2024-01-02T03:04:05Z")`, false},
		{`duration("1m")`, false},
		{`[b"hi"]`, false},
		{`{1: "a"}`, false},
		{`{"a": {1: "b"}}`, false},
		{`["a"] + ["b"]`, false},
		{`0.0 / 0.0`, false},
		{`1.0 / 0.0`, false},
		{`[1.0 / 0.0]`, false},
		{`optional.of(1)`, false},
		{`Object.spec{x: null}`, false},
		{`Object.spec{x: b"b"}`, false},
		{`Object.spec{x: 1u}`, false},
		{`Object.spec{x: [[1]]}`, false},
		{`Object.spec{x: {"k": [1]}}`, false},
		{`Object.spec{x: object.metadata}`, false},
		{`Object.spec{x: 1.0 / 0.0}`, false},
		{`type(1)`, false},
		{`double("NaN")`, false},
		{`[double("Infinity")]`, false},
		{`Object.spec{x: double("-Infinity")}`, false},
		{`{1: 2}`, false},
		{`{"b": dyn(b"hi"), "t": dyn(timestamp("2024-01-02T03:04:05Z")), "d": dyn(duration("1m"))}`, false},
		{`Object.spec{x: {1: "a"}}`, false},
	} {
		t.Run(c.value, func(t *testing.T) {
			v := patchValue(t, c.value)
			if ok := checkConvertValueFast(t, v); ok != c.fast {
				t.Fatalf("direct conversion taken: %v, want %v", ok, c.fast)
			}
		})
	}
}

// patchValue is the value of the one operation of
// [JSONPatch{op: "add", path: "/a", value: <value>}] as kube-apiserver's
// evaluator gives it.
func patchValue(t *testing.T, value string) ref.Val {
	t.Helper()
	list, ok := evalPatch(t, `[JSONPatch{op: "add", path: "/a", value: `+value+`}]`).(traits.Lister)
	if !ok {
		t.Fatal("not a list")
	}
	op, ok := list.Get(types.Int(0)).(*mutation.JSONPatchVal)
	if !ok {
		t.Fatal("not a JSONPatch")
	}
	return op.Val
}

// TestConvertValueFastGoViews holds the direct conversion of cel-go's views
// of Go values (what expressions read from object, oldObject and params) to
// the reference: numbers at the edges, nesting, empty and nil maps and
// slices, null, and the Go types and strings it declines.
func TestConvertValueFastGoViews(t *testing.T) {
	for _, c := range []struct {
		name  string
		value any
		fast  bool
	}{
		{"empty map", map[string]any{}, true},
		{"nil map", map[string]any(nil), true},
		{"empty list", []any{}, true},
		{"nil list", []any(nil), true},
		{"null values", map[string]any{"a": nil, "l": []any{nil}}, true},
		{"nil map and list inside", map[string]any{"m": map[string]any(nil), "l": []any(nil)}, true},
		{"ints at the edges", []any{int64(0), int64(-1), int64(1<<53 - 1), int64(-(1<<53 - 1)), int64(1 << 53), int64(-(1 << 53)),
			int64(1<<53 + 1), int64(math.MaxInt64), int64(math.MinInt64)}, true},
		{"floats at the edges", []any{0.0, math.Copysign(0, -1), 0.5, 2.0, -3.0, 1e20, 1e21, 1e-7, 9.2e18, 9.3e18, -9.3e18,
			math.MaxFloat64, math.SmallestNonzeroFloat64, float64(1 << 63), float64(1 << 53), float64(1<<53 + 2)}, true},
		{"nested", map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "ports": []any{
			map[string]any{"containerPort": int64(80), "weight": 0.25}}, "env": []any{}}}, "paused": false}, "é\u2028<&>": "s"}, true},
		{"lists of lists", []any{[]any{[]any{}}, []any{map[string]any{}}}, true},
		{"NaN", []any{math.NaN()}, false},
		{"infinity", map[string]any{"a": math.Inf(-1)}, false},
		{"invalid UTF-8 value", []any{"a\xc3"}, false},
		{"invalid UTF-8 key", map[string]any{"\xff": "a"}, false},
		{"int32", map[string]any{"a": int32(7)}, false},
		{"uint64", []any{uint64(7)}, false},
		{"nested NaN", map[string]any{"a": []any{map[string]any{"b": math.NaN()}}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := types.DefaultTypeAdapter.NativeToValue(c.value)
			if ok := checkConvertValueFast(t, v); ok != c.fast {
				t.Fatalf("direct conversion taken: %v, want %v", ok, c.fast)
			}
			// The same value as a jsonvalue.View (compiler's views of
			// the object): converted directly as cel-go's view is.
			if ok := checkConvertValueFast(t, goView{v, c.value}); ok != c.fast {
				t.Fatalf("direct conversion of the jsonvalue.View taken: %v, want %v", ok, c.fast)
			}
		})
	}
}

// goView is a jsonvalue.View as the compiler's views are: cel-go's view of
// the Go value for every method, and the Go value itself from ViewOf.
type goView struct {
	ref.Val
	of any
}

func (g goView) ViewOf() any { return g.of }

// TestConvertValueFastCopiesGoViews checks that the direct conversion of a
// view returns new maps and slices: the operation's value is the caller's
// to change, and the object it was read from must not change with it.
func TestConvertValueFastCopiesGoViews(t *testing.T) {
	inner := []any{"x"}
	src := map[string]any{"m": map[string]any{"k": "v"}, "l": inner}
	got, ok := convertValueFast(types.DefaultTypeAdapter.NativeToValue(src))
	if !ok {
		t.Fatal("declined")
	}
	m := got.(map[string]any)
	m["m"].(map[string]any)["k"] = "changed"
	m["l"].([]any)[0] = "changed"
	m["new"] = true
	if src["m"].(map[string]any)["k"] != "v" || inner[0] != "x" || len(src) != 2 {
		t.Fatalf("the source changed: %#v", src)
	}
}

// TestConvertValueFastRandom holds the direct conversion to the reference on
// random values of every shape it models or declines: scalars at the
// edges of the JSON number ranges, strings with invalid UTF-8, CEL lists
// and maps, the adapter's lists and maps over native values, and Objects
// nesting them.
func TestConvertValueFastRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 1))
	fast := 0
	const n = 20000
	for i := 0; i < n; i++ {
		v := randomVal(r, 3, "Object")
		if checkConvertValueFast(t, v) {
			fast++
		}
	}
	if fast < n/4 {
		t.Fatalf("the direct conversion answered %d of %d values", fast, n)
	}
}

var edgeInts = []int64{0, 1, -1, 1<<53 - 1, 1 << 53, 1<<53 + 1, -(1<<53 - 1), -(1 << 53), math.MaxInt64, math.MinInt64, 1<<63 - 512, 1<<63 - 513}

var edgeFloats = []float64{0, math.Copysign(0, -1), 0.5, 2, -3, 1e20, 1e21, 1e-7, 9.2e18, 9.3e18, -9.3e18, math.NaN(), math.Inf(1), math.MaxFloat64, 1 << 63}

var edgeStrings = []string{"", "a", "é", "\u2028", "\xff", "a\xc3", "<&>"}

func randomScalar(r *rand.Rand) ref.Val {
	switch r.IntN(7) {
	case 0:
		return types.NullValue
	case 1:
		return types.Bool(r.IntN(2) == 0)
	case 2:
		return types.Int(edgeInts[r.IntN(len(edgeInts))])
	case 3:
		return types.Uint(uint64(edgeInts[r.IntN(len(edgeInts))]))
	case 4:
		return types.Double(edgeFloats[r.IntN(len(edgeFloats))])
	case 5:
		return types.Bytes("b")
	}
	return types.String(edgeStrings[r.IntN(len(edgeStrings))])
}

func randomNative(r *rand.Rand, depth int) any {
	switch k := r.IntN(9); {
	case depth > 0 && k == 0:
		l := make([]any, r.IntN(3))
		for i := range l {
			l[i] = randomNative(r, depth-1)
		}
		return l
	case depth > 0 && k == 1:
		m := map[string]any{}
		for i := r.IntN(3); i > 0; i-- {
			m[edgeStrings[r.IntN(len(edgeStrings))]] = randomNative(r, depth-1)
		}
		return m
	case k == 2:
		return nil
	case k == 3:
		return r.IntN(2) == 0
	case k == 4:
		return edgeInts[r.IntN(len(edgeInts))]
	case k == 5:
		return edgeFloats[r.IntN(len(edgeFloats))]
	case k == 6:
		return int32(7) // a native type the direct path does not model
	}
	return edgeStrings[r.IntN(len(edgeStrings))]
}

func randomVal(r *rand.Rand, depth int, path string) ref.Val {
	if depth == 0 {
		return randomScalar(r)
	}
	switch r.IntN(7) {
	case 0:
		items := make([]ref.Val, r.IntN(3))
		for i := range items {
			items[i] = randomVal(r, depth-1, path)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, items)
	case 1:
		m := map[ref.Val]ref.Val{}
		for i := r.IntN(3); i > 0; i-- {
			var k ref.Val = types.String(edgeStrings[r.IntN(len(edgeStrings))])
			if r.IntN(8) == 0 {
				k = types.Int(i)
			}
			m[k] = randomVal(r, depth-1, path)
		}
		return types.NewRefValMap(types.DefaultTypeAdapter, m)
	case 2:
		return types.DefaultTypeAdapter.NativeToValue(randomNative(r, depth))
	case 3, 4:
		fields := map[string]ref.Val{}
		for i := r.IntN(4); i > 0; i-- {
			name := fmt.Sprintf("f%d", r.IntN(5))
			fields[name] = randomVal(r, depth-1, path+"."+name)
		}
		return dynamic.NewObjectVal(types.NewObjectType(path), fields)
	}
	return randomScalar(r)
}

// TestFromCELTakesTheReferenceForWhatItDeclines checks that a value the
// direct conversion declines still gets upstream's value or error.
func TestFromCELTakesTheReferenceForWhatItDeclines(t *testing.T) {
	ops, err := FromCEL(evalPatch(t, `[JSONPatch{op: "add", path: "/a", value: b"hi"}]`))
	if err != nil || len(ops) != 1 || ops[0].Value != "aGk=" {
		t.Fatalf("got %#v, %v", ops, err)
	}
	_, err = FromCEL(evalPatch(t, `[JSONPatch{op: "add", path: "/a", value: Object.spec{x: null}}]`))
	if err == nil || !strings.Contains(err.Error(), "JSONPath valueExpression evaluated to a type that could not marshal to JSON") {
		t.Fatalf("error = %v", err)
	}
}

// TestOperationValueIsReference holds operationValue, an Object's names
// checked and its value converted in one walk, to the reference (upstream's
// CheckTypeNames, then convertValue): the same value or the same error, on
// random values, Objects with right names and Objects with a wrong name at
// some depth.
func TestOperationValueIsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 6))
	objects, wrong := 0, 0
	const n = 20000
	for i := 0; i < n; i++ {
		v := randomVal(r, 3, "Object")
		switch r.IntN(3) {
		case 0:
			// An Object under a field whose name its type name may not follow.
			names := []string{"Object.spec", "Object.x", "Object", "Thing.spec"}
			inner := randomVal(r, 3, names[r.IntN(len(names))])
			v = dynamic.NewObjectVal(types.NewObjectType("Object"), map[string]ref.Val{
				"spec": inner,
				"a":    types.NewRefValList(types.DefaultTypeAdapter, []ref.Val{randomVal(r, 2, "Object.a")}),
			})
		case 1:
			v = dynamic.NewObjectVal(types.NewObjectType("Object"), map[string]ref.Val{"spec": randomVal(r, 3, "Object.spec")})
		}
		if _, ok := v.(*dynamic.ObjectVal); ok {
			objects++
		}
		got, gotErr := operationValue(v)
		want, wantErr := operationValueReference(v)
		// Upstream's conversion of a map meets its fields in map order: which
		// field's error it tells varies from one call to the next (the
		// operation's error is the reference's, by the same code), not its
		// kind.
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && errorKind(gotErr) != errorKind(wantErr) {
			t.Fatalf("%v: error %v, reference %v", v, gotErr, wantErr)
		}
		if wantErr != nil {
			if strings.HasPrefix(wantErr.Error(), "type mismatch") {
				wrong++
			}
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v:\n got %#v\nwant %#v", v, got, want)
		}
	}
	if objects < n/2 || wrong < n/20 {
		t.Fatalf("%d Objects, %d wrong names of %d values: too few to tell", objects, wrong, n)
	}
}

// errorKind is an error's text up to the first colon.
func errorKind(err error) string {
	kind, _, _ := strings.Cut(err.Error(), ":")
	return kind
}
