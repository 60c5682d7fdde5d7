package compiler

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/mutation"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/internal/celobject"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// jsonPatchCases are JSONPatch constructions over every kind of field
// value: constants, strings of the object (views), dyn strings and dyn
// values of other types (upstream's error), a field that fails, an
// unknown field, optional fields (left to cel-go), in lists and
// comprehensions. At most one field of each is of a wrong type: upstream
// reads its map in Go's random order, so with two the error it reports
// would differ from one evaluation to the next whatever the plan.
var jsonPatchCases = []string{
	`[JSONPatch{op: "add", path: "/metadata/labels/a", value: "b"}]`,
	`[JSONPatch{op: "remove", path: "/metadata/labels"}]`,
	`[JSONPatch{op: "copy", from: "/metadata/labels", path: "/metadata/annotations"}]`,
	`[JSONPatch{path: "/x", op: "move", from: "/y"}, JSONPatch{value: 1, path: "/z", op: "test"}]`,
	`[JSONPatch{}]`,
	`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/team"), value: object.spec.items[0].name}]`,
	`[JSONPatch{op: object.spec.items[1].name, path: "/" + object.spec.items[2].image, value: object.spec}]`,
	`[JSONPatch{op: dyn("add"), path: dyn("/a"), from: dyn("/b"), value: dyn(object.spec.items)}]`,
	`[JSONPatch{op: dyn(1), path: "/a", value: 1}]`,
	`[JSONPatch{op: "add", path: dyn(b"/a"), value: 1}]`,
	`[JSONPatch{op: "add", path: "/a", from: dyn(2.5), value: 1}]`,
	`[JSONPatch{op: dyn(object.spec.items[3].n), path: "/a"}]`,
	`[JSONPatch{op: "add", path: "/a", value: object.spec.items[9]}]`,
	`[JSONPatch{op: "add", path: object.spec.missing, value: 1}]`,
	`[JSONPatch{op: "add", path: "/a", value: 1, op: "remove"}]`,
	`[JSONPatch{op: dyn(1), path: "/a", op: "remove"}]`,
	`[JSONPatch{op: "add", path: "/a", op: dyn(1)}]`,
	`[JSONPatch{op: "add", path: "/a", value: 1, other: 2}]`,
	`[JSONPatch{op: "add", path: "/a", ?value: optional.of(1)}]`,
	`[JSONPatch{op: "add", path: "/a", ?value: optional.none()}]`,
	`[JSONPatch{op: "add", path: "/a", value: optional.of(1)}]`,
	`object.spec.items.map(i, JSONPatch{op: "add", path: "/x/" + string(size(i)), value: i})`,
	`has(object.metadata) ? [JSONPatch{op: "add", path: "/a", value: {"k": object.spec.items[2].image}}] : []`,
	`JSONPatch{op: "add", path: "/a", value: 1}.op + JSONPatch{op: "x", path: "/b"}.path`,
	`JSONPatch{op: "add", path: "/a", value: [1, 2]} == JSONPatch{op: "add", path: "/a", value: [1, 2]}`,
}

