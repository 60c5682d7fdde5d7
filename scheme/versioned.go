package scheme

import (
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ConvertToGVK presents obj, an object of kind from (the request's kind,
// or the kind an earlier hook saw it in), in kind to: the one presenter of
// a request's objects in the version a policy or a webhook matched
// (matchPolicy Equivalent), for every stage that matches requests — the
// MutatingAdmissionPolicy and MutatingAdmissionWebhook stages, and the
// validating ones. It is k8s.io/apiserver's admission.ConvertToGVK
// (admission/conversion.go), which NewVersionedAttributes and
// ConvertVersionedAttributes call for both plugins, with the
// ObjectInterfaces kube-apiserver gives a request of kind from:
//
//   - from == to: obj itself.
//   - A built-in kind (Recognizes): kube-apiserver's scheme creates the
//     target and converts through the internal version (Convert). A target
//     that scheme does not know fails as its ObjectCreater.New fails
//     (`no kind "K" is registered for version "g/v" in scheme "…"`).
//   - A custom resource (any other kind): the CRD handler's creator and
//     converter, with the None strategy: the object with to's apiVersion
//     and kind. A target in another group fails as the CR converter does
//     (`g/v, Kind=K is unstructured and is not suitable for converting to
//     "g2/v2"`).
//
// obj is never modified; nil presents as nil.
func (s *Scheme) ConvertToGVK(obj map[string]any, from, to schema.GroupVersionKind) (map[string]any, error) {
	if obj == nil || from == to {
		return obj, nil
	}
	if s.Recognizes(from) {
		if !s.Recognizes(to) {
			k, err := s.kube()
			if err != nil {
				return nil, err
			}
			if _, err := k.scheme.New(to); err != nil {
				return nil, err
			}
		}
		return s.Convert(obj, from, to)
	}
	// crConverter.ConvertToVersion: the target's group/version must name
	// the object's group (GroupVersion.KindForGroupVersionKinds).
	if from.Group != to.Group {
		return nil, fmt.Errorf("%v is unstructured and is not suitable for converting to %q", from.String(), to.GroupVersion().String())
	}
	out := maps.Clone(obj)
	out["apiVersion"] = to.GroupVersion().String()
	if to.Kind != from.Kind {
		// ConvertToGVK sets the target's kind on the converted object.
		out["kind"] = to.Kind
	}
	return out, nil
}
