package main

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyHostileWebhookOutput checks what a webhook says reaches the
// terminal as kube-apiserver returns it, and as text: warnings with
// control characters dropped (kube-apiserver's warning recorder), a
// denial's message with its ANSI escapes written as escapes, and the
// trace of --explain truthful after the refusal (issue 31: the escapes
// reached the terminal raw, and --explain said "the admitted object is
// valid" of a refused request).
func TestApplyHostileWebhookOutput(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var in struct {
			Request struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		_ = json.Unmarshal(body, &in)
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": map[string]any{
			"uid": in.Request.UID, "allowed": false,
			"warnings": []string{"plain warning", "\x1b[2J\x1b[31mscreen cleared"},
			"status":   map[string]any{"code": 403, "message": "no \x1b]0;pwned\a entry"},
		}})
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	client := fmt.Sprintf("{url: %q, caBundle: %s}", srv.URL+"/", base64.StdEncoding.EncodeToString(ca))
	hooks := filepath.Join(t.TempDir(), "hooks.yaml")
	if err := os.WriteFile(hooks, []byte(webhookConfig("hostile", "hostile.example.com", client, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	const vd = "testdata/apply/validating/"
	code, _, stderr := runCLI(t, "", "apply", "-f", vd+"pod.yaml", "--policies", vd+"inject-sidecar.yaml", "--webhooks", hooks, "--explain")
	if code != exitProblem {
		t.Fatalf("exit %d, want %d\n%s", code, exitProblem, stderr)
	}
	if strings.ContainsAny(stderr, "\x1b\a") {
		t.Errorf("control characters reached stderr: %q", stderr)
	}
	for _, want := range []string{"Warning: plain warning\n", `no \x1b]0;pwned\a entry`, "explain: validation: not run (the request was refused before it)\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, not := range []string{"screen cleared", "the admitted object is valid"} {
		if strings.Contains(stderr, not) {
			t.Errorf("stderr has %q:\n%s", not, stderr)
		}
	}
}