// TestJSONPatchOnceIsTheProviders holds the JSONPatch constructions
// jsonPatchOnce builds to cel-go's own plan (evalObj and the provider's
// JSONPatchType.Val): the same value, error, cost and remaining budget,
// compiled as variables, matchConditions and JSON patch mutations; and
// checks that the cases are planned through jsonPatchOnce at all.
func TestJSONPatchOnceIsTheProviders(t *testing.T) {
	c, refC := twoCompilers(t)
	obj := map[string]any{"metadata": map[string]any{"name": "n"}, "spec": map[string]any{"items": []any{
		map[string]any{"name": "a"}, map[string]any{"name": "add"}, map[string]any{"image": "nginx"},
		map[string]any{"n": int64(3)},
	}}}
	planned := 0
	for _, expr := range jsonPatchCases {
		mp := policySpec{variables: [][2]string{{"v", expr}}, conditions: [][2]string{{"c", expr}}, jp: []string{expr}}.build()
		p, err := c.Compile(mp)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		ref, err := refC.Compile(mp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Mutations {
			if e.Err != nil {
				t.Logf("%s does not compile: %v", expr, e.Err)
				continue
			}
			n := jsonPatchSteps(t, e)
			if n == 0 && !strings.Contains(expr, "?value") {
				t.Errorf("%s: no construction planned by jsonPatchOnce", expr)
			}
			planned += n
		}
		vals, errs := sameResults(t, expr, p, unplanned(t, ref), Input{Object: obj, OldObject: obj})
		if vals+errs == 0 {
			t.Errorf("%s: nothing compared", expr)
		}
	}
	if planned < len(jsonPatchCases)-6 {
		t.Errorf("%d JSONPatch constructions planned by jsonPatchOnce: the cases are meant to exercise it", planned)
	}
}

// jsonPatchSteps plans e again with planOnce and counts the steps it made
// jsonPatchOnce.
func jsonPatchSteps(t *testing.T, e *Expression) int {
	t.Helper()
	n := 0
	count := func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		out, err := planOnce(i)
		if _, ok := out.(*jsonPatchOnce); ok {
			n++
		}
		return out, err
	}
	if _, err := e.env.Program(e.ast, cel.InterruptCheckFrequency(celconfig.CheckFrequency), cel.CustomDecoratorV2(count)); err != nil {
		t.Fatalf("%s: %v", e.Source, err)
	}
	return n
}

// TestMirrorsEvalObj checks the layout check itself: cel-go's evalObj is
// recognized, its list construction and look-alike types are not.
func TestMirrorsEvalObj(t *testing.T) {
	c, _ := twoCompilers(t)
	p, err := c.Compile(policySpec{jp: []string{`[JSONPatch{op: "add", path: "/a", value: 1}]`}}.build())
	if err != nil || p.Mutations[0].Err != nil {
		t.Fatalf("%v %v", err, p.Mutations[0])
	}
	got := map[string]bool{}
	find := func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		if _, ok := i.(interpreter.InterpretableConstructor); ok {
			got[reflect.TypeOf(i).String()] = mirrorsEvalObj(reflect.TypeOf(i))
		}
		return i, nil
	}
	e := p.Mutations[0]
	if _, err := e.env.Program(e.ast, cel.CustomDecoratorV2(find)); err != nil {
		t.Fatal(err)
	}
	if !got["*interpreter.evalObj"] || got["*interpreter.evalList"] || len(got) != 2 {
		t.Errorf("constructions and whether they mirror evalObj: %v", got)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[evalObjLayout](), reflect.TypeFor[*evalObjLayout](), reflect.TypeFor[*jsonPatchOnce]()} {
		if mirrorsEvalObj(typ) {
			t.Errorf("%v taken for evalObj", typ)
		}
	}
}

// BenchmarkJSONPatchConstruction evaluates the load policies' label-team
// mutation (one JSONPatch construction) planned by planOnce, with
// jsonPatchOnce and with the construction left to cel-go (typeOnce, as
// before it), in one binary: their ratio is the change's.
func BenchmarkJSONPatchConstruction(b *testing.B) {
	benchmarkConstruction(b, policySpec{variables: [][2]string{{"team", `"shop"`}},
		jp: []string{`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/team"), value: variables.team}]`}}.build())
}

// benchmarkConstruction evaluates the policy's first mutation planned by
// planOnce and by planOnce with every construction it planned as
// jsonPatchOnce left to cel-go under typeOnce.
func benchmarkConstruction(b *testing.B, spec *admissionregistrationv1.MutatingAdmissionPolicy) {
	in := Input{Object: map[string]any{"metadata": map[string]any{"name": "n"}, "spec": map[string]any{}}}
	asBefore := func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		out, err := planOnce(i)
		if c, ok := out.(*jsonPatchOnce); ok {
			return &typeOnce{InterpretableConstructor: c.InterpretableConstructor, typ: c.typ}, nil
		}
		return out, err
	}
	for _, plan := range []string{"planOnce", "typeOnce"} {
		c, err := New()
		if err != nil {
			b.Fatal(err)
		}
		p, err := c.Compile(spec)
		if err != nil {
			b.Fatal(err)
		}
		if plan == "typeOnce" {
			e := p.Mutations[0]
			prog, err := e.env.Program(e.ast, cel.InterruptCheckFrequency(celconfig.CheckFrequency), cel.CustomDecoratorV2(asBefore))
			if err != nil {
				b.Fatal(err)
			}
			e.prog = &lazyProgram{prog: prog}
		}
		b.Run("plan="+plan, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a := p.NewActivation(context.Background(), in)
				res, _, err := a.Eval(p.Mutations[0], MutationBudget)
				if err != nil || res.Err != nil {
					b.Fatal(err, res.Err)
				}
				a.Release()
			}
		})
	}
}

