package main

import (
	"encoding/json"
	"os"
	"regexp"
	"runtime"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/buildinfo"
)

// goModKubernetes is the version of k8s.io/kubernetes that go.mod requires:
// what the binary must read from its build information.
func goModKubernetes(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/kubernetes")
	}
	return string(m[1])
}

func TestVersion(t *testing.T) {
	kubernetesVersion := goModKubernetes(t)
	if kubernetesVersion != "v1.37.1" {
		t.Errorf("go.mod requires k8s.io/kubernetes %s; mutatis reproduces v1.37.1", kubernetesVersion)
	}
	cases := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{
			name:     "version prints every field, the Kubernetes release from the build information",
			args:     []string{"version"},
			wantCode: exitOK,
			want: []string{"mutatis ", "  commit:", "  built:", "  go:         " + runtime.Version(),
				"  platform:   " + runtime.GOOS + "/" + runtime.GOARCH, "  kubernetes: " + kubernetesVersion + " "},
		},
		{
			name:     "--version prints the one-line form",
			args:     []string{"--version"},
			wantCode: exitOK,
			want:     []string{"mutatis ", "Kubernetes " + kubernetesVersion + " semantics", runtime.Version()},
		},
		{
			name:     "an unknown output format is bad input",
			args:     []string{"version", "-o", "yaml"},
			wantCode: exitUsage,
			want:     []string{`unknown output format "yaml" (text or json)`},
		},
		{
			name:     "arguments are bad input",
			args:     []string{"version", "extra"},
			wantCode: exitUsage,
			want:     []string{"unknown command"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			checkCLI(t, code, out, errOut, tc.wantCode, tc.want, nil)
		})
	}
}

func TestVersionJSON(t *testing.T) {
	code, out, errOut := runCLI(t, "", "version", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("version -o json is not a JSON object: %v\n%s", err, out)
	}
	want := buildinfo.Read()
	kubernetesVersion := goModKubernetes(t)
	for k, v := range map[string]string{
		"version": want.Version, "commit": want.Commit, "date": want.Date,
		"goVersion": runtime.Version(), "kubernetes": kubernetesVersion, "platform": runtime.GOOS + "/" + runtime.GOARCH,
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != 6 {
		t.Errorf("fields %v, want exactly 6", got)
	}
}
