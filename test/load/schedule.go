package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// DefaultMaxInFlight bounds the requests outstanding when Plan.MaxInFlight
// is zero: at 2,000 rps it allows half a second of backlog.
const DefaultMaxInFlight = 1000

// Plan is one constant-rate run.
type Plan struct {
	// Rate is the requests per second (> 0).
	Rate float64
	// Duration is how long requests come due: request i is due at
	// i/Rate for every i/Rate < Duration.
	Duration time.Duration
	// MaxInFlight bounds the requests outstanding (0: DefaultMaxInFlight).
	// A request due while all are in flight is not sent: it counts as an
	// error (ErrSaturated), so that an overloaded server cannot lower the
	// rate it is offered.
	MaxInFlight int
}

// Count is the number of requests the plan sends.
func (p Plan) Count() int {
	// The epsilon keeps 500 rps × 20 s at 10,000 despite rounding.
	return int(math.Ceil(p.Rate*p.Duration.Seconds() - 1e-9))
}

// Due is when request i comes due, from the start of the run. It is
// computed from i, not by adding intervals, so that it does not drift.
func (p Plan) Due(i int) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / p.Rate)
}

func (p Plan) validate() error {
	switch {
	case !(p.Rate > 0) || math.IsInf(p.Rate, 0):
		return fmt.Errorf("load: rate must be positive, not %v", p.Rate)
	case p.Duration <= 0:
		return fmt.Errorf("load: duration must be positive, not %v", p.Duration)
	case p.MaxInFlight < 0:
		return fmt.Errorf("load: max in flight must not be negative, not %d", p.MaxInFlight)
	}
	return nil
}

// A Sender sends request seq (0, 1, …) and checks its answer. It must be
// safe for concurrent use; an error marks the request failed.
type Sender func(ctx context.Context, seq int) error

// Sample is what happened to one request; the times are offsets from the
// start of the run.
type Sample struct {
	// Due is when the request was meant to be sent.
	Due time.Duration
	// Sent is when it was sent and Done when its answer was checked; both
	// are zero for a request that was never sent (ErrSaturated).
	Sent, Done time.Duration
	// Err is nil for a correct answer.
	Err error
}

// Latency is the time from the intended send to the checked answer: what a
// caller sending at the planned rate waits.
func (s Sample) Latency() time.Duration { return s.Done - s.Due }

// Service is the time from the actual send to the checked answer.
func (s Sample) Service() time.Duration { return s.Done - s.Sent }

// Result is a run's samples, indexed by request.
type Result struct {
	Plan    Plan
	Samples []Sample
	// Started is the wall-clock start of the run (offset 0).
	Started time.Time
}

// ErrSaturated marks a request that came due while Plan.MaxInFlight
// requests were outstanding; it was not sent.
var ErrSaturated = &Failure{Kind: KindSaturated, Detail: "too many requests in flight"}

// Run sends Plan.Count() requests, request i at Plan.Due(i) from now, each
// with send in a goroutine of its own while it is in flight, and waits for every answer. A request due
// while the generator was late (the goroutine scheduler, a busy machine) is
// sent at once: the generator catches up rather than shifting the
// schedule, and the delay shows in the request's latency. Cancelling ctx
// stops sending; the requests not yet due are left out of the Result.
func Run(ctx context.Context, p Plan, send Sender) (*Result, error) {
	return run(ctx, p, send, nil)
}

// run is Run; onSaturated, when set, is called for each request refused
// as saturated (tests).
func run(ctx context.Context, p Plan, send Sender, onSaturated func(seq int)) (*Result, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	limit := p.MaxInFlight
	if limit == 0 {
		limit = DefaultMaxInFlight
	}
	n := p.Count()
	samples := make([]Sample, n)
	slots := make(chan struct{}, limit)
	var wg sync.WaitGroup
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()

	start := time.Now()
	// jobs hands requests to idle workers; work sends j, then every job
	// it is handed until jobs is closed. A worker is started only for a
	// request no idle one took, so there are at most as many workers as
	// requests sent.
	jobs := make(chan job)
	work := func(j job) {
		for ok := true; ok; j, ok = <-jobs {
			sent := time.Since(start)
			serr := send(ctx, j.seq)
			// Each job writes its own element; wg.Wait orders the writes
			// before the reads.
			samples[j.seq] = Sample{Due: j.due, Sent: sent, Done: time.Since(start), Err: serr}
			<-slots
			wg.Done()
		}
	}
	var err error
	for i := range n {
		due := p.Due(i)
		if wait := due - time.Since(start); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			err = ctx.Err()
			n = i
			break
		}
		select {
		case slots <- struct{}{}:
		default:
			samples[i] = Sample{Due: due, Err: ErrSaturated}
			if onSaturated != nil {
				onSaturated(i)
			}
			continue
		}
		wg.Add(1)
		j := job{seq: i, due: due}
		// An idle worker takes the request; with none idle, a new one
		// does. Workers are kept for the run, so that each does not grow
		// a new goroutine's stack through TLS and HTTP/2 again.
		select {
		case jobs <- j:
		default:
			go work(j)
		}
	}
	close(jobs)
	wg.Wait()
	return &Result{Plan: p, Samples: samples[:n], Started: start}, err
}

// job is a request for a worker of run.
type job struct {
	seq int
	due time.Duration
}

// Failure is a failed request, with a short kind for counting.
type Failure struct {
	// Kind groups failures in the summary, e.g. "HTTP 503" or "no-patch".
	Kind string
	// Detail says what was wrong with this answer.
	Detail string
	// Err is the underlying error, if any.
	Err error
}

// Kinds of Failure.
const (
	KindSaturated  = "saturated"
	KindTransport  = "transport"
	KindTimeout    = "timeout"
	KindNotHTTP2   = "not-http2"
	KindBadAnswer  = "bad-answer"
	KindUIDEchoed  = "wrong-uid"
	KindDenied     = "denied"
	KindNoPatch    = "no-patch"
	KindBadPatch   = "bad-patch"
	KindPolicies   = "wrong-policies"
	KindIgnoredErr = "ignored-errors"
)

func (f *Failure) Error() string {
	msg := f.Kind
	if f.Detail != "" {
		msg += ": " + f.Detail
	}
	if f.Err != nil {
		msg += ": " + f.Err.Error()
	}
	return msg
}

func (f *Failure) Unwrap() error { return f.Err }

// KindOf is the kind of a request's error: the Failure's, or "other".
func KindOf(err error) string {
	var f *Failure
	if errors.As(err, &f) {
		return f.Kind
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return KindTimeout
	}
	return "other"
}