// objectGen generates random ApplyConfiguration expressions whose Object
// constructions sit where objectOnce takes them (fields, list items, map
// values, conditional branches) and where it does not (a function's
// argument, a comprehension, a variable), over every kind of field value:
// constants of every type, the object's values (views), values that fail,
// optional fields present, absent and not optional, nested Objects named
// right and, at most once per expression (upstream joins its errors in
// map order), wrong; a map key that is not a string, once too.
type objectGen struct {
	r *rand.Rand
	// wrong: a nested Object is named wrong; badKey: a map has a key
	// that is not a string (upstream's conversion fails on the first it
	// meets, in map order: one per expression).
	wrong, badKey bool
}

func (g *objectGen) pick(s ...string) string { return s[g.r.Intn(len(s))] }

// object is a construction of the Object at path (its type name path, or
// a wrong one).
func (g *objectGen) object(path string, depth int) string {
	name := path
	if depth > 0 && !g.wrong && g.r.Intn(8) == 0 {
		g.wrong, name = true, g.pick("Object", path+".x", "Object.other")
	}
	var fields []string
	used := map[string]bool{}
	for range g.r.Intn(5) {
		f := g.pick("a", "b", "spec", "metadata", "c", "labels")
		if used[f] {
			continue
		}
		used[f] = true
		if g.r.Intn(8) == 0 {
			fields = append(fields, "?"+f+": "+g.pick("optional.of("+g.value(path+"."+f, depth+1)+")", "optional.none()",
				"object.?spec.?items[?0].?name", "object.?spec.?nope", "dyn(1)", "dyn(object.spec.items[0].name)"))
			continue
		}
		fields = append(fields, f+": "+g.value(path+"."+f, depth+1))
	}
	return name + "{" + strings.Join(fields, ", ") + "}"
}

// value is the value of a field whose nested Objects are at path.
func (g *objectGen) value(path string, depth int) string {
	if depth > 3 {
		return g.scalar()
	}
	switch g.r.Intn(14) {
	case 0, 1, 2:
		return g.object(path, depth)
	case 3:
		var items []string
		scalars := g.r.Intn(3) == 0
		for range g.r.Intn(4) {
			if scalars {
				items = append(items, "dyn("+g.scalar()+")")
			} else {
				items = append(items, g.object(path, depth+1))
			}
		}
		return "[" + strings.Join(items, ", ") + "]"
	case 4:
		switch g.r.Intn(4) {
		case 0:
			if !g.badKey {
				g.badKey = true
				return `{1: "x"}`
			}
		case 1:
			return `{"k": ` + g.object(path, depth+1) + `, "l": ` + g.object(path, depth+1) + "}"
		}
		return `{"k": ` + g.value(path, depth+1) + "}"
	case 5:
		cond := "size(object.spec.items) > " + g.pick("2", "9") + " ? "
		if g.r.Intn(3) == 0 {
			return cond + "dyn(" + g.scalar() + ") : dyn(" + g.scalar() + ")"
		}
		return cond + g.object(path, depth+1) + " : " + g.object(path, depth+1)
	case 7:
		// A list of lists: upstream's conversion hands the inner list over
		// as its CEL values.
		return "[[" + g.object(path, depth+1) + "], []]"
	case 6:
		// Not taken: an argument, a comprehension's result read further, a
		// variable.
		return g.pick("dyn("+g.object(path, depth+1)+")", "[1, 2].map(x, "+g.object(path, depth+1)+").filter(y, true)",
			"[1, 2].map(x, "+g.object(path, depth+1)+")[0]", "variables.v")
	case 8:
		// Taken: the items a map macro appends.
		o := g.object(path, depth+1)
		return g.pick("[1, 2].map(x, "+o+")", "object.spec.items.map(i, "+o+")",
			"object.spec.items.map(i, has(i.name), "+o+")", "[1, 2, 3].map(x, x > 1, "+o+")",
			"[].map(x, "+o+")", "object.spec.items.map(i, size(object.spec.items) > 2 ? "+o+" : dyn(i))",
			"object.spec.items.map(i, [i.name].map(n, "+o+"))")
	}
	return g.scalar()
}

