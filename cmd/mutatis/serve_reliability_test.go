package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/webhook"
)

func TestServeReliabilityFlags(t *testing.T) {
	certDir := filepath.Join(t.TempDir(), "certs")
	static := []string{"--policies", "../../examples", "--self-signed-dir", certDir}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a body timeout of zero", []string{"--body-read-timeout", "0s"}, "--body-read-timeout must be positive"},
		{"a negative body budget", []string{"--max-body-bytes-in-flight", "-1"}, "must not be negative"},
		{"a body budget smaller than one body", []string{"--max-body-bytes-in-flight", "1000"}, "must hold at least one body of --max-request-bytes"},
		{"a negative drain", []string{"--shutdown-drain", "-1s"}, "--shutdown-drain must not be negative"},
		{"a memory limit that is not a quantity", []string{"--memory-limit", "lots"}, "--memory-limit"},
		{"the system namespaces in static mode", []string{"--exclude-system-namespaces"}, "--exclude-system-namespaces applies to informer mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append(append([]string{"serve"}, static...), tc.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr:\n%s%s\nwant exit %d and %q", code, out, errOut, exitUsage, tc.want)
			}
		})
	}

	// The defaults, and the system namespaces reaching the controller.
	cmd := newServeCommand()
	if err := cmd.ParseFlags([]string{"--exclude-system-namespaces"}); err != nil {
		t.Fatal(err)
	}
	f := cmd.Flags()
	for flag, want := range map[string]string{
		"body-read-timeout": webhook.DefaultBodyReadTimeout.String(), "max-body-bytes-in-flight": "0",
		"shutdown-drain": "5s", "memory-limit": "",
	} {
		if got := f.Lookup(flag).DefValue; got != want {
			t.Errorf("--%s defaults to %q, want %q", flag, got, want)
		}
	}
	o := &serveOptions{excludeSystemNS: true, namespace: "mutatis-system"}
	if got := o.webhookOptions().ExcludeNamespaces; !slices.Equal(got, []string{"kube-system", "kube-node-lease"}) {
		t.Errorf("--exclude-system-namespaces excludes %v", got)
	}
	if got := (&serveOptions{}).webhookOptions().ExcludeNamespaces; got != nil {
		t.Errorf("without --exclude-system-namespaces, %v are excluded", got)
	}
}

func TestContainerMemoryLimit(t *testing.T) {
	write := func(t *testing.T, files map[string]string) string {
		root := t.TempDir()
		for name, content := range files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{
		{"cgroup v2", map[string]string{"memory.max": "536870912\n"}, 512 << 20, true},
		{"cgroup v2 without a limit", map[string]string{"memory.max": "max\n"}, 0, false},
		{"cgroup v1", map[string]string{"memory/memory.limit_in_bytes": "268435456\n"}, 256 << 20, true},
		{"cgroup v1 without a limit", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, false},
		{"no cgroup", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, ok := containerMemoryLimit(write(t, tc.files))
			if got != tc.want || ok != tc.ok {
				t.Errorf("%d %v, want %d %v", got, ok, tc.want, tc.ok)
			}
		})
	}

	// applyMemoryLimit: 90% of --memory-limit, else of the cgroup's;
	// nothing when GOMEMLIMIT is set.
	v2 := write(t, map[string]string{"memory.max": "1000000000"})
	for _, tc := range []struct {
		name, env, flag string
		want            int64
	}{
		{"from the cgroup", "", "", 900_000_000},
		{"from --memory-limit", "", "512Mi", 483183820},
		{"GOMEMLIMIT wins", "400MiB", "512Mi", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tc.env)
			var set int64
			o := &serveOptions{cgroupRoot: v2, setMemoryLimit: func(n int64) { set = n }}
			if tc.flag != "" {
				var err error
				if o.memoryLimitBytes, err = parseMemoryLimit(tc.flag); err != nil {
					t.Fatal(err)
				}
			}
			if got := o.applyMemoryLimit(slog.New(slog.DiscardHandler)); got != tc.want || set != tc.want {
				t.Errorf("set %d (returned %d), want %d", set, got, tc.want)
			}
		})
	}
}

func TestBodyBudgetDefault(t *testing.T) {
	write := func(content string) string {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return root
	}
	const maxRequest = 3 << 20
	for _, tc := range []struct {
		name        string
		flag        int64
		cgroup      string
		memoryLimit int64
		want        int64
	}{
		{"the flag", 100 << 20, "536870912", 0, 100 << 20},
		{"a quarter of the cgroup's limit", 0, "536870912", 0, 128 << 20},
		{"a quarter of --memory-limit", 0, "max", 1 << 30, 256 << 20},
		{"at least one review of the largest size", 0, "134217728", 0, 16 * maxRequest},
		{"no limit known", 0, "max", 0, 16 * maxRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &serveOptions{maxBodyBytes: tc.flag, maxRequestBytes: maxRequest, memoryLimitBytes: tc.memoryLimit, cgroupRoot: write(tc.cgroup)}
			if got := o.bodyBudget(); got != tc.want {
				t.Errorf("budget %d, want %d", got, tc.want)
			}
		})
	}
}
