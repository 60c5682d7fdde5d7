// Package celobject reads the Object{…} values of MutatingAdmissionPolicy
// expressions (k8s.io/apiserver's dynamic.ObjectVal) as upstream's own
// methods do, without their cost: the type-name check of an
// ApplyConfiguration or a JSONPatch value (CheckTypeNames) and the
// conversion to a native map (Native). applyconfig and jsonpatch share it.
package celobject

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"k8s.io/apiserver/pkg/cel/mutation/dynamic"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// objectValLayout mirrors the fields of dynamic.ObjectVal (k8s.io/apiserver
// v0.37), whose field values have no accessor. Fields reads them only when
// the mirror matches the real type field for field (checked once, at
// init); otherwise the callers use upstream's methods.
type objectValLayout struct {
	objectType *types.Type
	fields     map[string]ref.Val
}

// Mirrored tells that dynamic.ObjectVal is laid out as objectValLayout:
// Fields and Native read it directly.
var Mirrored = func() bool {
	real, mirror := reflect.TypeFor[dynamic.ObjectVal](), reflect.TypeFor[objectValLayout]()
	if real.NumField() != mirror.NumField() || real.Size() != mirror.Size() {
		return false
	}
	for i := 0; i < real.NumField(); i++ {
		r, m := real.Field(i), mirror.Field(i)
		if r.Name != m.Name || r.Type != m.Type || r.Offset != m.Offset {
			return false
		}
	}
	return true
}()

// Fields are the fields of v, to be read only. Only when Mirrored.
func Fields(v *dynamic.ObjectVal) map[string]ref.Val {
	return (*objectValLayout)(unsafe.Pointer(v)).fields
}

// CheckTypeNames is v.CheckTypeNamesMatchFieldPathNames() (the same errors,
// joined in an order upstream can give too) without its cost: upstream
// converts every nested Object to a native map only to see that it is not a
// list or a map of CEL values, which it never is.
func CheckTypeNames(v *dynamic.ObjectVal) error {
	if !Mirrored {
		return v.CheckTypeNamesMatchFieldPathNames()
	}
	var c typeNameChecker
	c.check(v, v.Type().TypeName())
	return errors.Join(c.errs...)
}

type typeNameChecker struct {
	errs []error
}

// check is upstream's typeCheck, with the path joined, and built only for
// values that can hold Objects.
func (c *typeNameChecker) check(v ref.Val, path string) {
	if o, ok := v.(*Object); ok {
		c.checkName(o.TypeName(), path)
		for i, k := range o.names {
			if f := o.vals[i]; f != nil {
				c.checkField(f, path, k)
			}
		}
		return
	}
	ov, ok := v.(*dynamic.ObjectVal)
	if !ok {
		c.checkItems(v, path, "", false)
		return
	}
	c.checkName(ov.Type().TypeName(), path)
	for k, f := range Fields(ov) {
		c.checkField(f, path, k)
	}
}

// checkName checks the type name tn of an Object found at path.
func (c *typeNameChecker) checkName(tn, path string) {
	if tn != path {
		c.errs = append(c.errs, fmt.Errorf("unexpected type name %q, expected %q, which matches field name path from root Object type", tn, path))
	}
}

// checkField checks f, the value of field k of the Object at path.
func (c *typeNameChecker) checkField(f ref.Val, path, k string) {
	var tn string
	switch child := f.(type) {
	case *dynamic.ObjectVal:
		tn = child.Type().TypeName()
	case *Object:
		tn = child.TypeName()
	default:
		c.checkItems(f, path, k, true)
		return
	}
	if isFieldPath(tn, path, k) {
		c.check(f, tn) // path.k, without building it
	} else {
		c.check(f, path+"."+k)
	}
}

// IsFieldPath reports whether s is parent + "." + key: the type name
// NativeChecked and CheckTypeNames accept for an Object found under field
// key of the Object named parent.
func IsFieldPath(s, parent, key string) bool { return isFieldPath(s, parent, key) }

// isFieldPath reports whether s is parent + "." + key.
func isFieldPath(s, parent, key string) bool {
	return len(s) == len(parent)+1+len(key) && s[len(parent)] == '.' && s[:len(parent)] == parent && s[len(parent)+1:] == key
}

// isScalar tells the values check has nothing to look at in: neither
// Objects nor lists or maps.
func isScalar(v ref.Val) bool {
	switch v.(type) {
	case types.String, types.Int, types.Uint, types.Double, types.Bool, types.Bytes, types.Null:
		return true
	}
	return false
}

// checkItems checks the items of v when it is a list or a map of CEL
// values, under the path of field key of parent (of parent itself when v
// is not a field).
func (c *typeNameChecker) checkItems(v ref.Val, parent, key string, field bool) {
	if isScalar(v) {
		return
	}
	path, built := parent, !field
	visit := func(item ref.Val) {
		if isScalar(item) {
			return // check would find nothing
		}
		if !built {
			path, built = parent+"."+key, true
		}
		c.check(item, path)
	}
	switch value := v.Value().(type) {
	case []ref.Val:
		for _, item := range value {
			visit(item)
		}
	case map[ref.Val]ref.Val:
		for _, item := range value {
			visit(item)
		}
	}
}

// Native is v.Value() (dynamic.ObjectVal's conversion to a native map) for
// the values it models, computed once per value: upstream's convertField
// asks a nested Object for its native value up to three times (as a list,
// as a map, then as a mapper), so its cost grows threefold with every
// level of nesting. ok is false for anything else (nulls, bytes,
// timestamps, lists and maps not built by CEL literals, conversion
// errors, an ObjectVal not Mirrored), where the caller asks upstream. The
// map and every map and slice in it are new, owned by the caller.
func Native(v *dynamic.ObjectVal) (map[string]any, bool) {
	if !Mirrored {
		return nil, false
	}
	return converter{}.object(v)
}

