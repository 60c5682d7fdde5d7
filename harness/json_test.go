package harness

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// An unbounded static maximum is written as `mutatis cost -o json` writes
// an unbounded estimate (null and unbounded: true); baselines saved
// before, with 18446744073709551615, still read as unbounded.
func TestMeasurementJSONUnbounded(t *testing.T) {
	for _, c := range []struct {
		max  uint64
		want string
	}{
		{math.MaxUint64, `"staticMax":null,"unbounded":true`},
		{1200, `"staticMax":1200,"unbounded":false`},
	} {
		m := Measurement{Fixture: "f", Scale: 1, Policy: "p", Path: "spec.mutations[0]", StaticMin: 3, StaticMax: c.max, NsPerOp: 12.5}
		b, err := json.Marshal(m)
		if err != nil || !strings.Contains(string(b), c.want) {
			t.Errorf("%d: %s (%v), want %s", c.max, b, err, c.want)
		}
		var back Measurement
		if err := json.Unmarshal(b, &back); err != nil || back != m {
			t.Errorf("%d: read back %+v (%v), want %+v", c.max, back, err, m)
		}
	}
	old := `{"apiVersion":"mutatis.dev/v1alpha1","kind":"BenchResult","measurements":[{"fixture":"f","scale":1,"objectBytes":0,"policy":"p","path":"x","kind":"jsonPatch","runtimeCost":1,"staticMin":0,"staticMax":18446744073709551615,"nsPerOp":1,"allocsPerOp":0,"bytesPerOp":0,"iterations":1}]}`
	ms, err := ReadBaseline(strings.NewReader(old))
	if err != nil || len(ms) != 1 || ms[0].StaticMax != math.MaxUint64 {
		t.Errorf("an old baseline reads as %+v, %v", ms, err)
	}
	if _, err := ReadBaseline(strings.NewReader(strings.Replace(old, `"iterations"`, `"iteration"`, 1))); err == nil {
		t.Error("an unknown field of a measurement is accepted")
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, ms); err != nil || !strings.Contains(buf.String(), `"staticMax": null,`) {
		t.Errorf("WriteJSON: %s %v", buf.String(), err)
	}
}

// A time regression counts only when the time grew by MinTimeChange at
// least; cost regressions are not affected.
func TestCompareMinTimeChange(t *testing.T) {
	base := []Measurement{{Fixture: "f", Policy: "p", Path: "x", Scale: 1, RuntimeCost: 10, NsPerOp: 400}}
	cur := []Measurement{{Fixture: "f", Policy: "p", Path: "x", Scale: 1, RuntimeCost: 20, NsPerOp: 900}}
	if got := CompareWith(base, cur, CompareOptions{MaxPercent: 10, Metric: MetricBoth}); len(got) != 2 {
		t.Errorf("without a minimum: %v, want a cost and a time regression", got)
	}
	got := CompareWith(base, cur, CompareOptions{MaxPercent: 10, Metric: MetricBoth, MinTimeChange: time.Microsecond})
	if len(got) != 1 || got[0].Metric != MetricCost {
		t.Errorf("with 1µs: %v, want the cost regression only (+500ns)", got)
	}
	if got := CompareWith(base, cur, CompareOptions{MaxPercent: 10, Metric: MetricTime, MinTimeChange: 500 * time.Nanosecond}); len(got) != 1 {
		t.Errorf("with 500ns: %v, want the time regression", got)
	}
}
