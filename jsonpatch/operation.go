package jsonpatch

import (
	gojson "encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"google.golang.org/protobuf/types/known/structpb"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/cel/mutation"
	"k8s.io/apiserver/pkg/cel/mutation/dynamic"

	"github.com/mutatis-dev/mutatis/internal/celobject"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// Operation is one JSON Patch operation as kube-apiserver builds it from a
// CEL JSONPatch value.
type Operation struct {
	// Op is the operation name: add, remove, replace, move, copy or test.
	Op string
	// Path is the JSON pointer the operation applies to. Upstream always sets it.
	Path string
	// From is the source pointer of move and copy. Empty means absent, as
	// upstream omits an empty from.
	From string
	// Value is the operation's value as a JSON-compatible Go value:
	// map[string]any, []any, string, int64, float64, bool or nil. Numbers
	// are int64 when their JSON text is an integer that fits, float64
	// otherwise (and for -0, whose text "-0" matters to "test"; Apply's
	// result turns it into int64 0). Only meaningful when HasValue is set.
	Value any
	// HasValue reports whether the operation has a value (a nil Value with
	// HasValue set is a JSON null, which upstream treats unlike an absent
	// value).
	HasValue bool
}

// FromCEL converts the result of a MutatingAdmissionPolicy JSONPatch
// expression (a CEL list of JSONPatch) into operations, with the semantics
// and error texts of kube-apiserver's jsonPatcher: values are converted
// through structpb.Value (so integers beyond ±(2^53−1) become strings and
// NaN or infinities are errors) and Object values must have type names that
// follow their field path.
func FromCEL(v ref.Val) ([]Operation, error) {
	return AppendFromCEL(nil, v)
}

// AppendFromCEL is FromCEL appending the operations to dst[:0] (growing
// it only when it has too little room): a caller converting patch after
// patch passes back the operations of the last one, once nothing holds
// them, so that their slice is used again. The operations and the error
// are FromCEL's (the result is nil or dst[:0] when there are none).
func AppendFromCEL(dst []Operation, v ref.Val) ([]Operation, error) {
	iter, ok := v.(traits.Lister)
	if !ok {
		return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array")
	}
	result := dst[:0]
	if n, ok := iter.Size().(types.Int); ok && n > 0 && int64(cap(result)) < int64(n) {
		result = make([]Operation, 0, n)
	}
	elems, direct := refVals(v)
	it := traits.Iterator(nil)
	if !direct {
		it = iter.Iterator()
	}
	for i := 0; ; i++ {
		var elem ref.Val
		if direct {
			if i == len(elems) {
				break
			}
			elem = elems[i]
		} else {
			if it.HasNext() != types.True {
				break
			}
			elem = it.Next()
		}
		// ConvertToNative of a JSONPatch value is the value itself.
		op, ok := elem.(*mutation.JSONPatchVal)
		if !ok {
			patchObj, err := elem.ConvertToNative(reflect.TypeOf(&mutation.JSONPatchVal{}))
			if err != nil {
				return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch: %w", err)
			}
			if op, ok = patchObj.(*mutation.JSONPatchVal); !ok {
				return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of %T", patchObj)
			}
		}
		res := Operation{Op: op.Op, Path: op.Path, From: op.From}
		if op.Val != nil {
			val, err := operationValue(op.Val)
			if err != nil {
				return nil, err
			}
			res.Value, res.HasValue = val, true
		}
		result = append(result, res)
	}
	return result, nil
}

// operationValue is the value of an operation whose CEL value is v, with
// upstream's checks and errors (operationValueReference): an Object has
// its type names checked and is converted in one walk of it
// (celobject.NativeChecked) when that walk vouches for both; anything else,
// and an Object it declines, goes through operationValueReference.
// TestOperationValueIsReference holds the two equal.
//
// A celobject.Object (the compiler's Object construction in the reader's
// form) is read as the dynamic.ObjectVal it stands for: the same walk
// (celobject.NativeCheckedObject), or operationValueReference of its
// Upstream.
func operationValue(v ref.Val) (any, error) {
	switch t := v.(type) {
	case *dynamic.ObjectVal:
		// NativeChecked's map is Native's, and new: convertValueFast's
		// value for an Object whose names CheckTypeNames accepts.
		if m, ok := celobject.NativeChecked(t); ok && nativeAsJSON(m) {
			return m, nil
		}
	case *celobject.Object:
		if m, ok := celobject.NativeCheckedObject(t); ok && nativeAsJSON(m) {
			return m, nil
		}
		return operationValueReference(t.Upstream())
	}
	return operationValueReference(v)
}

// operationValueReference is the value of an operation whose CEL value is
// v as upstream's jsonPatcher checks and converts it: an Object's type
// names checked (CheckTypeNames), then convertValue.
func operationValueReference(v ref.Val) (any, error) {
	if objVal, ok := v.(*dynamic.ObjectVal); ok {
		if err := celobject.CheckTypeNames(objVal); err != nil {
			return nil, fmt.Errorf("type mismatch: %w", err)
		}
	}
	val, err := convertValue(v)
	if err != nil {
		return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
	}
	return val, nil
}

// Lists and maps as CEL literals and NewRefValList and NewRefValMap build
// them: their elements are the CEL values they hold, and their conversions
// to a structpb.Value convert each element in turn.
var (
	refValListType = reflect.TypeOf(types.NewRefValList(types.DefaultTypeAdapter, nil))
	refValMapType  = reflect.TypeOf(types.NewRefValMap(types.DefaultTypeAdapter, nil))
)

// The views cel-go makes of Go maps and slices (NewStringInterfaceMap,
// NewDynamicList): what expressions read from object, oldObject and params,
// which are bound as their Go maps. Their conversions to a structpb.Value
// convert each Go element as its CEL value (the adapter's NativeToValue).
var (
	goMapViewType  = reflect.TypeOf(types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{}))
	goListViewType = reflect.TypeOf(types.NewDynamicList(types.DefaultTypeAdapter, []any{}))
)

