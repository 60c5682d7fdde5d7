package celobject

import (
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"k8s.io/apiserver/pkg/cel/mutation/dynamic"
)

// Object is the value of an `Object.<path>{…}` construction that the
// compiler builds without cel-go's map of its fields, for a construction
// whose value can only reach the reader of an ApplyConfiguration's result
// (the compiler decides which: the root of the expression, and the fields,
// list items, map values and conditional branches of one that is). It
// holds what dynamic.ObjectVal holds — the object type and the fields —
// with the fields as the construction's names (the plan's, shared by every
// value it builds) and values side by side, in one allocation for up to
// four fields.
//
// The readers of this package (CheckTypeNames, Native, NativeChecked,
// NativeCheckedObject) read an Object as they read the dynamic.ObjectVal
// it stands for (Upstream); every method of ref.Val answers as that
// ObjectVal's does, through it (TestObjectIsUpstreams).
type Object struct {
	// typ is the object type, as the provider's dynamic.ObjectVal holds it.
	typ *types.Type
	// names are the fields' names in construction order, without repeats;
	// not to be changed.
	names []string
	// vals are the fields' values, by names' index; nil for an optional
	// field left absent.
	vals   []ref.Val
	inline [4]ref.Val
}

var (
	_ ref.Val       = (*Object)(nil)
	_ traits.Zeroer = (*Object)(nil)
)

// NewObject returns the Object of type typ whose fields will be names, its
// values all nil (absent) until Set; names is kept, not copied.
func NewObject(typ *types.Type, names []string) *Object {
	o := new(Object)
	o.init(typ, names)
	return o
}

// init makes the zero Object o the Object of type typ whose fields will be
// names (NewObject).
func (o *Object) init(typ *types.Type, names []string) {
	o.typ, o.names = typ, names
	if len(names) <= len(o.inline) {
		o.vals = o.inline[:len(names)]
	} else {
		o.vals = make([]ref.Val, len(names))
	}
}

// Set sets the value of field i (names' index); nil leaves it absent.
func (o *Object) Set(i int, v ref.Val) { o.vals[i] = v }

// TypeName is the name of the object's type.
func (o *Object) TypeName() string { return o.typ.TypeName() }

// Upstream is the dynamic.ObjectVal o stands for: its type, and a map of
// its present fields, where every Object — a field, or an item of a list
// or a map of CEL values there, at any depth — is its Upstream, in a list
// or a map built anew (as types.NewRefValList and NewRefValMap build a
// literal's) when it holds one.
func (o *Object) Upstream() *dynamic.ObjectVal {
	fields := make(map[string]ref.Val, len(o.names))
	for i, name := range o.names {
		if v := o.vals[i]; v != nil {
			fields[name], _ = upstreamOf(v)
		}
	}
	return dynamic.NewObjectVal(o.typ, fields)
}

// upstreamOf is v with every Object in it as its Upstream (see Upstream),
// and whether it held any (v itself when not).
func upstreamOf(v ref.Val) (ref.Val, bool) {
	switch t := v.(type) {
	case *Object:
		return t.Upstream(), true
	case *dynamic.ObjectVal:
		return v, false // cel-go's: it never holds an Object
	case traits.Lister, traits.Mapper:
	default:
		return v, false
	}
	switch raw := v.Value().(type) {
	case []ref.Val:
		var items []ref.Val
		for i, item := range raw {
			u, changed := upstreamOf(item)
			if !changed && items == nil {
				continue
			}
			if items == nil {
				items = append(make([]ref.Val, 0, len(raw)), raw[:i]...)
			}
			items = append(items, u)
		}
		if items != nil {
			return types.NewRefValList(types.DefaultTypeAdapter, items), true
		}
	case map[ref.Val]ref.Val:
		var m map[ref.Val]ref.Val
		for _, item := range raw {
			if _, changed := upstreamOf(item); changed {
				m = make(map[ref.Val]ref.Val, len(raw))
				break
			}
		}
		if m != nil {
			for k, item := range raw {
				m[k], _ = upstreamOf(item)
			}
			return types.NewRefValMap(types.DefaultTypeAdapter, m), true
		}
	}
	return v, false
}

// ConvertToNative implements ref.Val, as Upstream's.
func (o *Object) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return o.Upstream().ConvertToNative(typeDesc)
}

// ConvertToType implements ref.Val, as Upstream's (o itself where
// Upstream's answers itself).
func (o *Object) ConvertToType(typeValue ref.Type) ref.Val {
	u := o.Upstream()
	if v := u.ConvertToType(typeValue); v != u {
		return v
	}
	return o
}

// Equal implements ref.Val, as Upstream's with other's Upstream when it is
// an Object.
func (o *Object) Equal(other ref.Val) ref.Val {
	if rhs, ok := other.(*Object); ok {
		other = rhs.Upstream()
	}
	return o.Upstream().Equal(other)
}

// Type implements ref.Val, as dynamic.ObjectVal's.
func (o *Object) Type() ref.Type { return types.NewObjectType(o.typ.TypeName()) }

// Value implements ref.Val, as Upstream's.
func (o *Object) Value() any { return o.Upstream().Value() }

// IsZeroValue implements traits.Zeroer: no field present, as
// dynamic.ObjectVal's.
func (o *Object) IsZeroValue() bool {
	for _, v := range o.vals {
		if v != nil {
			return false
		}
	}
	return true
}

// NativeCheckedObject is NativeChecked of o's Upstream, without building
// it: ok is true only when CheckTypeNames(o.Upstream()) is nil and
// Native(o.Upstream()) converts it.
func NativeCheckedObject(o *Object) (map[string]any, bool) {
	if !Mirrored {
		return nil, false
	}
	return converter{check: true}.built(o)
}

// NativeObject is Native of o's Upstream, without building it: the map
// Native(o.Upstream()) gives, and whether it converts it.
func NativeObject(o *Object) (map[string]any, bool) {
	if !Mirrored {
		return nil, false
	}
	return converter{}.built(o)
}

// ItemList is a list of CEL values that is, for every method, cel-go's
// types.NewRefValList of its Items (with an adapter that hands a ref.Val
// back as it is): the compiler's list literal built for a reader alone
// (compiler's outList). A reader converts it as it converts that list.
type ItemList interface {
	traits.Lister
	// Items are the list's items; not to be changed.
	Items() []ref.Val
}

// NumFields is the number of o's fields, present or absent.
func (o *Object) NumFields() int { return len(o.names) }

// Field is o's field i (names' index): its name, and its value, nil when
// the field is absent. The value is not to be changed.
func (o *Object) Field(i int) (name string, v ref.Val) { return o.names[i], o.vals[i] }
