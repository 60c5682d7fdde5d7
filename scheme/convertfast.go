package scheme

import (
	"reflect"
	"unsafe"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// This file puts the planned walks of defaultfast.go (build and emit) on
// the typed conversions of the admission paths: a request's object made a
// Go object of its kind before conversion to the internal version
// (kube.typed, the admission plugins' and the registry's input), and the
// versioned Go objects made maps again (unstructuredOf: the decoded
// request, the admission plugins' output, Convert, the stored object).
//
// Each fast conversion answers ok=false where its plan cannot tell and
// the reference (the converter itself) runs then:
//
//   - typedFast is kube.typed (FromUnstructured into a new object of the
//     kind's Go type): build, which declines whatever the converter would
//     convert, truncate or refuse;
//   - unstructuredFast is unstructuredOf (ToUnstructured): emit from
//     scratch (no previous input to share with), which declines what the
//     converter would refuse.
//
// TestTypedAndUnstructuredAreTheConverter holds both to the converter on
// every kind, and FuzzTypedAndUnstructured on any JSON object.

// typedFast is k.typed(obj, gvk), or ok=false when the plan cannot tell.
func (p *planner) typedFast(k *kube, obj map[string]any, gvk schema.GroupVersionKind) (runtime.Object, bool) {
	return p.typedWatched(k, obj, gvk, nil)
}

// typedWatched is typedFast that records in w, when not nil, the memory
// the typed object is made of (watch).
func (p *planner) typedWatched(k *kube, obj map[string]any, gvk schema.GroupVersionKind, w *watch) (runtime.Object, bool) {
	if obj == nil {
		return nil, false
	}
	n := p.typedKind(k.scheme, gvk)
	if n == nil {
		return nil, false
	}
	return newTyped(n, gvk, w, func(at unsafe.Pointer) bool { return buildWatched(obj, at, n, w) })
}

// newTyped is a new object of n's type (kind gvk) that fill writes, with
// its struct recorded in w, or ok=false when fill fails: what
// k.scheme.New(gvk) returns (reflect.New of the type registered for gvk,
// which typedKind took from it; a scheme refuses to register another type
// under a kind), without its lookups.
func newTyped(n *node, gvk schema.GroupVersionKind, w *watch, fill func(unsafe.Pointer) bool) (runtime.Object, bool) {
	rv := reflect.New(n.t)
	typed, isObject := rv.Interface().(runtime.Object)
	if !isObject {
		return nil, false
	}
	w.block(rv.UnsafePointer(), n.size, n)
	if !fill(rv.UnsafePointer()) {
		return nil, false
	}
	typed.GetObjectKind().SetGroupVersionKind(gvk)
	return typed, true
}

// unstructuredFast is unstructuredOf(typed, gvk), or ok=false when the
// plan cannot tell. The result shares nothing with typed.
func (p *planner) unstructuredFast(typed runtime.Object, gvk schema.GroupVersionKind) (map[string]any, bool) {
	if _, isUnstructured := typed.(runtime.Unstructured); isUnstructured {
		return nil, false
	}
	rv := reflect.ValueOf(typed)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, false
	}
	n := p.typedType(rv.Type().Elem())
	if n == nil {
		return nil, false
	}
	typed.GetObjectKind().SetGroupVersionKind(gvk)
	return p.emitObject(rv.UnsafePointer(), n, nil)
}

// typed is k.typed through typedFast where it can tell.
func (p *planner) typed(k *kube, obj map[string]any, gvk schema.GroupVersionKind) (runtime.Object, error) {
	if typed, ok := p.typedFast(k, obj, gvk); ok {
		return typed, nil
	}
	return k.typed(obj, gvk)
}

// unstructured is unstructuredOf through unstructuredFast where it can
// tell.
func (p *planner) unstructured(typed runtime.Object, gvk schema.GroupVersionKind) (map[string]any, error) {
	if m, ok := p.unstructuredFast(typed, gvk); ok {
		return m, nil
	}
	return unstructuredOf(typed, gvk)
}

// internal is k.internal (obj in its group's internal version) through
// typedFast where it can tell.
func (p *planner) internal(k *kube, obj map[string]any, gvk schema.GroupVersionKind) (runtime.Object, error) {
	typed, ok := p.typedFast(k, obj, gvk)
	if !ok {
		return k.internal(obj, gvk)
	}
	internal, err := k.convertFresh(typed, internalVersion(gvk))
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return internal, nil
}

// planAhead builds the plan decodeRequestFast walks for gvk, a kind of
// s.types, if it is not built yet, before kube-apiserver's scheme is
// registered: decode walks the kind's node, and typedFast finds the same
// node again through kube-apiserver's scheme (the same Go type for a
// versioned kind). Plans are memoized and depend only on the Go types, so
// building them ahead changes no result.
func (s *Scheme) planAhead(gvk schema.GroupVersionKind) { s.plans.kind(s.types, gvk) }

// decodeRequestFast is what kube-apiserver's request decoder gives for
// obj (kube.decodeRequest: the internal object), without encoding obj to
// JSON and decoding it, or ok=false when it cannot tell. An object the
// strict JSON decoding reads as FromUnstructured reads it, without a
// strict error (planner.decode: no unknown fields, none that differs
// only in case, no nulls but in fields of plain types, valid UTF-8, no NaN
// or infinities, apiVersion and kind those of gvk) and that build models,
// is the typed object the decoder's serializer makes; the decoder then
// defaults it and converts it to the internal version, as here.
func (s *Scheme) decodeRequestFast(k *kube, obj map[string]any, gvk schema.GroupVersionKind) (runtime.Object, bool) {
	if _, ok := s.plans.decode(s.types, obj, gvk); !ok {
		return nil, false
	}
	typed, ok := s.plans.typedFast(k, obj, gvk)
	if !ok {
		return nil, false
	}
	if _, nested := typed.(runtime.NestedObjectDecoder); nested {
		return nil, false // the decoder decodes its nested objects too
	}
	k.scheme.Default(typed)
	internal, err := k.convertFresh(typed, internalVersion(gvk))
	if err != nil {
		return nil, false // the reference answers its error
	}
	return internal, true
}
