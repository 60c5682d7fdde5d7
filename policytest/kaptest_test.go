package policytest

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestKaptestSuites runs a kaptest manifest of MutatingAdmissionPolicy
// tests (mapTestSuites) as a suite: mutate with expectObject, skip, and
// admit of an UPDATE from an old object; then a broken copy fails with
// the diff, and what mutatis cannot read is bad input naming the field.
func TestKaptestSuites(t *testing.T) {
	rep, out := runText(t, Options{}, "testdata/kaptest")
	if passed, failed, _, bad := rep.Counts(); passed != 3 || failed+bad != 0 {
		t.Errorf("passed %d, failed %d, bad %d; want 3, 0, 0:\n%s", passed, failed, bad, out)
	}
	if !strings.Contains(out, "ok   label-policy\ttestdata/kaptest/label-policy.test/kaptest.yaml\t3 cases\n") {
		t.Errorf("output:\n%s", out)
	}
	dir := t.TempDir()
	copyTree(t, "testdata/kaptest", dir)
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