func (g *objectGen) scalar() string {
	return g.pick(`"s"`, "1", "-7", "2.5", "true", "null", `b"x"`, "3u", "[]", "{}", `["a", "b"]`, `{"x": 1}`,
		"object.spec.items[0].name", "object.spec.items[3].n", "object.spec.items", "object.spec", "object.spec.items[4]",
		"object.spec.items[9]", "object.spec.missing", `dyn("d")`, "1 / 0", `duration("1s")`)
}

// objectGenInput is the object and old object objectGen's expressions are
// evaluated on.
func objectGenInput() Input {
	obj := map[string]any{"metadata": map[string]any{"name": "n"}, "spec": map[string]any{"items": []any{
		map[string]any{"name": "a"}, map[string]any{"name": "add"}, map[string]any{"image": "nginx"},
		map[string]any{"n": int64(3)}, map[string]any{"r": 1.5},
	}}}
	return Input{Object: obj, OldObject: obj}
}

// TestObjectOnceIsCelGos holds the Object constructions objectOnce builds
// to cel-go's own plan (evalObj and the provider's ObjectType.Val) over
// random ApplyConfiguration expressions (objectGen): the same value field
// by field, error, cost and remaining budget (sameResults), and the same
// result of the ApplyConfiguration's reader (applyconfig.FromCELFresh: the
// map, whether it is fresh, the error); and checks that objectOnce built
// the results at all.
func TestObjectOnceIsCelGos(t *testing.T) {
	c, refC := twoCompilers(t)
	in := objectGenInput()
	lines := func(err error) string {
		if err == nil {
			return ""
		}
		l := strings.Split(err.Error(), "\n")
		slices.Sort(l)
		return strings.Join(l, "\n")
	}
	built, converted, failed := 0, 0, 0
	for seed := range 600 {
		g := &objectGen{r: rand.New(rand.NewSource(int64(seed)))}
		expr := g.object("Object", 0)
		mp := policySpec{variables: [][2]string{{"v", `Object.spec{x: 1, y: ["a"]}`}}, ac: []string{expr}}.build()
		got, want, done, ok := evalBoth(t, c, refC, mp, expr, in)
		if !ok {
			continue
		}
		if _, ok := got.Value.(*celobject.Object); ok {
			built++
		}
		m, fresh, err := applyconfig.FromCELFresh(got.Value)
		wm, wfresh, werr := applyconfig.FromCELFresh(want.Value)
		if lines(err) != lines(werr) || fresh != wfresh || !sameNative(m, wm) {
			t.Errorf("%s: read as %v (fresh %v, %v); cel-go's value as %v (fresh %v, %v)", expr, m, fresh, err, wm, wfresh, werr)
		}
		done()
		if err != nil {
			failed++
		} else {
			converted++
		}
	}
	t.Logf("%d results built by objectOnce; %d read, %d refused by the reader", built, converted, failed)
	if built < 300 || converted < 100 || failed < 20 {
		t.Errorf("%d results built by objectOnce, %d read, %d refused: the cases are meant to exercise all three", built, converted, failed)
	}
}

