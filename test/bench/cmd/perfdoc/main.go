// Command perfdoc turns the output of the side-by-side benchmarks of
// test/bench (`go test -bench … -count N`, benchstat's input format) into
// the tables of docs/performance.md: per case, the median of each metric
// for impl=upstream and impl=mutatis, the ratio upstream/mutatis, and the
// issue's targets checked against the figures. It replaces the text between
// the markers "<!-- perfdoc:begin -->" and "<!-- perfdoc:end -->".
//
//	perfdoc -in bin/bench.txt -doc docs/performance.md [-command "make bench"] [-note "…"]
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	beginMarker = "<!-- perfdoc:begin -->"
	endMarker   = "<!-- perfdoc:end -->"
)

func main() {
	in := flag.String("in", "", "benchmark output (default: stdin)")
	doc := flag.String("doc", "", "markdown file to update (default: print the tables)")
	command := flag.String("command", "make bench", "the command that produced the figures, shown in the document")
	note := flag.String("note", "", "a note on the conditions of the run (e.g. machine load)")
	flag.Parse()
	if err := run(*in, *doc, *command, *note, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "perfdoc:", err)
		os.Exit(1)
	}
}

func run(in, doc, command, note string, stdin io.Reader, stdout io.Writer) error {
	r := stdin
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	res, err := parse(r)
	if err != nil {
		return err
	}
	if len(res.samples) == 0 {
		return errors.New("no impl=… benchmark results in the input")
	}
	tables := render(res, command, note, time.Now())
	if doc == "" {
		_, err := io.WriteString(stdout, tables)
		return err
	}
	old, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	updated, err := splice(old, tables)
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	return os.WriteFile(doc, updated, 0o644)
}

// splice replaces the text between the markers.
func splice(doc []byte, tables string) ([]byte, error) {
	b := bytes.Index(doc, []byte(beginMarker))
	e := bytes.Index(doc, []byte(endMarker))
	if b < 0 || e < b {
		return nil, fmt.Errorf("markers %q and %q not found", beginMarker, endMarker)
	}
	var out bytes.Buffer
	out.Write(doc[:b+len(beginMarker)])
	out.WriteString("\n")
	out.WriteString(tables)
	out.Write(doc[e:])
	return out.Bytes(), nil
}

// key identifies a benchmark family and case, e.g. ("Mutation", "ac-label").
type key struct{ family, kase string }

// results are the samples of every metric per (family, case, impl).
type results struct {
	env     []string // goos, goarch, cpu lines
	order   []key
	samples map[key]map[string]map[string][]float64 // key → impl → unit → values
}

