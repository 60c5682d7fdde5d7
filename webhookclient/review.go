package webhookclient

import (
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mutatis-dev/mutatis/matching"
)

// errNoKnownVersion is kube-apiserver's error for a webhook none of whose
// admissionReviewVersions it can send.
var errNoKnownVersion = errors.New("webhook does not accept known AdmissionReview versions (v1, v1beta1)")

// invocation is what a matched webhook is called with: the resource and
// kind it registered for (the request's own, or an equivalent one under
// matchPolicy Equivalent), and the request's objects in that kind.
type invocation struct {
	resource    schema.GroupVersionResource
	kind        schema.GroupVersionKind
	object, old map[string]any
	attrs       *matching.Attributes
}

// response is a webhook's answer once checked, upstream's
// request.AdmissionResponse.
type response struct {
	auditAnnotations map[string]string
	allowed          bool
	patch            []byte
	patchType        admissionv1.PatchType
	result           *metav1.Status
	warnings         []string
}

// newReview returns the AdmissionReview to send in the first of versions
// the client speaks (v1, v1beta1), the value its answer decodes into and
// the version chosen; errNoKnownVersion when there is none.
func newReview(uid types.UID, inv *invocation, versions []string) (request, answer runtime.Object, version string, err error) {
	for _, v := range versions {
		switch v {
		case admissionv1.SchemeGroupVersion.Version:
			return &admissionv1.AdmissionReview{Request: admissionRequest(uid, inv)}, &admissionv1.AdmissionReview{}, v, nil
		case admissionv1beta1.SchemeGroupVersion.Version:
			return &admissionv1beta1.AdmissionReview{Request: v1beta1Request(admissionRequest(uid, inv))}, &admissionv1beta1.AdmissionReview{}, v, nil
		}
	}
	return nil, nil, "", errNoKnownVersion
}

// admissionRequest is the request kube-apiserver sends: kind, resource
// and subresource as the webhook registered them, the request's own as
// requestKind, requestResource and requestSubResource.
func admissionRequest(uid types.UID, inv *invocation) *admissionv1.AdmissionRequest {
	r := inv.attrs.AdmissionRequest(inv.resource, inv.kind)
	r.UID = uid
	r.Object, r.OldObject = raw(inv.object), raw(inv.old)
	return r
}

// v1beta1Request is r in admission.k8s.io/v1beta1, whose request has the
// same fields.
func v1beta1Request(r *admissionv1.AdmissionRequest) *admissionv1beta1.AdmissionRequest {
	return &admissionv1beta1.AdmissionRequest{
		UID:                r.UID,
		Kind:               r.Kind,
		Resource:           r.Resource,
		SubResource:        r.SubResource,
		RequestKind:        r.RequestKind,
		RequestResource:    r.RequestResource,
		RequestSubResource: r.RequestSubResource,
		Name:               r.Name,
		Namespace:          r.Namespace,
		Operation:          admissionv1beta1.Operation(r.Operation),
		UserInfo:           r.UserInfo,
		Object:             r.Object,
		OldObject:          r.OldObject,
		DryRun:             r.DryRun,
		Options:            r.Options,
	}
}

func raw(obj map[string]any) runtime.RawExtension {
	if obj == nil {
		return runtime.RawExtension{}
	}
	return runtime.RawExtension{Object: &unstructured.Unstructured{Object: obj}}
}

func rawUnstructured(u *unstructured.Unstructured) runtime.RawExtension {
	if u == nil {
		return runtime.RawExtension{}
	}
	return runtime.RawExtension{Object: u}
}

// verifyResponse checks a mutating webhook's answer as kube-apiserver's
// VerifyAdmissionResponse does: an answer is present, and in v1 it echoes
// the request's uid, has the v1 type and pairs patch with patchType; v1beta1
// answers are taken as they are, a patch being JSONPatch.
func verifyResponse(uid types.UID, review runtime.Object) (*response, error) {
	switch r := review.(type) {
	case *admissionv1.AdmissionReview:
		if r.Response == nil {
			return nil, fmt.Errorf("webhook response was absent")
		}
		if r.Response.UID != uid {
			return nil, fmt.Errorf("expected response.uid=%q, got %q", uid, r.Response.UID)
		}
		v1GVK := admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")
		if r.GroupVersionKind() != v1GVK {
			return nil, fmt.Errorf("expected webhook response of %v, got %v", v1GVK.String(), r.GroupVersionKind().String())
		}
		if len(r.Response.Patch) > 0 && r.Response.PatchType == nil {
			return nil, fmt.Errorf("webhook returned response.patch but not response.patchType")
		}
		if len(r.Response.Patch) == 0 && r.Response.PatchType != nil {
			return nil, fmt.Errorf("webhook returned response.patchType but not response.patch")
		}
		var patchType admissionv1.PatchType
		if r.Response.PatchType != nil {
			patchType = *r.Response.PatchType
			if len(patchType) == 0 {
				return nil, fmt.Errorf("webhook returned invalid response.patchType of %q", patchType)
			}
		}
		return newResponse(r.Response, patchType), nil
	case *admissionv1beta1.AdmissionReview:
		if r.Response == nil {
			return nil, fmt.Errorf("webhook response was absent")
		}
		var patchType admissionv1.PatchType
		if len(r.Response.Patch) > 0 {
			patchType = admissionv1.PatchTypeJSONPatch
		}
		b := r.Response
		return &response{auditAnnotations: b.AuditAnnotations, allowed: b.Allowed, patch: b.Patch, patchType: patchType, result: b.Result, warnings: b.Warnings}, nil
	default:
		return nil, fmt.Errorf("unexpected response type %T", review)
	}
}

func newResponse(r *admissionv1.AdmissionResponse, patchType admissionv1.PatchType) *response {
	return &response{
		auditAnnotations: r.AuditAnnotations,
		allowed:          r.Allowed,
		patch:            r.Patch,
		patchType:        patchType,
		result:           r.Result,
		warnings:         r.Warnings,
	}
}
