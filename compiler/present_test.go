package compiler

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/google/cel-go/common/containers"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

	"github.com/mutatis-dev/mutatis/internal/celobject"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// TestMapViewIsTheAdaptersMap holds a mapView to the map the environment's
// adapter makes of the same Go map, and a listView to its list: every
// method gives the same answer, on every map and list of the example and
// load-test objects and params (the object itself and each map and list in
// it, at any depth) and on a few made up.
func TestMapViewIsTheAdaptersMap(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Compile(policySpec{ac: []string{`Object{}`}}.build())
	if err != nil {
		t.Fatal(err)
	}
	adapter := p.Mutations[0].env.CELTypeAdapter()
	_, objects, params := fixtures(t)
	var maps []map[string]any
	var lists []any
	var collect func(v any)
	collect = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			maps = append(maps, t)
			for _, e := range t {
				collect(e)
			}
		case []any:
			lists = append(lists, v)
			for _, e := range t {
				collect(e)
			}
		}
	}
	for _, o := range append(objects, params...) {
		collect(o)
	}
	maps = append(maps, map[string]any{}, map[string]any{"a": nil, "b": int64(1), "c": 1.5, "d": true, "e": []any{"x"}})
	if len(maps) < 100 {
		t.Fatalf("only %d maps", len(maps))
	}
	present := presentAdapter{adapter}
	for i, m := range maps {
		view, want := present.NativeToValue(m), adapter.NativeToValue(m)
		if _, ok := view.(mapView); !ok {
			t.Fatalf("map %d presented as %T", i, view)
		}
		sameMapAnswers(t, fmt.Sprintf("map %d", i), view, want, maps[(i+1)%len(maps)], adapter)
	}
	lists = append(lists, []any{}, []any(nil), []any{"a", int64(1), nil, 1.5, true, map[string]any{"k": "v"}, []any{"x"}})
	if len(lists) < 50 {
		t.Fatalf("only %d lists", len(lists))
	}
	for i, l := range lists {
		view, want := present.NativeToValue(l), adapter.NativeToValue(l)
		if _, ok := view.(listView); !ok {
			t.Fatalf("list %d presented as %T", i, view)
		}
		sameListAnswers(t, fmt.Sprintf("list %d", i), view, want, adapter.NativeToValue(lists[(i+1)%len(lists)]))
	}
	// Anything else is the adapter's own value.
	for _, v := range []any{"s", int64(2), 2.5, true, nil, []string{"a"}, map[string]string{"a": "b"}} {
		got, want := present.NativeToValue(v), adapter.NativeToValue(v)
		if reflect.TypeOf(got) != reflect.TypeOf(want) || got.Equal(want) != celtypes.True {
			t.Errorf("%#v presented as %T %v, the adapter's %T %v", v, got, got, want, want)
		}
	}
}

