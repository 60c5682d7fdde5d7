// Package valuetest holds what tests assert about unstructured values: a
// bit-for-bit equality that takes no shortcut (BitsEqual), the proof that
// an input was not modified (Freeze, Frozen.Check) and the check of a JSON
// patch against evanphx/json-patch v4 (CheckPatch).
package valuetest

import (
	"encoding/json"
	"math"
	"os"
	"reflect"
	"testing"

	evanphxjsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsjson "sigs.k8s.io/json"
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

// Frozen is a deep copy of a value, taken before the value is handed to
// code that must never modify its input (the engine's Admit, the patch
// functions, the webhook's diff): Check proves it did not.
type Frozen struct {
	value, copy any
}

// Freeze copies v (maps and slices deeply; other values as they are).
func Freeze(v any) Frozen { return Frozen{value: v, copy: DeepCopy(v)} }

// FreezeObject is Freeze of u's content (nil when u is nil).
func FreezeObject(u *unstructured.Unstructured) Frozen {
	if u == nil {
		return Freeze(map[string]any(nil))
	}
	return Freeze(u.Object)
}

// Modified tells whether the frozen value is no longer bit for bit what
// it was when frozen.
func (f Frozen) Modified() bool { return !BitsEqual(f.value, f.copy) }

// Check fails t when the frozen value is no longer bit for bit what it was
// when frozen (BitsEqual). what names the value in the message.
func (f Frozen) Check(t testing.TB, what string) {
	t.Helper()
	if f.Modified() {
		t.Fatalf("%s was modified:\nnow  %#v\nwas  %#v", what, f.value, f.copy)
	}
}

// DeepCopy copies maps and slices (nil ones stay nil), whatever their
// leaves.
func DeepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return x
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = DeepCopy(e)
		}
		return m
	case []any:
		if x == nil {
			return x
		}
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = DeepCopy(e)
		}
		return l
	}
	return v
}

// CheckPatch applies patch (nil: none) to original with
// evanphx/json-patch v4, as kube-apiserver applies a webhook's patch, and
// fails t unless the result is exactly want, numbers compared as their
// JSON texts decode (the only way a patch can carry them).
func CheckPatch(t testing.TB, original, patch []byte, want map[string]any) {
	t.Helper()
	out := original
	if patch != nil {
		p, err := evanphxjsonpatch.DecodePatch(patch)
		if err != nil {
			t.Fatalf("patch %s: %v", patch, err)
		}
		if out, err = p.Apply(original); err != nil {
			t.Fatalf("patch %s does not apply to %s: %v", patch, original, err)
		}
	}
	wantJSON := encode(t, want)
	// Both sides written as JSON and decoded again: 1.0 and 1 are one
	// number once written.
	if got, w := Decode(t, encode(t, Decode(t, out))), Decode(t, wantJSON); !reflect.DeepEqual(got, w) {
		t.Fatalf("patch %s turns\n%s\ninto\n%s\nwant\n%s", patch, original, out, wantJSON)
	}
}

func encode(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %#v: %v", v, err)
	}
	return data
}

// Decode decodes data as the engine holds objects (integral numbers
// int64), failing t on an error.
func Decode(t testing.TB, data []byte) any {
	t.Helper()
	var v any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &v); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	return v
}

// Sweep is the number of random cases a property test runs: full under
// `make test-long` (MUTATIS_LONG set, not -short), short otherwise.
func Sweep(full, short int) int {
	if testing.Short() || os.Getenv("MUTATIS_LONG") == "" {
		return short
	}
	return full
}
