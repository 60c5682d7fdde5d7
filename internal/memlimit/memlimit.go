// Package memlimit finds the memory limit of the container mutatis runs
// in — the one given on the command line (--memory-limit, as the downward
// API's resourceFieldRef gives it), else the cgroup's (v2 memory.max, v1
// memory.limit_in_bytes) — and gives the Go runtime its soft limit from it
// (GOMEMLIMIT), and serve's garbage collector its pace under that limit
// (GOGC: GCTuner). For `mutatis serve` and `mutatis audit`; only package
// main imports it.
package memlimit

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// RuntimeShare is the part of the container's memory limit given to the
// Go runtime as its soft limit (GOMEMLIMIT): the rest is headroom for
// what the runtime does not count (non-Go memory, fragmentation) and for
// the collector to act before the kernel's OOM killer does.
const RuntimeShare = 0.9

// unlimitedCgroupV1 is cgroup v1's "no limit": the largest page-aligned
// int64, or close to it.
const unlimitedCgroupV1 = 1 << 62

// Cgroup reads the memory limit of the cgroup mounted at root (cgroup v2
// memory.max, else v1 memory/memory.limit_in_bytes) and the file it read.
// ok is false when there is none or it cannot be read.
func Cgroup(root string) (limit int64, source string, ok bool) {
	for _, f := range []string{filepath.Join(root, "memory.max"), filepath.Join(root, "memory", "memory.limit_in_bytes")} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, f, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= unlimitedCgroupV1 {
			return 0, f, false
		}
		return n, f, true
	}
	return 0, "", false
}

// Finder finds the container's memory limit.
type Finder struct {
	// Given is the limit --memory-limit gives, in bytes; 0 for none.
	Given int64
	// CgroupRoot is where the cgroup file system is mounted
	// (/sys/fs/cgroup).
	CgroupRoot string
}

// Container is the container's memory limit: Given, else the cgroup's;
// source says which (the flag or the cgroup file).
func (f Finder) Container() (limit int64, source string, ok bool) {
	if f.Given > 0 {
		return f.Given, "--memory-limit", true
	}
	return Cgroup(f.CgroupRoot)
}

// Apply gives the Go runtime, through set (SetRuntime outside tests), a
// soft memory limit of RuntimeShare of the container's, and logs what it
// did. A GOMEMLIMIT in the environment wins (the runtime already applied
// it). It returns the limit set, 0 when none was.
func (f Finder) Apply(log *slog.Logger, set func(int64)) int64 {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		log.Info("memory limit: GOMEMLIMIT is set; using it", "GOMEMLIMIT", v)
		return 0
	}
	limit, source, ok := f.Container()
	if !ok {
		log.Info("memory limit: none found (no --memory-limit, GOMEMLIMIT or cgroup limit); the Go runtime has no soft limit")
		return 0
	}
	soft := int64(float64(limit) * RuntimeShare)
	set(soft)
	log.Info("memory limit: set the Go runtime's soft limit (GOMEMLIMIT) to 90% of the container's", "container", limit, "source", source, "GOMEMLIMIT", soft)
	return soft
}

// SetRuntime is debug.SetMemoryLimit: the Go runtime's soft limit, in
// bytes.
func SetRuntime(n int64) { debug.SetMemoryLimit(n) }

// The garbage collector's pace (GOGC) under a soft limit. A review of
// `mutatis serve` leaves a few hundred kilobytes of garbage over a live
// heap of a few megabytes (the policies, their programs, the scheme): at
// the default GOGC of 100 the collector runs every few megabytes
// allocated, some fifty times a second at 1,000 reviews a second, and took
// a fifth of the CPU of BenchmarkHandler. With a soft limit set, a higher
// GOGC is safe: the runtime collects as the heap nears the limit whatever
// GOGC says. GCPercent keeps the pace's heap target within HeapShare of
// the soft limit, so that the limit stays the guard it was and the rest of
// the container's memory (the bodies in flight, a quarter of it by
// default, and the runtime's headroom) is untouched.
const (
	// HeapShare is the part of the soft limit (a divisor) the heap's
	// growth between collections may take: GCPercent's target is
	// soft/HeapShare.
	HeapShare = 4
	// MinGCPercent is the lowest GOGC GCPercent gives: the runtime's
	// default, when the live heap already fills the target.
	MinGCPercent = 100
	// MaxGCPercent is the highest: beyond it each cycle saves little and
	// the heap touches ever more fresh memory.
	MaxGCPercent = 800
)

// GCPercent is the GOGC whose heap target for a live heap of live bytes,
// live × (1 + GOGC/100), is soft/HeapShare, within [MinGCPercent,
// MaxGCPercent]; MinGCPercent when soft or live is not positive.
func GCPercent(soft, live int64) int {
	if soft <= 0 || live <= 0 {
		return MinGCPercent
	}
	target := soft / HeapShare
	if target <= live {
		return MinGCPercent
	}
	p := (target - live) / live * 100
	if rem := (target - live) % live; rem > 0 {
		p += rem * 100 / live
	}
	return int(min(max(p, MinGCPercent), MaxGCPercent))
}

// LiveHeap is the heap the last collection marked live
// (runtime/metrics' /gc/heap/live:bytes); 0 before the first.
func LiveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// GCTuner keeps GOGC at GCPercent of a soft limit and the live heap as it
// grows (informer caches, a larger policy set).
type GCTuner struct {
	// Soft is the soft limit set (Finder.Apply's result).
	Soft int64
	// Live reads the live heap (LiveHeap outside tests).
	Live func() int64
	// Set sets GOGC and returns the previous setting
	// (debug.SetGCPercent outside tests).
	Set func(int) int
	// Log receives each change.
	Log *slog.Logger

	percent int
}

// Tune sets GOGC to GCPercent(Soft, Live()) when it differs from the last
// setting, and returns it. It does nothing (returns 0) when Soft is not
// positive or GOGC is set in the environment, which then wins.
func (t *GCTuner) Tune() int {
	if t.Soft <= 0 || os.Getenv("GOGC") != "" {
		return 0
	}
	live := t.Live()
	p := GCPercent(t.Soft, live)
	if p != t.percent {
		t.Set(p)
		t.percent = p
		if t.Log != nil {
			t.Log.Info("garbage collector: GOGC set from the soft memory limit and the live heap", "GOGC", p, "live", live, "target", t.Soft/HeapShare)
		}
	}
	return p
}

// Run tunes at once and then every interval until ctx ends.
func (t *GCTuner) Run(ctx context.Context, interval time.Duration) {
	t.Tune()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.Tune()
		}
	}
}

// SetGCPercent is debug.SetGCPercent.
func SetGCPercent(p int) int { return debug.SetGCPercent(p) }
