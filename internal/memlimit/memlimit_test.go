package memlimit

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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

// TestGCPercent holds the GOGC computed from the soft limit and the live
// heap: the heap target live × (1 + GOGC/100) is a quarter of the soft
// limit, within [100, 800].
func TestGCPercent(t *testing.T) {
	const mi = 1 << 20
	soft := int64(483183820) // 90% of the chart's 512Mi limit (TestContainerMemoryLimit)
	for _, tc := range []struct {
		name       string
		soft, live int64
		want       int
	}{
		{"no limit", 0, 7 * mi, 100},
		{"no collection yet", soft, 0, 100},
		{"serve's live heap under the chart's limit", soft, 7 * mi, 800},
		{"a target of 9 live heaps", 36 * mi * HeapShare, 4 * mi, 800},
		{"a target of 3 live heaps", 30 * mi * HeapShare, 10 * mi, 200},
		{"a target of 2.5 live heaps", 25 * mi * HeapShare, 10 * mi, 150},
		{"the live heap fills the target", 40 * mi * HeapShare, 40 * mi, 100},
		{"the live heap beyond the target", 40 * mi * HeapShare, 50 * mi, 100},
		{"a target just over twice the live heap", 20*mi*HeapShare + HeapShare, 10 * mi, 100},
		{"a small limit", 64 * mi, 15 * mi, 100},
		{"the largest limit", 1<<62 - 1, 1, 800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := GCPercent(tc.soft, tc.live)
			if got != tc.want {
				t.Errorf("GCPercent(%d, %d) = %d, want %d", tc.soft, tc.live, got, tc.want)
			}
			if tc.soft > 0 && tc.live > 0 && got > MinGCPercent {
				// The heap target stays within the share of the soft limit.
				if target := tc.live + tc.live*int64(got)/100; target > tc.soft/HeapShare {
					t.Errorf("heap target %d beyond %d", target, tc.soft/HeapShare)
				}
			}
		})
	}
}

// TestGCTuner holds what the tuner sets as the live heap grows, and that
// GOGC in the environment or no soft limit leaves the runtime alone.
func TestGCTuner(t *testing.T) {
	const mi = 1 << 20
	t.Setenv("GOGC", "")
	live := int64(0)
	var set []int
	tu := GCTuner{Soft: 120 * mi * HeapShare, Live: func() int64 { return live }, Set: func(p int) int { set = append(set, p); return 0 }, Log: slog.New(slog.DiscardHandler)}
	for _, step := range []struct {
		live int64
		want int
	}{{7 * mi, 800}, {7 * mi, 800}, {30 * mi, 300}, {100 * mi, 100}, {10 * mi, 800}} {
		live = step.live
		if got := tu.Tune(); got != step.want {
			t.Errorf("live %d: GOGC %d, want %d", step.live, got, step.want)
		}
	}
	if want := []int{800, 300, 100, 800}; !slices.Equal(set, want) {
		t.Errorf("set %v, want %v (a setting only when it changes)", set, want)
	}

	set = nil
	t.Setenv("GOGC", "200")
	if got := tu.Tune(); got != 0 || set != nil {
		t.Errorf("with GOGC set: %d, set %v; want nothing", got, set)
	}
	t.Setenv("GOGC", "")
	none := GCTuner{Live: func() int64 { return mi }, Set: func(p int) int { set = append(set, p); return 0 }}
	if got := none.Tune(); got != 0 || set != nil {
		t.Errorf("without a soft limit: %d, set %v; want nothing", got, set)
	}
}
