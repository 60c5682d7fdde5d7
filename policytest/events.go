package policytest

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Event is one line of `go test -json` (the TestEvent of cmd/test2json),
// the form tools such as gotestsum, tparse and go-junit-report read. A
// suite is a Package, a case a Test.
type Event struct {
	Time    time.Time `json:",omitzero"`
	Action  string    // start, run, output, pass, fail
	Package string    `json:",omitempty"`
	Test    string    `json:",omitempty"`
	Elapsed *float64  `json:",omitempty"` // seconds, on pass and fail
	Output  string    `json:",omitempty"`
}

// EventWriter writes a run as `go test -json` events, each case as soon
// as it has run (Case, from Options.Done) and each suite's outcome at the
// end (Finish). It is safe for use by several goroutines.
type EventWriter struct {
	mu      sync.Mutex
	enc     *json.Encoder
	now     func() time.Time
	started map[string]bool
	written map[*CaseResult]bool
	err     error
}

// NewEventWriter returns an EventWriter writing to w.
func NewEventWriter(w io.Writer) *EventWriter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &EventWriter{enc: enc, now: time.Now, started: map[string]bool{}, written: map[*CaseResult]bool{}}
}

func (e *EventWriter) emit(ev Event) {
	if e.err != nil {
		return
	}
	ev.Time = e.now()
	e.err = e.enc.Encode(ev)
}

// start writes the start event of a suite, once.
func (e *EventWriter) start(suite string) {
	if !e.started[suite] {
		e.started[suite] = true
		e.emit(Event{Action: "start", Package: suite})
	}
}

// output writes text as output events of one line each.
func (e *EventWriter) output(suite, test, text string) {
	for _, line := range strings.SplitAfter(text, "\n") {
		if line != "" {
			e.emit(Event{Action: "output", Package: suite, Test: test, Output: line})
		}
	}
}

// Case writes the events of one case: run, its output (as go test -v
// prints a test: === RUN, the failure text, --- PASS or --- FAIL) and
// pass or fail with its time.
func (e *EventWriter) Case(c *CaseResult) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.caseEvents(c)
}

func (e *EventWriter) caseEvents(c *CaseResult) {
	if e.written[c] {
		return
	}
	e.written[c] = true
	e.start(c.Suite)
	e.emit(Event{Action: "run", Package: c.Suite, Test: c.Name})
	e.output(c.Suite, c.Name, "=== RUN   "+c.FullName()+"\n")
	action, verdict := "pass", "PASS"
	if c.Status != Pass {
		action, verdict = "fail", "FAIL"
	}
	if text := CaseText(c, false); c.Status != Pass || len(c.Warnings) > 0 {
		e.output(c.Suite, c.Name, indent(text, "    "))
	}
	e.output(c.Suite, c.Name, fmt.Sprintf("--- %s: %s (%s)\n", verdict, c.FullName(), seconds(c.Elapsed)))
	elapsed := c.Elapsed.Seconds()
	e.emit(Event{Action: action, Package: c.Suite, Test: c.Name, Elapsed: &elapsed})
}

// Finish writes what the cases did not: the cases no Case call wrote, the
// suites that could not be run (their error as output, then fail) and
// every suite's outcome, as go test ends a package ("ok", or "FAIL").
// It returns the first write error.
func (e *EventWriter) Finish(r *Report) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range r.Suites {
		name := s.Name
		e.start(name)
		if s.Err != nil {
			e.output(name, "", s.Err.Error()+"\n")
		}
		failed := s.Err != nil
		for _, c := range s.Cases {
			e.caseEvents(c)
			failed = failed || c.Status != Pass
		}
		elapsed := s.Elapsed.Seconds()
		if failed {
			e.output(name, "", fmt.Sprintf("FAIL\nFAIL\t%s\t%s\n", name, seconds(s.Elapsed)))
			e.emit(Event{Action: "fail", Package: name, Elapsed: &elapsed})
			continue
		}
		e.output(name, "", fmt.Sprintf("ok  \t%s\t%s\n", name, seconds(s.Elapsed)))
		e.emit(Event{Action: "pass", Package: name, Elapsed: &elapsed})
	}
	return e.err
}
