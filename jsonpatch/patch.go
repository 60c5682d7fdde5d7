package jsonpatch

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Decoder decodes the result of a JSON patch as kube-apiserver's JSONPatch
// patcher does: strictly, into the kind's Go type and back (scheme.Scheme
// implements it for kube-apiserver's scheme). Patch relies on it for one
// proof: ApplyUnnormalized's result is Apply's when it is a fixed point of
// Apply's normalization (IsNormalized), and DecodeFixed answers only when
// it has checked that on its way.
type Decoder interface {
	// Recognizes tells whether objects of kind gvk are decoded into a Go
	// type (and so whether DecodeFixed can ever answer).
	Recognizes(gvk schema.GroupVersionKind) bool
	// Decode is the strict decode of doc, a result of Apply.
	Decode(doc map[string]any, gvk schema.GroupVersionKind) (map[string]any, error)
	// DecodeJSON is Decode of a patch result that is not an object (the
	// JSON of a NotObjectError).
	DecodeJSON(data []byte, gvk schema.GroupVersionKind) (map[string]any, error)
	// DecodeFixed is Decode of doc, a result of ApplyUnnormalized, when
	// doc is a fixed point of Apply's normalization and decodes without
	// error; ok is false when it cannot tell, and nothing is returned.
	DecodeFixed(doc map[string]any, gvk schema.GroupVersionKind) (out map[string]any, ok bool)
}

// Patch applies ops to obj (of kind gvk) and decodes the result as
// kube-apiserver's JSONPatch patcher does (PatchReference), through
// PatchFast when it can tell. skipped reports a failed "test" operation,
// which leaves the object unchanged without error: obj comes back as it
// is. d nil decodes with client-go's scheme (Decode). obj is never
// modified; the result shares the maps the patch did not touch with it.
func Patch(obj map[string]any, ops []Operation, gvk schema.GroupVersionKind, d Decoder) (out map[string]any, skipped bool, err error) {
	if out, ok := PatchFast(obj, ops, gvk, d); ok {
		return out, false, nil
	}
	return PatchReference(obj, ops, gvk, d)
}

// PatchReference is the definition of Patch: Apply, which normalizes the
// whole of obj first, then the strict decode.
func PatchReference(obj map[string]any, ops []Operation, gvk schema.GroupVersionKind, d Decoder) (out map[string]any, skipped bool, err error) {
	patched, err := Apply(obj, ops)
	if errors.Is(err, ErrTestFailed) {
		return obj, true, nil
	}
	var notObject *NotObjectError
	if errors.As(err, &notObject) {
		// The patch replaced the root with a non-object: upstream fails
		// decoding that JSON.
		if d == nil {
			_, err = DecodeJSON(notObject.JSON, gvk, nil)
		} else {
			_, err = d.DecodeJSON(notObject.JSON, gvk)
		}
		return nil, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("JSON Patch: %w", err)
	}
	if d == nil {
		out, err = Decode(patched, gvk, nil)
	} else {
		out, err = d.Decode(patched, gvk)
	}
	return out, false, err
}

// PatchFast is PatchReference for patches that succeed on objects of kinds
// d decodes into Go types, without the walk of the whole object that
// normalizing it for Apply takes: ApplyUnnormalized, whose result is
// Apply's when it is a fixed point of that normalization, which
// d.DecodeFixed checks on its way. ok=false means it cannot tell (the
// patch has a "test", "copy" or "move", fails, the object has something
// the normalization or the strict decoding would change or refuse, ...),
// and nothing is returned.
func PatchFast(obj map[string]any, ops []Operation, gvk schema.GroupVersionKind, d Decoder) (map[string]any, bool) {
	if d == nil || !d.Recognizes(gvk) {
		return nil, false
	}
	patched, ok := ApplyUnnormalized(obj, ops)
	if !ok {
		return nil, false
	}
	return d.DecodeFixed(patched, gvk)
}
