package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mutatis-dev/mutatis/costs"
)

// TestCostBounds crosses each bound kube-apiserver enforces with the size
// of spec.containers (every expression of bounds.yaml is quadratic in it):
// the per-call limit (1,000,000), the mutation budget (10,000,000: a
// mutation and the 11 variables it uses, each under the per-call limit)
// and the matchConditions budget (2,500,000: 3 conditions, each under it).
func TestCostBounds(t *testing.T) {
	type want struct{ perCall, mutation, matchConditions string }
	cases := []struct {
		containers string
		wantCode   int
		want       want
	}{
		{"175", exitOK, want{costs.StatusOK, costs.StatusOK, costs.StatusOK}},
		{"176", exitProblem, want{costs.StatusOK, costs.StatusOK, costs.StatusOverLimit}},
		{"184", exitProblem, want{costs.StatusOK, costs.StatusOverLimit, costs.StatusOverLimit}},
		{"192", exitProblem, want{costs.StatusOK, costs.StatusOverLimit, costs.StatusOverLimit}},
		{"193", exitProblem, want{costs.StatusOverLimit, costs.StatusOverLimit, costs.StatusOverLimit}},
	}
	for _, tc := range cases {
		t.Run(tc.containers, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", "cost", "-o", "json", "--assume", "spec.containers="+tc.containers, "testdata/cost/bounds.yaml")
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s", code, tc.wantCode, errOut)
			}
			var r costs.Report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			got := want{
				perCall:         r.Policies[0].Expressions[0].Status,
				mutation:        r.Policies[1].Budgets[0].Status,
				matchConditions: r.Policies[2].Budgets[1].Status,
			}
			if got != tc.want {
				t.Errorf("statuses %+v, want %+v", got, tc.want)
			}
			// The budgets sum expressions that are each within the
			// per-call limit, up to 192 containers.
			for _, e := range r.Policies[1].Expressions {
				if tc.containers != "193" && e.Status != costs.StatusOK {
					t.Errorf("%s: %s", e.Path, e.Status)
				}
			}
		})
	}
}

// TestCostGolden compares the text and JSON reports with golden files
// (go test -run TestCostGolden -update rewrites them): the examples pass
// with the default profile, and a policy quadratic in the number of
// containers is flagged, and measured.
func TestCostGolden(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"examples", []string{"cost", "../../examples"}, exitOK},
		{"quadratic", []string{"cost", "testdata/cost/quadratic.yaml"}, exitOK},
		{"quadratic-json", []string{"cost", "-o", "json", "testdata/cost/quadratic.yaml"}, exitOK},
		{"quadratic-measure", []string{"cost", "--measure", "testdata/cost/pod.yaml", "testdata/cost/quadratic.yaml"}, exitOK},
		{"quadratic-over", []string{"cost", "--assume", "spec.containers=200", "testdata/cost/quadratic.yaml"}, exitProblem},
		{"crd-gate-schema", []string{"cost", "--gate", "schema", "testdata/cost/policy.yaml", "--resources", "testdata/cost/crd-bounded.yaml"}, exitOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", c.args...)
			if code != c.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.wantCode, out, errOut)
			}
			checkGolden(t, filepath.Join("testdata", "cost", "golden", c.name+".golden"), out)
		})
	}
}

func TestCostFlags(t *testing.T) {
	dir := t.TempDir()
	profile := filepath.Join(dir, "profile.yaml")
	if err := os.WriteFile(profile, []byte("spec.containers: 192\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("spec.containers: [1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"a profile file sizes the profile", []string{"cost", "--profile", profile, "testdata/cost/bounds.yaml"}, exitProblem,
			[]string{"mutation-budget: spec.mutations[0]: worst case 10959323", "exceeds the budget 10000000"}},
		{"--assume comes after the profile file", []string{"cost", "--profile", profile, "--assume", "spec.containers=5", "testdata/cost/bounds.yaml"}, exitOK,
			[]string{"3 policies, 0 not within the limits"}},
		{"an over-limit expression at the profile is explained", []string{"cost", "--assume", "spec.containers=200", "testdata/cost/bounds.yaml"}, exitProblem,
			[]string{"object.spec.containers (used by all()) is sized 200 by the profile (spec.containers)", "suggestion: the cost is quadratic in object.spec.containers"}},
		{"a bad --assume", []string{"cost", "--assume", "spec.containers", "testdata/cost/bounds.yaml"}, exitUsage,
			[]string{`--assume "spec.containers": want PATH=N`}},
		{"a bad profile file", []string{"cost", "--profile", bad, "testdata/cost/bounds.yaml"}, exitUsage,
			[]string{"--profile: " + bad + ": spec.containers: want a whole number"}},
		{"a missing profile file", []string{"cost", "--profile", filepath.Join(dir, "nope.yaml"), "testdata/cost/bounds.yaml"}, exitUsage,
			[]string{"nope.yaml"}},
		{"an unknown gate", []string{"cost", "--gate", "cheap", "testdata/cost/bounds.yaml"}, exitUsage,
			[]string{`unknown --gate "cheap" (auto, schema, request, profile)`}},
		{"bad measure scales", []string{"cost", "--measure", "testdata/cost/pod.yaml", "--measure-scales", "4,2", "testdata/cost/quadratic.yaml"}, exitUsage,
			[]string{"--measure-scales [4 2]: want ascending"}},
		{"measure objects that do not exist", []string{"cost", "--measure", "testdata/cost/nope.yaml", "testdata/cost/quadratic.yaml"}, exitUsage,
			[]string{"nope.yaml"}},
		{"measure objects no binding matches", []string{"cost", "--measure", "testdata/cost/pod.yaml", "testdata/cost/builtin.yaml"}, exitOK,
			[]string{"--measure: no policy binding matched any object"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			checkCLI(t, code, out, errOut, tc.wantCode, tc.want, nil)
		})
	}
}
