package policytest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestKyvernoSuites runs Kyverno's own `kyverno test` suites of native
// MutatingAdmissionPolicies (testdata/kyverno) as they are.
func TestKyvernoSuites(t *testing.T) {
	files, err := filepath.Glob("testdata/kyverno/*/kyverno-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, out := runText(t, Options{}, files...)
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

// TestKyvernoValidatingSuites runs Kyverno's own `kyverno test` suites of
// ValidatingAdmissionPolicies (testdata/kyverno/validating) as they are:
// those kube-apiserver agrees with pass; the README lists the others.
func TestKyvernoValidatingSuites(t *testing.T) {
	rep, out := runText(t, Options{}, "testdata/kyverno/validating")
	passed, failed, _, bad := rep.Counts()
	if len(rep.Suites) != 10 || passed != 24 || failed != 0 || bad != 2 {
		t.Errorf("%d suites: passed %d, failed %d, bad %d; want 10: 24, 0, 2:\n%s", len(rep.Suites), passed, failed, bad, out)
	}
	for _, w := range []string{
		"ok   with-bindings-3\ttestdata/kyverno/validating/with-bindings-3/kyverno-test.yaml\t6 cases\n",
		"ok   check-user-info\t", "ok   with-match-conditions\t", "ok   with-namespaceObject-1\t", "ok   with-namespaceObject-2\t",
		// A rule without operations, a binding without validationActions
		// and parameterNotFoundAction: kube-apiserver refuses them.
		`ValidatingAdmissionPolicy "validate-namespace-name": spec.matchConstraints.resourceRules[0].operations: Required value`,
		`ValidatingAdmissionPolicyBinding "check-deployments-replicas-binding": spec.validationActions: Required value`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}

	dir := t.TempDir()
	copyTree(t, "testdata/kyverno/validating", dir)
	edit(t, filepath.Join(dir, "match-namespaces/policy.yaml"), `resources: ["namespaces"]`, `resources: ["namespaces"]
      operations: ["CREATE"]`)
	edit(t, filepath.Join(dir, "with-params/policy.yaml"), "  paramRef:\n", "  validationActions: [Deny]\n  paramRef:\n    namespace: default\n    parameterNotFoundAction: Deny\n")
	edit(t, filepath.Join(dir, "with-params/cm.yaml"), "  name: replica-limits-config\n", "  name: replica-limits-config\n  namespace: default\n")
	if rep, out := runText(t, Options{}, filepath.Join(dir, "match-namespaces"), filepath.Join(dir, "with-params")); passedOf(rep) != 4 {
		t.Errorf("with the policies as kube-apiserver takes them, the cases pass:\n%s", out)
	}
	// fail is what the binding's actions make of a failed validation: a
	// denial, a warning, a validation failure in the audit annotations.
	for _, action := range []string{"Warn", "Audit"} {
		edit(t, filepath.Join(dir, "with-bindings-1/policy.yaml"), "validationActions: [Deny]", "validationActions: ["+action+"]")
		if rep, out := runText(t, Options{}, filepath.Join(dir, "with-bindings-1")); passedOf(rep) != 3 {
			t.Errorf("a %s binding: the cases pass:\n%s", action, out)
		}
		edit(t, filepath.Join(dir, "with-bindings-1/policy.yaml"), "validationActions: ["+action+"]", "validationActions: [Deny]")
	}
	edit(t, filepath.Join(dir, "with-bindings-1/kyverno-test.yaml"), "result: fail", "result: pass")
	if _, out := runText(t, Options{}, filepath.Join(dir, "with-bindings-1")); !strings.Contains(out, "--- FAIL: with-bindings-1/check-deployment-replicas pass Deployment/nginx-deployment-1") {
		t.Errorf("a pass result of a denied request: output lacks the failure:\n%s", out)
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

// passedOf is how many cases of rep passed.
func passedOf(rep *Report) int {
	passed, _, _, _ := rep.Counts()
	return passed
}

// A values file's namespaces are the cluster's, with the labels its
// namespaceSelector gives them; a namespaceSelector entry of another name
// is a namespace of its own.
func TestKyvernoNamespaces(t *testing.T) {
	var v kyvernoValues
	v.Namespaces = []map[string]any{{"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1"}}}}
	v.NamespaceSelector = []kyvernoNamespaceSelector{{"a", map[string]string{"y": "2"}}, {"b", map[string]string{"z": "3"}}}
	got := kyvernoNamespaces(v)
	want := []Manifest{
		{Inline: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1", "y": "2"}}}},
		{Inline: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "b", "labels": map[string]any{"z": "3"}}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kyvernoNamespaces = %v, want %v", got, want)
	}
}
