package scheme

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// Patch applies ops (RFC 6902, as jsonpatch.Apply applies them) to obj,
// of kind gvk, and decodes the result as kube-apiserver's JSONPatch
// patcher does: strictly, into the kind's Go type and back (decode).
// skipped reports a failed "test" operation, which leaves the object
// unchanged without error: obj comes back as it is. obj is never
// modified; the result shares the maps the patch did not touch with it.
//
// The result is patchReference's (Apply, which normalizes the whole of obj
// first, then the strict decode), computed through patchFast when it can
// tell. A nil Scheme decodes with client-go's scheme, without the fast
// path.
func (s *Scheme) Patch(obj map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind) (out map[string]any, skipped bool, err error) {
	return s.PatchFrom(nil, obj, ops, gvk)
}

// PatchFrom is Patch, given f (nil for none): what Patch returned of the
// patches before it, that the strict decode was proven to return as it
// is. The strict decode of the patch result then walks only the maps and
// slices that are not f's object's own at the same place (the subtrees
// the operations wrote and what changed since); the result is Patch's.
// When the strict decode returns the patch result as it is, f records it
// for the next patch.
//
// The objects f records, and those they share maps and slices with, must
// not be modified afterwards (no result of Patch should be).
func (s *Scheme) PatchFrom(f *Fixed, obj map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind) (out map[string]any, skipped bool, err error) {
	if s == nil {
		return patchWith(obj, ops, gvk, clientgoscheme.Scheme, func(doc map[string]any) (map[string]any, error) {
			return decodeReference(doc, gvk, clientgoscheme.Scheme)
		})
	}
	if out, ok := s.patchFast(f, obj, ops, gvk); ok {
		return out, false, nil
	}
	return s.patchReference(obj, ops, gvk)
}

// Fixed is the last result of PatchFrom (or PatchDefaultFrom) that the
// strict decode of a JSON patch result returned as it is: a fixed point of
// that decode, of a kind and a Scheme. The zero value holds nothing. It
// belongs to one sequence of patches (an admission's) and is not safe for
// concurrent use.
type Fixed struct {
	scheme *Scheme
	obj    map[string]any
	gvk    schema.GroupVersionKind
}

// base is f's object if it is of s and gvk, or nil.
func (f *Fixed) base(s *Scheme, gvk schema.GroupVersionKind) map[string]any {
	if f == nil || f.scheme != s || f.gvk != gvk {
		return nil
	}
	return f.obj
}

// set records obj, a fixed point of s's strict decode as kind gvk.
func (f *Fixed) set(s *Scheme, obj map[string]any, gvk schema.GroupVersionKind) {
	if f != nil {
		*f = Fixed{scheme: s, obj: obj, gvk: gvk}
	}
}

// patchReference is the definition of Patch: jsonpatch.Apply, then the
// strict decode.
func (s *Scheme) patchReference(obj map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind) (out map[string]any, skipped bool, err error) {
	return patchWith(obj, ops, gvk, s.typesOf(gvk), func(doc map[string]any) (map[string]any, error) {
		return s.decode(doc, gvk)
	})
}

// patchWith is jsonpatch.Apply of ops to obj, then decode of the result;
// a result that is not an object fails as kube-apiserver fails decoding
// its JSON into the Go types of types.
func patchWith(obj map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind, types *runtime.Scheme, decode func(map[string]any) (map[string]any, error)) (out map[string]any, skipped bool, err error) {
	patched, err := jsonpatch.Apply(obj, ops)
	if errors.Is(err, jsonpatch.ErrTestFailed) {
		return obj, true, nil
	}
	var notObject *jsonpatch.NotObjectError
	if errors.As(err, &notObject) {
		// The patch replaced the root with a non-object: upstream fails
		// decoding that JSON.
		_, err = decodeJSON(notObject.JSON, gvk, types)
		return nil, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("JSON Patch: %w", err)
	}
	out, err = decode(patched)
	return out, false, err
}

// patchFast is patchReference for patches that succeed on objects of
// built-in kinds, without the walk of the whole object that normalizing it
// for Apply takes: jsonpatch.ApplyUnnormalized, whose result is Apply's
// when it is a fixed point of that normalization, which decodeFixed
// checks on its way. ok=false means it cannot tell (the patch has a
// "test", "copy" or "move", fails, the object has something the
// normalization or the strict decoding would change or refuse, ...), and
// nothing is returned.
//
// Given f, the decode walks only what patched does not share with f's
// object (decodeFixedFrom), and f records patched when it is the result.
func (s *Scheme) patchFast(f *Fixed, obj map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind) (map[string]any, bool) {
	if !s.Recognizes(gvk) {
		return nil, false
	}
	patched, ok := jsonpatch.ApplyUnnormalized(obj, ops)
	if !ok {
		return nil, false
	}
	return s.decodeFixedFrom(f, patched, gvk)
}

// decodeFixedFrom is decodeFixed of doc given f's object (when it is of s
// and gvk), which the strict decode returned as it is: what doc shares
// with it at the same places is not walked again
// (planner.decodeFixedFrom). When doc comes back as it is, f records it.
func (s *Scheme) decodeFixedFrom(f *Fixed, doc map[string]any, gvk schema.GroupVersionKind) (map[string]any, bool) {
	if !s.Recognizes(gvk) {
		return nil, false
	}
	out, ok := s.plans.decodeFixedFrom(s.types, doc, f.base(s, gvk), gvk)
	if ok && jsonvalue.SameMap(out, doc) {
		f.set(s, out, gvk)
	}
	return out, ok
}
