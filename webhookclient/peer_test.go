package webhookclient

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
)

// peerAnswer is what a test peer answers to an AdmissionReview: its patch
// (JSON patch operations) and warnings.
type peerAnswer struct {
	patch    []map[string]any
	warnings []string
	allowed  *bool
	message  string
}

// peer is a webhook that answers every review with a, as its handler.
func peer(t *testing.T, a peerAnswer) http.HandlerFunc {
	t.Helper()
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var in struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := map[string]any{"uid": in.Request.UID, "allowed": a.allowed == nil || *a.allowed}
		if a.patch != nil {
			js, _ := json.Marshal(a.patch)
			resp["patch"], resp["patchType"] = js, "JSONPatch"
		}
		if a.warnings != nil {
			resp["warnings"] = a.warnings
		}
		if a.message != "" {
			resp["status"] = map[string]any{"message": a.message, "code": 403}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": in.APIVersion, "kind": "AdmissionReview", "response": resp})
	}
}

// tlsPeer starts h over TLS and returns its base URL and CA bundle.
func tlsPeer(t *testing.T, h http.Handler) (string, []byte) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// urlHook points a fixture's webhook at url with caBundle.
func urlHook(url string, ca []byte) func(*admissionregistrationv1.MutatingWebhook) {
	return func(h *admissionregistrationv1.MutatingWebhook) {
		h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url), CABundle: ca}
	}
}
