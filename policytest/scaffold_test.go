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
