package memlimit

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

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
			got, _, ok := Cgroup(write(t, tc.files))
			if got != tc.want || ok != tc.ok {
				t.Errorf("%d %v, want %d %v", got, ok, tc.want, tc.ok)
			}
		})
	}

	// Apply: 90% of --memory-limit, else of the cgroup's;
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
			f := Finder{CgroupRoot: v2}
			if tc.flag != "" {
				q := resource.MustParse(tc.flag)
				f.Given = q.Value()
			}
			if got := f.Apply(slog.New(slog.DiscardHandler), func(n int64) { set = n }); got != tc.want || set != tc.want {
				t.Errorf("set %d (returned %d), want %d", set, got, tc.want)
			}
		})
	}
}
