package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConvertCommand(t *testing.T) {
	refused := filepath.Join("..", "..", "convert", "testdata", "corpus", "kyverno", "add-node-labels-pod.yaml")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		stdout   []string
		stderr   []string
	}{
		{name: "the example converts", args: []string{"convert", "../../examples/convert/source"}, wantCode: exitOK,
			stdout: []string{"name: kyverno-add-log-sidecar", "name: gatekeeper-mutators", "kind: MutatingAdmissionPolicyBinding"}},
		{name: "a refusal writes nothing and exits 1", args: []string{"convert", refused}, wantCode: exitProblem,
			stderr: []string{"refused: ", "spec.rules[0].mutate.targets", "--allow-partial"}},
		{name: "--allow-partial writes the rest and exits 1", args: []string{"convert", "--allow-partial", refused, "../../examples/convert/source"}, wantCode: exitProblem,
			stdout: []string{"name: gatekeeper-mutators"}, stderr: []string{"refused: "}},
		{name: "a missing file exits 2", args: []string{"convert", "no-such-file.yaml"}, wantCode: exitUsage},
		{name: "--with-tests without -o exits 2", args: []string{"convert", "--with-tests", "../../examples/convert/source"}, wantCode: exitUsage, stderr: []string{"--with-tests"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestConvertOutputDir(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(t, "", "convert", "../../examples/convert/source", "-o", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, n := range []string{"kyverno-add-log-sidecar.yaml", "gatekeeper-mutators.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Error(err)
		}
	}
	// An existing file is never overwritten.
	if code, _, stderr := runCLI(t, "", "convert", "../../examples/convert/source", "-o", dir); code != exitUsage || !strings.Contains(stderr, "not overwritten") {
		t.Errorf("second run: exit %d, %s", code, stderr)
	}
	// The policies pass lint.
	if code, stdout, stderr := runCLI(t, "", "lint", "--no-cost", dir); code != exitOK {
		t.Errorf("lint: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
