package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyMany: several objects (several -f, a directory, a
// multi-document stream on stdin with a List in it) are admitted one by
// one; stdout has the admitted ones in input order in each output form,
// stderr a line per object and the total; the exit status is the worst
// (go test -run TestApplyMany -update rewrites the golden files).
func TestApplyMany(t *testing.T) {
	const td = "testdata/apply/many/"
	stream, err := os.ReadFile(td + "stream.yaml")
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"apply", "--policies", td + "policies.yaml", "--resources", td + "resources.yaml"}
	for _, c := range []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
	}{
		{"stdin-yaml", []string{"-f", "-"}, string(stream), exitProblem},
		{"stdin-and-files-json", []string{"-f", td + "dir/a.yaml", "-f", "-", "-o", "json"}, string(stream), exitProblem},
		{"directory-json", []string{"-f", td + "dir", "-o", "json"}, "", exitUsage},
		{"directory-patch", []string{"-f", td + "dir", "-f", td + "stream.yaml", "-o", "patch"}, "", exitUsage},
		{"directory-diff", []string{"-f", td + "dir", "-o", "diff", "--color=never"}, "", exitUsage},
		{"all-admitted", []string{"-f", td + "dir/a.yaml", "-f", td + "dir/c.yaml"}, "", exitOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.stdin, append(common, c.args...)...)
			if code != c.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.wantCode, stdout, stderr)
			}
			got := stdout + "--- stderr\n" + stderr
			checkGolden(t, filepath.Join("testdata", "apply", "golden", "many-"+c.name+".golden"), got)
		})
	}
}

// TestApplyManyInput: what -f may hold when it holds several objects, and
// that one path of one object is the single-object apply it always was.
func TestApplyManyInput(t *testing.T) {
	const td = "testdata/apply/many/"
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, []byte("# nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"apply", "--policies", td + "policies.yaml", "--resources", td + "resources.yaml"}
	for _, c := range []struct {
		name        string
		args        []string
		code        int
		want, avoid []string
	}{
		{"one object in json is the object, not a List", []string{"-f", td + "dir/a.yaml", "-o", "json"}, exitOK,
			[]string{`"kind": "ConfigMap"`, "team"}, []string{"List", "admitted"}},
		{"one empty file is today's error", []string{"-f", empty}, exitUsage,
			[]string{"empty.yaml: want exactly one object, found 0"}, nil},
		{"several empty files", []string{"-f", empty, "-f", empty}, exitUsage,
			[]string{"want at least one object, found none"}, nil},
		{"a policy is not an object to admit", []string{"-f", td + "dir", "-f", td + "policies.yaml"}, exitUsage,
			[]string{`policies.yaml#0: MutatingAdmissionPolicy "team-label" is not an object to admit (policies go in --policies)`}, nil},
		{"--old-object takes one object", []string{"-f", td + "stream.yaml", "--old-object", td + "dir/a.yaml"}, exitUsage,
			[]string{"--old-object is the old object of one object, and -f gave 4"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append(common, c.args...)...)
			checkCLI(t, code, stdout, stderr, c.code, c.want, c.avoid)
		})
	}
}

// The summary of several objects counts what it printed.
func TestApplyManySummaryCounts(t *testing.T) {
	const td = "testdata/apply/many/"
	_, _, stderr := runCLI(t, "", "apply", "--policies", td+"policies.yaml", "--resources", td+"resources.yaml", "-f", td+"dir", "-f", td+"stream.yaml")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := lines[len(lines)-1]; last != "7 objects: 4 admitted (3 changed), 2 refused, 1 bad input" {
		t.Errorf("summary %q", last)
	}
}
