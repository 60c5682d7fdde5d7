package scheme

import (
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// decodeReference reproduces kube-apiserver's strict decode of a patched
// object and returns the object as it then serializes, in unstructured
// form: the definition of Scheme.decode.
//
// Kinds known to s (scheme.Scheme of client-go when s is nil) are decoded
// into their Go type with the strict JSON serializer, so unknown fields and
// type mismatches fail, and the typed object is converted back with
// runtime.DefaultUnstructuredConverter (dropping what the type drops and
// canonicalizing quantities, for instance). Other kinds are decoded as
// unstructured.Unstructured. Errors are apierrors.NewInternalError, with
// upstream's texts.
//
// doc is expected to be a result of jsonpatch.Apply.
func decodeReference(doc map[string]any, gvk schema.GroupVersionKind, s *runtime.Scheme) (map[string]any, error) {
	if s == nil {
		s = clientgoscheme.Scheme
	}
	if !s.Recognizes(gvk) {
		if fastUnstructured(doc) {
			// UnmarshalStrict of json.Marshal(doc) would give doc back: an
			// Apply result is already in decoded form and has no duplicate keys.
			return doc, nil
		}
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return decodeJSON(data, gvk, s)
}

// decodeJSON is decodeReference for an already encoded document, such as
// the JSON of a jsonpatch.NotObjectError.
func decodeJSON(data []byte, gvk schema.GroupVersionKind, s *runtime.Scheme) (map[string]any, error) {
	if s == nil {
		s = clientgoscheme.Scheme
	}
	serializer := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, s, s,
		jsonserializer.SerializerOptions{Pretty: false, Strict: true})
	var into runtime.Object
	if s.Recognizes(gvk) {
		obj, err := s.New(gvk)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		into = obj
	} else {
		into = &unstructured.Unstructured{}
	}
	out, _, err := serializer.Decode(data, nil, into)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if u, ok := out.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(out)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return m, nil
}

// fastUnstructured reports whether decoding doc as unstructured cannot fail:
// apiVersion absent or a parsable string and kind a non-empty string.
func fastUnstructured(doc map[string]any) bool {
	if doc == nil {
		return false
	}
	kind, ok := doc["kind"].(string)
	if !ok || kind == "" {
		return false
	}
	av, present := doc["apiVersion"]
	if !present {
		return true
	}
	avs, ok := av.(string)
	if !ok {
		return false
	}
	_, err := schema.ParseGroupVersion(avs)
	return err == nil
}
