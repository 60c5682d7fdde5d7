package policytest

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/test/webhookserver"
)

// TestWarningsAsReturned: a case's warnings are what kube-apiserver
// returns — a text two stages record (here a mutating and a validating
// webhook answering the same warnings) once, in order.
func TestWarningsAsReturned(t *testing.T) {
	srv, err := webhookserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	hook := func(kind string) string {
		return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: %s
metadata: {name: warn}
webhooks:
- name: warn.example.com
  clientConfig: {url: %q, caBundle: %s}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]
`, kind, srv.URL+webhookserver.PathWarn, base64.StdEncoding.EncodeToString(srv.CABundle))
	}
	suite := `apiVersion: mutatis.dev/v1alpha1
kind: PolicyTest
metadata: {name: warnings}
policies: [policy.yaml]
webhooks: [hooks.yaml]
defaults: {namespace: shop}
cases:
- name: each warning once
  object: {apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: app, image: nginx}]}}
  expect:
    warnings: ["^no such warning$"]
`
	policy := `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: configmaps-only}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"seen": "yes"}}}'
`
	files := map[string]string{"policy.yaml": policy, "hooks.yaml": hook("MutatingWebhookConfiguration") + "---\n" + hook("ValidatingWebhookConfiguration"), "warnings.mutatis-test.yaml": suite}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, out := runText(t, Options{}, dir)
	// The failure lists the case's warnings, then the trace.
	_, listed, _ := strings.Cut(out, "no warning matches \"^no such warning$\"; warnings:\n")
	listed, _, _ = strings.Cut(listed, "explain:")
	if got := strings.Fields(listed); strings.Join(got, " ") != "first warning second warning" {
		t.Fatalf("warnings listed %q, want each once:\n%s", got, out)
	}
}
