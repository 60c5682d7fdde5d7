// Package valuetest holds comparisons of unstructured values for tests.
package valuetest

import (
	"math"
	"reflect"
)

// BitsEqual is reflect.DeepEqual for unstructured values with floats
// compared bit for bit (so -0 is not 0, and NaN equals NaN), nil maps and
// slices told from empty ones, and funcs compared by identity.
func BitsEqual(a, b any) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	switch x := a.(type) {
	case float64:
		return math.Float64bits(x) == math.Float64bits(b.(float64))
	case map[string]any:
		y := b.(map[string]any)
		if (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			f, ok := y[k]
			if !ok || !BitsEqual(e, f) {
				return false
			}
		}
		return true
	case []any:
		y := b.([]any)
		if (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !BitsEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	if a != nil && reflect.TypeOf(a).Kind() == reflect.Func {
		return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
	}
	return reflect.DeepEqual(a, b)
}
