package compiler

import (
	"errors"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

	"github.com/mutatis-dev/mutatis/internal/celobject"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// What cel-go's cost observer is shown of a selection, without a CEL map
// built for every map on the way.
//
// With cost tracking on, cel-go wraps every qualifier of an attribute
// (evalWatchAttr.AddQualifier: the `spec` and `containers` of
// object.spec.containers) in a step that converts the value the qualifier
// arrives at through the attribute's adapter (InterpretableAttribute.Adapter)
// and hands it to the observer: types.NewStringInterfaceMap, two
// allocations, for each map of the object on the way, at every read. The
// cost observer (interpreter.costTrackerFactory.Observe) reads nothing of
// a qualifier's value to charge it (a constant qualifier costs 1 whatever
// it found); it pushes it on its stack of argument values, where the
// attribute's own observation drops it or it lies unread (an intermediate
// qualifier's ID is a select node's that no call takes as an argument).
//
// presentAttr wraps every attribute at planning (planOnce) so that its
// Adapter, which cel-go asks only when it wraps a qualifier and when a
// has() test converts its boolean, answers with presentAdapter: a map
// of the object (a map[string]any, never anything CEL built) is shown as a
// mapView, the map itself under a type of its own, which fits in an
// interface without an allocation; every other value is the environment
// adapter's. Whatever a mapView is asked answers as the adapter's map:
// Size, Type, Value, Find, Get, Contains and Iterator directly (as cel-go's
// map of a Go map does), every other method through the map the adapter
// builds (TestMapViewIsTheAdaptersMap); a listView likewise. Since session
// 23 the attribute's value itself is presented too (presentValues:
// presentAttr re-does evalAttr.Exec with the presenting adapter), so that
// reads through it convert nothing; the has() step's value is a boolean
// (its last qualifier tests presence only).
// TestPlanOnceAgrees and FuzzPlanOnceAgrees hold the programs to cel-go's
// own plan: same values, errors, costs and remaining budgets.
type presentAttr struct {
	interpreter.InterpretableAttribute
	// adapter is the attribute's own adapter (an evalAttr's is fixed when
	// it is planned) under presentAdapter, made once: a pointer fits in
	// the interface Adapter returns without an allocation per call.
	adapter *presentAdapter
	// values is set when the wrapped attribute is cel-go's evalAttr, whose
	// Exec is re-done here (resolve, then convert) with the presenting
	// adapter: the attribute's value, when it is a map or a list of the
	// object, is a view too (see presentValues).
	values bool
	// optional tells, once the program runs (its qualifiers are all added
	// by then), whether Exec resolves the attribute itself so that an
	// optional selection's value is presented too (resolveOptional):
	// optionalUnknown until the first Exec asks.
	optional atomic.Int32
	// optionals are where resolveOptional's optionals are taken from,
	// sixteen to an allocation (optionalIn).
	optionals celobject.Slab[celtypes.Optional]
}

// The states of presentAttr.optional.
const (
	optionalUnknown int32 = iota
	optionalResolved
	optionalLeft
)

// Adapter implements interpreter.InterpretableAttribute.
func (p *presentAttr) Adapter() celtypes.Adapter { return p.adapter }

// Exec implements interpreter.InterpretableV2: evalAttr.Exec (cel-go
// v0.29.2, interpreter/interpretable.go) with the presenting adapter, when
// values is set; the wrapped attribute's own Exec otherwise.
func (p *presentAttr) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	if !p.values {
		return p.InterpretableAttribute.Exec(frame)
	}
	var v any
	var err error
	if na := p.optionalAttr(); na != nil {
		v, err = p.resolveOptional(frame, na)
	} else {
		v, err = p.Attr().Resolve(frame)
	}
	if err != nil {
		return celtypes.LabelErrNode(p.ID(), celtypes.WrapErr(err))
	}
	return p.adapter.NativeToValue(v)
}

