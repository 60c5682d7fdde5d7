package compiler

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	"google.golang.org/protobuf/types/known/structpb"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// TestOneListIsCelGosList holds every method of a oneList to cel-go's
// list of its one item (types.NewRefValList), with the default adapter
// and a policy environment's: items of every kind (scalars, the object's
// maps and lists as views, CEL lists and maps, an Object), asked with
// indexes in and out of range and of other types, compared with equal and
// different lists and other values, added to lists and others, converted
// to native types and CEL types.
func TestOneListIsCelGosList(t *testing.T) {
	items, adapters := listItems(t)
	compared := 0
	for ai, a := range adapters {
		for ii, item := range items {
			at := fmt.Sprintf("adapter %d, item %d (%v)", ai, ii, item)
			compared += sameList(t, at, &oneList{adapter: a, item: item}, celtypes.NewRefValList(a, []ref.Val{item}), items)
		}
	}
	if compared < 2000 {
		t.Errorf("only %d answers compared", compared)
	}
}

// listItems are items of every kind for the list tests, an Object among
// them, and the two adapters (cel-go's default, a policy environment's).
func listItems(t *testing.T) ([]ref.Val, []celtypes.Adapter) {
	t.Helper()
	c, _ := twoCompilers(t)
	p, err := c.Compile(policySpec{ac: []string{`Object{metadata: Object.metadata{labels: {"a": "b"}}}`}}.build())
	if err != nil || p.Mutations[0].Err != nil {
		t.Fatalf("%v %v", err, p.Mutations[0])
	}
	obj, _, err := p.NewActivation(t.Context(), Input{}).Eval(p.Mutations[0], 1<<40)
	if err != nil || obj.Err != nil {
		t.Fatalf("%v %v", err, obj.Err)
	}
	items := []ref.Val{
		celtypes.String("a"), celtypes.String(""), celtypes.Int(0), celtypes.Int(7), celtypes.Uint(1), celtypes.Double(1.5),
		celtypes.True, celtypes.NullValue, celtypes.Bytes("xy"),
		presentEntry(map[string]any{"k": map[string]any{"n": int64(1)}}), presentEntry([]any{"a", int64(2)}), presentEntry("s"),
		celtypes.NewRefValList(celtypes.DefaultTypeAdapter, []ref.Val{celtypes.String("a")}),
		celtypes.NewStringStringMap(celtypes.DefaultTypeAdapter, map[string]string{"k": "v"}),
		celtypes.OptionalOf(celtypes.Int(1)), obj.Value,
	}
	return items, []celtypes.Adapter{celtypes.DefaultTypeAdapter, p.Mutations[0].env.CELTypeAdapter()}
}

// listUnderTest is a list of mutatis' that stands for one of cel-go's.
type listUnderTest interface {
	traits.Lister
	traits.Zeroer
	traits.Foldable
	String() string
}

