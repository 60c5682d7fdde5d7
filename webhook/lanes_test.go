package webhook

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
)

// namedReview is minimalReview for a ConfigMap of this name.
func namedReview(name string) []byte {
	r := strings.Replace(minimalReview, `"name":"c"`, fmt.Sprintf(`"name":%q`, name), 1)
	return []byte(strings.Replace(r, `"namespace":"shop","operation"`, fmt.Sprintf(`"name":%q,"namespace":"shop","operation"`, name), 1))
}

// TestLanesTakenInOrderOfArrival: with one evaluation lane, reviews that
// arrive while it is taken are evaluated one at a time, in the order they
// came, whatever order Go's scheduler would have run their goroutines in;
// the gauges show the lanes and the reviews waiting for one.
func TestLanesTakenInOrderOfArrival(t *testing.T) {
	release := make(chan struct{})
	var (
		mu      sync.Mutex
		order   []string
		running int
		most    int
	)
	recording := fakeAdmitter(func(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
		mu.Lock()
		order = append(order, a.Name)
		running++
		most = max(most, running)
		mu.Unlock()
		if a.Name == "first" {
			<-release
		}
		mu.Lock()
		running--
		mu.Unlock()
		return passThrough(ctx, a)
	})
	s := newServer(t, nil, newTLS(t), func(o *Options) {
		o.Admitter = recording
		o.MaxEvaluating = 1
	})
	h := s.Handler()
	const n = 8
	answers := make(chan *httptest.ResponseRecorder, n+1)
	post := func(name string) {
		answers <- serveOnce(h, http.MethodPost, PathMutate, "application/json", namedReview(name))
	}
	go post("first")
	waitFor(t, "the first review to take the lane", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 1
	})
	var want []string
	for i := range n {
		name := fmt.Sprintf("r%d", i)
		want = append(want, name)
		go post(name)
		waitFor(t, name+" to wait for a lane", func() bool {
			return strings.Contains(scrape(t, s), fmt.Sprintf("mutatis_webhook_reviews_waiting %d\n", i+1))
		})
	}
	if text := scrape(t, s); !strings.Contains(text, "mutatis_webhook_evaluation_lanes 1\n") {
		t.Errorf("/metrics lacks mutatis_webhook_evaluation_lanes 1")
	}
	close(release)
	for range n + 1 {
		if rec := <-answers; rec.Code != http.StatusOK {
			t.Errorf("HTTP %d %q", rec.Code, rec.Body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(order[1:], ","); got != strings.Join(want, ",") {
		t.Errorf("evaluated in the order %s, want the order of arrival %s", got, strings.Join(want, ","))
	}
	if most != 1 {
		t.Errorf("%d reviews evaluated at once, want 1", most)
	}
	if text := scrape(t, s); !strings.Contains(text, "mutatis_webhook_reviews_waiting 0\n") {
		t.Errorf("/metrics: reviews still waiting after all were answered")
	}
}

// TestLaneWaitEndsAtTheDeadline: a review waiting for a lane past its
// deadline is answered as one whose deadline passed before it was
// evaluated, without waiting for the lane, and is not evaluated.
func TestLaneWaitEndsAtTheDeadline(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	var once sync.Once
	var mu sync.Mutex
	var names []string
	blocking := fakeAdmitter(func(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
		mu.Lock()
		names = append(names, a.Name)
		mu.Unlock()
		once.Do(func() { close(entered); <-release })
		return passThrough(ctx, a)
	})
	s := newServer(t, nil, newTLS(t), func(o *Options) {
		o.Admitter = blocking
		o.MaxEvaluating = 1
	})
	h := s.Handler()
	go serveOnce(h, http.MethodPost, PathMutate, "application/json", namedReview("holder"))
	<-entered
	req := httptest.NewRequest(http.MethodPost, PathMutate+"?timeout=50ms", strings.NewReader(string(namedReview("late"))))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "deadline passed before it was evaluated") {
		t.Errorf("HTTP %d %q, want 503 Timeout", rec.Code, rec.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(names) != 1 {
		t.Errorf("evaluated %v, want only the review holding the lane", names)
	}
}

// TestMaxEvaluatingDefaults: zero is GOMAXPROCS lanes, negative none.
func TestMaxEvaluatingDefaults(t *testing.T) {
	f := newTLS(t)
	for _, tc := range []struct {
		set  int
		want string
	}{
		{0, fmt.Sprintf("mutatis_webhook_evaluation_lanes %d\n", runtime.GOMAXPROCS(0))},
		{3, "mutatis_webhook_evaluation_lanes 3\n"},
		{-1, "mutatis_webhook_evaluation_lanes 0\n"},
	} {
		s := passThroughServer(t, f, func(o *Options) { o.MaxEvaluating = tc.set })
		if text := scrape(t, s); !strings.Contains(text, tc.want) {
			t.Errorf("MaxEvaluating %d: /metrics lacks %q", tc.set, tc.want)
		}
		if rec := serveOnce(s.Handler(), http.MethodPost, PathMutate, "application/json", []byte(minimalReview)); rec.Code != http.StatusOK {
			t.Errorf("MaxEvaluating %d: HTTP %d %q", tc.set, rec.Code, rec.Body)
		}
	}
}
