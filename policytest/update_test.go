package policytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const updatePolicies = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: labels}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'object.metadata.name == "forbidden" ? Object{metadata: Object.metadata{labels: {"n": string(int(object.metadata.name))}}} : Object{metadata: Object.metadata{labels: {"team": "shop", "tier": "web"}}, data: {"added": "yes"}}'
`

const updateSuite = `# A suite whose expectations are out of date.
apiVersion: mutatis.dev/v1alpha1
kind: PolicyTest
policies: [policies.yaml]
bindings: auto
cases:
- name: inline objectContains
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: shop}}
  expect:
    # the labels the policy sets
    objectContains: {metadata: {labels: {team: old, tier: web}}}   # keep me
- name: block patch
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: shop}, data: {k: v}}
  expect:
    patch:
    - op: add
      path: /metadata/labels
      value: {team: old}
- name: denial message
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: forbidden, namespace: shop}}
  expect:
    denied: "an old message"
- name: golden file
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: shop}}
  expect:
    object: final.yaml
- name: nothing to write
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: d, namespace: shop}}
  expect:
    applied: [nobody]
# the end
`

// TestUpdateWritesTheActualResults: --update rewrites the expectations of
// failing cases with what happened — inline in the suite (only the
// expectation's text changes: the comments, the other cases and the
// layout stay) and in a golden file — and names what it cannot write.
func TestUpdateWritesTheActualResults(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"policies.yaml":       updatePolicies,
		"u.mutatis-test.yaml": updateSuite,
		"final.yaml":          "# the stored object\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: shop\n  labels: {team: old}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	suite := filepath.Join(dir, "u.mutatis-test.yaml")
	rep, out := runText(t, Options{}, suite)
	if _, failed, _, _ := rep.Counts(); failed != 5 {
		t.Fatalf("%d failed, want 5:\n%s", failed, out)
	}
	done, notDone, err := rep.Update()
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 4 || len(notDone) != 1 || notDone[0].Case != "u/nothing to write" || !strings.HasPrefix(notDone[0].Reason, "applied: ") {
		t.Errorf("updated %+v, not updated %+v", done, notDone)
	}
	rep, out = runText(t, Options{}, suite)
	if passed, failed, _, _ := rep.Counts(); passed != 4 || failed != 1 {
		t.Errorf("after the update: passed %d, failed %d, want 4, 1:\n%s", passed, failed, out)
	}
	data, _ := os.ReadFile(suite)
	got := string(data)
	for _, w := range []string{
		"# A suite whose expectations are out of date.\napiVersion: mutatis.dev/v1alpha1\n",
		"    # the labels the policy sets\n    objectContains: {metadata: {labels: {team: shop, tier: web}}} # keep me\n",
		"    patch:\n      - op: add\n        path: /data/added\n        value: \"yes\"\n",
		"    denied: \"policy 'labels' with binding 'labels' denied request: expression",
		"    object: final.yaml\n",
		"  expect:\n    applied: [nobody]\n# the end\n",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("the suite lacks %q:\n%s", w, got)
		}
	}
	golden, _ := os.ReadFile(filepath.Join(dir, "final.yaml"))
	for _, w := range []string{"# the stored object\n", "team: shop", "tier: web", "added: \"yes\""} {
		if !strings.Contains(string(golden), w) {
			t.Errorf("final.yaml lacks %q:\n%s", w, golden)
		}
	}
}

// TestUpdateWritesTheValidatingStage: --update rewrites the expectations
// on the validating stage — denied.by, warnings, auditAnnotations,
// validationFailures — with what kube-apiserver's answer holds.
func TestUpdateWritesTheValidatingStage(t *testing.T) {
	dir := t.TempDir()
	policies, err := os.ReadFile("testdata/validating/policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	suite := `apiVersion: mutatis.dev/v1alpha1
kind: PolicyTest
policies: [policies.yaml]
cases:
- name: refused
  object: {apiVersion: v1, kind: Pod, metadata: {name: web, namespace: strict}, spec: {containers: [{name: app, image: nginx:1.27, resources: {limits: {memory: 64Mi}}}]}}
  expect:
    denied: {by: PodSecurity}
- name: warned
  object: {apiVersion: v1, kind: Pod, metadata: {name: web, namespace: lenient}, spec: {containers: [{name: app, image: nginx:1.27, resources: {limits: {memory: 64Mi}}}]}}
  expect:
    warnings: [no such warning, nor this one]
    auditAnnotations: {images/list: "nginx"}
    validationFailures:
    - {policy: memory-limits, message: an old message}
`
	for name, content := range map[string]string{"policies.yaml": string(policies), "v.mutatis-test.yaml": suite} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "v.mutatis-test.yaml")
	rep, out := runText(t, Options{}, file)
	if _, failed, _, _ := rep.Counts(); failed != 2 {
		t.Fatalf("%d failed, want 2:\n%s", failed, out)
	}
	done, notDone, err := rep.Update()
	if err != nil || len(notDone) != 0 || len(done) != 2 {
		t.Fatalf("updated %+v, not updated %+v, %v", done, notDone, err)
	}
	if got := strings.Join(done[1].Expectations, ","); got != "warnings,auditAnnotations,validationFailures" {
		t.Errorf("the second case's expectations written: %s", got)
	}
	rep, out = runText(t, Options{}, file)
	if passed, failed, _, _ := rep.Counts(); passed != 2 || failed != 0 {
		data, _ := os.ReadFile(file)
		t.Errorf("after the update: passed %d, failed %d:\n%s\n%s", passed, failed, out, data)
	}
	data, _ := os.ReadFile(file)
	for _, w := range []string{"denied: {by: ValidatingAdmissionPolicy}", `auditAnnotations: {images/list: "nginx:1.27,registry.example.com/proxy:1.0"}`, "binding: memory-limits-lenient", "validationActions: [Warn, Audit]"} {
		if !strings.Contains(string(data), w) {
			t.Errorf("the suite lacks %q:\n%s", w, data)
		}
	}
}
