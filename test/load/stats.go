package load

import (
	"errors"
	"math"
	"slices"
	"sort"
	"time"
)

// Distribution sums up durations: exact percentiles of the sorted samples
// (nearest rank), no histogram buckets.
type Distribution struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

// Distribute sorts a copy of ds and takes its percentiles.
func Distribute(ds []time.Duration) Distribution {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return Distribution{
		N:   len(sorted),
		P50: Percentile(sorted, 50),
		P90: Percentile(sorted, 90),
		P99: Percentile(sorted, 99),
		Max: Percentile(sorted, 100),
	}
}

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of sorted
// durations: the smallest sample that at least p% of the samples do not
// exceed. It is always one of the samples (zero when there are none), so
// p99 of 100 samples is the 99th smallest and p100 the largest.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p/100*float64(n) - 1e-9))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// Summary is what the table of docs/performance.md shows for one run.
type Summary struct {
	Plan Plan
	// Planned is Plan.Count() (fewer when the run was cancelled: the
	// requests that came due).
	Planned int
	// Sent is the requests sent (not refused as saturated); OK those with
	// a correct answer; Errors the others, saturated ones included.
	Sent, OK, Errors int
	// ErrorKinds counts the errors by Failure kind.
	ErrorKinds map[string]int
	// FirstErrors are the first few distinct error messages.
	FirstErrors []string
	// Achieved is OK answers per second, from the start of the run to its
	// last answer.
	Achieved float64
	// Latency is measured from the intended send time, Service from the
	// actual one; both over every answered request (correct or not).
	Latency, Service Distribution
	// Elapsed is the start of the run to its last answer.
	Elapsed time.Duration
	// CPUPerOK is the process's CPU time (user and system) during the run
	// per correct answer, when the caller measured it (zero: not
	// measured). In process it counts the generator too; unlike latency it
	// hardly depends on what else the machine runs.
	CPUPerOK time.Duration
	// ServerCPUPerOK is the server's CPU time per correct answer when it
	// runs as its own process (ProcessCPU; zero: not measured). CPUPerOK
	// is then the generator's alone.
	ServerCPUPerOK time.Duration
	// ServerPeakRSS is the server process's peak resident set in bytes
	// since it started, read at the end of the run (ProcessPeakRSS; zero:
	// not measured).
	ServerPeakRSS int64
	// Dials counts the connections the generator dialed during the run
	// (CountDials), when DialsCounted. The connection of the warm-up
	// carries every request while the server's HTTP/2 stream limit
	// allows: dials during a run are a storm of TLS handshakes.
	Dials        int
	DialsCounted bool
}

// maxFirstErrors bounds Summary.FirstErrors.
const maxFirstErrors = 5

// Summarize counts the run's outcomes and takes the percentiles.
func (r *Result) Summarize() Summary {
	s := Summary{Plan: r.Plan, Planned: len(r.Samples), ErrorKinds: map[string]int{}}
	latency := make([]time.Duration, 0, len(r.Samples))
	service := make([]time.Duration, 0, len(r.Samples))
	seen := map[string]bool{}
	for _, x := range r.Samples {
		if !errors.Is(x.Err, ErrSaturated) {
			s.Sent++
			latency = append(latency, x.Latency())
			service = append(service, x.Service())
			s.Elapsed = max(s.Elapsed, x.Done)
		}
		if x.Err == nil {
			s.OK++
			continue
		}
		s.Errors++
		s.ErrorKinds[KindOf(x.Err)]++
		if msg := x.Err.Error(); !seen[msg] && len(s.FirstErrors) < maxFirstErrors {
			seen[msg] = true
			s.FirstErrors = append(s.FirstErrors, msg)
		}
	}
	if s.Elapsed > 0 {
		s.Achieved = float64(s.OK) / s.Elapsed.Seconds()
	}
	s.Latency = Distribute(latency)
	s.Service = Distribute(service)
	return s
}

// Kinds lists the error kinds of s in a stable order.
func (s Summary) Kinds() []string {
	kinds := make([]string, 0, len(s.ErrorKinds))
	for k := range s.ErrorKinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}
