package scheme

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// DecodeWebhookPatchResult decodes data, the JSON document a mutating
// webhook's patch produced from an object of kind gvk, as kube-apiserver's
// mutating webhook dispatcher does (callAttrMutatingHook): the JSON
// serializer without strictness (unknown fields dropped, case-sensitive)
// decodes it into a new object of the kind's Go type, or into an
// unstructured object for kinds without one (custom resources). The
// result is that object's unstructured content and its kind, which is the
// document's own apiVersion and kind where it names another registered
// type. Errors are the serializer's, as kube-apiserver wraps them into its
// 500.
func (s *Scheme) DecodeWebhookPatchResult(data []byte, gvk schema.GroupVersionKind) (map[string]any, schema.GroupVersionKind, error) {
	k, err := s.kube()
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	ser := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, k.scheme, k.scheme, jsonserializer.SerializerOptions{})
	var into runtime.Object
	if s.Recognizes(gvk) {
		if into, err = k.scheme.New(gvk); err != nil {
			return nil, schema.GroupVersionKind{}, err
		}
	} else {
		into = &unstructured.Unstructured{}
	}
	out, actual, err := ser.Decode(data, nil, into)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	if u, ok := out.(*unstructured.Unstructured); ok {
		return u.Object, u.GroupVersionKind(), nil
	}
	m, err := s.plans.unstructured(out, *actual)
	return m, *actual, err
}