// An optional selection (object.metadata.?labels, c.?ports) is resolved by
// cel-go's absoluteAttribute.Resolve, which converts the value it arrives
// at with the attribute's adapter before wrapping it in an optional
// (types.OptionalOf): a map of the object is then cel-go's map of it
// (types.NewStringInterfaceMap, two allocations), a string a new box, and
// every read through them (`"k" in labels`) converts its entry again.
// resolveOptional is that Resolve, for the attributes it can redo (one
// candidate name, no leading-dot disambiguation: every attribute of a
// policy's expressions but those), with the presenting adapter, so that
// the optional holds the same value as a view (TestMapViewIsTheAdaptersMap
// holds the views to the adapter's values); every other attribute is left
// to Resolve. TestPlanOnceAgrees and FuzzPlanOnceAgrees hold the programs
// to cel-go's own plan (values, errors, costs), TestOptionalsPresented
// that the selections are resolved here.

// optionalAttr returns the attribute of p when Exec resolves it itself
// (resolveOptional), nil otherwise: cel-go's absoluteAttribute with one
// candidate name, without disambiguation, and an optional qualifier.
func (p *presentAttr) optionalAttr() interpreter.NamespacedAttribute {
	switch p.optional.Load() {
	case optionalResolved:
		return p.Attr().(interpreter.NamespacedAttribute)
	case optionalLeft:
		return nil
	}
	na, ok := p.Attr().(interpreter.NamespacedAttribute)
	if !ok || !redoable(na) {
		p.optional.Store(optionalLeft)
		return nil
	}
	p.optional.Store(optionalResolved)
	return na
}

// redoable reports whether resolveOptional resolves na as
// absoluteAttribute.Resolve (cel-go v0.29.2) does, and whether it is worth
// it (a qualifier is optional).
func redoable(na interpreter.NamespacedAttribute) bool {
	if reflect.TypeOf(na).String() != "*interpreter.absoluteAttribute" || len(na.CandidateVariableNames()) != 1 {
		return false
	}
	d := reflect.ValueOf(na).Elem().FieldByName("disambiguateNames")
	if !d.IsValid() || d.Kind() != reflect.Bool || d.Bool() {
		return false
	}
	for _, q := range na.Qualifiers() {
		if q.IsOptional() {
			return true
		}
	}
	return false
}

// resolveOptional is absoluteAttribute.Resolve (cel-go v0.29.2) of na,
// one candidate name without disambiguation, the optional's value
// converted by the presenting adapter; a name not found is left to
// Resolve (its type identifiers, its error).
func (p *presentAttr) resolveOptional(frame *interpreter.ExecutionFrame, na interpreter.NamespacedAttribute) (any, error) {
	obj, found := frame.ResolveName(na.CandidateVariableNames()[0])
	if !found {
		return na.Resolve(frame)
	}
	if celErr, ok := obj.(*celtypes.Err); ok {
		return nil, celErr
	}
	obj, isOpt, err := applyQualifiers(frame, obj, na.Qualifiers())
	if err != nil {
		return nil, err
	}
	if isOpt {
		val := p.adapter.NativeToValue(obj)
		if celtypes.IsUnknown(val) {
			return val, nil
		}
		return optionalIn(&p.optionals, val), nil
	}
	return obj, nil
}

// applyQualifiers is cel-go's (v0.29.2, interpreter/attributes.go): the
// qualifiers applied in turn, optionally from the first optional one on.
func applyQualifiers(vars interpreter.Activation, obj any, qualifiers []interpreter.Qualifier) (any, bool, error) {
	optObj, isOpt := obj.(*celtypes.Optional)
	if isOpt {
		if !optObj.HasValue() {
			return optObj, false, nil
		}
		obj = optObj.GetValue()
	}
	var err error
	for _, qual := range qualifiers {
		var qualObj any
		isOpt = isOpt || qual.IsOptional()
		if isOpt {
			var present bool
			qualObj, present, err = qual.QualifyIfPresent(vars, obj, false)
			if err != nil {
				return nil, false, err
			}
			if !present {
				return celtypes.OptionalNone, false, nil
			}
		} else {
			qualObj, err = qual.Qualify(vars, obj)
			if err != nil {
				return nil, false, err
			}
		}
		obj = qualObj
	}
	return obj, isOpt, nil
}

