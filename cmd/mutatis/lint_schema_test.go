package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of testdata/*/golden")

// checkGolden compares out with the golden file (-update rewrites it).
func checkGolden(t *testing.T, golden, out string) {
	t.Helper()
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("output differs from %s (-update to rewrite):\n%s", golden, out)
	}
}

// The schema-aware findings in each output form, against golden files
// (go test -run TestLintSchemaGolden -update rewrites them).
func TestLintSchemaGolden(t *testing.T) {
	const docs = "../../lint/testdata/corpus/k8s-docs-applyconfiguration.yaml"
	cases := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"text", []string{"lint", "--no-cost", docs}, exitProblem},
		{"json", []string{"lint", "-o", "json", docs}, exitProblem},
		{"sarif", []string{"lint", "-o", "sarif", docs}, exitProblem},
		{"text-warnings", []string{"lint", "--no-cost", "../../lint/testdata/corpus/k8s-docs-json-patch.yaml"}, exitOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", c.args...)
			if code != c.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.wantCode, out, errOut)
			}
			checkGolden(t, filepath.Join("testdata", "lint", "golden", c.name+".golden"), out)
		})
	}
}

func TestLintSARIFIsSARIF210(t *testing.T) {
	_, out, _ := runCLI(t, "", "lint", "-o", "sarif", "../../lint/testdata/corpus/k8s-docs-json-patch.yaml")
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				Level     string `json:"level"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine   int `json:"startLine"`
							StartColumn int `json:"startColumn"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || log.Runs[0].Tool.Driver.Name != "mutatis" {
		t.Fatalf("not a SARIF 2.1.0 log of mutatis:\n%s", out)
	}
	rules := map[string]bool{}
	for _, r := range log.Runs[0].Tool.Driver.Rules {
		rules[r.ID] = true
	}
	if len(log.Runs[0].Results) != 3 {
		t.Fatalf("%d results, want 3 (binding, read-unguarded-optional, jsonpatch-missing-parent):\n%s", len(log.Runs[0].Results), out)
	}
	for _, r := range log.Runs[0].Results {
		if !rules[r.RuleID] {
			t.Errorf("result of rule %q the driver does not list", r.RuleID)
		}
		if r.Level != "warning" {
			t.Errorf("rule %q: level %q, want warning", r.RuleID, r.Level)
		}
		loc := r.Locations[0].PhysicalLocation
		if !strings.HasSuffix(loc.ArtifactLocation.URI, "k8s-docs-json-patch.yaml") || loc.Region.StartLine == 0 || loc.Region.StartColumn == 0 {
			t.Errorf("rule %q: location %+v", r.RuleID, loc)
		}
	}
}

func TestLintStrictAndResources(t *testing.T) {
	const warnOnly = "../../lint/testdata/corpus/k8s-docs-json-patch.yaml"
	code, out, errOut := runCLI(t, "", "lint", "--no-cost", warnOnly)
	checkCLI(t, code, out, errOut, exitOK, []string{"0 problems, 3 warnings"}, nil)
	code, out, errOut = runCLI(t, "", "lint", "--no-cost", "--strict", warnOnly)
	checkCLI(t, code, out, errOut, exitProblem, []string{"0 problems, 3 warnings"}, nil)
	code, out, errOut = runCLI(t, "", "lint", "-o", "json", "--strict", warnOnly)
	checkCLI(t, code, out, errOut, exitProblem, []string{`"warnings": 3`}, nil)

	// The policy of set-param-kind.yaml names a paramKind no CRD serves:
	// only the cluster's objects can tell.
	const paramKind = "../../lint/testdata/corpus/set-param-kind.yaml"
	code, out, errOut = runCLI(t, "", "lint", "--no-cost", paramKind)
	checkCLI(t, code, out, errOut, exitOK, nil, []string{"no built-in resource or CustomResourceDefinition"})
	code, out, errOut = runCLI(t, "", "lint", "--no-cost", "--resources", "../../lint/testdata/corpus/set-param-scope-ok.yaml", paramKind)
	checkCLI(t, code, out, errOut, exitOK, []string{`spec.paramKind: no built-in resource or CustomResourceDefinition among the files serves mutations.example.com/v1, Kind=Sidecar`}, nil)
	// With the CRD among the resources, the warning goes.
	code, out, errOut = runCLI(t, "", "lint", "--no-cost", "--resources", "../../lint/testdata/corpus/k8s-docs-json-patch.yaml", paramKind)
	checkCLI(t, code, out, errOut, exitOK, nil, []string{"no built-in resource or CustomResourceDefinition"})

	code, out, errOut = runCLI(t, "", "lint", "-o", "yaml", paramKind)
	checkCLI(t, code, out, errOut, exitUsage, []string{`--output must be text, json or sarif, not "yaml"`}, nil)
}
