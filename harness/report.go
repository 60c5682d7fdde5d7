package harness

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mutatis-dev/mutatis/compiler"
)

// Baseline is the saved form of a run (`mutatis bench --save`).
type Baseline struct {
	APIVersion   string        `json:"apiVersion"`
	Kind         string        `json:"kind"`
	Measurements []Measurement `json:"measurements"`
}

// NewBaseline wraps measurements for saving.
func NewBaseline(ms []Measurement) Baseline {
	return Baseline{APIVersion: "mutatis.dev/v1alpha1", Kind: "BenchResult", Measurements: ms}
}

// WriteJSON writes ms as a Baseline.
func WriteJSON(w io.Writer, ms []Measurement) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(NewBaseline(ms))
}

// ReadBaseline reads a file written by WriteJSON.
func ReadBaseline(r io.Reader) ([]Measurement, error) {
	var b Baseline
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("reading baseline: %w", err)
	}
	if b.Kind != "BenchResult" {
		return nil, fmt.Errorf("reading baseline: kind %q, want BenchResult", b.Kind)
	}
	return b.Measurements, nil
}

// Metric selects what a baseline comparison looks at.
type Metric string

// Metrics a comparison can use.
const (
	// MetricCost compares runtime cost: deterministic, the same on every
	// machine.
	MetricCost Metric = "cost"
	// MetricTime compares ns/op: meaningful on the same machine only.
	MetricTime Metric = "time"
	// MetricBoth flags a regression in either.
	MetricBoth Metric = "both"
)

// Regression is a measurement worse than its baseline by more than the
// allowed percentage.
type Regression struct {
	Key            string
	Metric         Metric
	Base, Current  float64
	PercentChanged float64
}

func (r Regression) String() string {
	unit := "cost units"
	if r.Metric == MetricTime {
		unit = "ns/op"
	}
	return fmt.Sprintf("%s: %s %.0f → %.0f %s (+%.1f%%)", r.Key, r.Metric, r.Base, r.Current, unit, r.PercentChanged)
}

// Compare returns the measurements of current that are worse than the same
// measurement in base by more than maxPercent, in current's order.
// Measurements without a counterpart are ignored.
func Compare(base, current []Measurement, maxPercent float64, metric Metric) []Regression {
	return CompareWith(base, current, CompareOptions{MaxPercent: maxPercent, Metric: metric})
}

// CompareOptions tune CompareWith.
type CompareOptions struct {
	// MaxPercent is the allowed increase in percent.
	MaxPercent float64
	// Metric is what is compared.
	Metric Metric
	// MinTimeChange is the least increase of ns/op that counts as a time
	// regression, whatever the percentage: a fast expression's time
	// moves by more than any sensible percentage from run to run, and a
	// CI gate must not flake on it.
	MinTimeChange time.Duration
}

// CompareWith is Compare with the minimum absolute change of time.
func CompareWith(base, current []Measurement, o CompareOptions) []Regression {
	maxPercent, metric := o.MaxPercent, o.Metric
	byKey := make(map[string]Measurement, len(base))
	for _, m := range base {
		byKey[m.Key()] = m
	}
	var out []Regression
	check := func(key string, met Metric, b, c float64) {
		if b <= 0 {
			if c > 0 && met == MetricCost {
				out = append(out, Regression{Key: key, Metric: met, Base: b, Current: c, PercentChanged: math.Inf(1)})
			}
			return
		}
		if pct := (c - b) / b * 100; pct > maxPercent {
			out = append(out, Regression{Key: key, Metric: met, Base: b, Current: c, PercentChanged: pct})
		}
	}
	for _, m := range current {
		b, ok := byKey[m.Key()]
		if !ok {
			continue
		}
		if metric == MetricCost || metric == MetricBoth {
			check(m.Key(), MetricCost, float64(b.RuntimeCost), float64(m.RuntimeCost))
		}
		if (metric == MetricTime || metric == MetricBoth) && m.NsPerOp-b.NsPerOp >= float64(o.MinTimeChange.Nanoseconds()) {
			check(m.Key(), MetricTime, b.NsPerOp, m.NsPerOp)
		}
	}
	return out
}