// Eval implements interpreter.Interpretable, as evalAttr.Eval does.
func (p *presentAttr) Eval(ctx interpreter.Activation) ref.Val {
	return p.Exec(interpreter.AsFrame(ctx))
}

// presentAttribute wraps a, unless its adapter already presents (an
// attribute decorated again after a qualifier was added, a has() test
// over a wrapped one).
// The attribute's value is presented too (presentAttr.values) when values
// is set (planOnce's presentValues; planOnceCELValues' false).
func presentAttribute(a interpreter.InterpretableAttribute, values bool) interpreter.InterpretableV2 {
	inner := a.Adapter()
	if _, ok := inner.(*presentAdapter); ok {
		return a
	}
	return &presentAttr{InterpretableAttribute: a, adapter: &presentAdapter{inner},
		values: values && reflect.TypeOf(a).String() == "*interpreter.evalAttr"}
}

// presentValues: the value of an attribute (object.spec.containers, the c
// of containers.all(c, …)) that is a map or a list of the object is a view
// as well, not only what the cost observer is shown of its qualifiers. The
// views answer what expressions ask of a map or a list most (Find, Get,
// Contains, Iterator, Fold, Size) without the adapter's map or list, and
// their entries as views again, so that reading c.resources.limits of
// each container converts no map on the way; whatever else is asked of
// them (Equal, conversions, Add, String) is answered by the adapter's map
// or list. The views are cel-go's maps and lists of the same Go values
// but for their Go type: TestMapViewIsTheAdaptersMap holds every answer
// to the adapter's, TestPlanOnceAgrees and FuzzPlanOnceAgrees the
// programs to cel-go's own plan (values, errors, costs), and the oracle
// tests the results. false is session 22's presenting, to the cost
// observer alone.
const presentValues = true

// presentAdapter is the adapter of a wrapped attribute: maps of the
// object as mapViews, everything else as the environment's adapter does.
type presentAdapter struct{ celtypes.Adapter }

// NativeToValue implements types.Adapter.
func (p presentAdapter) NativeToValue(v any) ref.Val {
	switch t := v.(type) {
	case map[string]any:
		return viewOfMap(t)
	case []any:
		// The slice as v holds it: boxed values never change.
		return listView{(*[]any)(jsonvalue.DataOf(unsafe.Pointer(&v)))}
	case string:
		return scalarVal(stringValWord, &v)
	case int64:
		return scalarVal(intValWord, &v)
	case float64:
		return scalarVal(doubleValWord, &v)
	}
	return p.Adapter.NativeToValue(v)
}

// mapView and listView are a map and a list of the object shown to the cost observer: the value
// types.NewStringInterfaceMap makes of it, built only when a method needs
// more than the map's size, type or Go value (the same for listView and
// types.NewDynamicList, two allocations too). The maps of an object hold
// JSON values only (strings, numbers, booleans, nulls, maps and lists of
// them), which cel-go's default adapter converts as the environment's
// does.
//
// A mapView holds the map's runtime pointer, not the map: an interface
// holding it compares and hashes as a pointer does, as cel-go's map of it
// (a pointer) does — cel-go hashes values where it keeps a set or builds a
// map (`x in [1, 2]` planned as a set membership test, a map literal's
// keys): a Go map there is a run-time panic ("hash of unhashable type").
type mapView struct{ h unsafe.Pointer }

// viewOfMap is the view of m.
func viewOfMap(m map[string]any) mapView { return mapView{*(*unsafe.Pointer)(unsafe.Pointer(&m))} }

// goMap is the map m views.
func (m mapView) goMap() map[string]any { return *(*map[string]any)(unsafe.Pointer(&m.h)) }

var (
	_ traits.Mapper   = mapView{}
	_ traits.Zeroer   = mapView{}
	_ traits.Foldable = mapView{}
)

// full is the adapter's map of m.
func (m mapView) full() traits.Mapper {
	return celtypes.NewStringInterfaceMap(celtypes.DefaultTypeAdapter, m.goMap()).(traits.Mapper)
}

// ConvertToNative implements ref.Val.
func (m mapView) ConvertToNative(t reflect.Type) (any, error) { return m.full().ConvertToNative(t) }

