// Package scheme is kube-apiserver's view of an object: the typed form of
// built-in kinds (what decoding into their Go types and back gives), a
// JSON patch's result decoded strictly (Patch), their defaulting,
// conversion between versions and API validation, and the structural
// defaulting, pruning and validation of custom resources.
//
// With its subpackages (webhookconfig, admissionplugins) it is the only
// code of mutatis that imports k8s.io/kubernetes: the defaulters,
// conversions and registry strategies there are the implementation of what
// kube-apiserver does, used as they are. What a run
// does not use is never built: the scheme of kube-apiserver's API groups is
// registered on first use of defaulting, conversion or validation.
//
// Objects are unstructured (map[string]any, as JSON decodes them). No
// function modifies its input; a result may share unchanged subtrees with
// the input, so neither may be modified in place afterwards.
package scheme

import (
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Scheme is kube-apiserver's scheme for the objects of one run. The zero
// value is not usable: use New. A Scheme is safe for concurrent use.
type Scheme struct {
	// types holds the Go types of the built-in kinds (client-go's scheme):
	// the typed form.
	types *runtime.Scheme
	// plans holds the per-kind plans of the fast paths (plan.go): the
	// typed form's, Default's and the typed conversions'.
	plans planner
	// crs are the custom resources of the run.
	crs *CustomResources
	// untyped is a runtime.Scheme without types: the one the decoders of
	// a kind that a CRD shadows (CustomResources.Shadows) take, so that
	// they decode it as unstructured, as kube-apiserver's CRD handler does.
	untyped *runtime.Scheme
	// inert is inertKindsTyped, built once on first use (DefaultFrom).
	inert func() map[schema.GroupVersionKind]*inertKind
	// units is unitKinds, built once on first use (DefaultFrom).
	units func() map[schema.GroupVersionKind][]*unitParent
}

// New returns the Scheme of kube-apiserver 1.37's built-in kinds, with no
// custom resources yet (AddCRD).
func New() *Scheme {
	return &Scheme{types: clientgoscheme.Scheme, crs: NewCustomResources(), untyped: runtime.NewScheme(), inert: sync.OnceValue(inertKindsTyped), units: sync.OnceValue(unitKinds)}
}

// AddCRD adds (or replaces) a CustomResourceDefinition, typed or
// unstructured; a CRD kube-apiserver would refuse is refused with its 422.
func (s *Scheme) AddCRD(crd runtime.Object) error { return s.crs.Add(crd) }

// RemoveCRD removes the CustomResourceDefinition named name.
func (s *Scheme) RemoveCRD(name string) { s.crs.Remove(name) }

// CustomResources are the custom resources of the scheme.
func (s *Scheme) CustomResources() *CustomResources { return s.crs }

// Types is the runtime.Scheme of the built-in kinds' Go types.
func (s *Scheme) Types() *runtime.Scheme { return s.types }

// Recognizes tells whether gvk is a built-in kind (one with a Go type)
// that no registered CRD serves: a CRD may serve a kind client-go's scheme
// also has a Go type for (WatchEvent, in a built-in group version that
// kube-apiserver does not serve), and kube-apiserver then serves it with
// its CRD handler, as a custom resource (test/e2e's
// 49-crd-builtin-group-kind). A nil Scheme recognizes none: its Normalize,
// NormalizeRequest and Default present every object as it is, and its
// Patch decodes with client-go's scheme.
func (s *Scheme) Recognizes(gvk schema.GroupVersionKind) bool {
	return s != nil && s.types.Recognizes(gvk) && !s.crs.Shadows(gvk)
}

// Normalize presents an object of a built-in kind in its typed form:
// converted to its Go type and back (FromUnstructured, ToUnstructured), which
// drops unknown fields and omitempty zero values, adds the fields Go types
// always serialize (a Pod's spec.containers, as null when unset) and
// canonicalizes quantities and timestamps. Objects of other kinds come back
// as they are.
//
// The result is normalizeReference's, computed without the typed object
// where the fast path models the input: an object already in typed form is
// returned as it is, without allocating, and otherwise the result shares the
// unchanged parts of obj.
func (s *Scheme) Normalize(obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	return s.normalizeFrom(obj, nil, gvk)
}

// normalizeFrom is Normalize; base, when not nil, is an object of kind gvk
// in typed form whose maps and slices obj shares (at the same places): those
// need no walk. A merge result shares all but the patched paths with the
// object it was merged into. Callers reach it through a Cache.
func (s *Scheme) normalizeFrom(obj, base map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	if !s.Recognizes(gvk) {
		return obj, nil
	}
	if out, ok := s.plans.normalize(s.types, obj, base, gvk); ok {
		return out, nil
	}
	return s.normalizeReference(obj, gvk)
}

// Cache is what one request's successive normalizations of its object
// reuse, opaque to its holder (the engine keeps one per request, in its
// state across the chain's rounds); the zero value reuses nothing. It is
// for one request at a time.
type Cache struct {
	// base is the object, in typed form, that the next object normalized
	// through the cache derives from.
	base map[string]any
}

// From tells c that the next object normalized through it derives from
// base, an object of the same kind in typed form (a result of Normalize,
// NormalizeRequest or Default): the maps and slices it shares with base at
// the same places need no walk. A merge result shares all but the patched
// paths with the object it was merged into.
func (c *Cache) From(base map[string]any) { c.base = base }

// Normalize is s.Normalize(obj, gvk), walking only what obj does not share
// with the object c was told it derives from (From), if any.
func (c *Cache) Normalize(s *Scheme, obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	return s.normalizeFrom(obj, c.base, gvk)
}

// NormalizeRequest is Normalize for an object received in a request (an
// AdmissionReview's object): where the fast path cannot tell, the object is
// decoded as kube-apiserver's handler decodes a body (JSON into the Go type,
// unknown fields dropped), so that what that decoder refuses — an integer
// out of its field's range, a value of the wrong type — is refused with its
// 400 ("Pod in version "v1" cannot be handled as a Pod: json: cannot
// unmarshal number 3000000000 into Go struct field PodSpec.spec.priority of
// type int32") instead of being converted (FromUnstructured wraps integers
// around).
func (s *Scheme) NormalizeRequest(obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	if !s.Recognizes(gvk) {
		return obj, nil
	}
	if out, ok := s.plans.normalize(s.types, obj, nil, gvk); ok {
		return out, nil
	}
	body, _ := requestJSON(obj)
	data, err := json.Marshal(body)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	typed, err := s.types.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := utiljson.Unmarshal(data, typed); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
	}
	typed.GetObjectKind().SetGroupVersionKind(gvk)
	return runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
}