// sameNative is reflect.DeepEqual of two values of the reader, but for the
// CEL values upstream's conversion hands over as they are (a list of lists'
// inner items), compared as CEL values (sameValue).
func sameNative(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for k, v := range x {
			w, found := y[k]
			if !found || !sameNative(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if !sameNative(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[ref.Val]ref.Val:
		y, ok := b.(map[ref.Val]ref.Val)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, found := y[k]
			if !found || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []ref.Val:
		y, ok := b.([]ref.Val)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// TestComprehensionObjectsTaken checks which Object constructions in a
// comprehension are planned as objectOnce: the items a map macro appends
// to a result that reaches only the reader, and no other;
// TestObjectOnceIsCelGos holds their values, errors, costs and reading to
// cel-go's plan.
func TestComprehensionObjectsTaken(t *testing.T) {
	c, _ := twoCompilers(t)
	for _, tc := range []struct {
		expr  string
		taken int // constructions planned as objectOnce
	}{
		{`Object{spec: Object.spec{items: object.spec.items.map(i, Object.spec.items{name: i.name})}}`, 3},
		{`Object{spec: Object.spec{items: [1, 2].map(x, x > 1, Object.spec.items{n: x})}}`, 3},
		{`Object{spec: Object.spec{items: [1, 2].map(x, x > 1 ? Object.spec.items{n: x} : Object.spec.items{})}}`, 4},
		{`Object{spec: Object.spec{items: [[1], [2]].map(l, l.map(x, Object.spec.items{n: x}))}}`, 3},
		{`Object{spec: Object.spec{items: [1, 2].map(x, [Object.spec.items{n: x}, Object.spec.items{}])}}`, 4},
		{`Object{spec: Object.spec{items: [1, 2].map(x, Object.spec.items{n: x}).filter(o, true)}}`, 2},
		{`Object{spec: Object.spec{items: [1, 2].map(x, Object.spec.items{n: x})[0]}}`, 2},
		{`Object{spec: Object.spec{items: dyn([1, 2].map(x, Object.spec.items{n: x}))}}`, 2},
		{`Object{spec: Object.spec{items: [1, 2].map(x, dyn(Object.spec.items{n: x}))}}`, 2},
		{`Object{spec: Object.spec{ok: [1, 2].exists(x, Object.spec.items{n: x} == Object.spec.items{n: 1})}}`, 2},
		{`Object{spec: Object.spec{items: [1, 2].filter(x, Object.spec.items{n: x} != Object.spec.items{})}}`, 2},
		{`Object{spec: Object.spec{items: [1, 2].map(x, Object.spec.items{n: x}).map(o, o)}}`, 2},
	} {
		p, err := c.Compile(policySpec{ac: []string{tc.expr}}.build())
		if err != nil || p.Mutations[0].Err != nil {
			t.Fatalf("%s: %v %v", tc.expr, err, p.Mutations[0].Err)
		}
		if taken := planned[*objectOnce](t, p.Mutations[0]); taken != tc.taken {
			t.Errorf("%s: %d constructions planned as objectOnce, want %d", tc.expr, taken, tc.taken)
		}
	}
}

// patchExpr is a random JSONPatch expression whose operations' values are
// objectGen's values and Objects, at the positions objectOnce takes them
// (the value of a JSONPatch in a list literal, a conditional's branch, the
// items a map macro appends) and where it does not (a JSONPatch bound to a
// variable or compared, a value passed to dyn, an optional value).
func (g *objectGen) patchExpr() string {
	patch := func() string {
		var v string
		switch g.r.Intn(6) {
		case 0, 1:
			v = g.object("Object", 0)
		case 2:
			// Numbers and lists structpb writes apart (an integer past
			// 2^53 as a string, -0, an empty list), in an Object in a
			// list or a map.
			edge := "Object{" + g.pick("n: 9007199254740993", "z: -0.0", "e: []", "f: 1e300", `s: "\xff"`, "w: Object.x{}") + "}"
			v = g.pick("["+edge+", "+g.object("Object", 1)+"]", `{"k": `+edge+"}", edge)
		default:
			v = g.value("Object", 0)
		}
		op := g.pick(`"add"`, `"replace"`, `"test"`)
		switch g.r.Intn(12) {
		case 0:
			return `JSONPatch{op: ` + op + `, path: "/spec", ?value: optional.of(` + v + `)}`
		case 1:
			return `JSONPatch{op: ` + op + `, path: "/spec", value: dyn(` + v + `)}`
		case 2:
			return `JSONPatch{op: dyn(` + g.pick(`"add"`, "1") + `), path: "/spec", value: ` + v + `}`
		}
		return `JSONPatch{op: ` + op + `, path: "/spec", value: ` + v + `}`
	}
	var items []string
	for range 1 + g.r.Intn(2) {
		items = append(items, patch())
	}
	switch g.r.Intn(7) {
	case 0:
		return "size(object.spec.items) > " + g.pick("2", "9") + " ? [" + items[0] + "] : [" + patch() + "]"
	case 1:
		return "object.spec.items.map(i, " + items[0] + ")"
	case 2:
		return "[1, 2].map(x, x > 1, " + items[0] + ")"
	case 3:
		// Not taken: read further.
		return g.pick("[1, 2].map(x, "+items[0]+").filter(p, true)", "["+items[0]+"].filter(p, p == p)",
			"[variables.p]", "[dyn("+items[0]+")]")
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// TestPatchObjectOnceIsCelGos is TestObjectOnceIsCelGos for the Objects of
// JSONPatch values (patchExpr): the same value field by field, error, cost
// and remaining budget as cel-go's own plan (sameResults), and the same
// operations or error from the JSONPatch reader (jsonpatch.FromCEL); and
// checks that objectOnce built values at all.
func TestPatchObjectOnceIsCelGos(t *testing.T) {
	c, refC := twoCompilers(t)
	in := objectGenInput()
	built, lists, converted, failed := 0, 0, 0, 0
	for seed := range 600 {
		g := &objectGen{r: rand.New(rand.NewSource(int64(seed)))}
		expr := g.patchExpr()
		mp := policySpec{variables: [][2]string{{"v", `Object.spec{x: 1, y: ["a"]}`},
			{"p", `JSONPatch{op: "add", path: "/a", value: Object.spec{x: 1}}`}}, jp: []string{expr}}.build()
		got, want, done, ok := evalBoth(t, c, refC, mp, expr, in)
		if !ok {
			continue
		}
		n, l := objectValues(got.Value)
		built, lists = built+n, lists+l
		err := samePatchReading(t, expr, got.Value, want.Value)
		done()
		if err != nil {
			failed++
		} else {
			converted++
		}
	}
	t.Logf("%d values built by objectOnce, %d by listOnce; %d results read, %d refused by the reader", built, lists, converted, failed)
	if built < 300 || lists < 20 || converted < 100 || failed < 20 {
		t.Errorf("%d values built by objectOnce, %d read, %d refused: the cases are meant to exercise all three", built, converted, failed)
	}
}

// evalBoth compiles mp with c (mutatis' plan) and refC (cel-go's own
// plan, unplanned), holds all its expressions' results to each other
// (sameResults, where expr) and returns its first mutation's results on
// in, evaluated by both, and done, which releases the activations once
// they are read; ok is false when the mutation does not compile or an
// evaluation fails (alike, or reported).
func evalBoth(t *testing.T, c, refC *Compiler, mp *admissionregistrationv1.MutatingAdmissionPolicy, expr string, in Input) (got, want Result, done func(), ok bool) {
	t.Helper()
	p, err := c.Compile(mp)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	if p.Mutations[0].Err != nil {
		t.Logf("%s does not compile: %v", expr, p.Mutations[0].Err)
		return got, want, nil, false
	}
	ref, err := refC.Compile(mp)
	if err != nil {
		t.Fatal(err)
	}
	ref = unplanned(t, ref)
	sameResults(t, expr, p, ref, in)
	act, refAct := p.NewActivation(context.Background(), in), ref.NewActivation(context.Background(), in)
	done = func() { act.Release(); refAct.Release() }
	got, _, err = act.Eval(p.Mutations[0], MutationBudget)
	want, _, refErr := refAct.Eval(ref.Mutations[0], MutationBudget)
	if err != nil || refErr != nil || got.Err != nil || want.Err != nil {
		if fmt.Sprint(err, got.Err) != fmt.Sprint(refErr, want.Err) {
			t.Errorf("%s: %v %v; cel-go's plan %v %v", expr, err, got.Err, refErr, want.Err)
		}
		done()
		return got, want, nil, false
	}
	return got, want, done, true
}

// samePatchReading checks that jsonpatch.FromCEL reads got, a JSONPatch
// expression's result, as it reads want, cel-go's plan's: the same
// operations, or an error upstream's reading can give (it converts an
// Object's fields in map order: of two that fail, either error). It
// returns the error of got's reading.
func samePatchReading(t testing.TB, where string, got, want ref.Val) error {
	t.Helper()
	ops, err := jsonpatch.FromCEL(got)
	wops, werr := jsonpatch.FromCEL(want)
	for try := 0; try < 64 && err != nil && werr != nil && err.Error() != werr.Error(); try++ {
		wops, werr = jsonpatch.FromCEL(want)
	}
	if fmt.Sprint(err) != fmt.Sprint(werr) || !samePatch(ops, wops) {
		t.Errorf("%s: read as %v (%v); cel-go's value as %v (%v)", where, ops, err, wops, werr)
	}
	return err
}

// objectValues counts the celobject.Objects v, a JSONPatch expression's
// result, holds as its operations' values or their items (n), and the
// values that are listOnce's lists.
func objectValues(v ref.Val) (n, lists int) {
	l, ok := v.Value().([]ref.Val)
	if !ok {
		return 0, 0
	}
	for _, item := range l {
		jp, ok := item.(*mutation.JSONPatchVal)
		if !ok || jp.Val == nil {
			continue
		}
		if _, ok := jp.Val.(*celobject.Object); ok {
			n++
			continue
		}
		if _, ok := jp.Val.(*outList); ok {
			lists++
		}
		if items, ok := jp.Val.Value().([]ref.Val); ok {
			for _, i := range items {
				if _, ok := i.(*celobject.Object); ok {
					n++
				}
			}
		}
	}
	return n, lists
}

// samePatch tells whether two readings of a JSONPatch result are the same
// operations (their values compared as sameNative does).
func samePatch(a, b []jsonpatch.Operation) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Op != y.Op || x.Path != y.Path || x.From != y.From || x.HasValue != y.HasValue || !sameNative(x.Value, y.Value) {
			return false
		}
	}
	return true
}

// TestObjectsOfOneStepApart checks that the Objects one construction
// builds, many in one evaluation (a map macro's, past a slab block of
// sixteen) and in evaluations after it, are each its own: read as cel-go's
// plan's values are.
func TestObjectsOfOneStepApart(t *testing.T) {
	c, refC := twoCompilers(t)
	in := objectGenInput()
	for _, expr := range []string{
		`Object{spec: Object.spec{containers: [1, 2, 3].map(x, Object.spec.containers{name: string(x)})}}`,
		`Object{spec: Object.spec{containers: lists.range(40).map(x, Object.spec.containers{name: string(x), ports: [Object.spec.containers.ports{containerPort: x}]})}}`,
		`Object{spec: Object.spec{containers: lists.range(20).map(x, x % 2 == 0 ? Object.spec.containers{name: string(x)} : Object.spec.containers{image: string(x)})}}`,
	} {
		mp := policySpec{ac: []string{expr}}.build()
		for round := range 3 {
			got, want, done, ok := evalBoth(t, c, refC, mp, expr, in)
			if !ok {
				t.Fatalf("%s: not evaluated", expr)
			}
			m, _, err := applyconfig.FromCELFresh(got.Value)
			wm, _, werr := applyconfig.FromCELFresh(want.Value)
			if err != nil || werr != nil || !sameNative(m, wm) {
				t.Errorf("round %d: %s: read as %v (%v); cel-go's value as %v (%v)", round, expr, m, err, wm, werr)
			}
			done()
		}
	}
}