// sameMapAnswers compares what view and want answer to every method of a
// CEL map, keys present and absent, other maps, conversions.
func sameMapAnswers(t *testing.T, at string, view, want ref.Val, other map[string]any, adapter celtypes.Adapter) {
	t.Helper()
	same, sorted := comparer(t, at)
	vm, wm := view.(traits.Mapper), want.(traits.Mapper)
	same("Type", view.Type(), want.Type())
	if reflect.ValueOf(view.Value()).UnsafePointer() != reflect.ValueOf(want.Value()).UnsafePointer() {
		t.Errorf("%s: Value is another map", at)
	}
	same("Size", vm.Size(), wm.Size())
	same("IsZeroValue", view.(traits.Zeroer).IsZeroValue(), want.(traits.Zeroer).IsZeroValue())
	same("String", sorted(fmt.Sprint(view)), sorted(fmt.Sprint(want)))
	var keys []string
	for k := range view.Value().(map[string]any) {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	probe := []ref.Val{celtypes.String("no-such-key"), celtypes.Int(1), celtypes.NullValue}
	for _, k := range keys {
		probe = append(probe, celtypes.String(k))
	}
	for _, k := range probe {
		same("Contains "+fmt.Sprint(k), vm.Contains(k), wm.Contains(k))
		same("Get "+fmt.Sprint(k), vm.Get(k), wm.Get(k))
		gv, gok := vm.Find(k)
		wv, wok := wm.Find(k)
		same("Find found "+fmt.Sprint(k), gok, wok)
		if gok && wok {
			same("Find "+fmt.Sprint(k), gv, wv)
		}
	}
	var gotKeys, wantKeys []string
	for it := vm.Iterator(); it.HasNext() == celtypes.True; {
		gotKeys = append(gotKeys, fmt.Sprint(it.Next()))
	}
	for it := wm.Iterator(); it.HasNext() == celtypes.True; {
		wantKeys = append(wantKeys, fmt.Sprint(it.Next()))
	}
	sort.Strings(gotKeys)
	sort.Strings(wantKeys)
	same("Iterator", gotKeys, wantKeys)
	var gf, wf folded
	view.(traits.Foldable).Fold(&gf)
	want.(traits.Foldable).Fold(&wf)
	sort.Strings(gf)
	sort.Strings(wf)
	same("Fold", gf, wf)
	for _, o := range []ref.Val{want, view, adapter.NativeToValue(other), celtypes.String("x"), celtypes.NullValue} {
		same(fmt.Sprintf("Equal %T", o), view.Equal(o), want.Equal(o))
		same(fmt.Sprintf("Equal from %T", o), o.Equal(view), o.Equal(want))
	}
	for _, typ := range []ref.Type{celtypes.MapType, celtypes.TypeType, celtypes.StringType, celtypes.ListType} {
		same("ConvertToType "+typ.TypeName(), view.ConvertToType(typ), want.ConvertToType(typ))
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[map[string]any](), reflect.TypeFor[map[string]string](), reflect.TypeFor[string]()} {
		gv, gerr := view.ConvertToNative(typ)
		wv, werr := want.ConvertToNative(typ)
		// Which entry fails a conversion first is Go's map order: errors
		// are compared by presence.
		same("ConvertToNative "+typ.String(), [2]any{gv, gerr == nil}, [2]any{wv, werr == nil})
	}
	sameAsJSONValue(t, at, view, want)
}

// sameAsJSONValue checks the view's conversion to a structpb.Value, the
// one kube-apiserver's JSONPatch values take, against cel-go's value's,
// and that the view presents that value's Go map or slice itself
// (jsonvalue.View, which jsonpatch converts directly).
func sameAsJSONValue(t *testing.T, at string, view, want ref.Val) {
	t.Helper()
	typ := reflect.TypeFor[*structpb.Value]()
	gv, gerr := view.ConvertToNative(typ)
	wv, werr := want.ConvertToNative(typ)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%s: ConvertToNative structpb: error %v, want %v", at, gerr, werr)
	}
	if gerr == nil && !proto.Equal(gv.(*structpb.Value), wv.(*structpb.Value)) {
		t.Fatalf("%s: ConvertToNative structpb: %v, want %v", at, gv, wv)
	}
	jv, ok := view.(jsonvalue.View)
	if !ok {
		t.Fatalf("%s: %T is not a jsonvalue.View", at, view)
	}
	if !reflect.DeepEqual(jv.ViewOf(), want.Value()) {
		t.Fatalf("%s: ViewOf is not the value's Go map or slice", at)
	}
}

// comparer returns same, which compares values (CEL values by type and
// Equal, errors by text, anything else deeply), and sorted: maps print in
// Go's random order, so texts are compared as sorted runes.
func comparer(t *testing.T, at string) (func(what string, got, exp any), func(string) string) {
	same := func(what string, got, exp any) {
		t.Helper()
		if g, ok := got.(ref.Val); ok {
			if e, ok := exp.(ref.Val); ok && viewedType(g) == reflect.TypeOf(e) && sameGoValue(g, e) {
				if celtypes.IsError(g) && fmt.Sprint(g) == fmt.Sprint(e) || !celtypes.IsError(g) && g.Equal(e) == celtypes.True {
					return
				}
			}
		} else if reflect.DeepEqual(got, exp) {
			return
		}
		t.Errorf("%s: %s: %T %v, the adapter's %T %v", at, what, got, got, exp, exp)
	}
	sorted := func(s string) string {
		r := []rune(s)
		sort.Slice(r, func(i, j int) bool { return r[i] < r[j] })
		return string(r)
	}
	return same, sorted
}