// ConvertToType implements ref.Val.
func (m mapView) ConvertToType(t ref.Type) ref.Val { return m.full().ConvertToType(t) }

// Equal implements ref.Val.
func (m mapView) Equal(o ref.Val) ref.Val { return m.full().Equal(o) }

// Type implements ref.Val.
func (m mapView) Type() ref.Type { return celtypes.MapType }

// Value implements ref.Val.
func (m mapView) Value() any { return m.goMap() }

// ViewOf is jsonvalue.View's: the Go map presented.
func (m mapView) ViewOf() any { return m.goMap() }

// Size implements traits.Sizer.
func (m mapView) Size() ref.Val { return celtypes.Int(len(m.goMap())) }

// IsZeroValue implements traits.Zeroer.
func (m mapView) IsZeroValue() bool { return len(m.goMap()) == 0 }

// Contains implements traits.Container, as cel-go's baseMap.Contains.
func (m mapView) Contains(k ref.Val) ref.Val {
	_, found := m.Find(k)
	return celtypes.Bool(found)
}

// Get implements traits.Indexer, as cel-go's baseMap.Get.
func (m mapView) Get(k ref.Val) ref.Val {
	v, found := m.Find(k)
	if !found {
		return celtypes.ValOrErr(v, "no such key: %v", k)
	}
	return v
}

// Find implements traits.Mapper, as cel-go's stringIfaceMapAccessor.Find
// (the accessor of types.NewStringInterfaceMap), the entry presented as a
// view when it is a map or a list.
func (m mapView) Find(k ref.Val) (ref.Val, bool) {
	key, ok := k.(celtypes.String)
	if !ok {
		return nil, false
	}
	v, found := m.goMap()[string(key)]
	if !found {
		return nil, false
	}
	return presentEntry(v), true
}

// presentEntry is an entry of a map or a list of the object as the
// adapter's map or list converts it (cel-go's default adapter), a map or
// a list of it as a view.
func presentEntry(v any) ref.Val {
	return presentAdapter{celtypes.DefaultTypeAdapter}.NativeToValue(v)
}

// The interface words of a types.String, a types.Int and a types.Double
// held in a ref.Val.
var (
	stringValWord = valWord(celtypes.String("s"))
	intValWord    = valWord(celtypes.Int(1 << 40))
	doubleValWord = valWord(celtypes.Double(1.5))
)

