package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBench(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	report := filepath.Join(dir, "report.html")
	const td = "testdata/bench/"
	common := []string{"bench", "-f", td + "deployment.yaml", "--benchtime", "1ms", "--scale", "1,10"}

	// Save a baseline with the policy doing the work once.
	code, stdout, stderr := runCLI(t, "", append(common, "--policies", td+"policy-x1.yaml", "--save", base, "--report", report, "--chart")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"count-nginx/count-nginx", "spec.mutations[0].applyConfiguration.expression", "×10", "deployment.yaml (Deployment web)", "cost "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	page, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(page), "<svg") {
		t.Errorf("report: %v", err)
	}
	saved, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Kind         string
		Measurements []struct{ Scale int }
	}
	if err := json.Unmarshal(saved, &b); err != nil || b.Kind != "BenchResult" || len(b.Measurements) != 2 {
		t.Fatalf("baseline %s: %v", saved, err)
	}

	// The same baseline as if measured on a machine a thousand times faster:
	// any run here is far slower, whatever the load, on time alone.
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(saved))
	dec.UseNumber() // static costs are uint64
	if err := dec.Decode(&raw); err != nil {
		t.Fatal(err)
	}
	for _, m := range raw["measurements"].([]any) {
		m := m.(map[string]any)
		ns, err := m["nsPerOp"].(json.Number).Float64()
		if err != nil || ns <= 0 {
			t.Fatalf("nsPerOp %v: %v", m["nsPerOp"], err)
		}
		m["nsPerOp"] = ns / 1000
	}
	fast := filepath.Join(dir, "fast.json")
	if b, err := json.Marshal(raw); err != nil || os.WriteFile(fast, b, 0o600) != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, policy string
		extra        []string
		wantCode     int
		wantStderr   string
	}{
		{name: "a slower run fails on time", policy: "policy-x1.yaml", extra: []string{"--baseline", fast, "--metric", "time", "--max-regression", "100"}, wantCode: 1, wantStderr: "2 measurement(s) regressed by more than 100%"},
		{name: "a slower run passes on cost", policy: "policy-x1.yaml", extra: []string{"--baseline", fast, "--metric", "cost"}},
		{name: "a slower run passes by default: the gate is on cost", policy: "policy-x1.yaml", extra: []string{"--baseline", fast}},
		{name: "a slower run by less than --min-time-change passes on time", policy: "policy-x1.yaml", extra: []string{"--baseline", fast, "--metric", "time", "--max-regression", "100", "--min-time-change", "1h"}},
		{name: "the same policy passes against its baseline", policy: "policy-x1.yaml", extra: []string{"--metric", "cost"}},
		// Filtering twice: cost 137 → 164 at ×1 (+20%), 308 → 506 at ×10 (+64%).
		{name: "a policy twice as costly fails", policy: "policy-x2.yaml", extra: []string{"--metric", "cost", "--max-regression", "15"}, wantCode: 1, wantStderr: "2 measurement(s) regressed by more than 15%"},
		{name: "only the scale that regressed beyond the threshold is flagged", policy: "policy-x2.yaml", extra: []string{"--metric", "cost", "--max-regression", "50"}, wantCode: 1, wantStderr: "spec.mutations[0].applyConfiguration.expression|10: cost 308 → 506 cost units (+64.3%)\n1 measurement(s) regressed by more than 50%"},
		{name: "json output", policy: "policy-x1.yaml", extra: []string{"-o", "json", "--metric", "cost"}},
		{name: "bad metric", policy: "policy-x1.yaml", extra: []string{"--metric", "speed"}, wantCode: 2, wantStderr: `--metric must be cost, time or both, not "speed"`},
		{name: "missing baseline", policy: "policy-x1.yaml", extra: []string{"--baseline", filepath.Join(dir, "nope.json")}, wantCode: 2, wantStderr: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, common...), "--policies", td+tc.policy)
			if !strings.Contains(strings.Join(tc.extra, " "), "--baseline") {
				args = append(args, "--baseline", base)
			}
			code, _, stderr := runCLI(t, "", append(args, tc.extra...)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", code, tc.wantCode, stderr)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr %q lacks %q", stderr, tc.wantStderr)
			}
		})
	}
}

func TestBenchSuites(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "cases of a suite are the fixtures", args: []string{"--suite", "../../examples/sidecar-injection"},
			wantStdout: "inject-logging-sidecar/inject-logging-sidecar"},
		{name: "the ValidatingAdmissionPolicies of a suite are measured", args: []string{"--suite", "../../policytest/testdata/validating/validating.mutatis-test.yaml"},
			wantStdout: "memory-limits/memory-limits-strict"},
		{name: "a directory without suites is bad input", args: []string{"--suite", "testdata/bench"}, wantCode: 2, wantStderr: "--suite: no *.mutatis-test.yaml under testdata/bench"},
		{name: "neither suites nor fixtures", args: []string{"--policies", "testdata/bench/policy-x1.yaml"}, wantCode: 2, wantStderr: "give --policies and --filename, or --suite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append([]string{"bench", "--benchtime", "1ms"}, tc.args...)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", code, tc.wantCode, stderr)
			}
			if !strings.Contains(stdout, tc.wantStdout) || !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
		})
	}
}

// A ValidatingAdmissionPolicy's expressions are measured one by one, each
// named by its own field (the validations, messageExpressions and
// auditAnnotations beside the variables), the variables an expression
// evaluates charged to it as kube-apiserver charges them.
func TestBenchValidatingPolicies(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "bench", "-f", "testdata/bench/deployment.yaml", "--benchtime", "1ms", "--policies", "testdata/bench/vap.yaml", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Measurements []struct {
			Policy, Binding, Path, Kind string
			RuntimeCost                 int64
		}
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	got := map[string]int64{}
	for _, m := range out.Measurements {
		if m.Policy != "images-from-registry" || m.Binding != "images-from-registry" {
			t.Errorf("measurement %+v", m)
		}
		got[m.Kind+" "+m.Path] = m.RuntimeCost
	}
	variable := got["variable spec.variables[0].expression"]
	for _, k := range []string{"validation spec.validations[0].expression", "messageExpression spec.validations[0].messageExpression", "auditAnnotation spec.auditAnnotations[0].valueExpression"} {
		if got[k] <= variable {
			t.Errorf("%s: runtime cost %d, want more than the variable it evaluates (%d): %v", k, got[k], variable, got)
		}
	}
	if len(got) != 4 || variable == 0 {
		t.Errorf("measurements %v", got)
	}
}

// A suite's ValidatingAdmissionPolicies are measured on the object the
// validating stage sees: the case's Pod with the sidecar its
// MutatingAdmissionPolicy injects, which the messageExpression names (on
// the Pod as written it would fail: no container lacks a memory limit).
func TestBenchValidatingSuite(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "bench", "--benchtime", "1ms", "-o", "json", "--suite", "../../policytest/testdata/validating/validating.mutatis-test.yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Measurements []struct {
			Fixture, Policy, Path, Kind, Error string
			ObjectBytes                        int
		}
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range out.Measurements {
		if m.Kind != "messageExpression" || m.Policy != "memory-limits" {
			continue
		}
		n++
		if m.Error != "" || m.Path != "spec.validations[0].messageExpression" {
			t.Errorf("%s: %s %s: error %q", m.Fixture, m.Policy, m.Path, m.Error)
		}
	}
	if n == 0 {
		t.Errorf("no messageExpression measured:\n%s", stdout)
	}
}