// WriteTable writes one aligned row per measurement.
func WriteTable(w io.Writer, ms []Measurement) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIXTURE\tSCALE\tOBJECT\tPOLICY\tEXPRESSION\tCOST\tSTATIC MAX\tLIMIT %\tNS/OP\tALLOCS/OP\tCOST/µs\t")
	for _, m := range ms {
		name := m.Policy
		if m.Binding != "" {
			name += "/" + m.Binding
		}
		if m.Param != "" {
			name += " (" + m.Param + ")"
		}
		cost := fmt.Sprint(m.RuntimeCost)
		if m.Err != "" {
			cost = "error"
		}
		fmt.Fprintf(tw, "%s\t×%d\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%.0f\t%.1f\t\n",
			m.Fixture, m.Scale, bytesString(m.ObjectBytes), name, m.Path, cost, staticString(m.StaticMax),
			m.LimitShare()*100, nsString(m.NsPerOp), m.AllocsPerOp, m.CostPerMicrosecond())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range ms {
		if m.Err != "" {
			fmt.Fprintf(w, "error: %s %s at ×%d: %s\n", m.Policy, m.Path, m.Scale, m.Err)
		}
	}
	return nil
}

func staticString(max uint64) string {
	if max == math.MaxUint64 {
		return "unbounded"
	}
	return fmt.Sprint(max)
}

func bytesString(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%dB", n)
	}
}

func nsString(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2fms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1fµs", ns/1e3)
	default:
		return fmt.Sprintf("%.0fns", ns)
	}
}

// Series is the growth of one expression with object size: one point per
// scale.
type Series struct {
	Fixture, Policy, Binding, Path string
	StaticMax                      uint64
	Points                         []Measurement
}

// Title names the series.
func (s Series) Title() string {
	t := s.Policy
	if s.Binding != "" {
		t += "/" + s.Binding
	}
	return t + " " + s.Path + " on " + s.Fixture
}

// Group collects measurements into series (one per expression and
// fixture), points ordered by scale.
func Group(ms []Measurement) []Series {
	idx := map[string]int{}
	var out []Series
	for _, m := range ms {
		k := m.Fixture + "|" + m.Policy + "|" + m.Binding + "|" + m.Param + "|" + m.Path
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Series{Fixture: m.Fixture, Policy: m.Policy, Binding: m.Binding, Path: m.Path, StaticMax: m.StaticMax})
		}
		out[i].Points = append(out[i].Points, m)
	}
	for i := range out {
		sort.SliceStable(out[i].Points, func(a, b int) bool { return out[i].Points[a].Scale < out[i].Points[b].Scale })
	}
	return out
}

// WriteChart draws, per series with more than one scale, how runtime cost
// and time grow with the object, as horizontal bars on a log scale, with
// the static ceiling.
func WriteChart(w io.Writer, ms []Measurement) {
	const width = 40
	for _, s := range Group(ms) {
		if len(s.Points) < 2 {
			continue
		}
		fmt.Fprintf(w, "%s (static max %s, per-call limit %d)\n", s.Title(), staticString(s.StaticMax), compiler.PerCallLimit)
		maxCost, maxNs := 1.0, 1.0
		for _, p := range s.Points {
			maxCost = math.Max(maxCost, float64(p.RuntimeCost))
			maxNs = math.Max(maxNs, p.NsPerOp)
		}
		bar := func(v, max float64) string {
			if v <= 0 {
				return ""
			}
			n := int(math.Round(math.Log10(1+v) / math.Log10(1+max) * width))
			return strings.Repeat("█", n)
		}
		for _, p := range s.Points {
			fmt.Fprintf(w, "  ×%-5d %9s  cost %-*s %d\n", p.Scale, bytesString(p.ObjectBytes), width, bar(float64(p.RuntimeCost), maxCost), p.RuntimeCost)
			fmt.Fprintf(w, "  %16s  time %-*s %s\n", "", width, bar(p.NsPerOp, maxNs), nsString(p.NsPerOp))
		}
	}
}

// WriteHTML writes a self-contained page with one SVG plot per series:
// runtime cost against object size (log-log), the static estimate drawn
// as the ceiling (or the per-call limit when the estimate is unbounded),
// and ns/op on the right axis; then the table.
func WriteHTML(w io.Writer, ms []Measurement) error {
	type plot struct {
		Title string
		SVG   template.HTML
	}
	var plots []plot
	for _, s := range Group(ms) {
		plots = append(plots, plot{Title: s.Title(), SVG: template.HTML(seriesSVG(s))})
	}
	var table strings.Builder
	if err := WriteTable(&table, ms); err != nil {
		return err
	}
	return reportTemplate.Execute(w, struct {
		Plots []plot
		Table string
	}{plots, table.String()})
}

