package release

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// The GitHub Action (action.yml at the repository's root) is two scripts,
// action/install.sh and action/test.sh; these tests run them as the
// action's steps do, against a release directory on disk.

const repoRoot = "../.."

// needShell skips where the scripts cannot run as on a GitHub runner.
func needShell(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the action's scripts are tested on Linux and macOS")
	}
	for _, tool := range []string{"bash", "curl", "tar", "awk"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
}

// script runs one of the action's scripts with env and returns its exit
// code and output.
func script(t *testing.T, name string, env ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot, "action", name))
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// fakeMutatis stands for the binary: it logs its arguments and answers
// `version` and `test` (JUnit with $FAKE_FAILURES failures, exit $FAKE_RC).
const fakeMutatis = `#!/bin/sh
echo "$*" >> "$FAKE_LOG"
case "$1" in
version) echo "mutatis v9.9.9 (fake)" ;;
test)
  if [ "$2" = "-o" ]; then
    echo "<testsuites name=\"mutatis\" tests=\"3\" failures=\"${FAKE_FAILURES:-0}\" errors=\"0\" skipped=\"0\" time=\"0.1\"></testsuites>"
  else
    echo "FAIL: suite/case: the object differs"
  fi
  exit "${FAKE_RC:-0}" ;;
esac
`

// fakeRelease writes <dir>/v9.9.9/ with the host's archive holding
// fakeMutatis, and SHA256SUMS.
func fakeRelease(t *testing.T) (base, archive string) {
	t.Helper()
	base = t.TempDir()
	dir := filepath.Join(base, "v9.9.9")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	archive = ArchiveName("v9.9.9", runtime.GOOS, runtime.GOARCH)
	f, err := os.Create(filepath.Join(dir, archive))
	if err != nil {
		t.Fatal(err)
	}
	files := []File{{Name: "mutatis", Mode: 0o755, Data: []byte(fakeMutatis)}, {Name: "LICENSE", Mode: 0o644, Data: []byte("license")}}
	if err := WriteArchive(f, files, epoch, false); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sums, err := Checksums(dir, []string{archive})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), sums, 0o644); err != nil {
		t.Fatal(err)
	}
	return base, archive
}

