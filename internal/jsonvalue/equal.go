// Package jsonvalue holds the operations on JSON-shaped values
// (map[string]any, []any, string, bool, int64, float64 and nil, as
// unstructured objects hold them) that the engine and the scheme share.
//
// The contract the engine relies on: a function here never modifies its
// inputs, and maps and slices that are the very same are equal without a
// walk, so comparing an object with a successor that shares every subtree a
// mutation did not touch costs the touched paths only.
package jsonvalue

import (
	"math"
	"reflect"
)

// SemanticEqual is apiequality.Semantic.DeepEqual for JSON-shaped values
// (map[string]any, []any and scalars, as unstructured objects hold them),
// without reflection on the common path. Semantic's custom equalities
// (quantities, times, selectors) never apply to such values; like
// Semantic, nil and empty maps and slices are equal, int64(1) and
// float64(1) differ, and NaN differs from itself unless it is the same map
// or slice that holds it. Maps and slices that are the very same are equal
// without a walk: reinvocation compares an object with its successor,
// which shares everything a mutation did not touch.
func SemanticEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		if SameMap(x, y) {
			return true
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !SemanticEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		if SameSlice(x, y) {
			return true
		}
		for i := range x {
			if !SemanticEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case string, bool, int64, float64, nil:
		return a == b
	}
	return reflect.DeepEqual(a, b)
}

// SameMap reports whether a and b are the very same map (one map, or both
// nil), without looking inside: the sharing rule every walk of this
// package and its callers use. A caller that needs a map to exist checks
// for nil itself.
func SameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// SameSlice reports whether a and b are the same elements of the same
// array (equal lengths and, unless empty, the same first element), without
// looking inside. Two empty slices are the same only when both are nil or
// neither is: a nil slice encodes as null and an empty one as [], so one
// cannot stand for the other (as SameMap tells a nil map from an empty one).
func SameSlice(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return (a == nil) == (b == nil)
	}
	return &a[0] == &b[0]
}

// Equal tells whether a and b are the same JSON value with the same Go
// representation: like SemanticEqual, but nil and empty maps and slices
// differ (they encode as null and as {} or []), so a value Equal to another
// can stand for it in any output. The very same maps and slices are equal
// without a walk.
func Equal(a, b any) bool { return sameTree(a, b, false) }

// Identical reports whether a and b are the same JSON value bit for bit:
// the same Go types, nil and empty maps and slices told apart, floats by
// their bits (so -0 is not 0, and NaN is itself); values of other Go types
// are never identical.
func Identical(a, b any) bool { return sameTree(a, b, true) }

// sameTree is Equal, or Identical when bits is set: the two differ only in
// their leaves.
func sameTree(a, b any, bits bool) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		if SameMap(x, y) {
			return true
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !sameTree(xv, yv, bits) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		if SameSlice(x, y) {
			return true
		}
		for i := range x {
			if !sameTree(x[i], y[i], bits) {
				return false
			}
		}
		return true
	case float64:
		if bits {
			y, ok := b.(float64)
			return ok && math.Float64bits(x) == math.Float64bits(y)
		}
		return a == b
	case string, bool, int64, nil:
		return a == b
	}
	return !bits && reflect.DeepEqual(a, b)
}

// IsNull tells whether v is written as JSON null: nil, or a nil map or
// slice.
func IsNull(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return x == nil
	case []any:
		return x == nil
	}
	return false
}

// JSONEqual tells whether a and b, JSON-shaped values, decode to the same
// value once written as JSON (integral numbers as int64, others as
// float64): nil and nil maps and slices are all null, an integral float64
// equals the int64 it is written as, -0 equals 0. Values of other Go types
// are never equal. It is the equality of a JSON patch's result with the
// object it must give (jsonpatch.CreatePatch), where only the JSON text
// counts.
func JSONEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return IsNull(b)
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int64:
		switch y := b.(type) {
		case int64:
			return x == y
		case float64:
			return floatIsInt(y, x)
		}
		return false
	case float64:
		switch y := b.(type) {
		case float64:
			return x == y
		case int64:
			return floatIsInt(x, y)
		}
		return false
	case map[string]any:
		if x == nil {
			return IsNull(b)
		}
		y, ok := b.(map[string]any)
		if !ok || y == nil || len(x) != len(y) {
			return false
		}
		if SameMap(x, y) {
			return true
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !JSONEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		if x == nil {
			return IsNull(b)
		}
		y, ok := b.([]any)
		if !ok || y == nil || len(x) != len(y) {
			return false
		}
		if SameSlice(x, y) {
			return true
		}
		for i := range x {
			if !JSONEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// floatIsInt tells whether f is written as the JSON text of i.
func floatIsInt(f float64, i int64) bool {
	if f != math.Trunc(f) || f < -9223372036854775808.0 || f >= 9223372036854775808.0 {
		return false
	}
	return int64(f) == i
}
