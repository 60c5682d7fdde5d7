package main

import (
	"strings"
	"testing"
)

// TestTestLintWarnings: mutatis test prints the lint findings of its suites'
// policies as apply does, keeps its exit status, and fails with --strict.
func TestTestLintWarnings(t *testing.T) {
	const warning = `warning: lint warning: testdata/testlint/policy.yaml#0 (line 18:19): MutatingAdmissionPolicy "unguarded-init": spec.mutations[0].applyConfiguration.expression: object.spec.initContainers is optional in the schema of v1 Pod and often absent`
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		want     []string
		reject   []string
	}{
		{name: "warning printed, run passes", args: []string{"test", "testdata/testlint"}, want: []string{warning, "PASS: 1 cases"}},
		{name: "--strict fails on the warning", args: []string{"test", "--strict", "testdata/testlint"}, wantCode: exitProblem, want: []string{warning, "PASS: 1 cases"}},
		{name: "json output keeps stdout clean", args: []string{"test", "-o", "json", "testdata/testlint"}, want: []string{warning}},
		{name: "the examples lint clean", args: []string{"test", "--strict", "../../examples"}, reject: []string{"warning: lint"}},
		{name: "a suite none of whose cases --run selects is not checked", args: []string{"test", "--run", "^nothing$", "testdata/testlint"}, want: []string{"PASS: 0 cases"}, reject: []string{"warning: lint"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			checkCLI(t, code, out, errOut, tc.wantCode, tc.want, tc.reject)
			if strings.Contains(out, "warning: lint") {
				t.Errorf("lint warnings went to stdout:\n%s", out)
			}
		})
	}
}
