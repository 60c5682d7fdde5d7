//go:build unix

package manifest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadRefusesNamedPipes: a named pipe called *.yaml found while walking
// a directory is reported as a problem of that file and not read (reading
// one with no writer blocks forever); one named on the command line is
// read, as process substitution needs. The
// load runs in a goroutine so that a regression fails the test instead of
// hanging it.
func TestLoadRefusesNamedPipes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(dir, "pipe.yaml")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("a.yaml", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	load := func(paths ...string) (*Set, error) {
		t.Helper()
		type result struct {
			set *Set
			err error
		}
		done := make(chan result, 1)
		go func() {
			set, err := Load(context.Background(), paths, nil)
			done <- result{set, err}
		}()
		select {
		case r := <-done:
			return r.set, r.err
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%v) still running after 10s: blocked on the named pipe", paths)
			return nil, nil
		}
	}
	want := pipe + "#0: not a regular file (a named pipe): only regular files are read"

	set, err := load(dir)
	if err == nil || err.Error() != want {
		t.Errorf("loading the directory: error %v, want exactly %q", err, want)
	}
	var names []string
	for _, o := range set.Objects {
		names = append(names, filepath.Base(o.Source.File))
	}
	if got := strings.Join(names, " "); got != "a.yaml link.yaml" {
		t.Errorf("loaded %q, want the regular file and the link to it", got)
	}

	// Named on the command line (as process substitution names its pipe),
	// the pipe is read.
	go func() {
		w, err := os.OpenFile(pipe, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: piped}\n"))
	}()
	set, err = load(pipe)
	if err != nil || len(set.Objects) != 1 || set.Objects[0].Object.GetName() != "piped" {
		t.Errorf("loading the pipe by name: %v, %v; want the object written into it", set, err)
	}
}