// folded is what a Foldable gives a folder, each entry's text as sorted
// runes (nested maps print in Go's random order).
type folded []string

func (f *folded) FoldEntry(k, v any) bool {
	r := []rune(fmt.Sprint(k, "=", v))
	sort.Slice(r, func(i, j int) bool { return r[i] < r[j] })
	*f = append(*f, string(r))
	return true
}

// sameListAnswers compares what view and want answer to every method of
// a CEL list, indexes in and out of range, other lists, conversions.
func sameListAnswers(t *testing.T, at string, view, want, other ref.Val) {
	t.Helper()
	same, sorted := comparer(t, at)
	vl, wl := view.(traits.Lister), want.(traits.Lister)
	same("Type", view.Type(), want.Type())
	same("Value", view.Value(), want.Value())
	same("Size", vl.Size(), wl.Size())
	same("IsZeroValue", view.(traits.Zeroer).IsZeroValue(), want.(traits.Zeroer).IsZeroValue())
	same("String", sorted(fmt.Sprint(view)), sorted(fmt.Sprint(want)))
	n := int(wl.Size().(celtypes.Int))
	for i := -1; i <= n; i++ {
		same(fmt.Sprint("Get ", i), vl.Get(celtypes.Int(i)), wl.Get(celtypes.Int(i)))
		if i >= 0 && i < n {
			e := wl.Get(celtypes.Int(i))
			same(fmt.Sprint("Contains ", i), vl.Contains(e), wl.Contains(e))
		}
	}
	same("Get string", vl.Get(celtypes.String("0")), wl.Get(celtypes.String("0")))
	same("Contains absent", vl.Contains(celtypes.String("no-such-item")), wl.Contains(celtypes.String("no-such-item")))
	var gotItems, wantItems []ref.Val
	for it := vl.Iterator(); it.HasNext() == celtypes.True; {
		gotItems = append(gotItems, it.Next())
	}
	for it := wl.Iterator(); it.HasNext() == celtypes.True; {
		wantItems = append(wantItems, it.Next())
	}
	same("Iterator length", len(gotItems), len(wantItems))
	for i := range min(len(gotItems), len(wantItems)) {
		same(fmt.Sprint("Iterator item ", i), gotItems[i], wantItems[i])
	}
	var gf, wf folded
	view.(traits.Foldable).Fold(&gf)
	want.(traits.Foldable).Fold(&wf)
	same("Fold", len(gf), len(wf))
	same("Add", vl.Add(other), wl.Add(other))
	for _, o := range []ref.Val{want, view, other, celtypes.String("x"), celtypes.NullValue} {
		same(fmt.Sprintf("Equal %T", o), view.Equal(o), want.Equal(o))
		same(fmt.Sprintf("Equal from %T", o), o.Equal(view), o.Equal(want))
	}
	for _, typ := range []ref.Type{celtypes.ListType, celtypes.TypeType, celtypes.StringType, celtypes.MapType} {
		same("ConvertToType "+typ.TypeName(), view.ConvertToType(typ), want.ConvertToType(typ))
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[[]any](), reflect.TypeFor[[]string](), reflect.TypeFor[string]()} {
		gv, gerr := view.ConvertToNative(typ)
		wv, werr := want.ConvertToNative(typ)
		same("ConvertToNative "+typ.String(), [2]any{gv, fmt.Sprint(gerr)}, [2]any{wv, fmt.Sprint(werr)})
	}
	sameAsJSONValue(t, at, view, want)
}

// adapterOnly is an attribute that answers Adapter only.
type adapterOnly struct {
	interpreter.InterpretableAttribute
	adapter celtypes.Adapter
}

