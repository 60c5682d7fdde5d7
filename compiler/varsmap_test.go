package compiler

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// varsPolicies are policies whose variables varsMap must present as
// lazy.MapValue does: plain names, names cel.Unescape changes or refuses
// (`a__dot__b`, `__if__`, `x__y__`), failing variables, one reading
// another, repeated names, and past varsInline.
func varsPolicies(t *testing.T) []*Policy {
	t.Helper()
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	specs := [][][2]string{
		{{"name", `object.metadata.name`}, {"upper", `variables.name.upperAscii()`}, {"bad", `object.metadata.missing`}},
		{{"a__dot__b", `1`}, {"__if__", `"if"`}, {"x__y__", `2`}, {"a__underscores__b", `3`}, {"plain", `[1, 2]`}},
		{{"v", `1`}, {"w", `variables.v + 1`}, {"v", `"second"`}},
		{{"one", `1`}, {"two", `2`}, {"three", `3`}, {"four", `4`}, {"five", `5`}, {"six", `variables.five * variables.four`}},
		{},
	}
	var out []*Policy
	for _, vars := range specs {
		p, err := c.Compile(policySpec{variables: vars, conditions: [][2]string{{"c", `true`}}}.build())
		if err != nil {
			t.Fatal(err)
		}
		if p.varsOf() == nil {
			t.Fatalf("%v: no varsTable", vars)
		}
		out = append(out, p)
	}
	return out
}

// varsKeys are the keys every map is asked for: its names, their escaped
// and unescaped forms, and others.
func varsKeys(p *Policy) []ref.Val {
	keys := []ref.Val{celtypes.String(""), celtypes.String("missing"), celtypes.String("a.b"), celtypes.String("if"),
		celtypes.String("__dot__"), celtypes.String("__bad__"), celtypes.String("a__b"), celtypes.String("x__y__"),
		celtypes.Int(1), celtypes.True, celtypes.NullValue, celtypes.Double(1)}
	for _, v := range p.Variables {
		keys = append(keys, celtypes.String(v.Name), celtypes.String(strings.ToUpper(v.Name)), celtypes.String(v.Name+"__dot__x"))
	}
	return keys
}

// describeVar renders a method's answer for comparison: values and errors by
// their text and type, the map itself as "self".
func describeVar(self, v ref.Val) string {
	switch {
	case v == nil:
		return "<nil>"
	case v == self:
		return "self"
	}
	if m, ok := v.(traits.Mapper); ok && reflect.TypeOf(v) == reflect.TypeOf(self) {
		_ = m
		return "another map"
	}
	return fmt.Sprintf("%T %v", v, v)
}