var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>mutatis bench</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
h2{font-size:1em;margin-top:2em}
pre{background:#f6f8fa;padding:1em;overflow:auto}
.cost{stroke:#0969da;fill:none;stroke-width:2}.costpt{fill:#0969da}
.time{stroke:#cf222e;fill:none;stroke-width:2;stroke-dasharray:2 3}.timept{fill:#cf222e}
.ceiling{stroke:#1a7f37;stroke-dasharray:6 4}.limit{stroke:#9a6700;stroke-dasharray:6 4}
.axis{stroke:#888}text{font-size:11px}
</style></head><body>
<h1>mutatis bench</h1>
<p>Runtime cost (blue, left axis) and time per evaluation (red, right axis) against
object size. The green dashed line is the static cost estimate (the ceiling); when the
estimate is unbounded the amber line is the per-call limit (1,000,000).</p>
{{range .Plots}}<h2>{{.Title}}</h2>
{{.SVG}}
{{end}}<h2>Measurements</h2>
<pre>{{.Table}}</pre>
</body></html>
`))

// seriesSVG renders one series. Values are numbers only, so the SVG is
// built with fmt; titles go through html/template.
func seriesSVG(s Series) string {
	const W, H, L, R, T, B = 640.0, 300.0, 70.0, 70.0, 20.0, 40.0
	minX, maxX := math.Inf(1), math.Inf(-1)
	maxCost, maxNs := 1.0, 1.0
	for _, p := range s.Points {
		x := float64(max(p.ObjectBytes, 1))
		minX, maxX = math.Min(minX, x), math.Max(maxX, x)
		maxCost = math.Max(maxCost, float64(p.RuntimeCost))
		maxNs = math.Max(maxNs, p.NsPerOp)
	}
	ceiling := float64(compiler.PerCallLimit)
	ceilingClass := "limit"
	if s.StaticMax != math.MaxUint64 {
		ceiling, ceilingClass = float64(s.StaticMax), "ceiling"
	}
	maxCost = math.Max(maxCost, ceiling)
	if maxX == minX {
		maxX = minX * 10
	}
	lx := func(v float64) float64 {
		return L + (math.Log10(v)-math.Log10(minX))/(math.Log10(maxX)-math.Log10(minX))*(W-L-R)
	}
	ly := func(v, top float64) float64 { return H - B - math.Log10(1+v)/math.Log10(1+top)*(H-T-B) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`, W, H, W, H)
	fmt.Fprintf(&b, `<line class="axis" x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f"/>`, L, H-B, W-R, H-B)
	fmt.Fprintf(&b, `<line class="axis" x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f"/>`, L, T, L, H-B)
	fmt.Fprintf(&b, `<line class="axis" x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f"/>`, W-R, T, W-R, H-B)
	cy := ly(ceiling, maxCost)
	fmt.Fprintf(&b, `<line class="%s" x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f"/><text x="%.0f" y="%.1f">%s %.0f</text>`,
		ceilingClass, L, cy, W-R, cy, L+4, cy-4, map[string]string{"ceiling": "static max", "limit": "per-call limit"}[ceilingClass], ceiling)
	var costPts, timePts []string
	for _, p := range s.Points {
		x := lx(float64(max(p.ObjectBytes, 1)))
		yc, yt := ly(float64(p.RuntimeCost), maxCost), ly(p.NsPerOp, maxNs)
		costPts = append(costPts, fmt.Sprintf("%.1f,%.1f", x, yc))
		timePts = append(timePts, fmt.Sprintf("%.1f,%.1f", x, yt))
		fmt.Fprintf(&b, `<circle class="costpt" cx="%.1f" cy="%.1f" r="3"><title>×%d: cost %d</title></circle>`, x, yc, p.Scale, p.RuntimeCost)
		fmt.Fprintf(&b, `<circle class="timept" cx="%.1f" cy="%.1f" r="3"><title>×%d: %s</title></circle>`, x, yt, p.Scale, nsString(p.NsPerOp))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">×%d %s</text>`, x, H-B+15, p.Scale, bytesString(p.ObjectBytes))
	}
	fmt.Fprintf(&b, `<polyline class="cost" points="%s"/>`, strings.Join(costPts, " "))
	fmt.Fprintf(&b, `<polyline class="time" points="%s"/>`, strings.Join(timePts, " "))
	fmt.Fprintf(&b, `<text x="4" y="%.0f">cost %.0f</text><text x="4" y="%.0f">0</text>`, T+10, maxCost, H-B)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`, W-R+4, T+10, nsString(maxNs))
	b.WriteString(`</svg>`)
	return b.String()
}
