package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestInit: the suites init scaffolds for the examples' policies run,
// and pass where the policy needs nothing but its object (a policy that
// takes params fails until they are given, as its comment says); stdout
// against a golden file (-update rewrites it); bad input exits 2.
func TestTestInit(t *testing.T) {
	dir := t.TempDir()
	for _, ex := range []string{"image-registry-rewrite", "namespace-labels", "security-context-defaults", "sidecar-injection", "default-resources"} {
		suite := filepath.Join(dir, ex+".mutatis-test.yaml")
		code, _, stderr := runCLI(t, "", "test", "init", "../../examples/"+ex+"/policy.yaml", "--write", suite)
		checkCLI(t, code, "", stderr, exitOK, []string{"wrote " + suite}, nil)
		code, out, stderr := runCLI(t, "", "test", suite)
		if ex == "default-resources" {
			checkCLI(t, code, out, stderr, exitProblem, []string{"did not apply", "no params found (parameterNotFoundAction Allow)"}, nil)
			continue
		}
		checkCLI(t, code, out, stderr, exitOK, []string{"ok   " + ex + "\t", "1 cases"}, nil)
	}

	code, out, stderr := runCLI(t, "", "test", "init", "--name", "sidecar", "../../examples/sidecar-injection/policy.yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkGolden(t, filepath.Join("testdata", "test", "init-sidecar.golden"), out)

	existing := filepath.Join(dir, "image-registry-rewrite.mutatis-test.yaml")
	before, _ := os.ReadFile(existing)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no policies", []string{"test", "init"}, "give the policies"},
		{"a file without policies", []string{"test", "init", "testdata/apply/pod.yaml"}, "no MutatingAdmissionPolicy or ValidatingAdmissionPolicy in testdata/apply/pod.yaml"},
		{"an invalid policy", []string{"test", "init", "testdata/apply/invalid-variable.yaml"}, `MutatingAdmissionPolicy "badvar": spec.variables[0].expression`},
		{"an existing file", []string{"test", "init", "../../examples/image-registry-rewrite/policy.yaml", "--write", existing}, "file exists"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, stderr := runCLI(t, "", c.args...)
			checkCLI(t, code, out, stderr, exitUsage, []string{c.want}, nil)
		})
	}
	if after, _ := os.ReadFile(existing); string(after) != string(before) {
		t.Error("init overwrote an existing file")
	}
}

// TestTestUpdate: --update writes the actual results into the failing
// case of a copy of the broken suite, says so on stderr, and the run
// that follows passes; the suite's comments stay.
func TestTestUpdate(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"broken.mutatis-test.yaml", "policy.yaml"} {
		data, err := os.ReadFile(filepath.Join("../../policytest/testdata/broken", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	suite := filepath.Join(dir, "broken.mutatis-test.yaml")
	before, _ := os.ReadFile(suite)
	code, out, stderr := runCLI(t, "", "test", "--update", dir)
	checkCLI(t, code, out, stderr, exitOK, []string{"updated " + suite + ": broken-sidecar/the sidecar is injected (objectContains)\n", "PASS: 2 cases in 1 suites"}, nil)
	after, _ := os.ReadFile(suite)
	if string(after) == string(before) || !strings.Contains(string(after), "log-shipper:1.5.0") {
		t.Errorf("the suite was not updated:\n%s", after)
	}
	for _, line := range strings.Split(string(before), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") && !strings.Contains(string(after), line) {
			t.Errorf("the comment %q was lost", line)
		}
	}
	code, out, stderr = runCLI(t, "", "test", "--update", dir)
	checkCLI(t, code, out, stderr, exitOK, nil, []string{"updated"})
}

// TestTestConvert: the PolicyTest that convert writes for a Kyverno CLI
// test file, kaptest manifests (of MAPs and of VAPs) and kat directories
// (of MAPs and of VAPs: a DELETE, params) runs as the original does (kat's example policy lacks the reinvocationPolicy kube-apiserver
// requires, in both forms).
func TestTestConvert(t *testing.T) {
	const td = "../../policytest/testdata/"
	dir := t.TempDir()
	for _, c := range []struct {
		src, name string
		code      int
		want      string
	}{
		{td + "kyverno/specify-namespace-selector/kyverno-test.yaml", "kyverno", exitOK, "ok   specify-namespace-selector\t"},
		{td + "kaptest/label-policy.test/kaptest.yaml", "kaptest", exitOK, "ok   label-policy\t"},
		{td + "kat/add-default-labels/tests", "kat", exitUsage, "spec.reinvocationPolicy: Required value"},
		{td + "kat/validating/delete-protection/tests", "kat-delete", exitOK, "ok   delete-protection\t"},
		{td + "kat/validating/replica-limit-with-params/tests", "kat-params", exitProblem, "--- FAIL: replica-limit-with-params/replica-limit-params.no-params.deny"},
		{td + "kaptest/vap-v0.2/replicas.test/kaptest.yaml", "kaptest-vap", exitOK, "ok   replicas\t"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, orig, _ := runCLI(t, "", "test", c.src)
			suite := filepath.Join(dir, c.name+".mutatis-test.yaml")
			code2, out, stderr := runCLI(t, "", "test", "convert", c.src, "--write", suite)
			checkCLI(t, code2, out, stderr, exitOK, []string{"wrote " + suite}, nil)
			code2, out, stderr = runCLI(t, "", "test", suite)
			checkCLI(t, code2, out, stderr, c.code, []string{c.want}, nil)
			if code != code2 || strings.Count(orig, "--- FAIL") != strings.Count(out, "--- FAIL") {
				t.Errorf("the original exits %d, the converted suite %d:\n%s\n%s", code, code2, orig, out)
			}
		})
	}
	code, out, stderr := runCLI(t, "", "test", "convert", "testdata/apply")
	checkCLI(t, code, out, stderr, exitUsage, []string{"testdata/apply: a directory, and not kat's tests/ directory"}, nil)
}
