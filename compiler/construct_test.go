package compiler

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/interpreter"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
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