var benchLine = regexp.MustCompile(`^Benchmark([^/\s]+)/(\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// parse reads `go test -bench` output. Benchmark names must carry
// impl=… and case=… elements.
func parse(r io.Reader) (*results, error) {
	res := &results{samples: map[key]map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	seenEnv := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		for _, p := range []string{"goos:", "goarch:", "cpu:"} {
			if strings.HasPrefix(line, p) && !seenEnv[line] {
				seenEnv[line] = true
				res.env = append(res.env, strings.TrimSpace(line))
			}
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var impl, kase string
		for _, part := range strings.Split(m[2], "/") {
			switch {
			case strings.HasPrefix(part, "impl="):
				impl = strings.TrimPrefix(part, "impl=")
			case strings.HasPrefix(part, "case="):
				kase = strings.TrimPrefix(part, "case=")
			}
		}
		if impl == "" || kase == "" {
			continue
		}
		k := key{m[1], kase}
		if res.samples[k] == nil {
			res.samples[k] = map[string]map[string][]float64{}
			res.order = append(res.order, k)
		}
		if res.samples[k][impl] == nil {
			res.samples[k][impl] = map[string][]float64{}
		}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
			res.samples[k][impl][f[i+1]] = append(res.samples[k][impl][f[i+1]], v)
		}
	}
	return res, sc.Err()
}

// stat is the median of samples and their largest deviation from it, in percent.
type stat struct {
	median, spread float64
	n              int
}

func summarize(v []float64) (stat, bool) {
	if len(v) == 0 {
		return stat{}, false
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	spread := 0.0
	if med != 0 {
		spread = math.Max(med-s[0], s[len(s)-1]-med) / med * 100
	}
	return stat{median: med, spread: spread, n: len(s)}, true
}

func (r *results) stat(k key, impl, unit string) (stat, bool) {
	return summarize(r.samples[k][impl][unit])
}

// family titles, in document order.
var families = []struct{ name, title, about string }{
	{"Mutation", "One mutation (compiled), small Deployment",
		"Upstream: `NewApplyConfigurationPatcher`/`NewJSONPatcher` `.Patch` plus the dispatcher's conversion back to the typed object and defaulting. mutatis: `mutation.Patcher.Mutate`."},
	{"Admit", "Whole admissions through the dispatcher",
		"Upstream: `mutating.NewDispatcher` over fake informers (one `DeepCopyObject` of the request object per admission included: the dispatcher mutates attributes in place), reinvocation pass when asked for. mutatis: `cluster` + a `chain.Runner` over the `engine.Evaluator`."},
	{"Validate", "Whole validating admissions (ValidatingAdmissionPolicy)",
		"Upstream: `validating.NewPlugin`'s `Validate` (its policy source over fake informers, dispatcher and validator), the object in its internal version as the registry hands it over. mutatis: a `chain.Runner`'s `RunOnce` over the `validating.Evaluator` of `cluster`."},
	{"Compile", "Compiling 1,000 policies (in process)",
		"Each iteration compiles 1,000 policies (a variable, a matchCondition and a mutation each) from scratch; `live-heap-MB` is the heap in use after a GC with all compiled policies held."},
	{"CompileProcess", "Compiling 1,000 policies (fresh process)",
		"A fresh test process per iteration; `compile-ms` is the compile time alone, `peak-RSS-MB` the process's VmHWM (Go runtime and k8s libraries included)."},
}

func render(r *results, command, note string, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "_Generated by `test/bench/cmd/perfdoc` on %s from `%s`", now.UTC().Format("2006-01-02 15:04 MST"), command)
	if len(r.env) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(r.env, ", "))
	}
	b.WriteString("._\n")
	if note != "" {
		fmt.Fprintf(&b, "\n> %s\n", note)
	}
	b.WriteString("\nMedians over the `-count` runs; `±` is the largest deviation of a run from the median. Ratio = upstream / mutatis (higher is better for mutatis).\n")
	for _, fam := range families {
		var keys []key
		for _, k := range r.order {
			if k.family == fam.name {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s (`Benchmark%s`)\n\n%s\n\n", fam.title, fam.name, fam.about)
		units := []string{"ns/op"}
		if hasUnit(r, keys, "cpu-ns/op") {
			units = append(units, "cpu-ns/op")
		}
		units = append(units, "B/op", "allocs/op")
		for _, u := range []string{"live-heap-MB", "compile-ms", "peak-RSS-MB"} {
			for _, k := range keys {
				if _, ok := r.stat(k, "mutatis", u); ok {
					units = append(units, u)
					break
				}
			}
		}
		if fam.name == "CompileProcess" {
			units = []string{"compile-ms", "peak-RSS-MB"}
		}
		b.WriteString("| case |")
		sep := "| --- |"
		for _, u := range units {
			fmt.Fprintf(&b, " upstream %s | mutatis %s | ratio |", u, u)
			sep += " ---: | ---: | ---: |"
		}
		b.WriteString("\n" + sep + "\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "| %s |", k.kase)
			for _, u := range units {
				up, okU := r.stat(k, "upstream", u)
				mu, okM := r.stat(k, "mutatis", u)
				fmt.Fprintf(&b, " %s | %s | %s |", cell(up, okU, u), cell(mu, okM, u), ratio(up, okU, mu, okM))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString(targets(r))
	return b.String()
}

// hasUnit tells whether a mutatis figure of any of keys is in unit.
func hasUnit(r *results, keys []key, unit string) bool {
	for _, k := range keys {
		if _, ok := r.stat(k, "mutatis", unit); ok {
			return true
		}
	}
	return false
}

func cell(s stat, ok bool, unit string) string {
	if !ok {
		return "–"
	}
	v := group(s.median, unit)
	if unit == "ns/op" || unit == "cpu-ns/op" || unit == "compile-ms" {
		return fmt.Sprintf("%s ±%.0f%%", v, s.spread)
	}
	return v
}

// group formats v with thousands separators (one decimal for MB figures).
func group(v float64, unit string) string {
	if strings.HasSuffix(unit, "MB") {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func ratio(up stat, okU bool, mu stat, okM bool) string {
	switch {
	case !okU || !okM:
		return "–"
	case mu.median == 0 && up.median == 0:
		return "="
	case mu.median == 0:
		return "∞"
	}
	return fmt.Sprintf("%.1f×", up.median/mu.median)
}

// lowest is the lowest ratio upstream/mutatis of a family's cases in
// unit (cpu-ns/op where both sides have it, else ns/op), and its case;
// known is false when no case has both sides.
func lowest(r *results, family string) (worst float64, worstCase, unit string, known bool) {
	worst = math.Inf(1)
	for _, k := range r.order {
		if k.family != family {
			continue
		}
		u := "cpu-ns/op"
		up, okU := r.stat(k, "upstream", u)
		mu, okM := r.stat(k, "mutatis", u)
		if !okU || !okM {
			u = "ns/op"
			up, okU = r.stat(k, "upstream", u)
			mu, okM = r.stat(k, "mutatis", u)
		}
		if okU && okM && mu.median > 0 {
			known = true
			if q := up.median / mu.median; q < worst {
				worst, worstCase, unit = q, k.kase, u
			}
		}
	}
	return worst, worstCase, unit, known
}

// targets checks the figures against the targets of issues #5 and 29.
func targets(r *results) string {
	var b strings.Builder
	b.WriteString("\n### Targets (issues #5 and 29), from the figures above\n\n| target | figure | met |\n| --- | --- | :---: |\n")
	row := func(target, figure string, met, known bool) {
		m := "no"
		switch {
		case !known:
			m, figure = "–", "not measured in this run"
		case met:
			m = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", target, figure, m)
	}
	worst, known := math.Inf(1), false
	worstCase := ""
	for _, k := range r.order {
		if k.family != "Mutation" {
			continue
		}
		up, okU := r.stat(k, "upstream", "ns/op")
		mu, okM := r.stat(k, "mutatis", "ns/op")
		if okU && okM && mu.median > 0 {
			known = true
			if q := up.median / mu.median; q < worst {
				worst, worstCase = q, k.kase
			}
		}
	}
	row("per mutation ≥10× faster than upstream's patcher", fmt.Sprintf("lowest ratio %.1f× (%s)", worst, worstCase), worst >= 10, known)
	m10, ok10 := r.stat(key{"Admit", "policies-10-1-matching"}, "mutatis", "ns/op")
	m1000, ok1000 := r.stat(key{"Admit", "policies-1000-1-matching"}, "mutatis", "ns/op")
	q := m1000.median / m10.median
	row("1,000 policies with 1 matching ≤ 2× the time of 10 with 1 matching", fmt.Sprintf("%.2f× (%s vs %s ns/op)", q, group(m1000.median, "ns/op"), group(m10.median, "ns/op")), q <= 2, ok10 && ok1000)
	ms, okMs := r.stat(key{"CompileProcess", "compile-1000"}, "mutatis", "compile-ms")
	row("compiling 1,000 policies < 2 s", fmt.Sprintf("%s ms", group(ms.median, "ms")), ms.median < 2000, okMs)
	rss, okRss := r.stat(key{"CompileProcess", "compile-1000"}, "mutatis", "peak-RSS-MB")
	row("compiling 1,000 policies < 200 MB resident", fmt.Sprintf("%.1f MB peak RSS", rss.median), rss.median < 200, okRss)
	for _, t := range []struct {
		family, target string
		bound          float64
	}{
		{"Mutation", "issue 29: every mutation case ≥ 10× upstream", 10},
		{"Admit", "issue 29: every admission ≥ 10× upstream", 10},
		{"Validate", "issue 29: every validating admission ≥ 5× upstream", 5},
	} {
		q, kase, unit, ok := lowest(r, t.family)
		row(t.target, fmt.Sprintf("lowest ratio %.1f× (%s, %s)", q, kase, unit), q >= t.bound, ok)
	}
	b.WriteString("| zero allocations on the matching path for a non-matching request | asserted by `TestNonMatchingRequestDoesNotAllocate` (index lookup, 10 and 1,000 policies) | see `go test ./test/bench` |\n")
	return b.String()
}
