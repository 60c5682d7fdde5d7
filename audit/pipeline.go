package audit

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/matching"
)

// DefaultPrefetch is how many pages the lister reads ahead of the page
// whose objects are being handed to the workers (Options.Prefetch): the
// next page is requested, served and decoded while the workers evaluate
// the current one, instead of the workers idling at every page boundary.
const DefaultPrefetch = 2

// pipeline is the audit's flow: one goroutine lists pages (list), up to
// prefetch of them ahead; one feeds their objects to workers goroutines
// that evaluate them (eval); the caller's goroutine hands each result to
// add, and calls tick every tickEvery meanwhile.
//
// Memory: at most prefetch+1 listed pages are held besides the objects
// queued for the workers (4 per worker) and being evaluated, each object
// released as soon as its evaluation is done (the feeder drops a page's
// reference to each object it hands over).
type pipeline struct {
	workers, prefetch int
	list              func(ctx context.Context, page func(matching.Resource, Page) error) error
	eval              func(ctx context.Context, res matching.Resource, obj *unstructured.Unstructured) Finding
	add               func(Finding)
	tick              func()
	tickEvery         time.Duration
}

// listed is one page of one resource.
type listed struct {
	res   matching.Resource
	items []unstructured.Unstructured
}

type job struct {
	res matching.Resource
	obj *unstructured.Unstructured
}

// run runs the pipeline until the list ends and every listed object is
// evaluated and added, the list fails or ctx ends: the error is the
// list's, else ctx's.
func (p pipeline) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The lister sends a page when it has one and blocks while prefetch
	// pages wait: prefetch-1 in the channel and the one it holds.
	pages := make(chan listed, max(p.prefetch, 1)-1)
	jobs := make(chan job, 4*p.workers)
	findings := make(chan Finding, 4*p.workers)
	listErr := make(chan error, 1)
	go func() {
		defer close(pages)
		err := p.list(ctx, func(res matching.Resource, pg Page) error {
			select {
			case pages <- listed{res, pg.Items}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil {
			cancel() // nothing after a failed list is reported: stop the workers
		}
		listErr <- err
	}()
	go func() {
		defer close(jobs)
		for pg := range pages {
			for i := range pg.items {
				// The job holds the object alone, not the page: each
				// object is garbage once evaluated.
				obj := pg.items[i]
				pg.items[i] = unstructured.Unstructured{}
				select {
				case jobs <- job{pg.res, &obj}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	done := make(chan struct{})
	for range p.workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range jobs {
				if ctx.Err() != nil {
					return
				}
				f := p.eval(ctx, j.res, j.obj)
				select {
				case findings <- f:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		for range p.workers {
			<-done
		}
		close(findings)
	}()
	var tick <-chan time.Time
	if p.tick != nil {
		t := time.NewTicker(p.tickEvery)
		defer t.Stop()
		tick = t.C
	}
	for open := true; open; {
		select {
		case f, ok := <-findings:
			if !ok {
				open = false
				break
			}
			p.add(f)
		case <-tick:
			p.tick()
		}
	}
	if err := <-listErr; err != nil {
		return err
	}
	return ctx.Err()
}
