package gcstart

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent reads the runtime's GC percent.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestDeferCollection: no collection until the heap reaches the limit,
// then the runtime's settings back (here: after a forced collection).
func TestDeferCollection(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent, limit := gcPercent(), debug.SetMemoryLimit(-1)
	defer func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}()
	deferCollection(64 << 20)
	if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != -1 || l != 64<<20 {
		t.Fatalf("after deferCollection: GC percent %d, memory limit %d; want off until 64 MiB", p, l)
	}
	runtime.GC() // the first collection
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() == -1 && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != percent || l != limit {
		t.Errorf("after the first collection: GC percent %d, memory limit %d; want %d, %d back", p, l, percent, limit)
	}
}

// TestDeferCollectionLeavesTheEnvironmentsSettings: GOGC or GOMEMLIMIT
// set, the runtime is left alone.
func TestDeferCollectionLeavesTheEnvironmentsSettings(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "200")
			percent, limit := gcPercent(), debug.SetMemoryLimit(-1)
			deferCollection(64 << 20)
			if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != percent || l != limit {
				t.Errorf("GC percent %d, memory limit %d; want %d, %d untouched", p, l, percent, limit)
			}
		})
	}
}
