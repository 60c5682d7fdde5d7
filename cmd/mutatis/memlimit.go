package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mutatis-dev/mutatis/webhook"
)

// memoryLimitShare is the part of the container's memory limit given to
// the Go runtime as its soft limit (GOMEMLIMIT): the rest is headroom for
// what the runtime does not count (non-Go memory, fragmentation) and for
// the collector to act before the kernel's OOM killer does.
const memoryLimitShare = 0.9

// unlimitedCgroupV1 is cgroup v1's "no limit": the largest page-aligned
// int64, or close to it.
const unlimitedCgroupV1 = 1 << 62

// containerMemoryLimit reads the memory limit of the cgroup mounted at root
// (cgroup v2 memory.max, else v1 memory/memory.limit_in_bytes). ok is false
// when there is none or it cannot be read.
func containerMemoryLimit(root string) (limit int64, source string, ok bool) {
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

// parseMemoryLimit parses --memory-limit: bytes or a Kubernetes quantity
// (512Mi), as the downward API's resourceFieldRef gives it.
func parseMemoryLimit(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("--memory-limit: %w", err)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return 0, errors.New("--memory-limit must be a positive number of bytes")
	}
	return n, nil
}

// containerLimit is the container's memory limit: --memory-limit, else
// the cgroup's.
func (o *serveOptions) containerLimit() (limit int64, source string, ok bool) {
	if o.memoryLimitBytes > 0 {
		return o.memoryLimitBytes, "--memory-limit", true
	}
	return containerMemoryLimit(o.cgroupRoot)
}

// applyMemoryLimit gives the Go runtime a soft memory limit of
// memoryLimitShare of the container's. A GOMEMLIMIT in the environment
// wins (the runtime already applied it). It returns the limit set, 0 when
// none was.
func (o *serveOptions) applyMemoryLimit(log *slog.Logger) int64 {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		log.Info("memory limit: GOMEMLIMIT is set; using it", "GOMEMLIMIT", v)
		return 0
	}
	limit, source, ok := o.containerLimit()
	if !ok {
		log.Info("memory limit: none found (no --memory-limit, GOMEMLIMIT or cgroup limit); the Go runtime has no soft limit")
		return 0
	}
	soft := int64(float64(limit) * memoryLimitShare)
	o.setMemoryLimit(soft)
	log.Info("memory limit: set the Go runtime's soft limit (GOMEMLIMIT) to 90% of the container's", "container", limit, "source", source, "GOMEMLIMIT", soft)
	return soft
}

// bodyBudgetShare is the part of the container's memory limit the
// body-bytes budget gets by default.
const bodyBudgetShare = 4

// bodyBudget is --max-body-bytes-in-flight, or its default: a quarter of
// the container's memory limit when it is known, never less than one
// review of --max-request-bytes being evaluated
// (webhook.DefaultBodyBudgetFactor times it, also the default without a
// limit).
func (o *serveOptions) bodyBudget() int64 {
	if o.maxBodyBytes > 0 {
		return o.maxBodyBytes
	}
	least := webhook.DefaultBodyBudgetFactor * o.maxRequestBytes
	if limit, _, ok := o.containerLimit(); ok {
		return max(limit/bodyBudgetShare, least)
	}
	return least
}

// setRuntimeMemoryLimit is debug.SetMemoryLimit (serveOptions.setMemoryLimit).
func setRuntimeMemoryLimit(n int64) { debug.SetMemoryLimit(n) }
