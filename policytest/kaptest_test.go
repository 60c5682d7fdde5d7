package policytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKaptestSuites runs a kaptest manifest of MutatingAdmissionPolicy
// tests (mapTestSuites) as a suite: mutate with expectObject, skip, and
// admit of an UPDATE from an old object; then a broken copy fails with
// the diff, and what mutatis cannot read is bad input naming the field.
func TestKaptestSuites(t *testing.T) {
	rep, out := runText(t, Options{}, "testdata/kaptest/label-policy.test")
	if passed, failed, _, bad := rep.Counts(); passed != 3 || failed+bad != 0 {
		t.Errorf("passed %d, failed %d, bad %d; want 3, 0, 0:\n%s", passed, failed, bad, out)
	}
	if !strings.Contains(out, "ok   label-policy\ttestdata/kaptest/label-policy.test/kaptest.yaml\t3 cases\n") {
		t.Errorf("output:\n%s", out)
	}
	dir := t.TempDir()
	copyTree(t, "testdata/kaptest/label-policy.test", filepath.Join(dir, "label-policy.test"))
	data, err := os.ReadFile("testdata/kaptest/label-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "label-policy.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	test := filepath.Join(dir, "label-policy.test", "kaptest.yaml")
	edit(t, filepath.Join(dir, "label-policy.test", "resources.yaml"), "labels: {owner: alice}", "labels: {owner: bob}")
	if _, out := runText(t, Options{}, dir); !strings.Contains(out, "-    owner: bob\n    +    owner: alice\n") {
		t.Errorf("a wrong expectObject: output lacks the diff:\n%s", out)
	}
	edit(t, test, "expect: skip", "expect: deny")
	edit(t, test, "    userInfo:\n      name: alice\n", "    param:\n      name: settings\n")
	_, out = runText(t, Options{}, dir)
	for _, w := range []string{
		`kaptest.yaml: mapTestSuites[0].tests[0].param: params reach a MutatingAdmissionPolicy through a binding's paramRef`,
		`kaptest.yaml: mapTestSuites[0].tests[1].expect: Unsupported value: "deny": supported values: "mutate", "admit", "skip", "error"`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestKaptestVAPSuites: kaptest's vapTestSuites (testSuites in v0.1
// manifests) run as suites. kaptest's own example (vap-simple, copied
// unchanged) names the group "" for deployments, which kube-apiserver
// never matches: its deny and error tests fail with kube-apiserver's
// answer. A v0.2 manifest (version, a suite's binding, deniedMessage, a
// DELETE, skipSchemaValidation) passes, and a wrong deniedMessage fails
// naming the message.
func TestKaptestVAPSuites(t *testing.T) {
	rep, out := runText(t, Options{}, "testdata/kaptest/vap-simple", "testdata/kaptest/vap-v0.2")
	if passed, failed, _, bad := rep.Counts(); passed != 5 || failed != 2 || bad != 0 {
		t.Errorf("passed %d, failed %d, bad %d; want 5, 2, 0:\n%s", passed, failed, bad, out)
	}
	for _, w := range []string{
		"--- FAIL: simple-policy/simple-policy #2 deny bad-deployment", "--- FAIL: simple-policy/error-policy #1 error good-deployment", "    denied: the request was admitted\n",
		"ok   replicas\ttestdata/kaptest/vap-v0.2/replicas.test/kaptest.yaml\t4 cases\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	dir := t.TempDir()
	copyTree(t, "testdata/kaptest/vap-v0.2", dir)
	test := filepath.Join(dir, "replicas.test", "kaptest.yaml")
	edit(t, test, "deniedMessage: replicas 6 exceed 5", "deniedMessage: replicas 6 exceed 4")
	_, out = runText(t, Options{}, dir)
	if w := `denied.message: the denial message does not contain "ValidatingAdmissionPolicy 'replicas' with binding 'replicas-deny' denied request: replicas 6 exceed 4":` + "\n    deployments.apps \"large\" is forbidden: ValidatingAdmissionPolicy 'replicas' with binding 'replicas-deny' denied request: replicas 6 exceed 5"; !strings.Contains(out, w) {
		t.Errorf("output lacks %q:\n%s", w, out)
	}
	edit(t, test, "version: v1alpha1", "version: v2")
	edit(t, test, "expect: skip", "expect: mutate")
	_, out = runText(t, Options{}, dir)
	for _, w := range []string{`kaptest.yaml: version: Unsupported value: "v2": supported values: "v1alpha1"`, `kaptest.yaml: vapTestSuites[0].tests[2].expect: Unsupported value: "mutate": supported values: "admit", "deny", "skip", "error"`} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}
