package load

import (
	"strings"
	"testing"
	"time"
)

func TestMillisKeepsThreeSignificantDigits(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{840 * time.Microsecond, "0.84 ms"},
		{1999 * time.Microsecond, "2.00 ms"},
		{12345 * time.Microsecond, "12.3 ms"},
		{1234567 * time.Microsecond, "1,235 ms"},
		{0, "0.00 ms"},
	} {
		if got := Millis(tc.d); got != tc.want {
			t.Errorf("Millis(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestSpliceReplacesTheGeneratedSection(t *testing.T) {
	doc := []byte("# Perf\n\nintro\n" + BeginMarker + "\nold table\n" + EndMarker + "\n\nafter\n")
	got, err := Splice(doc, "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Perf\n\nintro\n" + BeginMarker + "\nnew table\n" + EndMarker + "\n\nafter\n"
	if string(got) != want {
		t.Errorf("Splice:\n%s\nwant:\n%s", got, want)
	}
	if _, err := Splice([]byte("# no markers\n"), "x"); err == nil {
		t.Error("Splice of a document without markers did not fail")
	}
	if _, err := Splice([]byte(EndMarker+"\n"+BeginMarker), "x"); err == nil {
		t.Error("Splice of markers in the wrong order did not fail")
	}
}

func TestMarkdownShowsEveryRunAndTheTarget(t *testing.T) {
	run := func(rate float64, p99 time.Duration, errs int) Summary {
		return Summary{
			Plan: Plan{Rate: rate, Duration: 20 * time.Second}, Sent: int(rate) * 20, OK: int(rate)*20 - errs, Errors: errs,
			ErrorKinds: map[string]int{KindTimeout: errs}, Achieved: rate,
			Latency: Distribution{P50: time.Millisecond, P90: time.Millisecond, P99: p99, Max: 2 * p99},
			Service: Distribution{P50: time.Millisecond, P99: p99},
		}
	}
	r := Report{
		Command: "make load", Setup: "In-process webhook.", Note: "Other builds were running.",
		Machine: Machine{CPUs: 2, GOMAXPROCS: 2, LoadAverage: "3.10 2.50 2.00", GoVersion: "go1.26", OS: "linux", Arch: "amd64"},
		When:    time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC),
		Runs:    []Summary{run(500, time.Millisecond, 0), run(2000, 3*time.Millisecond, 7)},
		Target:  2 * time.Millisecond,
	}
	r.Runs[0].CPUPerOK = 500 * time.Microsecond
	md := r.Markdown()
	for _, want := range []string{
		"from `make load`: 2 CPUs, GOMAXPROCS 2, go1.26 linux/amd64, load average 3.10 2.50 2.00 at the start",
		"> Other builds were running.",
		"| 500 | 20s | 10,000 | 10,000 | 0 | 500 | 1.00 ms | 1.00 ms | 1.00 ms | 2.00 ms | 1.00 ms | 1.00 ms | 0.50 ms |",
		"| 2,000 | 20s | 40,000 | 39,993 | 7 | 2,000 | 1.00 ms | 1.00 ms | 3.00 ms | 6.00 ms | 1.00 ms | 3.00 ms | – |",
		"Errors by kind: 2,000 rps: 7 timeout.",
		"p99 < 2.00 ms at 2,000 rps — not met (p99 3.00 ms, 7 errors)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}