// sameList holds every method of got to want, cel-go's list of the same
// items, against others (and the two lists); it returns how many answers
// it compared.
func sameList(t *testing.T, at string, got listUnderTest, want traits.Lister, others []ref.Val) int {
	t.Helper()
	indexes := []ref.Val{celtypes.Int(0), celtypes.Int(1), celtypes.Int(2), celtypes.Int(-1), celtypes.Uint(0), celtypes.Uint(1),
		celtypes.Double(0), celtypes.Double(0.5), celtypes.String("0"), celtypes.NullValue}
	nativeTypes := []reflect.Type{reflect.TypeFor[[]any](), reflect.TypeFor[[]string](), reflect.TypeFor[[]int64](),
		reflect.TypeFor[[]ref.Val](), reflect.TypeFor[*structpb.ListValue](), reflect.TypeFor[*structpb.Value](),
		reflect.TypeFor[any](), reflect.TypeFor[string](), reflect.TypeFor[map[string]any]()}
	celTypes := []ref.Type{celtypes.ListType, celtypes.TypeType, celtypes.StringType, celtypes.MapType}
	compared := 0
	check := func(what string, g, w any) {
		t.Helper()
		compared++
		if fmt.Sprintf("%T %v", g, g) != fmt.Sprintf("%T %v", w, w) {
			t.Errorf("%s: %s = %T %v, cel-go's list: %T %v", at, what, g, g, w, w)
		}
	}
	check("Size", got.Size(), want.Size())
	check("Type", got.Type(), want.Type())
	check("IsZeroValue", got.IsZeroValue(), want.(traits.Zeroer).IsZeroValue())
	check("Value", got.Value(), want.Value())
	check("String", got.String(), want.(fmt.Stringer).String())
	for _, i := range indexes {
		check(fmt.Sprintf("Get(%v)", i), got.Get(i), want.Get(i))
	}
	items, _ := want.Value().([]ref.Val)
	a := celtypes.DefaultTypeAdapter
	others = append([]ref.Val{want, got, celtypes.NewRefValList(a, nil), celtypes.NewRefValList(a, append(slices.Clone(items), items...))}, others...)
	for _, o := range others {
		check(fmt.Sprintf("Contains(%v)", o), got.Contains(o), want.Contains(o))
		check(fmt.Sprintf("Equal(%v)", o), got.Equal(o), want.Equal(o))
		check(fmt.Sprintf("%v.Equal", o), o.Equal(got), o.Equal(want))
		check(fmt.Sprintf("Add(%v)", o), listOrVal(got.Add(o)), listOrVal(want.Add(o)))
	}
	for _, typ := range nativeTypes {
		gv, gerr := got.ConvertToNative(typ)
		wv, werr := want.ConvertToNative(typ)
		check(fmt.Sprintf("ConvertToNative(%v) error", typ), gerr, werr)
		if !reflect.DeepEqual(gv, wv) {
			t.Errorf("%s: ConvertToNative(%v) = %#v, cel-go's list %#v", at, typ, gv, wv)
		}
	}
	for _, typ := range celTypes {
		check(fmt.Sprintf("ConvertToType(%v)", typ), listOrVal(got.ConvertToType(typ)), listOrVal(want.ConvertToType(typ)))
	}
	var gotItems, wantItems []ref.Val
	for it := got.Iterator(); it.HasNext() == celtypes.True; {
		gotItems = append(gotItems, it.Next())
	}
	for it := want.Iterator(); it.HasNext() == celtypes.True; {
		wantItems = append(wantItems, it.Next())
	}
	check("Iterator", gotItems, wantItems)
	gf, wf := &collect{}, &collect{}
	got.Fold(gf)
	want.(traits.Foldable).Fold(wf)
	check("Fold", gf.entries, wf.entries)
	return compared
}

// TestOutListIsCelGosList holds every method of an outList (the value of
// a list literal only an ApplyConfiguration's reader reads) to cel-go's
// list of the same items (types.NewRefValList), for lists of one to
// three items of every kind (in its buffer and past it) and two adapters.
func TestOutListIsCelGosList(t *testing.T) {
	items, adapters := listItems(t)
	compared := 0
	for ai, a := range adapters {
		for n := 1; n <= 3; n++ {
			for ii := range items {
				var of []ref.Val
				for k := range n {
					of = append(of, items[(ii+k*5)%len(items)])
				}
				got := newOutList(a, n)
				got.items = append(got.items, of...)
				at := fmt.Sprintf("adapter %d, items %v", ai, of)
				compared += sameList(t, at, got, celtypes.NewRefValList(a, slices.Clone(of)), items)
			}
		}
	}
	if compared < 6000 {
		t.Errorf("only %d answers compared", compared)
	}
}

// listOrVal is what a list is made of (its items) or the value itself.
func listOrVal(v ref.Val) any {
	if l, ok := v.(traits.Lister); ok {
		var items []ref.Val
		for i := celtypes.Int(0); i < l.Size().(celtypes.Int); i++ {
			items = append(items, l.Get(i))
		}
		return items
	}
	return v
}

// collect is a traits.Folder that keeps every entry.
type collect struct{ entries []any }

func (c *collect) FoldEntry(k, v any) bool {
	c.entries = append(c.entries, k, v)
	return true
}

