//go:build linux

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The memory scenario: `mutatis serve --source native` goes through
// 10,000 policy churn events (updates, deletions and creations of policies
// and bindings, each one a write to kube-apiserver and a watch event to
// mutatis) and ends with the set it started with; its live heap after GC
// must not have grown by more than memoryGrowthBound.

const (
	memoryPolicies    = 40
	memoryEvents      = 10000
	memoryWarmup      = 1000
	memoryWorkers     = 8
	memoryGrowthBound = 20 << 20
)

// heapAfterGC sends reviews (each allocates) until mutatis has run two
// garbage collections since the call and returns its metrics then:
// go_gc_heap_live_bytes is the heap the second one marked live.
func heapAfterGC(ctx context.Context, s *served, kase string) (map[string]float64, error) {
	names := []string{"go_gc_heap_live_bytes", "go_memstats_heap_inuse_bytes", "go_gc_duration_seconds_count", "process_resident_memory_bytes"}
	start, err := s.metricValues(ctx, names...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		for range 20 {
			if _, _, err := s.admit(ctx, caseSubject(kase, ""), "configmaps"); err != nil {
				return nil, err
			}
		}
		m, err := s.metricValues(ctx, names...)
		if err != nil {
			return nil, err
		}
		if m["go_gc_duration_seconds_count"] >= start["go_gc_duration_seconds_count"]+2 {
			return m, nil
		}
	}
}

// TestControllerMemory: see memoryGrowthBound.
func TestControllerMemory(t *testing.T) {
	bin := buildServe(t)
	c := StartCluster(t, NoMAP)
	s := startServe(t, bin, c, "--source", "native", "--native-plugin-disabled")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	createNamespace(t, ctx, c, faultsNS)
	// Writes as fast as kube-apiserver takes them.
	fast := *c
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	var err error
	if fast.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	const native = "admissionregistration.k8s.io/v1"
	policy := func(i, rev int) *unstructured.Unstructured {
		u := labelPolicy(fmt.Sprintf("mem-%d", i), rev, "")
		u.SetAPIVersion(native)
		return u
	}
	binding := func(i, rev int) *unstructured.Unstructured {
		// rev only changes a label, so that an update is an event.
		u := caseBinding(native, fmt.Sprintf("mem-%d", i), "memory", "", "")
		u.SetLabels(map[string]string{"rev": strconv.Itoa(rev)})
		return u
	}
	var mu sync.Mutex
	policies, bindings := map[string]string{}, map[string]string{}
	// write creates u, or updates it at the resourceVersion last written
	// (a policy and its binding are only written by one worker, and
	// mutatis writes nothing to native objects), and records it.
	write := func(u *unstructured.Unstructured, record map[string]string) error {
		ri, err := fast.resourceFor(u)
		if err != nil {
			return err
		}
		mu.Lock()
		rv, exists := record[u.GetName()]
		mu.Unlock()
		var got *unstructured.Unstructured
		if exists {
			u.SetResourceVersion(rv)
			got, err = ri.Update(ctx, u, metav1.UpdateOptions{})
		} else {
			got, err = ri.Create(ctx, u, metav1.CreateOptions{})
		}
		if err != nil {
			return err
		}
		mu.Lock()
		record[u.GetName()] = got.GetResourceVersion()
		mu.Unlock()
		return nil
	}
	remove := func(u *unstructured.Unstructured, record map[string]string) error {
		mu.Lock()
		delete(record, u.GetName())
		mu.Unlock()
		return fast.Delete(ctx, u)
	}
	// churn makes n events over the policies, memoryWorkers at a time
	// (each owns every memoryWorkers-th policy), and leaves every policy
	// and binding in place. Each round of a policy is six events: its
	// update, its binding's update, and the deletion and creation of each.
	rev := 1
	churn := func(n int) {
		t.Helper()
		rev++
		var done atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, memoryWorkers)
		for w := range memoryWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for round := 0; ; round++ {
					for i := w; i < memoryPolicies; i += memoryWorkers {
						if done.Add(6) > int64(n) {
							return
						}
						r := rev*1000 + round
						for _, op := range []func() error{
							func() error { return write(policy(i, r), policies) },
							func() error { return write(binding(i, r), bindings) },
							func() error { return remove(binding(i, r), bindings) },
							func() error { return remove(policy(i, r), policies) },
							func() error { return write(policy(i, r+1), policies) },
							func() error { return write(binding(i, r+1), bindings) },
						} {
							if err := op(); err != nil {
								errs <- err
								return
							}
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if _, err := s.waitStatus(ctx, policies, bindings); err != nil {
			t.Fatalf("after %d events: %v", n, err)
		}
	}
	for i := range memoryPolicies {
		if err := write(policy(i, 1), policies); err != nil {
			t.Fatal(err)
		}
		if err := write(binding(i, 1), bindings); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.waitStatus(ctx, policies, bindings); err != nil {
		t.Fatal(err)
	}
	// Warm up (caches, pools and buffers reach their working size), then
	// measure.
	churn(memoryWarmup)
	before, err := heapAfterGC(ctx, s, "memory")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	churn(memoryEvents)
	took := time.Since(start)
	after, err := heapAfterGC(ctx, s, "memory")
	if err != nil {
		t.Fatal(err)
	}
	// Every policy is served.
	got, resp, err := s.admit(ctx, caseSubject("memory", ""), "configmaps")
	if err != nil || !resp.Allowed || len(faultLabels(got)) != memoryPolicies {
		t.Fatalf("after the churn: %v %+v, labels %v", err, resp, faultLabels(got))
	}
	mb := func(m map[string]float64, name string) string { return fmt.Sprintf("%.1f MB", m[name]/1e6) }
	t.Logf("%d churn events in %v over %d policies and bindings; live heap after GC %s → %s, heap in use %s → %s, RSS %s → %s",
		memoryEvents, took.Round(time.Second), memoryPolicies,
		mb(before, "go_gc_heap_live_bytes"), mb(after, "go_gc_heap_live_bytes"),
		mb(before, "go_memstats_heap_inuse_bytes"), mb(after, "go_memstats_heap_inuse_bytes"),
		mb(before, "process_resident_memory_bytes"), mb(after, "process_resident_memory_bytes"))
	if growth := after["go_gc_heap_live_bytes"] - before["go_gc_heap_live_bytes"]; growth > memoryGrowthBound {
		t.Errorf("the live heap grew by %.1f MB over %d churn events (bound %d MB)", growth/1e6, memoryEvents, memoryGrowthBound>>20)
	}
}
