package policytest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScaffoldFollowsTheRules: the sample objects of a scaffolded suite
// are what the rules and selectors match — a Deployment for an apps rule,
// labels an In expression selects, a namespace a namespaceSelector
// selects, an UPDATE with an old object for an UPDATE-only rule, a
// binding of its own for a policy without one — and the suite passes.
func TestScaffoldFollowsTheRules(t *testing.T) {
	dir := t.TempDir()
	policies := filepath.Join(dir, "policies.yaml")
	err := os.WriteFile(policies, []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: tier}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: ["*"], operations: ["*"], resources: ["*"]}
    objectSelector: {matchExpressions: [{key: tier, operator: In, values: [web, api]}]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: 'Object{metadata: Object.metadata{annotations: {"seen": "yes"}}}'}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: tier-in-prod}
spec:
  policyName: tier
  matchResources:
    namespaceSelector: {matchLabels: {env: prod}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: on-update}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [UPDATE], resources: [configmaps]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: 'Object{metadata: Object.metadata{annotations: {"updated": "yes"}}}'}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	text, err := Scaffold(context.Background(), []string{policies}, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"bindings: auto", "- name: on-update applies\n  operation: UPDATE\n", "  oldObject:",
		"- name: tier applies through tier-in-prod\n  resources:", "      labels:\n        env: prod\n      name: selected\n",
		"    apiVersion: apps/v1\n    kind: Deployment\n", "        tier: web\n", "    applied: [tier/tier-in-prod]\n",
	} {
		if !strings.Contains(string(text), w) {
			t.Errorf("suite lacks %q:\n%s", w, text)
		}
	}
	suite := filepath.Join(dir, "scaffold.mutatis-test.yaml")
	if err := os.WriteFile(suite, text, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, out := runText(t, Options{}, suite)
	if passed, failed, _, bad := rep.Counts(); passed != 2 || failed+bad != 0 {
		t.Errorf("passed %d, failed %d, bad %d; want 2, 0, 0:\n%s\n%s", passed, failed, bad, out, text)
	}
}

// TestScaffoldValidatingPolicies: a ValidatingAdmissionPolicy gets two
// cases per binding — its validations pass, and its binding's
// validationActions act (a denial, a warning and an audited failure)
// once the object breaks one — drawn from its rules (a DELETE for a
// DELETE-only rule). On the sample objects, which a person edits, the
// expectations the policies meet pass, the others fail.
func TestScaffoldValidatingPolicies(t *testing.T) {
	dir := t.TempDir()
	text, err := Scaffold(context.Background(), []string{"testdata/validating/policies.yaml"}, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	got := string(text)
	for _, w := range []string{
		"- name: memory-limits admits through memory-limits-strict\n",
		"- name: memory-limits denies through memory-limits-strict\n",
		"    denied:\n      by: ValidatingAdmissionPolicy\n      message: 'ValidatingAdmissionPolicy ''images'' with binding ''images'' denied request: '\n",
		"- name: memory-limits warns and audits through memory-limits-lenient\n",
		"    warnings:\n    - '^Validation failed for ValidatingAdmissionPolicy ''memory-limits'' with binding ''memory-limits-lenient'': '\n    validationFailures:\n    - {policy: memory-limits, binding: memory-limits-lenient}\n",
		"- name: protect denies through protect\n  operation: DELETE\n",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("the suite lacks %q:\n%s", w, got)
		}
	}
	file := filepath.Join(dir, "s.mutatis-test.yaml")
	if err := os.WriteFile(file, text, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, out := runText(t, Options{}, file)
	if passed, failed, _, bad := rep.Counts(); passed != 6 || failed != 3 || bad != 0 {
		t.Errorf("passed %d, failed %d, bad %d; want 6, 3, 0:\n%s", passed, failed, bad, out)
	}
}
