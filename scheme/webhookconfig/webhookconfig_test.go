package webhookconfig

import (
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestMutating(t *testing.T) {
	beta := &admissionregistrationv1beta1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "beta"},
		Webhooks: []admissionregistrationv1beta1.MutatingWebhook{{
			Name:         "b.example.com",
			ClientConfig: admissionregistrationv1beta1.WebhookClientConfig{URL: ptr.To("https://example.com/b")},
			SideEffects:  ptr.To(admissionregistrationv1beta1.SideEffectClassNone),
		}},
	}
	before := beta.DeepCopy()
	res, err := Mutating(beta)
	if err != nil || len(res.Invalid) > 0 {
		t.Fatalf("%v %v", err, res.Invalid)
	}
	if !reflect.DeepEqual(beta, before) {
		t.Error("the input was modified")
	}
	w := res.Configuration.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Ignore || *w.TimeoutSeconds != 30 || w.AdmissionReviewVersions[0] != "v1beta1" || res.Configuration.APIVersion != "admissionregistration.k8s.io/v1" {
		t.Errorf("v1beta1 defaults lost: %+v", res.Configuration)
	}

	invalid := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "a.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://example.com/a")},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](0),
		}},
	}
	res, err = Mutating(invalid)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Invalid.ToAggregate().Error()
	for _, want := range []string{"metadata.name: Invalid value: \"Bad_Name\"", "webhooks[0].timeoutSeconds: Invalid value: 0"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if _, err := Mutating(&corev1.Pod{}); err == nil {
		t.Error("a Pod was taken for a configuration")
	}
}

func TestValidating(t *testing.T) {
	beta := &admissionregistrationv1beta1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "beta"},
		Webhooks: []admissionregistrationv1beta1.ValidatingWebhook{{
			Name:         "b.example.com",
			ClientConfig: admissionregistrationv1beta1.WebhookClientConfig{URL: ptr.To("https://example.com/b")},
			SideEffects:  ptr.To(admissionregistrationv1beta1.SideEffectClassNone),
		}},
	}
	res, err := Validating(beta)
	if err != nil || len(res.Invalid) > 0 {
		t.Fatalf("%v %v", err, res.Invalid)
	}
	w := res.Configuration.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Ignore || *w.TimeoutSeconds != 30 || w.AdmissionReviewVersions[0] != "v1beta1" || res.Configuration.Kind != "ValidatingWebhookConfiguration" {
		t.Errorf("v1beta1 defaults lost: %+v", res.Configuration)
	}

	v1 := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "v1"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "a.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://example.com/a")},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	res, err = Validating(v1)
	if err != nil || len(res.Invalid) > 0 {
		t.Fatalf("%v %v", err, res.Invalid)
	}
	w = res.Configuration.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.TimeoutSeconds != 10 || *w.MatchPolicy != admissionregistrationv1.Equivalent || w.NamespaceSelector == nil {
		t.Errorf("v1 defaults lost: %+v", w)
	}

	invalid := v1.DeepCopy()
	invalid.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "bad", Expression: "object.metadata.name =="}}
	invalid.Webhooks[0].SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
	res, err = Validating(invalid)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Invalid.ToAggregate().Error()
	for _, want := range []string{"webhooks[0].matchConditions[0].expression: Invalid value", "webhooks[0].sideEffects: Unsupported value: \"Some\""} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if _, err := Validating(&admissionregistrationv1.MutatingWebhookConfiguration{}); err == nil {
		t.Error("a MutatingWebhookConfiguration was taken for a validating one")
	}
}
