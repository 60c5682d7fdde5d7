package main

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mutatis-dev/mutatis/internal/memlimit"
	"github.com/mutatis-dev/mutatis/webhook"
)

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

// memoryLimitFinder finds the container's memory limit: --memory-limit, else
// the cgroup's at cgroupRoot.
func (o *serveOptions) memoryLimitFinder() memlimit.Finder {
	return memlimit.Finder{Given: o.memoryLimitBytes, CgroupRoot: o.cgroupRoot}
}

// bodyBudgetShare is the part of the container's memory limit the
// body-bytes budget gets by default.
const bodyBudgetShare = 4

// bodyBudget is --max-body-bytes-in-flight, or its default: a quarter of
// the container's memory limit when it is known, never less than one
// review of --max-request-bytes of the most costly shape kube-apiserver
// sends being evaluated
// (webhook.DefaultBodyBudgetFactor times it, also the default without a
// limit).
func (o *serveOptions) bodyBudget() int64 {
	if o.maxBodyBytes > 0 {
		return o.maxBodyBytes
	}
	least := webhook.DefaultBodyBudgetFactor * o.maxRequestBytes
	if limit, _, ok := o.memoryLimitFinder().Container(); ok {
		return max(limit/bodyBudgetShare, least)
	}
	return least
}

// parseQuantityFlag parses flag's value s, a positive number of bytes
// ("64Mi"), or 0 for none (returned as -1).
func parseQuantityFlag(flag, s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", flag, err)
	}
	n, ok := q.AsInt64()
	if !ok || n < 0 {
		return 0, fmt.Errorf("%s must be a number of bytes", flag)
	}
	if n == 0 {
		return -1, nil
	}
	return n, nil
}
