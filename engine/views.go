package engine

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/matching"
)

// versionedView is the request's object and old object as the policies
// matched through one kind see them: upstream's admission.VersionedAttributes
// of that kind, one per kind and pass.
type versionedView struct {
	// kind is the matched kind (VersionedKind).
	kind schema.GroupVersionKind
	// object is the current object of the view, of kind objectKind, and
	// oldObject the old object (of kind kind, never mutated).
	object, oldObject map[string]any
	objectKind        schema.GroupVersionKind
	// dirty tells a mutation changed object since the view was made.
	dirty bool
}

// viewSet is the views of one pass, by matched kind: the first in place
// (a pass's invocations are matched in one kind but for Equivalent matches
// through another version), the others in a map made when needed.
type viewSet struct {
	first    versionedView
	hasFirst bool
	more     map[schema.GroupVersionKind]*versionedView
}

// get is the view of kind, or nil.
func (s *viewSet) get(kind schema.GroupVersionKind) *versionedView {
	if s.hasFirst && s.first.kind == kind {
		return &s.first
	}
	return s.more[kind]
}

// view makes the view of cur's objects in kind, unless it exists
// (admission.NewVersionedAttributes: both objects converted with
// ConvertToGVK, the scheme's presenter every stage shares).
func (e *Evaluator) view(cur *matching.Attributes, kind schema.GroupVersionKind, views *viewSet) error {
	if views.get(kind) != nil {
		return nil
	}
	v := versionedView{kind: kind, objectKind: kind}
	var err error
	if cur.OldObject != nil {
		if v.oldObject, err = e.cfg.Patcher.Scheme.ConvertToGVK(cur.OldObject.Object, cur.Kind, kind); err != nil {
			return err
		}
	}
	if cur.Object != nil {
		if v.object, err = e.cfg.Patcher.Scheme.ConvertToGVK(cur.Object.Object, cur.Kind, kind); err != nil {
			return err
		}
	}
	if !views.hasFirst {
		views.first, views.hasFirst = v, true
		return nil
	}
	if views.more == nil {
		views.more = map[schema.GroupVersionKind]*versionedView{}
	}
	more := v
	views.more[kind] = &more
	return nil
}

// backToRequestVersion is what upstream's dispatchOne does to the result of
// a mutation of a built-in kind before defaulting it:
// ObjectConvertor.ConvertToVersion to the group/version of the request's
// kind. For a view in another kind (an Equivalent match) kube-apiserver's
// scheme has no conversion between two external versions and answers its
// own error (docs/fidelity.md), which is the policy's error. Custom
// resources are not converted there; a subresource of a custom resource
// whose kind is not the CRD's (its scale: autoscaling/v1 Scale) is typed
// but converted with the CRD handler's converter, which refuses it
// (scheme.CustomResources.ConvertSubresourceResult).
func (e *Evaluator) backToRequestVersion(obj map[string]any, kind, request schema.GroupVersionKind, resource schema.GroupVersionResource) (map[string]any, schema.GroupVersionKind, error) {
	s := e.cfg.Patcher.Scheme
	if obj != nil && request.Group != resource.Group && s.Recognizes(kind) && !s.CustomResources().Recognizes(request) {
		if ok, err := s.CustomResources().ConvertSubresourceResult(resource, obj, kind); ok {
			return obj, kind, err
		}
	}
	if obj == nil || kind == request || !s.Recognizes(kind) {
		return obj, kind, nil
	}
	return s.ConvertToVersion(obj, kind, request.GroupVersion())
}
