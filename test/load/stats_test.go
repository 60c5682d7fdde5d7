package load

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func ms(n ...int) []time.Duration {
	out := make([]time.Duration, len(n))
	for i, v := range n {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

func TestPercentileIsTheNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"no samples", nil, 99, 0},
		{"one sample", ms(7), 50, 7 * time.Millisecond},
		{"p50 of 1..100", hundred, 50, 50 * time.Millisecond},
		{"p90 of 1..100", hundred, 90, 90 * time.Millisecond},
		{"p99 of 1..100", hundred, 99, 99 * time.Millisecond},
		{"p100 is the maximum", hundred, 100, 100 * time.Millisecond},
		{"p99 of ten samples is the largest", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"p50 of ten samples is the fifth", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 50, 5 * time.Millisecond},
		{"p50 of four samples is the second", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p0 is the minimum", ms(3, 4), 0, 3 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("Percentile(%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

func TestDistributeSortsACopy(t *testing.T) {
	in := ms(9, 1, 5, 3, 7)
	d := Distribute(in)
	if !slices.Equal(in, ms(9, 1, 5, 3, 7)) {
		t.Errorf("Distribute reordered its input: %v", in)
	}
	want := Distribution{N: 5, P50: 5 * time.Millisecond, P90: 9 * time.Millisecond, P99: 9 * time.Millisecond, Max: 9 * time.Millisecond}
	if d != want {
		t.Errorf("Distribute = %+v, want %+v", d, want)
	}
}

func TestSummarizeCountsOutcomesAndMeasuresFromTheDueTime(t *testing.T) {
	r := &Result{Plan: Plan{Rate: 4, Duration: time.Second}, Samples: []Sample{
		{Due: 0, Sent: 1 * time.Millisecond, Done: 3 * time.Millisecond},
		{Due: 250 * time.Millisecond, Sent: 260 * time.Millisecond, Done: 262 * time.Millisecond},
		{Due: 500 * time.Millisecond, Sent: 500 * time.Millisecond, Done: 600 * time.Millisecond, Err: &Failure{Kind: "HTTP 500"}},
		{Due: 750 * time.Millisecond, Err: ErrSaturated},
	}}
	s := r.Summarize()
	if s.Planned != 4 || s.Sent != 3 || s.OK != 2 || s.Errors != 2 {
		t.Errorf("planned %d, sent %d, ok %d, errors %d; want 4, 3, 2, 2", s.Planned, s.Sent, s.OK, s.Errors)
	}
	if s.ErrorKinds["HTTP 500"] != 1 || s.ErrorKinds[KindSaturated] != 1 || !slices.Equal(s.Kinds(), []string{"HTTP 500", KindSaturated}) {
		t.Errorf("error kinds %v", s.ErrorKinds)
	}
	if s.Elapsed != 600*time.Millisecond {
		t.Errorf("elapsed %v, want 600ms (the last answer)", s.Elapsed)
	}
	if want := 2 / 0.6; s.Achieved < want-1e-9 || s.Achieved > want+1e-9 {
		t.Errorf("achieved %v rps, want %v", s.Achieved, want)
	}
	// Latency counts from the due time: 3, 12 and 100 ms; service time
	// from the send: 2, 2 and 100 ms. The saturated request has neither.
	if want := (Distribution{N: 3, P50: 12 * time.Millisecond, P90: 100 * time.Millisecond, P99: 100 * time.Millisecond, Max: 100 * time.Millisecond}); s.Latency != want {
		t.Errorf("latency %+v, want %+v", s.Latency, want)
	}
	if want := (Distribution{N: 3, P50: 2 * time.Millisecond, P90: 100 * time.Millisecond, P99: 100 * time.Millisecond, Max: 100 * time.Millisecond}); s.Service != want {
		t.Errorf("service %+v, want %+v", s.Service, want)
	}
	if len(s.FirstErrors) != 2 {
		t.Errorf("first errors %q", s.FirstErrors)
	}
}

func TestKindOfNamesFailuresAndTimeouts(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&Failure{Kind: KindNoPatch}, KindNoPatch},
		{ErrSaturated, KindSaturated},
		{errors.Join(errors.New("x"), &Failure{Kind: KindDenied}), KindDenied},
		{errors.New("something else"), "other"},
	} {
		if got := KindOf(tc.err); got != tc.want {
			t.Errorf("KindOf(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
