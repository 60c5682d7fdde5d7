// Package memlimit finds the memory limit of the container mutatis runs
// in — the one given on the command line (--memory-limit, as the downward
// API's resourceFieldRef gives it), else the cgroup's (v2 memory.max, v1
// memory.limit_in_bytes) — and gives the Go runtime its soft limit from it
// (GOMEMLIMIT). For `mutatis serve` and `mutatis audit`; only package main
// imports it.
package memlimit

import (
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
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