// NativeChecked is Native(v) for a v whose type names CheckTypeNames
// accepts, checked in the same walk: ok is true only when CheckTypeNames(v)
// is nil and Native(v) converts v. When it is false, the caller runs both
// (for the error, or upstream's conversion); TestNativeCheckedIsBoth holds
// it to them.
func NativeChecked(v *dynamic.ObjectVal) (map[string]any, bool) {
	if !Mirrored {
		return nil, false
	}
	return converter{check: true}.object(v)
}

// converter is Native's walk, which also checks, when check is set, that
// every nested Object is named after its field path from v (the type name
// of v, whatever it is, followed by the field names), as CheckTypeNames
// does: for an Object that is a field of the Object named parent, or an
// item of a list or a map that is, parent + "." + the field's name.
type converter struct {
	check bool
}

func (c converter) object(v *dynamic.ObjectVal) (map[string]any, bool) {
	fields := Fields(v)
	out := make(map[string]any, len(fields))
	name := ""
	if c.check {
		name = v.Type().TypeName()
	}
	for k, f := range fields {
		cv, ok := c.field(f, name, k)
		if !ok {
			return nil, false
		}
		out[k] = cv
	}
	return out, true
}

// built is object for an Object: its present fields, in one map.
func (c converter) built(v *Object) (map[string]any, bool) {
	out := make(map[string]any, len(v.names))
	name := ""
	if c.check {
		name = v.TypeName()
	}
	for i, k := range v.names {
		f := v.vals[i]
		if f == nil {
			continue
		}
		cv, ok := c.field(f, name, k)
		if !ok {
			return nil, false
		}
		out[k] = cv
	}
	return out, true
}

// NativeField is NativeChecked's conversion of v, the value of field key
// of the Object named parent: the value that field has in the map
// NativeChecked (or NativeCheckedObject) makes of that Object, new and the
// caller's, and whether it converts and its nested Objects' names check.
// ok is false, as for NativeChecked, when it does not or when not
// Mirrored.
func NativeField(v ref.Val, parent, key string) (any, bool) {
	if !Mirrored {
		return nil, false
	}
	return converter{check: true}.field(v, parent, key)
}

// named converts an Object found under field key of the Object named
// parent, when its name is right.
func (c converter) named(v *dynamic.ObjectVal, parent, key string) (map[string]any, bool) {
	if c.check && !isFieldPath(v.Type().TypeName(), parent, key) {
		return nil, false
	}
	return c.object(v)
}

// namedBuilt is named for an Object.
func (c converter) namedBuilt(v *Object, parent, key string) (map[string]any, bool) {
	if c.check && !isFieldPath(v.TypeName(), parent, key) {
		return nil, false
	}
	return c.built(v)
}

// field is upstream's convertField for the value of field key of the
// Object named parent.
func (c converter) field(v ref.Val, parent, key string) (any, bool) {
	switch t := v.(type) {
	case *dynamic.ObjectVal:
		return c.named(t, parent, key)
	case *Object:
		return c.namedBuilt(t, parent, key)
	case types.String:
		return StringValue(v), true
	case types.Int, types.Bool, types.Double:
		return t.Value(), true
	case ItemList:
		// Its Value is its Items, without boxing them.
		return c.list(t.Items(), parent, key)
	}
	switch raw := v.Value().(type) {
	case []ref.Val:
		return c.list(raw, parent, key)
	case map[ref.Val]ref.Val:
		out := make(map[string]any, len(raw))
		for k, item := range raw {
			ks, ok := k.(types.String)
			if !ok {
				return nil, false
			}
			cv, ok := c.item(item, parent, key)
			if !ok {
				return nil, false
			}
			out[string(ks)] = cv
		}
		return out, true
	}
	return nil, false
}

// list is field's conversion of a list of CEL values, raw. List items
// are converted with Value(), not convertField; an empty list is a nil
// []any.
func (c converter) list(raw []ref.Val, parent, key string) (any, bool) {
	if len(raw) == 0 {
		return []any(nil), true
	}
	out := make([]any, len(raw))
	for i, item := range raw {
		cv, ok := c.item(item, parent, key)
		if !ok {
			return nil, false
		}
		out[i] = cv
	}
	return out, true
}

// item is item.Value() for the items of lists and maps (of field key of
// the Object named parent).
func (c converter) item(item ref.Val, parent, key string) (any, bool) {
	switch t := item.(type) {
	case *dynamic.ObjectVal:
		return c.named(t, parent, key)
	case *Object:
		return c.namedBuilt(t, parent, key)
	case types.String:
		return StringValue(item), true
	case types.Int, types.Bool, types.Double:
		return t.Value(), true
	}
	return nil, false
}

// StringValue is v.Value(), any(string(v)), where v is a types.String held
// in a ref.Val: the same string, without a new box for it. A ref.Val
// holding a types.String points to the string's header, which nothing
// changes once boxed; the any returned points to that header too, with the
// type word of string (TestStringValueIsValue).
func StringValue(v ref.Val) any {
	s, ok := v.(types.String)
	if !ok {
		return v.Value()
	}
	if len(s) == 0 {
		return ""
	}
	return jsonvalue.StringAt((*string)(jsonvalue.DataOf(unsafe.Pointer(&v))))
}

// TypeOf is the object type v holds (the type its Type() is named after).
// Only when Mirrored; nil otherwise.
func TypeOf(v *dynamic.ObjectVal) *types.Type {
	if !Mirrored {
		return nil
	}
	return (*objectValLayout)(unsafe.Pointer(v)).objectType
}
