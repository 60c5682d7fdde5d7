package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"testing"
)

// TestMain runs the test binary as mutatis itself when asked
// (MUTATIS_TEST_AS_MAIN), so that a test can start a process whose first
// argument is a command: the one in which internal/warmstart's warm-ups run
// during initialisation.
func TestMain(m *testing.M) {
	if os.Getenv("MUTATIS_TEST_AS_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// durations are the run times a report prints, which differ run to run.
var durations = regexp.MustCompile(`\(\d+(\.\d+)?m?s\)|\d+(\.\d+)?m?s\b`)

// TestWarmStartChangesNothing: a process that warms up (compiler.Warm,
// cel-go's parser tables, scheme.Warm, started during initialisation and
// at main) prints and exits exactly as this test process, which starts
// none of them, does.
func TestWarmStartChangesNothing(t *testing.T) {
	for _, args := range [][]string{
		{"apply", "-f", "testdata/apply/pod-with-debug.yaml", "--policies", "testdata/apply/strip-debug.yaml"},
		{"apply", "-f", "testdata/apply/pod-with-debug.yaml", "--policies", "../../lint/testdata/corpus/k8s-docs-applyconfiguration.yaml"},
		{"apply", "-f", "testdata/apply/pod-priority-overflow.yaml", "--policies", "../../examples", "--explain"},
		{"apply", "-f", "testdata/apply/pod.yaml", "--policies", "testdata/apply/invalid-variable.yaml"},
		{"test", "../../policytest/testdata/auto-bindings"},
		{"test", "testdata/testlint"},
		{"lint", "../../lint/testdata/corpus/k8s-docs-applyconfiguration.yaml"},
	} {
		t.Run(args[0]+" "+args[len(args)-1], func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", args...)
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), "MUTATIS_TEST_AS_MAIN=1")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			warmCode := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				warmCode = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if warmCode != code {
				t.Errorf("exit %d with the warm-ups, %d without", warmCode, code)
			}
			if got, want := durations.ReplaceAllString(out.String(), "D"), durations.ReplaceAllString(stdout, "D"); got != want {
				t.Errorf("stdout with the warm-ups:\n%s\nwithout:\n%s", got, want)
			}
			if got, want := durations.ReplaceAllString(errb.String(), "D"), durations.ReplaceAllString(stderr, "D"); got != want {
				t.Errorf("stderr with the warm-ups:\n%s\nwithout:\n%s", got, want)
			}
		})
	}
}
