package main

import (
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
		{"a quarter of the cgroup's limit", 0, "1073741824", 0, 256 << 20},
		{"deploy/'s 512 MiB: the most costly review of the largest size", 0, "536870912", 0, 48 * maxRequest},
		{"a quarter of --memory-limit", 0, "max", 1 << 30, 256 << 20},
		{"at least one review of the largest size", 0, "134217728", 0, 48 * maxRequest},
		{"no limit known", 0, "max", 0, 48 * maxRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &serveOptions{maxBodyBytes: tc.flag, maxRequestBytes: maxRequest, memoryLimitBytes: tc.memoryLimit, cgroupRoot: write(tc.cgroup)}
			if got := o.bodyBudget(); got != tc.want {
				t.Errorf("budget %d, want %d", got, tc.want)
			}
		})
	}
}