// valWord is the type word of the interface value v.
func valWord(v ref.Val) unsafe.Pointer { return (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[0] }

// scalarVal is the CEL value of the string, int64 or float64 the interface
// at v holds (types.String(s), types.Int(i), types.Double(f)) without a new
// box: the ref.Val points to the value v's box holds, which never changes
// (boxed values are immutable). word is the ref.Val's type word for it.
func scalarVal(word unsafe.Pointer, v *any) ref.Val {
	var r ref.Val
	w := (*[2]unsafe.Pointer)(unsafe.Pointer(&r))
	w[0], w[1] = word, jsonvalue.DataOf(unsafe.Pointer(v))
	return r
}

// Iterator implements traits.Iterable, as cel-go's stringIfaceMapAccessor
// does: the keys copied first, in Go's map order.
func (m mapView) Iterator() traits.Iterator {
	gm := m.goMap()
	keys := make([]string, 0, len(gm))
	for k := range gm {
		keys = append(keys, k)
	}
	return &mapViewIterator{keys: keys}
}

// Fold implements traits.Foldable.
func (m mapView) Fold(f traits.Folder) { m.full().(traits.Foldable).Fold(f) }

// String is the adapter's map's String.
func (m mapView) String() string {
	if s, ok := m.full().(interface{ String() string }); ok {
		return s.String()
	}
	return ""
}

// listView is a list of the object shown to the cost observer (see
// mapView), held by a pointer to the slice the qualifier's value boxes.
type listView struct{ p *[]any }

var (
	_ traits.Lister   = listView{}
	_ traits.Zeroer   = listView{}
	_ traits.Foldable = listView{}
)

// full is the adapter's list of l.
func (l listView) full() traits.Lister {
	return celtypes.NewDynamicList(celtypes.DefaultTypeAdapter, *l.p)
}

// ConvertToNative implements ref.Val.
func (l listView) ConvertToNative(t reflect.Type) (any, error) { return l.full().ConvertToNative(t) }

// ConvertToType implements ref.Val.
func (l listView) ConvertToType(t ref.Type) ref.Val { return l.full().ConvertToType(t) }

// Equal implements ref.Val.
func (l listView) Equal(o ref.Val) ref.Val { return l.full().Equal(o) }

// Type implements ref.Val.
func (l listView) Type() ref.Type { return celtypes.ListType }

// Value implements ref.Val.
func (l listView) Value() any { return *l.p }

// ViewOf is jsonvalue.View's: the Go slice presented.
func (l listView) ViewOf() any { return *l.p }

// Size implements traits.Sizer.
func (l listView) Size() ref.Val { return celtypes.Int(len(*l.p)) }

// IsZeroValue implements traits.Zeroer.
func (l listView) IsZeroValue() bool { return len(*l.p) == 0 }

// Add implements traits.Adder.
func (l listView) Add(o ref.Val) ref.Val { return l.full().Add(o) }

// Contains implements traits.Container, as cel-go's baseList.Contains.
func (l listView) Contains(e ref.Val) ref.Val {
	for _, v := range *l.p {
		if b, ok := e.Equal(presentEntry(v)).(celtypes.Bool); ok && b == celtypes.True {
			return celtypes.True
		}
	}
	return celtypes.False
}

// Get implements traits.Indexer, as cel-go's baseList.Get.
func (l listView) Get(i ref.Val) ref.Val {
	ind, err := celtypes.IndexOrError(i)
	if err != nil {
		return celtypes.ValOrErr(i, "%v", err)
	}
	if ind < 0 || ind >= len(*l.p) {
		return celtypes.NewErr("index '%d' out of range in list size '%d'", ind, l.Size())
	}
	return presentEntry((*l.p)[ind])
}

// Iterator implements traits.Iterable, as cel-go's list iterator (Next
// is Get of the next index).
func (l listView) Iterator() traits.Iterator { return &listViewIterator{list: *l.p} }

// Fold implements traits.Foldable, as cel-go's baseList.Fold: the entries
// as they are, unconverted.
func (l listView) Fold(f traits.Folder) {
	for i, v := range *l.p {
		if !f.FoldEntry(i, v) {
			break
		}
	}
}

// String is the adapter's list's String.
func (l listView) String() string {
	if s, ok := l.full().(interface{ String() string }); ok {
		return s.String()
	}
	return ""
}

// listViewIterator is a listView's iterator. As every cel-go iterator
// (types.baseIterator) it is a value no expression sees.
type listViewIterator struct {
	list   []any
	cursor int
}

// HasNext implements traits.Iterator.
func (it *listViewIterator) HasNext() ref.Val { return celtypes.Bool(it.cursor < len(it.list)) }

// Next implements traits.Iterator.
func (it *listViewIterator) Next() ref.Val {
	if it.cursor >= len(it.list) {
		return nil
	}
	v := it.list[it.cursor]
	it.cursor++
	return presentEntry(v)
}

// ConvertToNative implements ref.Val, as cel-go's baseIterator.
func (*listViewIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, errors.New("type conversion on iterators not supported")
}

// ConvertToType implements ref.Val, as cel-go's baseIterator.
func (*listViewIterator) ConvertToType(ref.Type) ref.Val { return celtypes.NewErr("no such overload") }

// Equal implements ref.Val, as cel-go's baseIterator.
func (*listViewIterator) Equal(ref.Val) ref.Val { return celtypes.NewErr("no such overload") }

// Type implements ref.Val, as cel-go's baseIterator.
func (*listViewIterator) Type() ref.Type { return celtypes.IteratorType }

// Value implements ref.Val, as cel-go's baseIterator.
func (*listViewIterator) Value() any { return nil }

// mapViewIterator is a mapView's iterator, cel-go's stringKeyIterator but
// for its Go type: the keys as types.String, each pointing to its slot of
// keys (never written again), without a box of its own.
type mapViewIterator struct {
	listViewIterator
	keys []string
}

// HasNext implements traits.Iterator.
func (it *mapViewIterator) HasNext() ref.Val { return celtypes.Bool(it.cursor < len(it.keys)) }

// Next implements traits.Iterator.
func (it *mapViewIterator) Next() ref.Val {
	if it.cursor >= len(it.keys) {
		return nil
	}
	var r ref.Val
	w := (*[2]unsafe.Pointer)(unsafe.Pointer(&r))
	w[0], w[1] = stringValWord, unsafe.Pointer(&it.keys[it.cursor])
	it.cursor++
	return r
}

// The identity of a map or a list of the object. cel-go converts a Go map
// or slice into a new value (a pointer) at every read, where a view of the
// same Go map or slice is the same value at every read: the two compare
// alike (Equal) but hash apart wherever cel-go keys a Go map by values.
// Of those places, only a map literal's keys (and the maps a
// transformMapEntry builds from them) can hold a map or a list; a set
// membership test (`x in [1, 2]`, Optimize) hashes its constants only,
// none of which a view or cel-go's map can equal. So a policy with a map
// literal keyed by anything but a bool, a number or a string
// (`{dyn(object.spec): 1}`, a key of type dyn or of a map or list type)
// has every expression planned with cel-go's own values
// (planOnceCELValues): a view read by one expression can reach another
// through a variable. TestCompositeKeysAreCelGos holds such expressions to
// cel-go's plan.

// hashesComposites reports whether the checked expression a has a map
// literal with a key whose checked type is not a bool, an int, a uint, a
// double or a string.
func hashesComposites(a *cel.Ast) bool {
	native := a.NativeRep()
	found := false
	celast.PostOrderVisit(native.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if found || e.Kind() != celast.MapKind {
			return
		}
		for _, entry := range e.AsMap().Entries() {
			switch native.GetType(entry.AsMapEntry().Key().ID()).Kind() {
			case celtypes.BoolKind, celtypes.IntKind, celtypes.UintKind, celtypes.DoubleKind, celtypes.StringKind:
			default:
				found = true
				return
			}
		}
	}))
	return found
}

