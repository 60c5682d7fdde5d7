package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestApplyResult: -o result prints, for each object, kube-apiserver's
// answer whether it admits or refuses it: allowed, the stored object and
// admission's patch, the warnings, every stage's audit annotations and the
// refusal's Status; several objects give a JSON array in input order
// (refused and bad input ones too). Exit codes are those of the other
// outputs (go test -run TestApplyResult -update rewrites the golden
// files).
func TestApplyResult(t *testing.T) {
	const (
		td   = "testdata/apply/result/"
		vd   = "testdata/apply/validating/"
		psd  = "testdata/apply/podsecurity/"
		many = "testdata/apply/many/"
	)
	stream, err := os.ReadFile(many + "stream.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
		code  int
	}{
		{name: "vap-deny", code: exitProblem,
			args: []string{"-f", vd + "pod.yaml", "--policies", vd + "inject-sidecar.yaml", "--policies", vd + "require-limits.yaml"}},
		{name: "vap-warn",
			args: []string{"-f", vd + "pod.yaml", "--policies", vd + "inject-sidecar.yaml", "--policies", vd + "warn-limits.yaml"}},
		{name: "vap-audit-annotations",
			args: []string{"-f", vd + "pod.yaml", "--policies", vd + "inject-sidecar.yaml", "--policies", td + "audit-limits.yaml"}},
		{name: "podsecurity-refused", code: exitProblem,
			args: []string{"-f", psd + "pod.yaml", "--policies", psd + "sidecar.yaml", "--resources", psd + "namespaces.yaml"}},
		{name: "podsecurity-admitted",
			args: []string{"-f", psd + "pod.yaml", "--policies", psd + "sidecar.yaml," + psd + "harden.yaml", "--resources", psd + "namespaces.yaml"}},
		{name: "delete-refused", code: exitProblem,
			args: []string{"-f", td + "protected-pod.yaml", "--operation", "DELETE", "--policies", td + "no-delete.yaml"}},
		{name: "delete-admitted",
			args: []string{"-f", vd + "pod.yaml", "--operation", "DELETE", "--policies", td + "no-delete.yaml"}},
		{name: "many-stdin", code: exitProblem, stdin: string(stream),
			args: []string{"-f", "-", "--policies", many + "policies.yaml", "--resources", many + "resources.yaml"}},
		{name: "many-bad-input", code: exitUsage,
			args: []string{"-f", many + "dir", "--policies", many + "policies.yaml", "--resources", many + "resources.yaml"}},
		{name: "bad-operation", code: exitUsage,
			args: []string{"-f", vd + "pod.yaml", "--policies", vd + "require-limits.yaml", "--operation", "PATCH"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.stdin, append([]string{"apply", "-o", "result"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, stdout, stderr)
			}
			if stdout != "" {
				var v any
				if err := json.Unmarshal([]byte(stdout), &v); err != nil {
					t.Errorf("stdout is not JSON: %v", err)
				}
			}
			checkGolden(t, td+"golden/"+c.name+".golden", fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", code, stdout, strings.ReplaceAll(stderr, psd, "TESTDATA/")))
		})
	}
}

// TestApplyResultAgrees: -o result's object and patch are what -o json
// and -o patch print of the same request.
func TestApplyResultAgrees(t *testing.T) {
	const vd = "testdata/apply/validating/"
	args := []string{"apply", "-f", vd + "pod.yaml", "--policies", vd + "inject-sidecar.yaml", "--policies", vd + "warn-limits.yaml"}
	run := func(output string) string {
		code, stdout, stderr := runCLI(t, "", append(args, "-o", output)...)
		if code != 0 {
			t.Fatalf("-o %s: exit %d\n%s", output, code, stderr)
		}
		return stdout
	}
	var result struct {
		Object json.RawMessage `json:"object"`
		Patch  json.RawMessage `json:"patch"`
	}
	if err := json.Unmarshal([]byte(run("result")), &result); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		output string
		got    json.RawMessage
	}{{"json", result.Object}, {"patch", result.Patch}} {
		var got, want any
		if err := json.Unmarshal(c.got, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(run(c.output)), &want); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("-o result's %s differs from -o %s:\n%v\nwant\n%v", c.output, c.output, got, want)
		}
	}
}
