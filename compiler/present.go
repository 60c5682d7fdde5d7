package compiler

import (
	"reflect"
	"unsafe"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

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
// Size, Type and Value directly, every other method through the map the
// adapter builds (TestMapViewIsTheAdaptersMap). The values an expression
// computes are never presented through it: an attribute's value is
// converted by its own adapter field (evalAttr.Exec), and the has() step's
// value is a boolean (its last qualifier tests presence only).
// TestPlanOnceAgrees and FuzzPlanOnceAgrees hold the programs to cel-go's
// own plan: same values, errors, costs and remaining budgets.
type presentAttr struct {
	interpreter.InterpretableAttribute
	// adapter is the attribute's own adapter (an evalAttr's is fixed when
	// it is planned) under presentAdapter, made once: a pointer fits in
	// the interface Adapter returns without an allocation per call.
	adapter *presentAdapter
}

// Adapter implements interpreter.InterpretableAttribute.
func (p *presentAttr) Adapter() celtypes.Adapter { return p.adapter }

// presentAttribute wraps a, unless its adapter already presents (an
// attribute decorated again after a qualifier was added, a has() test
// over a wrapped one).
func presentAttribute(a interpreter.InterpretableAttribute) interpreter.InterpretableV2 {
	inner := a.Adapter()
	if _, ok := inner.(*presentAdapter); ok {
		return a
	}
	return &presentAttr{InterpretableAttribute: a, adapter: &presentAdapter{inner}}
}

// presentAdapter is the adapter of a wrapped attribute: maps of the
// object as mapViews, everything else as the environment's adapter does.
type presentAdapter struct{ celtypes.Adapter }

// NativeToValue implements types.Adapter.
func (p presentAdapter) NativeToValue(v any) ref.Val {
	switch t := v.(type) {
	case map[string]any:
		return mapView(t)
	case []any:
		// The slice as v holds it: boxed values never change.
		return listView{(*[]any)(jsonvalue.DataOf(unsafe.Pointer(&v)))}
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
type mapView map[string]any

var (
	_ traits.Mapper   = mapView(nil)
	_ traits.Zeroer   = mapView(nil)
	_ traits.Foldable = mapView(nil)
)

// full is the adapter's map of m.
func (m mapView) full() traits.Mapper {
	return celtypes.NewStringInterfaceMap(celtypes.DefaultTypeAdapter, map[string]any(m)).(traits.Mapper)
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
func (m mapView) Value() any { return map[string]any(m) }

// Size implements traits.Sizer.
func (m mapView) Size() ref.Val { return celtypes.Int(len(m)) }

// IsZeroValue implements traits.Zeroer.
func (m mapView) IsZeroValue() bool { return len(m) == 0 }

// Contains implements traits.Container.
func (m mapView) Contains(k ref.Val) ref.Val { return m.full().Contains(k) }

// Get implements traits.Indexer.
func (m mapView) Get(k ref.Val) ref.Val { return m.full().Get(k) }

// Find implements traits.Mapper.
func (m mapView) Find(k ref.Val) (ref.Val, bool) { return m.full().Find(k) }

// Iterator implements traits.Iterable.
func (m mapView) Iterator() traits.Iterator { return m.full().Iterator() }

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

// Size implements traits.Sizer.
func (l listView) Size() ref.Val { return celtypes.Int(len(*l.p)) }

// IsZeroValue implements traits.Zeroer.
func (l listView) IsZeroValue() bool { return len(*l.p) == 0 }

// Add implements traits.Adder.
func (l listView) Add(o ref.Val) ref.Val { return l.full().Add(o) }

// Contains implements traits.Container.
func (l listView) Contains(e ref.Val) ref.Val { return l.full().Contains(e) }

// Get implements traits.Indexer.
func (l listView) Get(i ref.Val) ref.Val { return l.full().Get(i) }

// Iterator implements traits.Iterable.
func (l listView) Iterator() traits.Iterator { return l.full().Iterator() }

// Fold implements traits.Foldable.
func (l listView) Fold(f traits.Folder) { l.full().(traits.Foldable).Fold(f) }

// String is the adapter's list's String.
func (l listView) String() string {
	if s, ok := l.full().(interface{ String() string }); ok {
		return s.String()
	}
	return ""
}
