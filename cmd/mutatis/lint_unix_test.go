//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestLintNamedPipe: a named pipe called *.yaml in a linted directory is a
// problem naming it (exit 1), not a hang.
func TestLintNamedPipe(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe.yaml")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), mustRead(t, "testdata/lint/unbounded.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runCLI(t, "", "lint", "--no-cost", dir)
		done <- result{code, out, errOut}
	}()
	select {
	case r := <-done:
		checkCLI(t, r.code, r.out, r.errOut, exitProblem,
			[]string{pipe + "#0: not a regular file (a named pipe): only regular files are read\n", "1 policies, 0 bindings, 1 problems, 0 warnings"}, nil)
	case <-time.After(10 * time.Second):
		t.Fatal("lint still running after 10s: blocked on the named pipe")
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
