package matching

import (
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Attributes are the parts of an admission request that matching and evaluation look at.
//
// Fill them the way kube-apiserver does: Resource and Kind as requested (before any
// equivalence), Subresource without the parent, Namespace empty for cluster-scoped resources.
// For requests on a Namespace, kube-apiserver sets Namespace to the namespace's own name:
// the request path is /api/v1/namespaces/{name}, and a CREATE gets the name of the object
// (handlers.createHandler). namespaceObject is null for them all the same.
type Attributes struct {
	// Operation is CREATE, UPDATE, DELETE or CONNECT.
	Operation admission.Operation
	// Kind is the kind of the object in the request.
	Kind schema.GroupVersionKind
	// Resource is the resource being requested.
	Resource schema.GroupVersionResource
	// Subresource is the subresource being requested, if any (e.g. "status", "scale").
	Subresource string
	// Name is the name of the object; it may be empty on CREATE with generateName.
	Name string
	// Namespace is the namespace of the request; empty for cluster-scoped resources.
	Namespace string
	// Object is the new object (nil for DELETE and for CONNECT without a body).
	Object *unstructured.Unstructured
	// OldObject is the existing object (nil for CREATE and CONNECT).
	OldObject *unstructured.Unstructured
	// Options are the operation options (CreateOptions, UpdateOptions, ...), if any.
	Options *unstructured.Unstructured
	// UserInfo is the requesting user; nil means anonymous.
	UserInfo user.Info
	// DryRun is true for dry-run requests.
	DryRun bool
}

// object returns Object as a runtime.Object whose nil is a nil interface, never a typed nil.
func (a *Attributes) object() runtime.Object {
	if a.Object == nil {
		return nil
	}
	return a.Object
}

func (a *Attributes) oldObject() runtime.Object {
	if a.OldObject == nil {
		return nil
	}
	return a.OldObject
}

func (a *Attributes) options() runtime.Object {
	if a.Options == nil {
		return nil
	}
	return a.Options
}

// AdmissionAttributes converts a to k8s.io/apiserver's admission.Attributes. Nil objects stay
// nil interfaces, as kube-apiserver passes them.
func (a *Attributes) AdmissionAttributes() admission.Attributes {
	userInfo := a.UserInfo
	if userInfo == nil {
		userInfo = &user.DefaultInfo{}
	}
	return admission.NewAttributesRecord(a.object(), a.oldObject(), a.Kind, a.Namespace, a.Name, a.Resource, a.Subresource, a.Operation, a.options(), a.DryRun, userInfo)
}

// AttributesFrom converts k8s.io/apiserver's admission.Attributes; objects that are not
// unstructured are converted to unstructured (and left nil if that fails).
func AttributesFrom(attr admission.Attributes) *Attributes {
	return &Attributes{
		Operation:   attr.GetOperation(),
		Kind:        attr.GetKind(),
		Resource:    attr.GetResource(),
		Subresource: attr.GetSubresource(),
		Name:        attr.GetName(),
		Namespace:   attr.GetNamespace(),
		Object:      toUnstructured(attr.GetObject()),
		OldObject:   toUnstructured(attr.GetOldObject()),
		Options:     toUnstructured(attr.GetOperationOptions()),
		UserInfo:    attr.GetUserInfo(),
		DryRun:      attr.IsDryRun(),
	}
}

func toUnstructured(obj runtime.Object) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	return &unstructured.Unstructured{Object: m}
}

// AdmissionRequest is the AdmissionRequest of a (without uid, object and
// oldObject) for the resource and kind a policy or webhook matched, as
// upstream's CreateAdmissionRequest builds it: kind, resource and
// subresource as matched, the request's own as requestKind,
// requestResource and requestSubResource. It is a policy's CEL "request"
// variable and the body of a webhook call.
func (a *Attributes) AdmissionRequest(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) *admissionv1.AdmissionRequest {
	var userInfo authenticationv1.UserInfo
	if a.UserInfo != nil {
		userInfo = authenticationv1.UserInfo{
			Extra:    map[string]authenticationv1.ExtraValue{},
			Groups:   a.UserInfo.GetGroups(),
			UID:      a.UserInfo.GetUID(),
			Username: a.UserInfo.GetName(),
		}
		for k, v := range a.UserInfo.GetExtra() {
			userInfo.Extra[k] = authenticationv1.ExtraValue(v)
		}
	}
	var options runtime.Object
	if a.Options != nil {
		options = a.Options
	}
	// The request and what its pointers point to, in one allocation.
	box := &requestBox{
		kind:     metav1.GroupVersionKind{Group: a.Kind.Group, Version: a.Kind.Version, Kind: a.Kind.Kind},
		resource: metav1.GroupVersionResource{Group: a.Resource.Group, Version: a.Resource.Version, Resource: a.Resource.Resource},
		dryRun:   a.DryRun,
	}
	box.request = admissionv1.AdmissionRequest{
		Kind:               metav1.GroupVersionKind(gvk),
		Resource:           metav1.GroupVersionResource(gvr),
		SubResource:        a.Subresource,
		RequestKind:        &box.kind,
		RequestResource:    &box.resource,
		RequestSubResource: a.Subresource,
		Name:               a.Name,
		Namespace:          a.Namespace,
		Operation:          admissionv1.Operation(a.Operation),
		UserInfo:           userInfo,
		DryRun:             &box.dryRun,
		Options:            runtime.RawExtension{Object: options},
	}
	return &box.request
}

// requestBox holds an AdmissionRequest with the values its pointer fields
// point to (AdmissionRequest).
type requestBox struct {
	request  admissionv1.AdmissionRequest
	kind     metav1.GroupVersionKind
	resource metav1.GroupVersionResource
	dryRun   bool
}
