package applyconfig

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"k8s.io/apiserver/pkg/cel/mutation/dynamic"
)

// objectValLayout mirrors the fields of dynamic.ObjectVal (k8s.io/apiserver
// v0.37), whose field values have no accessor. objectValFields reads them
// only when the mirror matches the real type field for field (checked once,
// at init); otherwise checkTypeNames calls upstream's method.
type objectValLayout struct {
	objectType *types.Type
	fields     map[string]ref.Val
}

var objectValMirrored = func() bool {
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

func objectValFields(v *dynamic.ObjectVal) map[string]ref.Val {
	return (*objectValLayout)(unsafe.Pointer(v)).fields
}

// checkTypeNames is v.CheckTypeNamesMatchFieldPathNames() (the same errors,
// joined in an order upstream can give too) without its cost: upstream
// converts every nested Object to a native map only to see that it is not a
// list or a map of CEL values, which it never is.
func checkTypeNames(v *dynamic.ObjectVal) error {
	if !objectValMirrored {
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
	ov, ok := v.(*dynamic.ObjectVal)
	if !ok {
		c.checkItems(v, path, "", false)
		return
	}
	if tn := ov.Type().TypeName(); tn != path {
		c.errs = append(c.errs, fmt.Errorf("unexpected type name %q, expected %q, which matches field name path from root Object type", tn, path))
	}
	for k, f := range objectValFields(ov) {
		if child, isObject := f.(*dynamic.ObjectVal); isObject {
			if tn := child.Type().TypeName(); isFieldPath(tn, path, k) {
				c.check(f, tn) // path.k, without building it
			} else {
				c.check(f, path+"."+k)
			}
			continue
		}
		c.checkItems(f, path, k, true)
	}
}

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
