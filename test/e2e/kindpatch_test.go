//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestWebhookPatchChangesKind checks kube-apiserver's answer to a webhook
// whose patch turns a ConfigMap into an apps/v1 Deployment, the answer
// webhookclient's TestPatchChangesKind holds mutatis to (issue 31,
// defect 6).
func TestWebhookPatchChangesKind(t *testing.T) {
	c := StartCluster(t, DefaultAdmission)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var in struct {
			Request struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		_ = json.Unmarshal(body, &in)
		patch, _ := json.Marshal([]map[string]any{{"op": "replace", "path": "/apiVersion", "value": "apps/v1"}, {"op": "replace", "path": "/kind", "value": "Deployment"}})
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
			"response": map[string]any{"uid": in.Request.UID, "allowed": true, "patchType": "JSONPatch", "patch": patch}})
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kind-change"}, Webhooks: []admissionregistrationv1.MutatingWebhook{{
		Name:         "kind.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/"), CABundle: ca},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
		ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"kind-change": "yes"}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}}}
	if _, err := c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default", Labels: map[string]string{"kind-change": "yes"}}, Data: map[string]string{"k": "v"}}
	var err error
	_ = poll(ctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, err = c.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		return err != nil, nil
	})
	var status *apierrors.StatusError
	if !errors.As(err, &status) {
		t.Fatalf("error %v", err)
	}
	s := status.ErrStatus
	t.Logf("kube-apiserver: %d %q %q", s.Code, s.Reason, s.Message)
	if s.Code != 500 || s.Reason != metav1.StatusReasonUnknown || s.Message != "converting (v1.Deployment) to (core.ConfigMap): unknown conversion" {
		t.Errorf("kube-apiserver answered %d %q %q", s.Code, s.Reason, s.Message)
	}
}
