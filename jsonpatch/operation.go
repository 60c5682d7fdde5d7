package jsonpatch

import (
	gojson "encoding/json"
	"fmt"
	"math"
	"reflect"
	"unicode/utf8"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"google.golang.org/protobuf/types/known/structpb"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/cel/mutation"
	"k8s.io/apiserver/pkg/cel/mutation/dynamic"
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
	iter, ok := v.(traits.Lister)
	if !ok {
		return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array")
	}
	var result []Operation
	for it := iter.Iterator(); it.HasNext() == types.True; {
		elem := it.Next()
		patchObj, err := elem.ConvertToNative(reflect.TypeOf(&mutation.JSONPatchVal{}))
		if err != nil {
			return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch: %w", err)
		}
		op, ok := patchObj.(*mutation.JSONPatchVal)
		if !ok {
			return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of %T", patchObj)
		}
		res := Operation{Op: op.Op, Path: op.Path, From: op.From}
		if s, ok := op.Val.(types.String); ok && utf8.ValidString(string(s)) {
			// What the conversion below gives (structpb.NewStringValue,
			// then protoToGo), without building the proto value.
			res.Value, res.HasValue = string(s), true
		} else if op.Val != nil {
			if objVal, ok := op.Val.(*dynamic.ObjectVal); ok {
				if err := objVal.CheckTypeNamesMatchFieldPathNames(); err != nil {
					return nil, fmt.Errorf("type mismatch: %w", err)
				}
			}
			pv, err := op.Val.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
			if err != nil {
				return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
			}
			val, err := valueFromProto(pv)
			if err != nil {
				return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
			}
			res.Value, res.HasValue = val, true
		}
		result = append(result, res)
	}
	return result, nil
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
		f := k.NumberValue
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		if i, ok := floatAsInt(f); ok {
			return i, true
		}
		// -0 stays float64: its JSON text "-0" differs from "0" in "test".
		return f, true
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