// refVals returns the elements of v when it is a list of CEL values as
// refValListType holds them, or a celobject.ItemList (which is such a list
// of its Items).
func refVals(v ref.Val) ([]ref.Val, bool) {
	if l, ok := v.(celobject.ItemList); ok {
		return l.Items(), true
	}
	if reflect.TypeOf(v) != refValListType {
		return nil, false
	}
	elems, ok := v.Value().([]ref.Val)
	return elems, ok
}

// convertValue is the value of an operation as kube-apiserver's
// jsonPatcher makes it: v converted to a structpb.Value, then to JSON and
// back (convertValueReference), computed directly from v when it is a
// value convertValueFast models.
func convertValue(v ref.Val) (any, error) {
	if out, ok := convertValueFast(v); ok {
		return out, nil
	}
	return convertValueReference(v)
}

// convertValueReference is upstream's conversion of v: ConvertToNative to
// a *structpb.Value, then that value as JSON decoded back (valueFromProto).
func convertValueReference(v ref.Val) (any, error) {
	pv, err := v.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
	if err != nil {
		return nil, err
	}
	return valueFromProto(pv)
}

// maxSafeInt is the largest integer CEL writes as a JSON number
// (Number.MAX_SAFE_INTEGER); larger ones become decimal strings.
const maxSafeInt = 1<<53 - 1

