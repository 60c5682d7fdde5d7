package webhookclient

import (
	"context"
	"errors"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/matching"
)

// TestPatchChangesKind checks a webhook whose patch turns a ConfigMap
// into an apps/v1 Deployment is answered as kube-apiserver answers it:
// the dispatcher's Convert of the Deployment into the request's internal
// ConfigMap fails, a 500 of reason Unknown with the scheme's error (the
// probe of issue 31, defect 6: mutatis admitted it with data dropped).
func TestPatchChangesKind(t *testing.T) {
	f := newFixture(t)
	url, ca := tlsPeer(t, peer(t, peerAnswer{patch: []map[string]any{
		{"op": "replace", "path": "/apiVersion", "value": "apps/v1"},
		{"op": "replace", "path": "/kind", "value": "Deployment"},
	}}))
	configMaps := func(h *admissionregistrationv1.MutatingWebhook) {
		h.Rules[0].Resources = []string{"configmaps"}
	}
	for _, tc := range []struct {
		name  string
		hooks int
		want  string
	}{
		{"one webhook", 1, "converting (v1.Deployment) to (core.ConfigMap): unknown conversion"},
		// A second webhook on the same version sees the Deployment as it
		// is (VersionedKind does not change); the end is the same.
		{"two webhooks", 2, "converting (v1.Deployment) to (core.ConfigMap): unknown conversion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hooks []admissionregistrationv1.MutatingWebhook
			for i := 0; i < tc.hooks; i++ {
				hooks = append(hooks, f.hook("kind"+string(rune('a'+i))+".example.com", "/", configMaps, urlHook(url, ca)))
			}
			d := f.dispatcher(t, Options{}, hooks...)
			cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "default"}, "data": map[string]any{"k": "v"}}
			a := &matching.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Resource: corev1.SchemeGroupVersion.WithResource("configmaps"),
				Name: "cm", Namespace: "default", Object: &unstructured.Unstructured{Object: cm}, UserInfo: &user.DefaultInfo{Name: "alice"}}
			res, err := d.pass(context.Background(), a, nil, false)
			var status *apierrors.StatusError
			if !errors.As(err, &status) {
				t.Fatalf("error %v (object %v), want a 500", err, res.Object)
			}
			if s := status.ErrStatus; s.Code != 500 || s.Reason != metav1.StatusReasonUnknown || s.Message != tc.want {
				t.Errorf("status %d %q %q, want 500 %q %q", s.Code, s.Reason, s.Message, metav1.StatusReasonUnknown, tc.want)
			}
		})
	}
}
