package policytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// testEvent is cmd/test2json's TestEvent, as `go test -json` writes it.
type testEvent struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed *float64
	Output  string
}

// TestEventsAreGoTestJSON: a run written as events decodes line by line
// into test2json's TestEvent (and nothing else), every case runs, prints
// and passes or fails with its time, every suite starts and ends, and an
// invalid suite fails with its error as output.
func TestEventsAreGoTestJSON(t *testing.T) {
	var buf bytes.Buffer
	ew := NewEventWriter(&buf)
	rep, err := RunFiles(context.Background(), []string{"testdata/broken", "testdata/invalid"}, Options{Done: ew.Case})
	if err != nil {
		t.Fatal(err)
	}
	if err := ew.Finish(rep); err != nil {
		t.Fatal(err)
	}
	var got []string
	outputs := map[string]string{}
	for i, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var ev testEvent
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("line %d %s: %v", i+1, line, err)
		}
		if ev.Time.IsZero() {
			t.Errorf("line %d has no Time: %s", i+1, line)
		}
		if (ev.Action == "pass" || ev.Action == "fail") != (ev.Elapsed != nil) {
			t.Errorf("line %d: Elapsed on pass and fail only: %s", i+1, line)
		}
		if ev.Action == "output" {
			outputs[ev.Package+"/"+ev.Test] += ev.Output
			continue
		}
		got = append(got, fmt.Sprintf("%s %s/%s", ev.Action, ev.Package, ev.Test))
	}
	// Cases run in parallel: the order of cases is not fixed, each
	// case's events are.
	want := map[string][]string{
		"broken-sidecar/the sidecar is injected":         {"run", "fail"},
		"broken-sidecar/an unlabelled pod is left alone": {"run", "pass"},
	}
	seen := map[string][]string{}
	for _, g := range got {
		action, name, _ := strings.Cut(g, " ")
		seen[name] = append(seen[name], action)
	}
	for name, actions := range want {
		if fmt.Sprint(seen[name]) != fmt.Sprint(actions) {
			t.Errorf("%s: events %v, want %v", name, seen[name], actions)
		}
	}
	if s := fmt.Sprint(seen["broken-sidecar/"]); s != "[start fail]" {
		t.Errorf("suite broken-sidecar: events %s, want [start fail]", s)
	}
	if s := fmt.Sprint(seen["testdata/invalid/invalid.mutatis-test.yaml/"]); s != "[start fail]" {
		t.Errorf("the invalid suite: events %s, want [start fail]", s)
	}
	for name, w := range map[string][]string{
		"broken-sidecar/the sidecar is injected":      {"=== RUN   broken-sidecar/the sidecar is injected\n", "    objectContains: the final object does not contain the expected fields\n", "\n--- FAIL: broken-sidecar/the sidecar is injected ("},
		"broken-sidecar/":                             {"FAIL\nFAIL\tbroken-sidecar\t"},
		"testdata/invalid/invalid.mutatis-test.yaml/": {`cases[1].operation: Unsupported value: "PATCH"`},
	} {
		for _, s := range w {
			if !strings.Contains(outputs[name], s) {
				t.Errorf("output of %s lacks %q:\n%s", name, s, outputs[name])
			}
		}
	}
	if strings.Index(buf.String(), `"Test":"the sidecar is injected"`) > strings.Index(buf.String(), `"Action":"fail","Package":"broken-sidecar","Elapsed"`) {
		t.Error("the suite's outcome comes before its cases")
	}
}