// TestStepListsPlanned checks which list literals are planned as
// stepLists: the one a map, a filter or a transformList appends at each
// iteration, unless its item is a constant (cel-go's Optimize folds it);
// no other list.
func TestStepListsPlanned(t *testing.T) {
	c, _ := twoCompilers(t)
	for _, tc := range []struct {
		expr string
		want int
	}{
		{`object.spec.containers.map(c, c.name)`, 1},
		{`object.spec.containers.filter(c, has(c.image))`, 1},
		{`object.spec.containers.map(c, has(c.image), c.image)`, 1},
		{`object.spec.containers.map(c, object.spec.containers.filter(d, d == c))`, 2},
		{`[1, 2].map(x, 1)`, 0},
		{`[object.spec, object.metadata]`, 0},
		{`[object.spec] + [object.metadata]`, 0},
		{`object.spec.containers.exists(c, c.name == "a")`, 0},
		{`object.spec.containers.all(c, [c] != [])`, 0},
		{`object.spec.containers.transformList(i, c, c.name)`, 1},
		{`object.spec.containers.transformList(i, c, i > 0, [c])`, 1},
		{`object.spec.containers.map(c, [c.name]).map(l, l[0])`, 2},
	} {
		p, err := c.Compile(policySpec{variables: [][2]string{{"v", tc.expr}}}.build())
		if err != nil {
			t.Fatal(err)
		}
		e := p.Variables[0]
		if e.Err != nil {
			t.Errorf("%s: %v", tc.expr, e.Err)
			continue
		}
		if n := planned[*stepList](t, e); n != tc.want {
			t.Errorf("%s: %d lists planned as stepLists, want %d", tc.expr, n, tc.want)
		}
	}
}

// TestOutputListsPlanned checks which list literals of an
// ApplyConfiguration are planned as listOnce: those under an Object's
// field that only the reader reads, not all of their items constants, no
// optional item; not the result itself, nor a list passed on, nor a
// comprehension's step list (a stepList).
func TestOutputListsPlanned(t *testing.T) {
	c, _ := twoCompilers(t)
	for _, tc := range []struct {
		expr string
		want int
	}{
		{`Object{spec: Object.spec{items: [object.spec, dyn(1)]}}`, 1},
		{`Object{spec: Object.spec{items: [Object.spec.items{a: 1}], b: [[object.spec]]}}`, 3},
		{`Object{spec: Object.spec{items: ["a", "b"]}}`, 0},
		{`Object{spec: Object.spec{items: [?optional.of(object.spec)]}}`, 0},
		{`Object{spec: Object.spec{items: size(object.spec) > 1 ? [object.spec] : [dyn(1), object.spec]}}`, 2},
		{`Object{spec: Object.spec{items: {"k": [object.spec]}}}`, 1},
		{`Object{spec: Object.spec{items: dyn([object.spec])}}`, 0},
		{`Object{spec: Object.spec{items: [object.spec] + [dyn(1)]}}`, 0},
		{`Object{spec: Object.spec{items: [1, 2].map(x, [dyn(x), object.spec])}}`, 1},
		{`Object{spec: Object.spec{items: [1, 2].map(x, x)}}`, 0},
	} {
		p, err := c.Compile(policySpec{ac: []string{tc.expr}}.build())
		if err != nil || p.Mutations[0].Err != nil {
			t.Fatalf("%s: %v %v", tc.expr, err, p.Mutations[0].Err)
		}
		if n := planned[*listOnce](t, p.Mutations[0]); n != tc.want {
			t.Errorf("%s: %d lists planned as listOnce, want %d", tc.expr, n, tc.want)
		}
	}
}

// planned is how many steps of type T the program of e holds, planned as
// the compiler plans it (programOptionsFor).
func planned[T interpreter.InterpretableV2](t *testing.T, e *Expression) int {
	t.Helper()
	n := 0
	count := func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		if _, ok := i.(T); ok {
			n++
		}
		return i, nil
	}
	opts := append(programOptionsFor(e.env, e.ast, false, e.Kind), cel.CustomDecoratorV2(count), cel.InterruptCheckFrequency(celconfig.CheckFrequency))
	if _, err := e.env.Program(e.ast, opts...); err != nil {
		t.Fatalf("%s: %v", e.Source, err)
	}
	return n
}
