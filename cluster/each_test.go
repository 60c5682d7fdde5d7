package cluster

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestAdmitEach: requests admitted one at a time and four at a time give
// the same outcomes, in request order; the chain is built once, and not
// at all when no request gets past its decoding; the end of the context
// ends the run.
func TestAdmitEach(t *testing.T) {
	ctx := context.Background()
	cl, policies, bindings := chainCluster(t)
	var builds atomic.Int32
	lazy := func() *LazyChain {
		return NewLazyChain(func() (Chain, error) {
			builds.Add(1)
			ev, err := cl.Evaluator(nil, policies, bindings)
			return Chain{Policies: ev}, err
		})
	}
	pod := func(name string, labels map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": "shop", "labels": labels},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}},
		}}
	}
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}}
	requests := func() []Request {
		return []Request{
			{Object: pod("web", map[string]any{"app": "web"})},
			{Object: widget.DeepCopy()},
			{Object: pod("logged", map[string]any{"inject-logging": "true"})},
			{Object: pod("tiered", map[string]any{"tiered": "true"})},
			{Object: pod("plain", nil)},
		}
	}
	type summary struct {
		Name       string
		DecodeErr  string
		Before     map[string]any
		Object     map[string]any
		Reinvoked  bool
		Containers int
	}
	admit := func(t *testing.T, workers int) []summary {
		t.Helper()
		builds.Store(0)
		ch := lazy()
		defer ch.Close()
		var got []summary
		err := cl.AdmitEach(ctx, requests(), ch, AdmitOptions{Workers: workers}, func(i int, out *Outcome) error {
			if i != len(got) {
				t.Fatalf("outcome %d after %d", i, len(got))
			}
			s := summary{Before: out.Before}
			if out.DecodeErr != nil {
				s.DecodeErr = out.DecodeErr.Error()
			} else {
				if out.ChainErr != nil || out.ObjectErr != nil || out.Err != nil {
					t.Fatalf("request %d: %v %v %v", i, out.ChainErr, out.ObjectErr, out.Err)
				}
				s.Object, s.Reinvoked = out.Admission.Object, out.Admission.Result.Reinvoked
				s.Name = out.Decoded.Attributes.Name
			}
			got = append(got, s)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := builds.Load(); n != 1 {
			t.Errorf("chain built %d times, want once", n)
		}
		return got
	}
	one := admit(t, 1)
	if len(one) != 5 || one[1].DecodeErr == "" || one[2].Object == nil || !one[2].Reinvoked {
		t.Fatalf("one at a time: %+v", one)
	}
	if four := admit(t, 4); !reflect.DeepEqual(one, four) {
		t.Errorf("four at a time differ:\n%+v\nwant\n%+v", four, one)
	}

	builds.Store(0)
	err := cl.AdmitEach(ctx, []Request{{Object: widget.DeepCopy()}, {Object: widget.DeepCopy()}}, lazy(), AdmitOptions{Workers: 2}, func(int, *Outcome) error { return nil })
	if err != nil || builds.Load() != 0 {
		t.Errorf("refused at decoding: err %v, %d builds, want none", err, builds.Load())
	}

	stop := errors.New("stop")
	for _, workers := range []int{1, 3} {
		calls := 0
		err := cl.AdmitEach(ctx, requests(), lazy(), AdmitOptions{Workers: workers}, func(int, *Outcome) error {
			calls++
			return stop
		})
		if !errors.Is(err, stop) || calls != 1 {
			t.Errorf("workers %d: yield's error: %v after %d calls", workers, err, calls)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := cl.AdmitEach(cctx, requests(), lazy(), AdmitOptions{Workers: workers}, func(int, *Outcome) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Errorf("workers %d: ended context: %v", workers, err)
		}
	}
}