func (a adapterOnly) Adapter() celtypes.Adapter { return a.adapter }

// TestPresentAdapterIsMadeOnce: a wrapped attribute answers Adapter with
// the presentAdapter made when it was wrapped, of its own adapter, without
// an allocation per call (cel-go asks it at every has() test), and an
// attribute already presenting is not wrapped again.
func TestPresentAdapterIsMadeOnce(t *testing.T) {
	wrapped, ok := presentAttribute(adapterOnly{adapter: celtypes.DefaultTypeAdapter}, presentValues).(*presentAttr)
	if !ok {
		t.Fatal("not wrapped")
	}
	p, ok := wrapped.Adapter().(*presentAdapter)
	if !ok || p.Adapter != celtypes.DefaultTypeAdapter || wrapped.Adapter() != p {
		t.Fatalf("Adapter() = %#v, want one presentAdapter of the attribute's own", wrapped.Adapter())
	}
	if n := testing.AllocsPerRun(100, func() { _ = wrapped.Adapter() }); n != 0 {
		t.Errorf("Adapter() allocates %v times a call", n)
	}
	if again := presentAttribute(wrapped, presentValues); again != interpreter.InterpretableV2(wrapped) {
		t.Error("a presenting attribute wrapped again")
	}
}

// viewedType is the Go type of the value v stands for: the adapter's map
// or list for a view (its entries are views too), v's own otherwise.
func viewedType(v ref.Val) reflect.Type {
	switch v.(type) {
	case mapView:
		return reflect.TypeOf(celtypes.DefaultTypeAdapter.NativeToValue(map[string]any{}))
	case listView:
		return reflect.TypeOf(celtypes.DefaultTypeAdapter.NativeToValue([]any{}))
	}
	return reflect.TypeOf(v)
}

// sameGoValue: a view and the adapter's map or list it stands for present
// the same Go map or slice, not a copy.
func sameGoValue(g, e ref.Val) bool {
	switch g.(type) {
	case mapView, listView:
		gv, ev := reflect.ValueOf(g.Value()), reflect.ValueOf(e.Value())
		return gv.Kind() == ev.Kind() && gv.Len() == ev.Len() && (gv.Len() == 0 || gv.UnsafePointer() == ev.UnsafePointer())
	}
	return true
}

// TestViewsConvertNothing: reading an entry of a map or a list of the
// object through the views (a string, a number, a nested map or list)
// builds no CEL map or list and no box; the entries are the adapter's
// values (TestMapViewIsTheAdaptersMap).
func TestViewsConvertNothing(t *testing.T) {
	m := viewOfMap(map[string]any{"s": "text", "i": int64(1 << 40), "f": 2.5, "m": map[string]any{"k": "v"}, "l": []any{"x", map[string]any{}}})
	var l any = []any{"y", int64(300), map[string]any{"a": "b"}}
	lv := presentAdapter{celtypes.DefaultTypeAdapter}.NativeToValue(l).(listView)
	keys := []ref.Val{celtypes.String("s"), celtypes.String("i"), celtypes.String("f"), celtypes.String("m"), celtypes.String("l")}
	if n := testing.AllocsPerRun(100, func() {
		for _, k := range keys {
			_ = m.Get(k)
		}
		for i := range 3 {
			_ = lv.Get(celtypes.Int(i))
		}
	}); n != 0 {
		t.Errorf("reading entries allocates %v times", n)
	}
	for k, want := range map[string]ref.Val{"s": celtypes.String("text"), "i": celtypes.Int(1 << 40), "f": celtypes.Double(2.5)} {
		got := m.Get(celtypes.String(k))
		if reflect.TypeOf(got) != reflect.TypeOf(want) || got != want {
			t.Errorf("%s: %T %v, want %T %v", k, got, got, want, want)
		}
	}
	var keysSeen []string
	for it := m.Iterator(); it.HasNext() == celtypes.True; {
		k := it.Next()
		if _, ok := k.(celtypes.String); !ok {
			t.Fatalf("key %T", k)
		}
		keysSeen = append(keysSeen, string(k.(celtypes.String)))
	}
	sort.Strings(keysSeen)
	if fmt.Sprint(keysSeen) != "[f i l m s]" {
		t.Errorf("keys %v", keysSeen)
	}
}

