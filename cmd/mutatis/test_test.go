package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTestCommand(t *testing.T) {
	const td = "../../policytest/testdata/"
	cases := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
		reject   []string
	}{
		{name: "the example suites pass", args: []string{"test", "../../examples"}, wantCode: exitOK,
			want: []string{"ok   sidecar-injection\t", "PASS: 41 cases in 7 suites"}},
		{name: "a failing case exits 1 with the diff and the trace", args: []string{"test", td + "broken"}, wantCode: exitProblem,
			want:   []string{"--- FAIL: broken-sidecar/the sidecar is injected", "    -  - image: registry.example.com/log-shipper:1.4.2\n    +  - image: registry.example.com/log-shipper:1.5.0\n", "    explain: pass 1:"},
			reject: []string{"\x1b["}},
		{name: "--color colors the diff", args: []string{"test", td + "broken", "--color"}, wantCode: exitProblem,
			want: []string{"    \x1b[31m-  - image: registry.example.com/log-shipper:1.4.2\x1b[0m\n", "\x1b[32m"}},
		{name: "--color=always colors the diff", args: []string{"test", td + "broken", "--color=always"}, wantCode: exitProblem,
			want: []string{"\x1b[32m"}},
		{name: "--color=never does not", args: []string{"test", td + "broken", "--color=never"}, wantCode: exitProblem,
			want: []string{"--- FAIL: broken-sidecar/the sidecar is injected"}, reject: []string{"\x1b["}},
		{name: "--color takes auto, always or never", args: []string{"test", td + "broken", "--color=sometimes"}, wantCode: exitUsage,
			want: []string{`must be auto, always or never, not "sometimes"`}},
		{name: "an invalid suite exits 2 naming file and field", args: []string{"test", td + "invalid"}, wantCode: exitUsage,
			want: []string{td + `invalid/invalid.mutatis-test.yaml: cases[1].operation: Unsupported value: "PATCH"`}},
		{name: "a missing path exits 2", args: []string{"test", "nope"}, wantCode: exitUsage, want: []string{"nope"}},
		{name: "a bad --run exits 2", args: []string{"test", "--run", "(", "../../examples"}, wantCode: exitUsage, want: []string{"--run"}},
		{name: "a bad seed exits 2", args: []string{"test", "--shuffle=x", "../../examples"}, wantCode: exitUsage, want: []string{"--shuffle"}},
		{name: "--run selects cases", args: []string{"test", "-v", "--run", "^image-registry-rewrite/.*kube-system", "../../examples"}, wantCode: exitOK,
			want:   []string{"--- PASS: image-registry-rewrite/pods in kube-system are left alone by the binding", "PASS: 1 cases in 1 suites"},
			reject: []string{"sidecar-injection"}},
		{name: "--run selecting only passing cases of a broken suite", args: []string{"test", "--run", "unlabelled", td + "broken"}, wantCode: exitOK},
		{name: "--shuffle=SEED finds order dependence", args: []string{"test", "--shuffle=3", td + "order"}, wantCode: exitProblem,
			want: []string{"the result depends on the order of the policies (--shuffle=3)", "in the order tier-b, tier-a", "shuffle seed: 3"}},
		{name: "--shuffle without a seed picks one and prints it", args: []string{"test", "--shuffle", td + "order"}, wantCode: exitProblem,
			want: []string{"shuffle seed: "}},
		{name: "--idempotence names the policy", args: []string{"test", "--idempotence", td + "idempotence"}, wantCode: exitProblem,
			want: []string{`idempotence: policy "append-trace-env" binding "append-trace-env" changes the final object again`}, reject: []string{`idempotence: policy "default-pull-policy"`}},
		{name: "no suite under the paths exits 1 naming them", args: []string{"test", "testdata/apply", "testdata/lint"}, wantCode: exitProblem,
			want:   []string{"no test suites (*.mutatis-test.yaml or *.mutatis-test.yml files) found under testdata/apply, testdata/lint"},
			reject: []string{"PASS"}},
		{name: "an ignored error is a warning of its case", args: []string{"test", "--run", "unexpected", td + "ignored"}, wantCode: exitOK,
			want: []string{"--- PASS: ignored/an unexpected ignored error", `    warning: policy "team-label" binding "team-label" mutation 0: error ignored by failurePolicy Ignore: expression`}},
		{name: "--strict fails a case with an ignored error it does not name", args: []string{"test", "--strict", "--run", "unexpected", td + "ignored"}, wantCode: exitProblem,
			want: []string{"--- FAIL: ignored/an unexpected ignored error", `ignoredErrors: unexpected policy "team-label" binding "team-label" mutation 0: error ignored by failurePolicy Ignore:`}},
		{name: "--policies gives the policies of suites that name none", args: []string{"test", "--policies", td + "idempotence/policies.yaml", td + "no-policies"}, wantCode: exitOK,
			want: []string{"ok   no-policies\t", "PASS: 1 cases in 1 suites"}},
		{name: "a suite naming no policies without --policies exits 2", args: []string{"test", td + "no-policies"}, wantCode: exitUsage,
			want: []string{"no-policies.mutatis-test.yaml: policies: Required value: at least one file or directory of policies (or mutatis test --policies)"}},
		{name: "a missing --policies path names the flag", args: []string{"test", "--policies", "nope.yaml", td + "no-policies"}, wantCode: exitUsage,
			want: []string{`no-policies.mutatis-test.yaml: --policies[0]: Invalid value: "nope.yaml"`}},
		{name: "--idempotence with reinvocationPolicy Never says which requests run the policy again", args: []string{"test", "--idempotence", td + "idempotence"}, wantCode: exitProblem,
			want: []string{"with reinvocationPolicy Never kube-apiserver does not reinvoke it within the request"}},
		{name: "a case switches the idempotence check off", args: []string{"test", "--idempotence", "--run", "switched off", td + "idempotence-switch"}, wantCode: exitOK},
		{name: "a suite switches the idempotence check on", args: []string{"test", td + "idempotence-switch"}, wantCode: exitProblem,
			want: []string{"--- FAIL: idempotence-switch/checked by the suite's default"}, reject: []string{"switched off for this case"}},
		{name: "bindings: auto", args: []string{"test", td + "auto-bindings"}, wantCode: exitOK},
		{name: "an unknown suite field suggests the closest", args: []string{"test", "testdata/test/typo.mutatis-test.yaml"}, wantCode: exitUsage,
			want:   []string{`typo.mutatis-test.yaml: cases[0].expect.objectContain: unknown field; did you mean "objectContains"?`},
			reject: []string{"<nil>", "null"}},
		{name: "-o test2json writes go test -json events", args: []string{"test", "-o", "test2json", td + "broken"}, wantCode: exitProblem,
			want: []string{`"Action":"start","Package":"broken-sidecar"}`, `"Action":"run","Package":"broken-sidecar","Test":"the sidecar is injected"}`,
				`"Action":"fail","Package":"broken-sidecar","Test":"the sidecar is injected","Elapsed":`, `"Action":"pass","Package":"broken-sidecar","Test":"an unlabelled pod is left alone","Elapsed":`,
				`"Action":"output","Package":"broken-sidecar","Output":"FAIL\tbroken-sidecar\t`, `"Action":"fail","Package":"broken-sidecar","Elapsed":`},
			reject: []string{"cases failed in", "cases in 1 suites"}},
		{name: "kat's tests directories are suites; kube-apiserver refuses kat's example policies", args: []string{"test", td + "kat/add-default-labels"}, wantCode: exitUsage,
			want: []string{"BAD  " + td + "kat/add-default-labels/tests\n", `MutatingAdmissionPolicy "add-default-labels": spec.reinvocationPolicy: Required value`}},
		{name: "the examples are order-independent and idempotent", args: []string{"test", "--shuffle=99", "--idempotence", "../../examples"}, wantCode: exitOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			checkCLI(t, code, out, errOut, tc.wantCode, tc.want, tc.reject)
		})
	}
}

