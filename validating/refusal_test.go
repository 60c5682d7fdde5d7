package validating

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	upstream "k8s.io/apiserver/pkg/admission/plugin/policy/validating"

	"github.com/mutatis-dev/mutatis/matching"
)

// newForbidden is the refusal of d as kube-apiserver's dispatcher builds
// it: admission.NewForbidden over the request's AttributesRecord
// (matching.Attributes.AdmissionAttributes), its reason and code set.
func newForbidden(t *testing.T, a *matching.Attributes, d decision) *apierrors.StatusError {
	t.Helper()
	var message string
	if d.binding != nil {
		message = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", d.policy.Name, d.binding.Name, d.Message)
	} else {
		message = fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", d.policy.Name, d.Message)
	}
	var status *apierrors.StatusError
	if !errors.As(admission.NewForbidden(a.AdmissionAttributes(), errors.New(message)), &status) {
		t.Fatal("not a StatusError")
	}
	reason := d.Reason
	if reason == "" {
		reason = metav1.StatusReasonInvalid
	}
	status.ErrStatus.Reason = reason
	status.ErrStatus.Code = reasonToCode(reason)
	status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, metav1.StatusCause{Message: message})
	return status
}

// TestRefusalIsNewForbiddens holds refusal to newForbidden over what
// admission.NewForbidden reads and words: the request's name (quoted as
// %q quotes), else the object's name or generateName, else "Unknown"; the
// group or none; no resource; a policy decision with and without a
// binding, with a reason.
func TestRefusalIsNewForbiddens(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	obj := func(meta map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta}}
	}
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	for _, tc := range []struct {
		name string
		a    matching.Attributes
		d    decision
	}{
		{name: "the request's name", a: matching.Attributes{Operation: admission.Create, Resource: deployments, Name: "web", Namespace: "prod", Object: obj(map[string]any{"name": "other"})},
			d: decision{PolicyDecision: upstream.PolicyDecision{Action: upstream.ActionDeny, Message: "no"}, policy: p, binding: b}},
		{name: "the object's name", a: matching.Attributes{Operation: admission.Create, Resource: pods, Namespace: "prod", Object: obj(map[string]any{"name": "web"})},
			d: decision{PolicyDecision: upstream.PolicyDecision{Action: upstream.ActionDeny, Message: "no", Reason: metav1.StatusReasonForbidden}, policy: p, binding: b}},
		{name: "the object's generateName", a: matching.Attributes{Operation: admission.Create, Resource: pods, Namespace: "prod", Object: obj(map[string]any{"generateName": "web-"})},
			d: decision{PolicyDecision: upstream.PolicyDecision{Action: upstream.ActionDeny, Message: "no"}, policy: p}},
		{name: "no name", a: matching.Attributes{Operation: admission.Create, Resource: pods, Object: obj(map[string]any{})},
			d: decision{PolicyDecision: upstream.PolicyDecision{Action: upstream.ActionDeny, Message: "a 'quoted' \"message\""}, policy: p, binding: b}},
		{name: "no object", a: matching.Attributes{Operation: admission.Delete, Resource: deployments, Namespace: "prod", OldObject: obj(map[string]any{"name": "web"})},
			d: decision{PolicyDecision: upstream.PolicyDecision{Action: upstream.ActionDeny, Message: "no", Reason: metav1.StatusReasonRequestEntityTooLarge}, policy: p, binding: b}},
		{name: "no resource", a: matching.Attributes{Operation: admission.Create, Name: "x"},
			d: decision{PolicyDecision: upstream.PolicyDecision{Action: upstream.ActionDeny, Message: "no"}, policy: p, binding: b}},
		{name: "a long name to quote, a group", a: matching.Attributes{Operation: admission.Create, Resource: deployments, Name: strings.Repeat("w\"é\x01", 40), Namespace: "prod"},
			d: decision{PolicyDecision: upstream.PolicyDecision{Action: upstream.ActionDeny, Message: strings.Repeat("ü'\"", 50)}, policy: p, binding: b}},
		{name: "a name to quote", a: matching.Attributes{Operation: admission.Create, Resource: pods, Name: "w\"eb\tü\x00", Namespace: "prod"},
			d: decision{PolicyDecision: upstream.PolicyDecision{Action: upstream.ActionDeny, Message: "no", Reason: metav1.StatusReasonUnauthorized}, policy: p}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours, theirs := refusal(&tc.a, tc.d), newForbidden(t, &tc.a, tc.d)
			if !reflect.DeepEqual(ours, theirs) {
				t.Fatalf("refusal      %+v\nNewForbidden %+v", ours.ErrStatus, theirs.ErrStatus)
			}
		})
	}
}