// TestMapViewHashes: a map of the object as expressions see it can be a
// key of a Go map, as cel-go's map of it (a pointer) can — cel-go hashes
// values in set membership tests and map literals (`object.spec in [0]`
// panicked with a map as the view: "hash of unhashable type").
func TestMapViewHashes(t *testing.T) {
	m := map[string]any{"k": "v"}
	view := presentEntry(m)
	if _, ok := view.(mapView); !ok {
		t.Fatalf("presented as %T", view)
	}
	set := map[ref.Val]bool{view: true, celtypes.Int(0): true}
	if !set[view] || set[presentEntry(map[string]any{"k": "v"})] || len(set) != 2 {
		t.Errorf("set of a view: %v", set)
	}
	if got := view.(mapView).goMap(); len(got) != 1 || got["k"] != "v" {
		t.Errorf("the view's map: %v", got)
	}
}

// TestOptionalsPresented: an optional selection of a map or a list of the
// object holds it as a view (resolveOptional), but where the attribute
// is one resolveOptional leaves to cel-go (a leading-dot name); the
// values are cel-go's either way (TestPlanOnceAgrees, FuzzPlanOnceAgrees).
func TestOptionalsPresented(t *testing.T) {
	c, _ := twoCompilers(t)
	obj := map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}, "spec": map[string]any{"items": []any{"x"}}}
	for _, tc := range []struct {
		expr string
		view bool
	}{
		{`object.metadata.?labels`, true},
		{`object.?metadata.labels`, true},
		{`object.spec.?items`, true},
		{`[object.spec].map(s, s.?items)[0]`, true},
		{`object.metadata.?annotations`, false},
		{`[1].map(object, .object.metadata.?labels)[0]`, false},
	} {
		p, err := c.Compile(policySpec{variables: [][2]string{{"v", tc.expr}}}.build())
		if err != nil || p.Variables[0].Err != nil {
			t.Fatalf("%s: %v %v", tc.expr, err, p.Variables[0].Err)
		}
		r, _, err := p.NewActivation(t.Context(), Input{Object: obj}).Eval(p.Variables[0], 1<<40)
		if err != nil || r.Err != nil {
			t.Fatalf("%s: %v %v", tc.expr, err, r.Err)
		}
		opt, ok := r.Value.(*celtypes.Optional)
		if !ok {
			t.Fatalf("%s: %T", tc.expr, r.Value)
		}
		view := false
		if opt.HasValue() {
			switch opt.GetValue().(type) {
			case mapView, listView:
				view = true
			}
		}
		if view != tc.view {
			t.Errorf("%s: %v (%T), a view: %v", tc.expr, opt, opt, tc.view)
		}
	}
}

