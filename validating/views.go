package validating

import (
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/matching"
)

// view is the request as the policies matched through one kind see it
// (upstream's admission.NewVersionedAttributes): the object and old object
// in that kind's version, and the requests built from them, made once per
// request for every policy and binding.
type view struct {
	kind              schema.GroupVersionKind
	object, oldObject map[string]any
	// requests are the AdmissionRequests built for this kind, by resource.
	requests []*admissionv1.AdmissionRequest
}

// viewOf returns the view of kind, converting the objects the first time a
// policy matched through kind asks. views' elements past its length are
// views of earlier requests (reset): they are reused.
func (e *Evaluator) viewOf(views *[]*view, a *matching.Attributes, kind schema.GroupVersionKind) (*view, error) {
	for _, v := range *views {
		if v.kind == kind {
			return v, nil
		}
	}
	// A view of an earlier request (the scratch's), reset, or a new one.
	var v *view
	if n := len(*views); n < cap(*views) && (*views)[:n+1][n] != nil {
		v = (*views)[:n+1][n]
		v.reset()
	} else {
		v = new(view)
	}
	v.kind = kind
	if a.OldObject != nil {
		old, err := e.toVersion(a.OldObject.Object, a.Kind, kind)
		if err != nil {
			return nil, err
		}
		v.oldObject = old
	}
	if a.Object != nil {
		obj, err := e.toVersion(a.Object.Object, a.Kind, kind)
		if err != nil {
			return nil, err
		}
		v.object = obj
	}
	*views = append(*views, v)
	return v, nil
}

// reset empties v for another request, keeping its requests' array.
func (v *view) reset() {
	clear(v.requests)
	*v = view{requests: v.requests[:0]}
}

// request is upstream's CreateAdmissionRequest of the view's kind and
// resource gvr: "request" as CEL sees it (read-only, shared).
func (v *view) request(a *matching.Attributes, gvr schema.GroupVersionResource) *admissionv1.AdmissionRequest {
	for _, r := range v.requests {
		if schema.GroupVersionResource(r.Resource) == gvr {
			return r
		}
	}
	r := a.AdmissionRequest(gvr, v.kind)
	v.requests = append(v.requests, r)
	return r
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
