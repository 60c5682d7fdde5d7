package source_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/source"
)

// TestLoadSaysWhatItDoesNotServe: serve is a mutating webhook; the
// ValidatingAdmissionPolicies of its files are counted in the load's
// summary as not served (kube-apiserver runs them), not silently dropped.
func TestLoadSaysWhatItDoesNotServe(t *testing.T) {
	dir := t.TempDir()
	vap := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-pods}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "false"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-pods}
spec: {policyName: no-pods, validationActions: [Deny]}
`
	if err := os.WriteFile(filepath.Join(dir, "vap.yaml"), []byte(vap), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := source.Load(context.Background(), source.Options{Policies: []string{"../examples/sidecar-injection/policy.yaml", dir}})
	if err != nil {
		t.Fatal(err)
	}
	want := "1 policies, 1 bindings, 0 other objects; 1 ValidatingAdmissionPolicies and 1 bindings not served (kube-apiserver runs them)"
	if !strings.Contains(set.Summary, want) {
		t.Fatalf("summary %q, want %q", set.Summary, want)
	}
}
