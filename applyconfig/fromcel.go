package applyconfig

import (
	"fmt"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"k8s.io/apiserver/pkg/cel/mutation/dynamic"
)

// FromCEL converts the value of an ApplyConfiguration expression into the map
// that Merge applies, with the checks of kube-apiserver's ApplyConfiguration
// patcher, in its order and with its messages:
//
//   - a value that is not an Object{...} literal is refused
//     ("unsupported return type from ApplyConfiguration expression: <type>");
//   - nested initializer names must follow the field path
//     ("type mismatch: unexpected type name ...");
//   - a value that does not convert to a map is refused
//     ("invalid return type: *dynamic.ObjectVal"), e.g. for non-string map keys.
//
// The returned map is freshly built and owned by the caller.
func FromCEL(v ref.Val) (map[string]any, error) {
	objVal, ok := v.(*dynamic.ObjectVal)
	if !ok {
		if v == nil {
			return nil, fmt.Errorf("unsupported return type from ApplyConfiguration expression: %v", nil)
		}
		return nil, fmt.Errorf("unsupported return type from ApplyConfiguration expression: %v", v.Type())
	}
	if err := checkTypeNames(objVal); err != nil {
		return nil, fmt.Errorf("type mismatch: %w", err)
	}
	if objectValMirrored {
		if m, ok := convertObject(objVal); ok {
			return m, nil
		}
	}
	value, ok := objVal.Value().(map[string]any)
	if !ok {
		return nil, fmt.Errorf("invalid return type: %T", v)
	}
	return value, nil
}

// convertObject is objVal.Value() (dynamic.ObjectVal's conversion to a
// native map) for the values it models, computed once per value: upstream's
// convertField asks a nested Object for its native value up to three times
// (as a list, as a map, then as a mapper), so its cost grows threefold with
// every level of nesting. ok is false for anything else (nulls, bytes,
// timestamps, lists and maps not built by CEL literals, conversion errors),
// where FromCEL asks upstream.
func convertObject(v *dynamic.ObjectVal) (map[string]any, bool) {
	fields := objectValFields(v)
	out := make(map[string]any, len(fields))
	for k, f := range fields {
		c, ok := convertField(f)
		if !ok {
			return nil, false
		}
		out[k] = c
	}
	return out, true
}

// convertField is upstream's convertField for a field value.
func convertField(v ref.Val) (any, bool) {
	switch t := v.(type) {
	case *dynamic.ObjectVal:
		return convertObject(t)
	case types.String, types.Int, types.Bool, types.Double:
		return t.Value(), true
	}
	switch raw := v.Value().(type) {
	case []ref.Val:
		// List items are converted with Value(), not convertField; an empty
		// list is a nil []any.
		var out []any
		for _, item := range raw {
			c, ok := itemValue(item)
			if !ok {
				return nil, false
			}
			out = append(out, c)
		}
		return out, true
	case map[ref.Val]ref.Val:
		out := make(map[string]any, len(raw))
		for k, item := range raw {
			ks, ok := k.(types.String)
			if !ok {
				return nil, false
			}
			c, ok := itemValue(item)
			if !ok {
				return nil, false
			}
			out[string(ks)] = c
		}
		return out, true
	}
	return nil, false
}

// itemValue is item.Value() for the items of lists and maps.
func itemValue(item ref.Val) (any, bool) {
	switch t := item.(type) {
	case *dynamic.ObjectVal:
		return convertObject(t)
	case types.String, types.Int, types.Bool, types.Double:
		return t.Value(), true
	}
	return nil, false
}