// The JUnit schema Jenkins and Ant read, decoded independently of the
// writer's types; pointers tell missing attributes from zero ones.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    *int         `xml:"tests,attr"`
	Failures *int         `xml:"failures,attr"`
	Errors   *int         `xml:"errors,attr"`
	Time     *string      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     *string     `xml:"name,attr"`
	Tests    *int        `xml:"tests,attr"`
	Failures *int        `xml:"failures,attr"`
	Errors   *int        `xml:"errors,attr"`
	Skipped  *int        `xml:"skipped,attr"`
	Time     *string     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      *string `xml:"name,attr"`
	Classname *string `xml:"classname,attr"`
	Time      *string `xml:"time,attr"`
	Failure   *struct {
		Message *string `xml:"message,attr"`
		Text    string  `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message *string `xml:"message,attr"`
		Text    string  `xml:",chardata"`
	} `xml:"error"`
}

func TestTestJUnitOutputValidates(t *testing.T) {
	const td = "../../policytest/testdata/"
	code, out, errOut := runCLI(t, "", "test", "-o", "junit", "--shuffle=5", td+"broken", td+"order", td+"invalid")
	if code != exitUsage {
		t.Fatalf("exit %d, want 2 (one suite is invalid)\n%s%s", code, out, errOut)
	}
	if !strings.HasPrefix(out, xml.Header) {
		t.Errorf("no XML header:\n%s", out)
	}
	var doc junitSuites
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.Tests == nil || doc.Failures == nil || doc.Errors == nil || doc.Time == nil {
		t.Fatalf("testsuites lacks tests, failures, errors or time: %s", out)
	}
	want := map[string]struct{ tests, failures, errors int }{
		"broken-sidecar": {2, 1, 0}, "order": {2, 1, 0}, td + "invalid/invalid.mutatis-test.yaml": {1, 0, 1},
	}
	sumTests, sumFailures, sumErrors := 0, 0, 0
	for _, s := range doc.Suites {
		if s.Name == nil || s.Tests == nil || s.Failures == nil || s.Errors == nil || s.Skipped == nil || s.Time == nil {
			t.Fatalf("a testsuite lacks a required attribute: %+v", s)
		}
		w, ok := want[*s.Name]
		if !ok {
			t.Errorf("unexpected suite %q", *s.Name)
			continue
		}
		delete(want, *s.Name)
		if *s.Tests != w.tests || *s.Failures != w.failures || *s.Errors != w.errors || len(s.Cases) != w.tests {
			t.Errorf("suite %s: tests %d failures %d errors %d cases %d, want %+v", *s.Name, *s.Tests, *s.Failures, *s.Errors, len(s.Cases), w)
		}
		failures, errors := 0, 0
		for _, c := range s.Cases {
			if c.Name == nil || c.Classname == nil || c.Time == nil {
				t.Errorf("a testcase of %s lacks name, classname or time", *s.Name)
				continue
			}
			if *c.Classname != *s.Name {
				t.Errorf("classname %q, want the suite name %q", *c.Classname, *s.Name)
			}
			if c.Failure != nil {
				failures++
				if c.Failure.Message == nil || *c.Failure.Message == "" || !strings.Contains(c.Failure.Text, "explain: ") {
					t.Errorf("failure of %s without message or trace: %+v", *c.Name, c.Failure)
				}
			}
			if c.Error != nil {
				errors++
				if !strings.Contains(c.Error.Text, "cases[1].operation") {
					t.Errorf("error of %s does not name the field: %s", *c.Name, c.Error.Text)
				}
			}
		}
		if failures != *s.Failures || errors != *s.Errors {
			t.Errorf("suite %s counts %d failures, %d errors but has %d, %d", *s.Name, *s.Failures, *s.Errors, failures, errors)
		}
		sumTests += *s.Tests
		sumFailures += *s.Failures
		sumErrors += *s.Errors
	}
	if len(want) > 0 {
		t.Errorf("missing suites %v", want)
	}
	if *doc.Tests != sumTests || *doc.Failures != sumFailures || *doc.Errors != sumErrors {
		t.Errorf("testsuites counts %d/%d/%d, suites sum to %d/%d/%d", *doc.Tests, *doc.Failures, *doc.Errors, sumTests, sumFailures, sumErrors)
	}
}

func TestTestJSONOutput(t *testing.T) {
	code, out, errOut := runCLI(t, "", "test", "-o", "json", "--run", "^order/", "../../policytest/testdata/order", "../../policytest/testdata/broken")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var doc struct {
		Passed, Failed, Errored int
		Suites                  []struct {
			Name  string
			Cases []struct{ Name, Status string }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.Passed != 2 || doc.Failed != 0 || len(doc.Suites) != 1 || doc.Suites[0].Name != "order" || len(doc.Suites[0].Cases) != 2 || doc.Suites[0].Cases[0].Status != "pass" {
		t.Errorf("unexpected report: %+v\n%s", doc, out)
	}
}

func TestTestCoverage(t *testing.T) {
	html := filepath.Join(t.TempDir(), "coverage.html")
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string
	}{
		{name: "the examples reach 90% and more", args: []string{"test", "../../examples", "--coverage-min", "90", "--coverage-html", html}, wantStdout: []string{
			"TOTAL                           7/7        7/7       6/6              1/1        42/46     94.0%",
			"coverage report written to " + html,
		}},
		{name: "a minimum above the coverage fails", args: []string{"test", "../../examples", "--coverage-min", "99"}, wantCode: 1, wantStdout: []string{"FAIL: coverage 94.0% is below --coverage-min 99%"}},
		// ValidatingAdmissionPolicies: a table of their own, counted in
		// the total --coverage-min reads.
		{name: "ValidatingAdmissionPolicies", args: []string{"test", "testdata/test/vap-coverage", "--coverage-min", "90"}, wantCode: 1, wantStdout: []string{
			"VALIDATINGPOLICY  VALIDATIONS  MESSAGES  AUDITANNOTATIONS  BINDINGS  MATCHCONDITIONS  VARIABLES  TOTAL",
			"max-replicas      3/4          1/1       1/1               1/2       1/2              1/2        66.7%",
			"FAIL: coverage 66.7% is below --coverage-min 90%",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.wantCode, stdout, stderr)
			}
			for _, want := range tc.wantStdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
		})
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), "rewrite-docker-hub-images") {
		t.Errorf("HTML report: %v", err)
	}
}
