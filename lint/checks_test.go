package lint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
)

func TestChecks(t *testing.T) {
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	load := func(t *testing.T, path string) *manifest.Set {
		t.Helper()
		set, err := manifest.Load(context.Background(), []string{path}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	other := errors.New("other")

	t.Run("valid", func(t *testing.T) {
		set := load(t, filepath.Join("testdata", "corpus", "crd-object-undeclared-field.yaml"))
		c := StartChecks(comp, set)
		if got := c.Findings(); got != nil {
			t.Errorf("Findings before Lint = %v, want none", got)
		}
		c.Lint(set.Objects, false)
		if err := c.Validation(); err != nil {
			t.Fatalf("Validation: %v", err)
		}
		if err := c.Preceded(other); err != other {
			t.Errorf("Preceded = %v, want %v", err, other)
		}
		got, want := renderFindings(c.Findings()), renderFindings(Findings(comp, set, set.Objects, false))
		if got == "" || got != want {
			t.Errorf("Findings:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "policy.yaml")
		policy := `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: invalid
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'a': 1 +}}}"
`
		if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
			t.Fatal(err)
		}
		c := StartChecks(comp, load(t, path))
		verr := c.Validation()
		if verr == nil {
			t.Fatal("Validation of a policy whose expression does not compile: no error")
		}
		if err := c.Preceded(other); err == nil || err.Error() != verr.Error() {
			t.Errorf("Preceded = %v, want the validation's %v", err, verr)
		}
	})
}
