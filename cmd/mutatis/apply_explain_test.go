package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/test/webhookserver"
)

// traceTimes are the times of an --explain trace, which vary from run to
// run.
var traceTimes = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|µs|ms|s)\b`)

// TestApplyExplainValidating: apply --explain shows the validating stage
// after the registry's validation: the built-in plugins and their
// decision (PodSecurity's level), each ValidatingAdmissionPolicy binding
// and its decisions, the refusal and who refused, the audit annotations
// and warnings. Golden files (go test -run TestApplyExplainValidating
// -update rewrites them); times are DURATION.
func TestApplyExplainValidating(t *testing.T) {
	const vd, pd = "testdata/apply/validating/", "testdata/apply/podsecurity/"
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"vap-deny", []string{"-f", vd + "pod.yaml", "--policies", vd + "inject-sidecar.yaml," + vd + "require-limits.yaml," + vd + "warn-limits.yaml"}, exitProblem},
		{"vap-warn", []string{"-f", vd + "pod.yaml", "--policies", vd + "inject-sidecar.yaml," + vd + "warn-limits.yaml", "-o", "patch"}, 0},
		{"podsecurity-refused", []string{"-f", pd + "pod.yaml", "--policies", pd + "sidecar.yaml", "--resources", pd + "namespaces.yaml"}, exitProblem},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append([]string{"apply", "--explain"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, stderr)
			}
			stderr = traceTimes.ReplaceAllString(stderr, "DURATION")
			checkGolden(t, vd+"golden/explain-"+tc.name+".golden", fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", code, stdout, stderr))
		})
	}
}

// TestApplyWarningsOnce: kube-apiserver returns each warning text once
// per request, whichever stages recorded it (its warning recorder), and
// apply prints them so: a mutating and a validating webhook giving the
// same warnings print them once, in the mutating chain's place (the
// trace of --explain shows the validating stage's own).
func TestApplyWarningsOnce(t *testing.T) {
	srv, err := webhookserver.Start(t.TempDir(), "hooks.example.com")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	client := fmt.Sprintf("{url: %q, caBundle: %s}", srv.URL+webhookserver.PathWarn, base64.StdEncoding.EncodeToString(srv.CABundle))
	hooks := filepath.Join(t.TempDir(), "hooks.yaml")
	text := webhookConfig("warns", "warns.example.com", client, "") + "---\n" + validatingConfig("checks", "checks.example.com", client, "")
	if err := os.WriteFile(hooks, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	const vd = "testdata/apply/validating/"
	code, _, stderr := runCLI(t, "", "apply", "-f", vd+"pod.yaml", "--policies", vd+"inject-sidecar.yaml", "--webhooks", hooks, "-o", "patch", "--explain")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	// Both stages recorded them.
	for _, w := range []string{`explain: pass 1: webhook "warns.example.com" of "warns": called`, `explain: validating webhook "checks.example.com" of "checks": called`,
		"explain: validating: warning: first warning\n", "explain: validating: warning: second warning\n",
		"explain: audit annotation warns.example.com/decision: allowed\n", "explain: validating: audit annotation checks.example.com/decision: allowed\n"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("no %q:\n%s", w, stderr)
		}
	}
	for _, w := range []string{"Warning: first warning\n", "Warning: second warning\n"} {
		if n := strings.Count(stderr, w); n != 1 {
			t.Errorf("%q printed %d times, want once:\n%s", w, n, stderr)
		}
	}
	if i, j := strings.Index(stderr, "Warning: first warning"), strings.Index(stderr, "Warning: second warning"); i > j {
		t.Errorf("warnings out of order:\n%s", stderr)
	}
}
