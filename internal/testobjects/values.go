package testobjects

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
)

// SameValue is reflect.DeepEqual, but NaN equals NaN (%#v prints maps
// sorted).
func SameValue(a, b any) bool {
	return reflect.DeepEqual(a, b) || fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b)
}

// OddValues are what the property test plants in real objects.
var OddValues = []func() any{
	func() any { return nil },
	func() any { return "x" },
	func() any { return "" },
	func() any { return "25%" },
	func() any { return "2026-11-23T10:00:00Z" },
	func() any { return "100m" },
	func() any { return "AAECAw==" },
	func() any { return int64(0) },
	func() any { return int64(7) },
	func() any { return int64(math.MaxInt32) + 1 },
	func() any { return float64(3) },
	func() any { return 2.5 },
	func() any { return true },
	func() any { return false },
	func() any { return map[string]any{} },
	func() any { return map[string]any{"name": "n", "x": int64(1)} },
	func() any { return []any{} },
	func() any { return []any{"a"} },
	func() any { return []any{map[string]any{"name": "n"}} },
	func() any { return []any{nil} },
	func() any { return 3 },
}

// Perturb changes one random place of v (a deep copy) and returns it.
func Perturb(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		switch op := r.IntN(10); {
		case len(keys) == 0 || op == 0:
			x["bogus"] = OddValues[r.IntN(len(OddValues))]()
		case op == 1:
			delete(x, keys[r.IntN(len(keys))])
		case op == 2:
			x[keys[r.IntN(len(keys))]] = OddValues[r.IntN(len(OddValues))]()
		default:
			k := keys[r.IntN(len(keys))]
			x[k] = Perturb(r, x[k])
		}
		return x
	case []any:
		if len(x) == 0 || r.IntN(8) == 0 {
			return append(x, OddValues[r.IntN(len(OddValues))]())
		}
		i := r.IntN(len(x))
		x[i] = Perturb(r, x[i])
		return x
	default:
		return OddValues[r.IntN(len(OddValues))]()
	}
}

// PerturbShared is Perturb without changing v: the maps and slices on the
// path to the change are copied, everything else is shared with v, as in a
// merge result.
func PerturbShared(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		y := make(map[string]any, len(x)+1)
		for k, item := range x {
			y[k] = item
		}
		keys := slices.Sorted(maps.Keys(y))
		switch op := r.IntN(10); {
		case len(keys) == 0 || op == 0:
			y["bogus"] = OddValues[r.IntN(len(OddValues))]()
		case op == 1:
			delete(y, keys[r.IntN(len(keys))])
		case op == 2:
			y[keys[r.IntN(len(keys))]] = OddValues[r.IntN(len(OddValues))]()
		default:
			k := keys[r.IntN(len(keys))]
			y[k] = PerturbShared(r, y[k])
		}
		return y
	case []any:
		y := append([]any(nil), x...)
		if len(y) == 0 || r.IntN(8) == 0 {
			return append(y, OddValues[r.IntN(len(OddValues))]())
		}
		i := r.IntN(len(y))
		y[i] = PerturbShared(r, y[i])
		return y
	default:
		return OddValues[r.IntN(len(OddValues))]()
	}
}
