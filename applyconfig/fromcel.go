package applyconfig

import (
	"fmt"

	"github.com/google/cel-go/common/types/ref"

	"k8s.io/apiserver/pkg/cel/mutation/dynamic"

	"github.com/mutatis-dev/mutatis/internal/celobject"
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
	m, _, err := FromCELFresh(v)
	return m, err
}

// FromCELFresh is FromCEL, and tells whether every map and slice in the
// map (not only the map itself) is new and the caller's: what
// Merger.MergeFresh takes over. It is not when the value holds lists or
// maps that upstream's conversion hands over as they are (a list or a map
// of the request's object, of params, of a variable).
func FromCELFresh(v ref.Val) (patch map[string]any, fresh bool, err error) {
	if o, ok := v.(*celobject.Object); ok {
		// The compiler's form of an Object construction: read as it is,
		// or as the dynamic.ObjectVal it stands for.
		if m, ok := celobject.NativeCheckedObject(o); ok {
			return m, true, nil
		}
		v = o.Upstream()
	}
	objVal, ok := v.(*dynamic.ObjectVal)
	if !ok {
		if v == nil {
			return nil, false, fmt.Errorf("unsupported return type from ApplyConfiguration expression: %v", nil)
		}
		return nil, false, fmt.Errorf("unsupported return type from ApplyConfiguration expression: %v", v.Type())
	}
	if m, ok := celobject.NativeChecked(objVal); ok {
		// The names checked and the value converted in one walk.
		return m, true, nil
	}
	if err := celobject.CheckTypeNames(objVal); err != nil {
		return nil, false, fmt.Errorf("type mismatch: %w", err)
	}
	if m, ok := celobject.Native(objVal); ok {
		return m, true, nil
	}
	value, ok := objVal.Value().(map[string]any)
	if !ok {
		return nil, false, fmt.Errorf("invalid return type: %T", v)
	}
	return value, false, nil
}
