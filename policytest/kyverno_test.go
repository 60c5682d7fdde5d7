package policytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKyvernoSuites runs Kyverno's own `kyverno test` suites of native
// MutatingAdmissionPolicies (testdata/kyverno) as they are.
func TestKyvernoSuites(t *testing.T) {
	rep, out := runText(t, Options{}, "testdata/kyverno")
	passed, failed, _, bad := rep.Counts()
	if len(rep.Suites) != 14 || passed != 15 || failed != 2 || bad != 0 {
		t.Errorf("%d suites: passed %d, failed %d, bad %d; want 14: 15, 2, 0:\n%s", len(rep.Suites), passed, failed, bad, out)
	}
	for _, w := range []string{
		"ok   specify-namespace-selector\ttestdata/kyverno/specify-namespace-selector/kyverno-test.yaml\t2 cases\n",
		"ok   check-user-info\t", "ok   mutate-namespace\t", "ok   with-match-conditions\t",
		// A ConfigMap whose data holds a number: kube-apiserver would never
		// have stored the param, and the binding cannot read it.
		"--- FAIL: with-params/change-deployment-replicas pass Deployment/test-deployment",
		"failed to convert param /v1, Kind=ConfigMap to typed object: cannot convert int64 to string",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}

	dir := t.TempDir()
	copyTree(t, "testdata/kyverno/with-params", dir)
	edit(t, filepath.Join(dir, "param.yaml"), "replicas: 10", `replicas: "10"`)
	if rep, out := runText(t, Options{}, dir); rep.Suites[0].Cases[0].Status != Pass {
		t.Errorf("with the param's data a string, the case fails:\n%s", out)
	}
	edit(t, filepath.Join(dir, "patched-resource.yaml"), "replicas: 10", "replicas: 11")
	if _, out := runText(t, Options{}, dir); !strings.Contains(out, "-  replicas: 11\n    +  replicas: 10\n") {
		t.Errorf("a patched resource that differs: output lacks the diff:\n%s", out)
	}
	edit(t, filepath.Join(dir, "kyverno-test.yaml"), "result: pass", "result: fail")
	if _, out := runText(t, Options{}, dir); !strings.Contains(out, `kyverno-test.yaml: results[0].result: "fail": mutatis checks pass, skip and error`) {
		t.Errorf("a fail result: output lacks the error:\n%s", out)
	}
}

// A kyverno-test.yaml of Kyverno's own policies is not a suite of
// mutatis'.
func TestKyvernoTestFilesOfOtherPoliciesAreNotSuites(t *testing.T) {
	dir := t.TempDir()
	err := os.WriteFile(filepath.Join(dir, "kyverno-test.yaml"), []byte("apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\npolicies: [p.yaml]\nresources: [r.yaml]\nresults:\n- policy: require-labels\n  rule: check\n  resources: [a]\n  kind: Pod\n  result: pass\n"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if files, err := Discover([]string{dir}); err != nil || len(files) != 0 {
		t.Errorf("Discover = %v, %v; want nothing", files, err)
	}
}
