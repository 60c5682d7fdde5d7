//go:build unix

package policytest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Telling a Kyverno, kaptest or kat file by its content never reads a
// named pipe: discovery would block on it.
func TestDiscoverDoesNotReadPipes(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"kyverno-test.yaml", "kaptest.yaml", "policy.yaml"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Skip(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests", "p.a.object.yaml"), []byte("kind: Pod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() {
		files, _ := Discover([]string{dir})
		done <- files
	}()
	select {
	case files := <-done:
		if len(files) != 0 {
			t.Errorf("Discover = %v, want nothing", files)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Discover blocked on a named pipe")
	}
}
