package load

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPlanCountsTheRequestsDueWithinTheDuration(t *testing.T) {
	for _, tc := range []struct {
		rate     float64
		duration time.Duration
		want     int
	}{
		{500, 20 * time.Second, 10_000},
		{1000, 20 * time.Second, 20_000},
		{2000, 20 * time.Second, 40_000},
		{200, time.Second, 200},
		{3, time.Second, 3},
		{2.5, time.Second, 3}, // due at 0, 0.4 s and 0.8 s
		{1, 500 * time.Millisecond, 1},
	} {
		if got := (Plan{Rate: tc.rate, Duration: tc.duration}).Count(); got != tc.want {
			t.Errorf("%v rps for %v: Count() = %d, want %d", tc.rate, tc.duration, got, tc.want)
		}
	}
}

func TestPlanDueTimesDoNotDrift(t *testing.T) {
	p := Plan{Rate: 3, Duration: time.Hour}
	// 1/3 s added 9,000 times would drift; computed from i it is exact.
	if got, want := p.Due(9000), 3000*time.Second; got != want {
		t.Errorf("Due(9000) = %v, want %v", got, want)
	}
	if got, want := (Plan{Rate: 2000}).Due(3), 1500*time.Microsecond; got != want {
		t.Errorf("2,000 rps: Due(3) = %v, want %v", got, want)
	}
}

func TestRunRefusesBadPlans(t *testing.T) {
	send := func(context.Context, int) error { return nil }
	for _, p := range []Plan{
		{Rate: 0, Duration: time.Second},
		{Rate: -1, Duration: time.Second},
		{Rate: 10, Duration: 0},
		{Rate: 10, Duration: time.Second, MaxInFlight: -1},
	} {
		if _, err := Run(context.Background(), p, send); err == nil {
			t.Errorf("Run(%+v) did not fail", p)
		}
	}
}

func TestRunSendsEveryRequestOnceAndNeverEarly(t *testing.T) {
	p := Plan{Rate: 400, Duration: 250 * time.Millisecond}
	var mu sync.Mutex
	calls := map[int]int{}
	res, err := Run(context.Background(), p, func(_ context.Context, seq int) error {
		mu.Lock()
		calls[seq]++
		mu.Unlock()
		if seq%10 == 3 {
			return errors.New("boom")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Samples) != 100 || len(calls) != 100 {
		t.Fatalf("%d samples, %d requests sent; want 100 of each", len(res.Samples), len(calls))
	}
	for i, s := range res.Samples {
		if calls[i] != 1 {
			t.Errorf("request %d sent %d times", i, calls[i])
		}
		if s.Due != p.Due(i) {
			t.Errorf("request %d: due %v, want %v", i, s.Due, p.Due(i))
		}
		if s.Sent < s.Due || s.Done < s.Sent {
			t.Errorf("request %d: due %v, sent %v, done %v: out of order", i, s.Due, s.Sent, s.Done)
		}
		if s.Latency() < s.Service() {
			t.Errorf("request %d: latency %v below service time %v", i, s.Latency(), s.Service())
		}
		if wantErr := i%10 == 3; (s.Err != nil) != wantErr {
			t.Errorf("request %d: error %v", i, s.Err)
		}
	}
}

func TestRunCountsRequestsDueWhileAllSlotsAreTakenAsErrors(t *testing.T) {
	p := Plan{Rate: 1000, Duration: 50 * time.Millisecond, MaxInFlight: 2}
	n := p.Count()
	release := make(chan struct{})
	saturated := 0
	// The two senders hold their slots until every other request has been
	// refused, so the outcome does not depend on timing.
	res, err := run(context.Background(), p, func(context.Context, int) error {
		<-release
		return nil
	}, func(int) {
		if saturated++; saturated == n-2 {
			close(release)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summarize()
	if s.Sent != 2 || s.OK != 2 || s.Errors != n-2 || s.ErrorKinds[KindSaturated] != n-2 {
		t.Errorf("sent %d, ok %d, errors %d (%v); want 2, 2, %d saturated", s.Sent, s.OK, s.Errors, s.ErrorKinds, n-2)
	}
	for i, x := range res.Samples[2:] {
		if !errors.Is(x.Err, ErrSaturated) || x.Sent != 0 || x.Done != 0 {
			t.Errorf("request %d: %+v, want refused as saturated", i+2, x)
		}
	}
}

// TestRunStopsSendingWhenCancelled: the fifth request cancels the run,
// and the run stops sending. The senders hold their slots until the cancel
// (five slots), so that however late the scheduler gets to see it (the
// fifth sender's goroutine may start late on a loaded machine, while
// requests fall due), the requests due meanwhile are refused as saturated,
// not sent: the outcome does not depend on timing. One more request may
// be sent: one whose check of the context came just before the cancel,
// and found a slot the cancel freed.
func TestRunStopsSendingWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := Plan{Rate: 100, Duration: time.Hour, MaxInFlight: 5}
	var sent atomic.Int32
	res, err := Run(ctx, p, func(ctx context.Context, seq int) error {
		sent.Add(1)
		if seq == 4 {
			cancel()
		}
		<-ctx.Done()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := sent.Load(); n < 5 || n > 6 {
		t.Errorf("%d requests sent, want the 5 up to the one that cancelled (and at most one more)", n)
	}
	notRefused := 0
	for i, x := range res.Samples {
		switch {
		case i < 5 && x.Err != nil:
			t.Errorf("request %d: %v, want it sent", i, x.Err)
		case errors.Is(x.Err, ErrSaturated):
		default:
			notRefused++
		}
	}
	if n := int(sent.Load()); notRefused != n {
		t.Errorf("%d of %d samples not refused as saturated, want the %d sent", notRefused, len(res.Samples), n)
	}
}
