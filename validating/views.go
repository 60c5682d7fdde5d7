package validating

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/matching"
)

// versionedAttributes is upstream's admission.NewVersionedAttributes for
// the policies matched through kind: the request's object and old object
// presented in kind's version.
func (e *Evaluator) versionedAttributes(a *matching.Attributes, attrs admission.Attributes, kind schema.GroupVersionKind) (*admission.VersionedAttributes, error) {
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: kind}
	if a.OldObject != nil {
		old, err := e.toVersion(a.OldObject.Object, a.Kind, kind)
		if err != nil {
			return nil, err
		}
		va.VersionedOldObject = admission.NewLazyObject(&unstructured.Unstructured{Object: old})
	}
	if a.Object != nil {
		obj, err := e.toVersion(a.Object.Object, a.Kind, kind)
		if err != nil {
			return nil, err
		}
		va.VersionedObject = admission.NewLazyObject(&unstructured.Unstructured{Object: obj})
	}
	return va, nil
}

// toVersion presents obj, of kind from, in the version of kind to: the
// scheme's ConvertToGVK (upstream's admission.ConvertToGVK), the one
// presenter the MAP and webhook stages use too; without a scheme, only the
// apiVersion changes.
func (e *Evaluator) toVersion(obj map[string]any, from, to schema.GroupVersionKind) (map[string]any, error) {
	if s := e.cfg.Scheme; s != nil {
		return s.ConvertToGVK(obj, from, to)
	}
	if obj == nil || from == to {
		return obj, nil
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	out["apiVersion"] = to.GroupVersion().String()
	return out, nil
}