// TestVarsMapIsLazyMapValue holds every method of varsMap to
// lazy.MapValue's over the same policy and input: in one order of calls
// (so that evaluations happen at the same points), the same answers, and
// the same variable cost charged to the activation.
func TestVarsMapIsLazyMapValue(t *testing.T) {
	for _, p := range varsPolicies(t) {
		in := namedObject("web")
		for order := 0; order < 3; order++ {
			mine := p.NewActivation(context.Background(), in)
			ref0 := p.NewActivation(context.Background(), in)
			ref0.variables = ref0.lazyVars()
			a, b := mine.vars(), ref0.vars()
			if _, ok := a.(*varsMap); !ok {
				t.Fatalf("vars() is %T", a)
			}
			var got, want []string
			ask := func(m ref.Val, out *[]string) {
				mp := m.(traits.Mapper)
				keys := varsKeys(p)
				if order == 1 {
					for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
						keys[i], keys[j] = keys[j], keys[i]
					}
				}
				add := func(s string, args ...any) { *out = append(*out, fmt.Sprintf(s, args...)) }
				if order == 2 {
					it := mp.Iterator()
					for it.HasNext() == celtypes.True {
						add("next %s", describeVar(m, it.Next()))
					}
				}
				for _, k := range keys {
					v, found := mp.Find(k)
					add("find %v: %s %v", k, describeVar(m, v), found)
					add("get %v: %s", k, describeVar(m, mp.Get(k)))
					add("contains %v: %s", k, describeVar(m, mp.Contains(k)))
				}
				it := mp.Iterator()
				add("iterator %s %v %v", it.Type(), it.Value(), describeVar(m, it.ConvertToType(celtypes.StringType)))
				_, err := it.ConvertToNative(reflect.TypeFor[string]())
				add("iterator native %v %v %v", err, it.Equal(it), it.Equal(celtypes.True))
				for it.HasNext() == celtypes.True {
					add("next %s", describeVar(m, it.Next()))
				}
				add("size %v", mp.Size())
				add("type %s %T", m.Type().TypeName(), m.Type())
				for _, typ := range []ref.Type{m.Type(), celtypes.TypeType, celtypes.StringType, celtypes.MapType, celtypes.NewObjectType(m.Type().TypeName())} {
					add("convert %s: %s", typ.TypeName(), describeVar(m, m.ConvertToType(typ)))
				}
				for _, typ := range []reflect.Type{reflect.TypeFor[map[string]any](), reflect.TypeFor[string](), reflect.TypeFor[*int]()} {
					v, err := m.ConvertToNative(typ)
					add("native %v: %v %v", typ, v, err)
				}
				add("equal self %v, string %v, int %v", m.Equal(m), describeVar(m, m.Equal(celtypes.String("x"))), describeVar(m, m.Equal(celtypes.Int(1))))
				add("value %v", m.Value())
				add("zero-ish %v", m.Type().HasTrait(traits.IndexerType|traits.FieldTesterType|traits.IterableType))
			}
			ask(a, &got)
			ask(b, &want)
			if mine.variableCost != ref0.variableCost {
				t.Errorf("%v order %d: variable cost %d, lazy.MapValue's %d", p.Variables, order, mine.variableCost, ref0.variableCost)
			}
			if len(got) != len(want) {
				t.Fatalf("%d answers, lazy.MapValue %d", len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("order %d: %s\nlazy.MapValue: %s", order, got[i], want[i])
				}
			}
			// Two maps are unequal, as two lazy.MapValues are.
			other := p.NewActivation(context.Background(), in)
			if mine.vars().Equal(other.vars()) != celtypes.False {
				t.Error("two varsMaps equal")
			}
			if eq := mine.vars().Equal(ref0.vars()); !celtypes.IsError(eq) {
				t.Errorf("varsMap equal to a lazy.MapValue: %v", eq)
			}
		}
	}
}

// TestVarsMapEvaluatesOnce checks the laziness: a variable is evaluated on
// its first read only, and read again from the map.
func TestVarsMapEvaluatesOnce(t *testing.T) {
	p := varsPolicies(t)[0]
	act := p.NewActivation(context.Background(), namedObject("web"))
	m := act.vars().(traits.Mapper)
	if act.variableCost != 0 {
		t.Fatalf("cost %d before any read", act.variableCost)
	}
	m.Get(celtypes.String("upper"))
	cost := act.variableCost
	if cost == 0 {
		t.Fatal("no cost charged")
	}
	m.Get(celtypes.String("upper"))
	m.Get(celtypes.String("name"))
	if act.variableCost != cost {
		t.Errorf("cost %d after reading again, want %d", act.variableCost, cost)
	}
}

// TestVarsMapBeyond64 checks that a policy of more than 64 variables keeps
// lazy.MapValue.
func TestVarsMapBeyond64(t *testing.T) {
	vars := make([]*Expression, 65)
	for i := range vars {
		vars[i] = &Expression{Name: fmt.Sprintf("v%d", i)}
	}
	if newVarsTable(celtypes.NewObjectType("x"), vars) != nil {
		t.Error("a table of 65 slots")
	}
	if newVarsTable(celtypes.NewObjectType("x"), vars[:64]) == nil {
		t.Error("no table of 64 slots")
	}
}