func TestActionInstall(t *testing.T) {
	needShell(t)
	cases := []struct {
		name     string
		tamper   func(t *testing.T, dir, archive string)
		wantCode int
		want     string
	}{
		{name: "a listed archive with the right checksum is installed and put on GITHUB_PATH", want: "mutatis v9.9.9 (fake)"},
		{
			name: "an archive that is not what SHA256SUMS says is refused",
			tamper: func(t *testing.T, dir, archive string) {
				f, err := os.OpenFile(filepath.Join(dir, archive), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write([]byte("x"))
				f.Close()
			},
			wantCode: 1, want: "checksum mismatch for " + ArchiveName("v9.9.9", runtime.GOOS, runtime.GOARCH),
		},
		{
			name: "an archive SHA256SUMS does not list is refused",
			tamper: func(t *testing.T, dir, _ string) {
				os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte("00  other.tar.gz\n"), 0o644)
			},
			wantCode: 1, want: "SHA256SUMS of v9.9.9 does not list",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base, archive := fakeRelease(t)
			if tc.tamper != nil {
				tc.tamper(t, filepath.Join(base, "v9.9.9"), archive)
			}
			install := filepath.Join(t.TempDir(), "bin")
			ghPath := filepath.Join(t.TempDir(), "path")
			code, out := script(t, "install.sh", "MUTATIS_VERSION=v9.9.9", "MUTATIS_BASE_URL=file://"+base,
				"MUTATIS_INSTALL_DIR="+install, "GITHUB_PATH="+ghPath, "FAKE_LOG="+filepath.Join(t.TempDir(), "log"))
			if code != tc.wantCode || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, tc.wantCode, tc.want, out)
			}
			_, err := os.Stat(filepath.Join(install, "mutatis"))
			if tc.wantCode != 0 {
				if err == nil {
					t.Error("a refused archive was installed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p, _ := os.ReadFile(ghPath); strings.TrimSpace(string(p)) != install {
				t.Errorf("GITHUB_PATH holds %q, want %q", p, install)
			}
		})
	}
	t.Run("no version is an error naming the input", func(t *testing.T) {
		code, out := script(t, "install.sh", "MUTATIS_VERSION=")
		if code == 0 || !strings.Contains(out, "MUTATIS_VERSION (the action input version) is required") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
}

func TestActionTest(t *testing.T) {
	needShell(t)
	bin := filepath.Join(t.TempDir(), "mutatis")
	if err := os.WriteFile(bin, []byte(fakeMutatis), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		rc          string
		failures    string
		wantSummary []string
		wantCalls   string
	}{
		{name: "passing suites: exit 0, the count in the summary, one run", rc: "0", failures: "0",
			wantSummary: []string{"### mutatis test", "Passed: 3 cases in policies/ more/.", "JUnit report: `"},
			wantCalls:   "test -o junit --idempotence policies/ more/\n"},
		{name: "failing cases: exit 1, the failures in the summary and the log", rc: "1", failures: "2",
			wantSummary: []string{"**Failed**: 2 failures and 0 errors of 3 cases", "```text\nFAIL: suite/case: the object differs\n```"},
			wantCalls:   "test -o junit --idempotence policies/ more/\ntest --idempotence policies/ more/\n"},
		{name: "bad input: exit 2 and said so", rc: "2", failures: "0",
			wantSummary: []string{"**Could not run** (exit 2)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			summary, junit, log := filepath.Join(dir, "summary.md"), filepath.Join(dir, "junit.xml"), filepath.Join(dir, "log")
			code, out := script(t, "test.sh", "MUTATIS="+bin, "MUTATIS_PATHS=policies/ more/", "MUTATIS_ARGS=--idempotence",
				"MUTATIS_JUNIT="+junit, "GITHUB_STEP_SUMMARY="+summary, "FAKE_LOG="+log, "FAKE_RC="+tc.rc, "FAKE_FAILURES="+tc.failures)
			if want := tc.rc; code != int(want[0]-'0') {
				t.Fatalf("exit %d, want %s:\n%s", code, tc.rc, out)
			}
			s, _ := os.ReadFile(summary)
			for _, w := range tc.wantSummary {
				if !strings.Contains(string(s), w) {
					t.Errorf("summary lacks %q:\n%s", w, s)
				}
			}
			if j, _ := os.ReadFile(junit); !bytes.Contains(j, []byte("<testsuites ")) {
				t.Errorf("no JUnit report: %q", j)
			}
			if tc.wantCalls != "" {
				if calls, _ := os.ReadFile(log); string(calls) != tc.wantCalls {
					t.Errorf("calls:\n%s\nwant:\n%s", calls, tc.wantCalls)
				}
			}
		})
	}
}

// action.yml is a composite action whose steps run the scripts tested
// above with the inputs it declares.
func TestActionDefinition(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Name   string
		Inputs map[string]struct {
			Required bool
			Default  *string
		}
		Runs struct {
			Using string
			Steps []struct {
				Name  string
				Shell string
				Run   string
				Env   map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(data, &action); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if action.Runs.Using != "composite" {
		t.Errorf("runs.using %q", action.Runs.Using)
	}
	if !action.Inputs["version"].Required {
		t.Error("input version is not required")
	}
	used := regexp.MustCompile(`\$\{\{ inputs\.([a-z-]+) \}\}`)
	for _, m := range used.FindAllStringSubmatch(string(data), -1) {
		if _, ok := action.Inputs[m[1]]; !ok {
			t.Errorf("action.yml uses undeclared input %s", m[1])
		}
	}
	var scripts []string
	for _, s := range action.Runs.Steps {
		if s.Shell != "bash" {
			t.Errorf("step %q: shell %q", s.Name, s.Shell)
		}
		m := regexp.MustCompile(`^"\$GITHUB_ACTION_PATH/(action/[a-z]+\.sh)"$`).FindStringSubmatch(s.Run)
		if m == nil {
			t.Errorf("step %q runs %q, not one of the action's scripts", s.Name, s.Run)
			continue
		}
		scripts = append(scripts, m[1])
		st, err := os.Stat(filepath.Join(repoRoot, m[1]))
		if err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("%s: not an executable file (%v)", m[1], err)
		}
		body, _ := os.ReadFile(filepath.Join(repoRoot, m[1]))
		for k := range s.Env {
			if !bytes.Contains(body, []byte(k)) {
				t.Errorf("step %q sets %s, which %s does not read", s.Name, k, m[1])
			}
		}
	}
	if strings.Join(scripts, ",") != "action/install.sh,action/test.sh" {
		t.Errorf("steps run %v", scripts)
	}
}