// convertValueFast is convertValueReference(v) for the values CEL literals
// build: strings, integers, doubles, booleans, null, Objects and the lists
// and maps of CEL values that hold them, each converted as its own
// ConvertToNative to a structpb.Value converts it; and for what expressions
// read from the object, cel-go's views of JSON-shaped Go maps and slices
// (goViewAsJSON). ok is false for
// anything else (bytes, timestamps, durations, optionals, invalid UTF-8,
// NaN and infinities, map keys that are not strings, an Object field
// upstream cannot convert), which convertValueReference converts, with its
// errors. The result is new, owned by the caller.
func convertValueFast(v ref.Val) (any, bool) {
	switch t := v.(type) {
	case types.String:
		if !utf8.ValidString(string(t)) {
			return nil, false
		}
		return celobject.StringValue(v), true
	case types.Int:
		return intValue(int64(t)), true
	case types.Uint:
		if t <= maxSafeInt {
			return int64(t), true
		}
		return strconv.FormatUint(uint64(t), 10), true
	case types.Double:
		return numberValue(float64(t))
	case types.Bool:
		return bool(t), true
	case types.Null:
		return nil, true
	case *dynamic.ObjectVal:
		// Upstream converts the Object to its native map (Value()), then
		// that map with structpb.NewValue.
		m, ok := celobject.Native(t)
		if !ok || !nativeAsJSON(m) {
			return nil, false
		}
		return m, true
	case *celobject.Object:
		// The same, of the ObjectVal it stands for (its ConvertToNative,
		// on convertValueReference's path, is that ObjectVal's).
		m, ok := celobject.NativeObject(t)
		if !ok || !nativeAsJSON(m) {
			return nil, false
		}
		return m, true
	}
	if elems, ok := refVals(v); ok {
		out := make([]any, len(elems))
		for i, e := range elems {
			c, ok := convertValueFast(e)
			if !ok {
				return nil, false
			}
			out[i] = c
		}
		return out, true
	}
	// The compiler's views of the object's maps and lists convert as
	// cel-go's views of the same Go values do (jsonvalue.View).
	if gv, ok := v.(jsonvalue.View); ok {
		return goViewAsJSON(gv.ViewOf())
	}
	// The views share their Go types with other lists and maps (a map of
	// CEL values is a goMapViewType too): what they present decides.
	switch reflect.TypeOf(v) {
	case goMapViewType:
		if m, ok := v.Value().(map[string]any); ok {
			return goViewAsJSON(m)
		}
	case goListViewType:
		if l, ok := v.Value().([]any); ok {
			return goViewAsJSON(l)
		}
	}
	if reflect.TypeOf(v) == refValMapType {
		entries, ok := v.Value().(map[ref.Val]ref.Val)
		if !ok {
			return nil, false
		}
		out := make(map[string]any, len(entries))
		for k, e := range entries {
			ks, ok := k.(types.String)
			if !ok || !utf8.ValidString(string(ks)) {
				return nil, false
			}
			c, ok := convertValueFast(e)
			if !ok {
				return nil, false
			}
			out[string(ks)] = c
		}
		return out, true
	}
	return nil, false
}

// goViewAsJSON is convertValueFast of the CEL value a view of Go values
// presents for e (types.DefaultTypeAdapter.NativeToValue(e)), for the
// shapes unstructured JSON has: a new copy of maps and slices, int64 as
// types.Int converts and float64 as types.Double converts. ok is false for
// any other Go type and for what convertValueFast declines (invalid UTF-8,
// NaN, infinities).
func goViewAsJSON(e any) (any, bool) {
	switch t := e.(type) {
	case nil:
		return nil, true
	case string:
		return t, utf8.ValidString(t)
	case bool:
		return t, true
	case int64:
		return intValue(t), true
	case float64:
		return numberValue(t)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if !utf8.ValidString(k) {
				return nil, false
			}
			c, ok := goViewAsJSON(e)
			if !ok {
				return nil, false
			}
			out[k] = c
		}
		return out, true
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			c, ok := goViewAsJSON(e)
			if !ok {
				return nil, false
			}
			out[i] = c
		}
		return out, true
	}
	return nil, false
}