// planCELValues plans every expression of lists (a policy's) with cel-go's
// own values when one of them hashes composite values (hashesComposites).
// It runs when the policy is compiled, before any of its programs is
// evaluated; a program built already (planCheck's eager builds) is built
// again.
func planCELValues(lists ...[]*Expression) {
	hashes := false
	for _, l := range lists {
		for _, e := range l {
			if e != nil && e.ast != nil && hashesComposites(e.ast) {
				hashes = true
			}
		}
	}
	if !hashes {
		return
	}
	for _, l := range lists {
		for _, e := range l {
			if e == nil || e.prog == nil {
				continue
			}
			e.prog.celValues = true
			if e.prog.prog != nil {
				if prog, err := e.env.Program(e.ast, programOptionsFor(e.env, e.ast, true, e.Kind)...); err == nil {
					e.prog.prog = prog
				}
			}
		}
	}
}

// optionalLayout mirrors cel-go's types.Optional (v0.29.2), whose value has
// no setter but OptionalOf, which allocates one each.
type optionalLayout struct {
	value ref.Val
}

// optionalMirrored tells that types.Optional is laid out as
// optionalLayout (checked once, at init).
var optionalMirrored = func() bool {
	real, mirror := reflect.TypeFor[celtypes.Optional](), reflect.TypeFor[optionalLayout]()
	if real.NumField() != mirror.NumField() || real.Size() != mirror.Size() {
		return false
	}
	r, m := real.Field(0), mirror.Field(0)
	return r.Name == m.Name && r.Type == m.Type && r.Offset == m.Offset
}()

// optionalIn is celtypes.OptionalOf(v), the optional taken from s: the
// same value, a new pointer (TestOptionalInIsOptionalOf).
func optionalIn(s *celobject.Slab[celtypes.Optional], v ref.Val) *celtypes.Optional {
	if !optionalMirrored {
		return celtypes.OptionalOf(v)
	}
	o := s.New()
	(*optionalLayout)(unsafe.Pointer(o)).value = v
	return o
}
