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
	objVal, ok := v.(*dynamic.ObjectVal)
	if !ok {
		if v == nil {
			return nil, fmt.Errorf("unsupported return type from ApplyConfiguration expression: %v", nil)
		}
		return nil, fmt.Errorf("unsupported return type from ApplyConfiguration expression: %v", v.Type())
	}
	if err := celobject.CheckTypeNames(objVal); err != nil {
		return nil, fmt.Errorf("type mismatch: %w", err)
	}
	if m, ok := celobject.Native(objVal); ok {
		return m, nil
	}
	value, ok := objVal.Value().(map[string]any)
	if !ok {
		return nil, fmt.Errorf("invalid return type: %T", v)
	}
	return value, nil
}