// nativeAsJSON turns v, a native value as celobject.Native gives it, into
// what structpb.NewValue(v) then valueFromProto give, in place; false when
// that is not plainly representable (valueFromProto's round trip decides).
func nativeAsJSON(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if !utf8.ValidString(k) {
				return false
			}
			if c, ok, changed := nativeScalarAsJSON(e); !ok {
				return false
			} else if changed {
				t[k] = c
			}
		}
		return true
	case []any:
		for i, e := range t {
			if c, ok, changed := nativeScalarAsJSON(e); !ok {
				return false
			} else if changed {
				t[i] = c
			}
		}
		return true
	}
	return false
}

// nativeScalarAsJSON is nativeAsJSON for one element: its new value when
// changed.
func nativeScalarAsJSON(v any) (_ any, ok, changed bool) {
	switch t := v.(type) {
	case []any:
		if t == nil {
			// structpb's empty list reads back as an empty, not a nil, slice.
			return []any{}, true, true
		}
		return nil, nativeAsJSON(t), false
	case map[string]any:
		return nil, nativeAsJSON(t), false
	case string:
		return nil, utf8.ValidString(t), false
	case bool:
		return nil, true, false
	case int64:
		if t >= -maxSafeInt && t <= maxSafeInt {
			return nil, true, false
		}
		n, ok := numberValue(float64(t))
		return n, ok, true
	case float64:
		n, ok := numberValue(t)
		if f, isFloat := n.(float64); ok && isFloat && math.Float64bits(f) == math.Float64bits(t) {
			return nil, true, false
		}
		return n, ok, true
	}
	return nil, false, false
}

// intValue is a types.Int converted as its ConvertToNative to a
// structpb.Value converts it, then read back: a number when JSON-safe, its
// decimal string otherwise.
func intValue(i int64) any {
	if i >= -maxSafeInt && i <= maxSafeInt {
		return i
	}
	return strconv.FormatInt(i, 10)
}

// numberValue is a JSON number of structpb as valueFromProto reads it back.
func numberValue(f float64) (any, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	if i, ok := floatAsInt(f); ok {
		return i, true
	}
	// -0 stays float64: its JSON text "-0" differs from "0" in "test".
	return f, true
}

// valueFromProto returns what json.Marshal(pv) followed by a k8s JSON decode
// yields, without the round trip when the value is plainly representable.
func valueFromProto(pv any) (any, error) {
	if v, ok := pv.(*structpb.Value); ok && v != nil {
		if out, ok := protoToGo(v); ok {
			return out, nil
		}
	}
	// Rare shapes (NaN, invalid UTF-8, unset kinds): do exactly what upstream does.
	b, err := gojson.Marshal(pv)
	if err != nil {
		return nil, err
	}
	var out any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// protoToGo converts v; ok is false when protojson could fail or differ.
func protoToGo(v *structpb.Value) (any, bool) {
	if v == nil {
		return nil, false
	}
	switch k := v.Kind.(type) {
	case *structpb.Value_NullValue:
		return nil, true
	case *structpb.Value_BoolValue:
		return k.BoolValue, true
	case *structpb.Value_StringValue:
		return k.StringValue, utf8.ValidString(k.StringValue)
	case *structpb.Value_NumberValue:
		return numberValue(k.NumberValue)
	case *structpb.Value_StructValue:
		if k.StructValue == nil {
			return nil, false
		}
		out := make(map[string]any, len(k.StructValue.Fields))
		for key, e := range k.StructValue.Fields {
			if !utf8.ValidString(key) {
				return nil, false
			}
			ge, ok := protoToGo(e)
			if !ok {
				return nil, false
			}
			out[key] = ge
		}
		return out, true
	case *structpb.Value_ListValue:
		if k.ListValue == nil {
			return nil, false
		}
		out := make([]any, len(k.ListValue.Values))
		for i, e := range k.ListValue.Values {
			ge, ok := protoToGo(e)
			if !ok {
				return nil, false
			}
			out[i] = ge
		}
		return out, true
	}
	return nil, false
}
