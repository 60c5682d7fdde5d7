package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/mutatis-dev/mutatis/matching"
)

// heldPages answers the list of ConfigMaps in pages of size objects, the
// continue token being the index of the page asked; the first hold pages
// are answered only when the test releases them (after telling it, on
// asked, which page was asked), and answer may fail a page.
type heldPages struct {
	pages, size, hold int
	asked             chan int
	release, stop     chan struct{}
	answer            func(page int) error
	// check is called, in the lister's goroutine, as each page is asked.
	check func(page int)
}

func (h *heldPages) react(a clienttesting.Action) (bool, runtime.Object, error) {
	k := 0
	if c := a.(clienttesting.ListActionImpl).ListOptions.Continue; c != "" {
		k, _ = strconv.Atoi(c)
	}
	if h.check != nil {
		h.check(k)
	}
	if k < h.hold {
		h.asked <- k
		select {
		case <-h.release:
		case <-h.stop:
		}
	}
	if h.answer != nil {
		if err := h.answer(k); err != nil {
			return true, nil, err
		}
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList"}}
	for i := range h.size {
		u := unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("ns")
		u.SetName(fmt.Sprintf("cm-%02d-%02d", k, i))
		list.Items = append(list.Items, u)
	}
	if k+1 < h.pages {
		list.SetContinue(strconv.Itoa(k + 1))
	}
	return true, list, nil
}

// pipelineOver is a pipeline listing h's ConfigMaps through a Lister and
// evaluating them with eval, into the returned findings.
func pipelineOver(t *testing.T, h *heldPages, workers, prefetch int, eval func() Finding) (pipeline, *[]Finding) {
	t.Helper()
	client := fakeCluster(t)
	client.PrependReactor("list", "configmaps", h.react)
	l := &Lister{Client: client, PageSize: int64(h.size), Retries: -1}
	res, ok := matching.DefaultTable().Resource(configMapsGVR)
	if !ok {
		t.Fatal("no configmaps in the table")
	}
	var out []Finding
	return pipeline{
		workers: workers, prefetch: prefetch,
		list: func(ctx context.Context, page func(matching.Resource, Page) error) error {
			return l.List(ctx, configMapsGVR, "ns", Selector{}, func(p Page) error { return page(res, p) }, nil)
		},
		eval: func(_ context.Context, _ matching.Resource, obj *unstructured.Unstructured) Finding {
			f := eval()
			f.Name = obj.GetName()
			return f
		},
		add: func(f Finding) { out = append(out, f) },
	}, &out
}

// TestPipelineReadsAhead shows the listing overlapping the evaluation,
// without timing: the workers are held on their first object while the
// next pages are asked, and the read-ahead is bounded: page k is asked
// only once the objects of the pages more than prefetch before it were
// evaluated (all but those queued for or held by the workers).
func TestPipelineReadsAhead(t *testing.T) {
	for _, c := range []struct{ workers, prefetch int }{{1, 1}, {1, 2}, {2, 3}} {
		t.Run(fmt.Sprintf("%d workers, %d pages ahead", c.workers, c.prefetch), func(t *testing.T) {
			const pages, size = 8, 12
			var evaluated atomic.Int64
			gate := make(chan struct{})
			h := &heldPages{pages: pages, size: size, hold: c.prefetch + 1, asked: make(chan int), release: make(chan struct{}), stop: make(chan struct{})}
			var mu sync.Mutex
			var violations []string
			h.check = func(k int) {
				// The lister has handed page k-1 over, so the feeder has
				// taken page k-prefetch and handed every object before it
				// to the workers' queue (4 per worker) or a worker.
				if least := int64((k-c.prefetch)*size - 5*c.workers); evaluated.Load() < least {
					mu.Lock()
					violations = append(violations, fmt.Sprintf("page %d asked after %d objects evaluated, want at least %d", k, evaluated.Load(), least))
					mu.Unlock()
				}
			}
			p, out := pipelineOver(t, h, c.workers, c.prefetch, func() Finding {
				<-gate
				evaluated.Add(1)
				return Finding{Outcome: OutcomeChange}
			})
			done := make(chan error, 1)
			go func() { done <- p.run(context.Background()) }()
			defer close(h.stop)
			// Pages 0…prefetch are asked while no object is evaluated: the
			// workers hold page 0's first objects, the gate shut.
			for want := 0; want <= c.prefetch; want++ {
				select {
				case k := <-h.asked:
					if k != want {
						t.Fatalf("page %d asked, want %d", k, want)
					}
				case err := <-done:
					t.Fatalf("the pipeline ended: %v", err)
				case <-time.After(time.Minute):
					t.Fatalf("page %d was not asked while the workers held page 0: no read-ahead", want)
				}
				if n := evaluated.Load(); n != 0 {
					t.Fatalf("%d objects evaluated", n)
				}
				h.release <- struct{}{}
			}
			for range pages * size {
				gate <- struct{}{}
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, v := range violations {
				t.Error(v)
			}
			seen := map[string]int{}
			for _, f := range *out {
				seen[f.Name]++
			}
			if len(*out) != pages*size || len(seen) != pages*size {
				t.Errorf("%d findings of %d objects, want %d of %d", len(*out), len(seen), pages*size, pages*size)
			}
		})
	}
}

func TestPipelineStops(t *testing.T) {
	t.Run("a page that fails ends the run with its error", func(t *testing.T) {
		h := &heldPages{pages: 8, size: 5, answer: func(k int) error {
			if k == 3 {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC"))
			}
			return nil
		}}
		p, _ := pipelineOver(t, h, 2, 2, func() Finding { return Finding{Outcome: OutcomeUnchanged} })
		err := p.run(context.Background())
		if err == nil || err.Error() != "listing configmaps/v1 in namespace ns: configmaps is forbidden: RBAC" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("a cancelled context ends the run while a page is read", func(t *testing.T) {
		h := &heldPages{pages: 8, size: 5, hold: 8, asked: make(chan int), release: make(chan struct{}), stop: make(chan struct{})}
		p, _ := pipelineOver(t, h, 2, 2, func() Finding { return Finding{Outcome: OutcomeUnchanged} })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.run(ctx) }()
		<-h.asked
		h.release <- struct{}{}
		<-h.asked
		cancel()
		close(h.stop)
		// The lister may ask more pages before it sees ctx: answer them.
		go func() {
			for range h.asked {
			}
		}()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}