// normalizeReference is Normalize through the typed object: the definition
// of the result, and the fallback for the inputs the fast path does not
// model.
func (s *Scheme) normalizeReference(obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	if !s.Recognizes(gvk) {
		return obj, nil
	}
	typed, err := s.types.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
		return nil, err
	}
	typed.GetObjectKind().SetGroupVersionKind(gvk)
	return runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
}

// decode is decodeReference of a JSON patch result of kind gvk (a strict
// JSON decoding into the kind's Go type, then ToUnstructured), computed
// without encoding and decoding JSON when the object has nothing the
// decoder could refuse or read differently.
func (s *Scheme) decode(doc map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	if s.Recognizes(gvk) {
		if out, ok := s.plans.decode(s.types, doc, gvk); ok {
			return out, nil
		}
	}
	return decodeReference(doc, gvk, s.typesOf(gvk))
}

// decodeFixed is decode for a result of jsonpatch.ApplyUnnormalized: it
// answers ok=false unless doc is also a fixed point of jsonpatch.Apply's
// normalization of its input, so that the result is what jsonpatch.Apply
// followed by decode gives. ok=false means it cannot tell.
func (s *Scheme) decodeFixed(doc map[string]any, gvk schema.GroupVersionKind) (map[string]any, bool) {
	if !s.Recognizes(gvk) {
		return nil, false
	}
	return s.plans.decodeFixed(s.types, doc, gvk)
}

// typesOf is the runtime.Scheme objects of kind gvk are decoded with: the
// built-in types, but none for a kind a CRD shadows.
func (s *Scheme) typesOf(gvk schema.GroupVersionKind) *runtime.Scheme {
	if s.crs.Shadows(gvk) {
		return s.untyped
	}
	return s.types
}

// New returns a new typed object of the built-in kind gvk.
func (s *Scheme) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	obj, err := s.types.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("%s is not a built-in kind: %w", gvk, err)
	}
	return obj, nil
}
