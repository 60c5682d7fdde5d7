package webhook

import (
	"bytes"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	sigsjson "sigs.k8s.io/json"

	"github.com/mutatis-dev/mutatis/matching"
)

// Review is a decoded AdmissionReview request. admission.k8s.io/v1beta1
// requests and responses have the same fields and JSON as v1, so both are
// held in the v1 types; APIVersion remembers which version to answer in.
type Review struct {
	// APIVersion is admission.k8s.io/v1 or admission.k8s.io/v1beta1.
	APIVersion string
	// Request is the admission request (never nil).
	Request *admissionv1.AdmissionRequest
}

// reviewKind is the kind of every AdmissionReview.
const reviewKind = "AdmissionReview"

// Decode reads an AdmissionReview request. Its errors are the client's
// fault (HTTP 400) and say what is wrong.
func Decode(body []byte) (*Review, error) {
	rv, _, _, err := decode(body, nil)
	return rv, err
}

// decode is Decode, and the request's objects decoded when the envelope's
// own decoder took the body (decoded; else attributes decodes them from
// their Raw bytes). s, when not nil, is the review's scratch, and body
// the review's own: it is decoded in place, not copied
// (decodeEnvelopeOwned).
func decode(body []byte, s *reviewScratch) (review *Review, b bodies, decoded bool, err error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, b, false, errors.New("empty body: want an AdmissionReview")
	}
	var rv admissionv1.AdmissionReview
	if s != nil {
		b, decoded = decodeEnvelopeOwned(body, &rv, s)
	} else {
		b, decoded = decodeEnvelope(body, &rv)
	}
	if !decoded {
		if err := decodeReviewReference(body, &rv); err != nil {
			return nil, b, false, err
		}
	}
	if err := checkReview(&rv); err != nil {
		return nil, b, false, err
	}
	return &Review{APIVersion: rv.APIVersion, Request: rv.Request}, b, decoded, nil
}

// checkReview refuses a decoded review that is not an AdmissionReview
// request of a known version with a uid.
func checkReview(rv *admissionv1.AdmissionReview) error {
	switch gv := rv.APIVersion; {
	case rv.Kind != reviewKind || (gv != admissionv1.SchemeGroupVersion.String() && gv != admissionv1beta1.SchemeGroupVersion.String()):
		return fmt.Errorf("want kind AdmissionReview of apiVersion admission.k8s.io/v1 or admission.k8s.io/v1beta1, got kind %q of apiVersion %q", rv.Kind, rv.APIVersion)
	case rv.Request == nil:
		return errors.New("AdmissionReview has no request")
	case rv.Request.UID == "":
		return errors.New("AdmissionReview request has no uid")
	}
	return nil
}

// decodeReviewReference is the AdmissionReview's decoding as sigsjson
// gives it (decodeEnvelope's reference).
func decodeReviewReference(body []byte, rv *admissionv1.AdmissionReview) error {
	// Case-sensitive like the API server's own decoding; integers stay
	// int64 in raw fields decoded later.
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, rv); err != nil {
		return fmt.Errorf("decoding AdmissionReview: %w", err)
	}
	return nil
}

// Attributes turns an admission request into the attributes the engine
// evaluates, as kube-apiserver's own admission attributes would be for the
// object the webhook received:
//
//   - Kind and Resource are the request's kind and resource, the version
//     the object is in (requestKind differs only when kube-apiserver
//     converted the object for a webhook rule with matchPolicy Equivalent;
//     the patch must apply to the object as received);
//   - object, oldObject and options are decoded to unstructured, with
//     apiVersion and kind filled from the request when absent; the engine
//     normalizes built-in kinds through their Go types;
//   - userInfo keeps username, uid, groups and extra.
func Attributes(req *admissionv1.AdmissionRequest) (*matching.Attributes, error) {
	a, _, err := attributes(req, nil)
	return a, err
}

// attributes is Attributes; original is a.Object's map when it is exactly
// the decoding of req.Object.Raw (nil when apiVersion and kind were filled
// in, or there is no object). b, when not nil, holds the objects decoded
// already (decode's).
func attributes(req *admissionv1.AdmissionRequest, b *bodies) (a *matching.Attributes, original map[string]any, err error) {
	op := admission.Operation(req.Operation)
	switch op {
	case admission.Create, admission.Update, admission.Delete, admission.Connect:
	default:
		return nil, nil, fmt.Errorf("request.operation must be CREATE, UPDATE, DELETE or CONNECT, not %q", req.Operation)
	}
	gvk := schema.GroupVersionKind(req.Kind)
	a = &matching.Attributes{
		Operation:   op,
		Kind:        gvk,
		Resource:    schema.GroupVersionResource(req.Resource),
		Subresource: req.SubResource,
		Name:        req.Name,
		Namespace:   req.Namespace,
		DryRun:      req.DryRun != nil && *req.DryRun,
	}
	var pristine bool
	if b != nil {
		a.Object, pristine = objectOf(b.object, gvk)
		a.OldObject, _ = objectOf(b.oldObject, gvk)
		a.Options, _ = objectOf(b.options, schema.GroupVersionKind{})
	} else {
		if a.Object, pristine, err = decodeObject("object", req.Object.Raw, gvk); err != nil {
			return nil, nil, err
		}
		if a.OldObject, _, err = decodeObject("oldObject", req.OldObject.Raw, gvk); err != nil {
			return nil, nil, err
		}
		if a.Options, _, err = decodeObject("options", req.Options.Raw, schema.GroupVersionKind{}); err != nil {
			return nil, nil, err
		}
	}
	if pristine {
		original = a.Object.Object
	}
	u := &user.DefaultInfo{
		Name:   req.UserInfo.Username,
		UID:    req.UserInfo.UID,
		Groups: req.UserInfo.Groups,
	}
	if len(req.UserInfo.Extra) > 0 {
		u.Extra = make(map[string][]string, len(req.UserInfo.Extra))
		for k, v := range req.UserInfo.Extra {
			u.Extra[k] = []string(v)
		}
	}
	a.UserInfo = u
	return a, original, nil
}

// decodeObject decodes a raw object field; absent and null are nil.
// pristine tells that the object's map is the decoding of raw as it is
// (apiVersion and kind were not filled in).
func decodeObject(field string, raw []byte, gvk schema.GroupVersionKind) (u *unstructured.Unstructured, pristine bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, false, nil
	}
	obj, err := decodeMap(raw)
	if err != nil {
		return nil, false, fmt.Errorf("request.%s: %w", field, err)
	}
	if obj == nil {
		return nil, false, fmt.Errorf("request.%s: not a JSON object", field)
	}
	u, pristine = objectOf(obj, gvk)
	return u, pristine, nil
}

// objectOf is the object of the decoded map obj (nil for nil), with gvk
// filled in when it has neither apiVersion nor kind (then not pristine).
func objectOf(obj map[string]any, gvk schema.GroupVersionKind) (u *unstructured.Unstructured, pristine bool) {
	if obj == nil {
		return nil, false
	}
	u = &unstructured.Unstructured{Object: obj}
	if gvk.Kind != "" && u.GetKind() == "" && u.GetAPIVersion() == "" {
		u.SetGroupVersionKind(gvk)
		return u, false
	}
	return u, true
}