// TestRedoable: resolveOptional takes cel-go's absolute attributes of one
// candidate name, without disambiguation, with an optional qualifier only.
func TestRedoable(t *testing.T) {
	reg, err := celtypes.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	fac := interpreter.NewAttributeFactory(containers.DefaultContainer, reg, reg)
	attr := func(optional bool, names ...string) interpreter.NamespacedAttribute {
		a := fac.AbsoluteAttribute(1, names...)
		q, err := fac.NewQualifier(nil, 2, "k", optional)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.AddQualifier(q); err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, tc := range []struct {
		a    interpreter.NamespacedAttribute
		want bool
	}{
		{attr(true, "object"), true},
		{attr(false, "object"), false},
		{attr(true, ".object"), false},
		{attr(true, "a.object", "object"), false},
		{fac.AbsoluteAttribute(1, "object"), false},
	} {
		if got := redoable(tc.a); got != tc.want {
			t.Errorf("%v: redoable %v, want %v", tc.a, got, tc.want)
		}
	}
}

// TestCompositeKeysAreCelGos: a map or a list of the object as a map
// literal's key is cel-go's value, a new one at every read, so that two
// reads of the same map are two keys (planCELValues) — in the expression
// itself and through a variable — while a policy without such a key keeps
// its views.
func TestCompositeKeysAreCelGos(t *testing.T) {
	c, refC := twoCompilers(t)
	obj := map[string]any{"spec": map[string]any{"items": []any{map[string]any{"name": "a"}, []any{"x"}}}}
	for _, tc := range []struct {
		name      string
		spec      policySpec
		celValues bool
	}{
		{"a map read twice as a key", policySpec{ac: []string{`{dyn(object.spec): 1}[dyn(object.spec)] == 1 ? Object{} : Object{}`},
			conditions: [][2]string{{"c", `{dyn(object.spec): 1, dyn(object.spec): 2}.size() == 2`}}}, true},
		{"a list read twice as a key", policySpec{conditions: [][2]string{{"c", `dyn(object.spec.items[1]) in {dyn(object.spec.items[1]): true}`}}}, true},
		{"a key through a variable", policySpec{variables: [][2]string{{"s", `object.spec`}, {"k", `{dyn(variables.s.items[0]): 1}[dyn(object.spec.items[0])]`}},
			conditions: [][2]string{{"c", `variables.k == 1`}}}, true},
		{"a variable read twice", policySpec{variables: [][2]string{{"s", `object.spec`}},
			conditions: [][2]string{{"c", `{dyn(variables.s.items[0]): 1}[dyn(variables.s.items[0])] == 1`}}}, true},
		{"a dyn key holding a string", policySpec{conditions: [][2]string{{"c", `{object.spec.items[0].name: object.spec}.size() == 1`}}}, true},
		{"string keys", policySpec{conditions: [][2]string{{"c", `{string(object.spec.items[0].name): object.spec, "b": dyn(1)}.size() == 2 && object.spec.items[0] in [1]`}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.Compile(tc.spec.build())
			if err != nil {
				t.Fatal(err)
			}
			ref, err := refC.Compile(tc.spec.build())
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range [][]*Expression{p.Variables, p.MatchConditions, p.Mutations} {
				for _, e := range l {
					if e.Err != nil {
						t.Fatalf("%s: %v", e.Source, e.Err)
					}
					if e.prog.celValues != tc.celValues {
						t.Errorf("%s: planned with cel-go's values: %v, want %v", e.Source, e.prog.celValues, tc.celValues)
					}
				}
			}
			vals, errs := sameResults(t, tc.name, p, unplanned(t, ref), Input{Object: obj, OldObject: obj})
			if vals+errs == 0 {
				t.Fatal("nothing compared")
			}
		})
	}
}

// TestOptionalInIsOptionalOf holds optionalIn's optionals to
// celtypes.OptionalOf's: the same value, presence, type and text, equal
// both ways, each a new pointer.
func TestOptionalInIsOptionalOf(t *testing.T) {
	if !optionalMirrored {
		t.Fatal("types.Optional is not laid out as optionalLayout: optionalIn allocates each")
	}
	var s celobject.Slab[celtypes.Optional]
	seen := map[*celtypes.Optional]bool{}
	vals := []ref.Val{celtypes.String("x"), celtypes.Int(1), celtypes.NullValue, celtypes.True,
		celtypes.NewStringList(celtypes.DefaultTypeAdapter, []string{"a"}), celtypes.OptionalNone}
	for round := range 3 {
		for _, v := range vals {
			got, want := optionalIn(&s, v), celtypes.OptionalOf(v)
			if seen[got] {
				t.Fatalf("%v: optional handed out twice", v)
			}
			seen[got] = true
			if got.HasValue() != want.HasValue() || got.GetValue() != want.GetValue() || got.Type() != want.Type() ||
				fmt.Sprint(got) != fmt.Sprint(want) || got.Equal(want) != celtypes.True || want.Equal(got) != celtypes.True {
				t.Errorf("round %d: %v: %v, OptionalOf's %v", round, v, got, want)
			}
		}
	}
}
