package policytest

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mutatis-dev/mutatis/explain"
)

// TextOptions shape the text report.
type TextOptions struct {
	// Color colors the diffs (callers set it for terminals or --color).
	Color bool
	// Verbose lists passing cases too.
	Verbose bool
}

// CaseText is the failure text of a case: every failure with its diff,
// then the explain trace, as the text report prints it (uncolored,
// unindented).
func CaseText(c *CaseResult, color bool) string {
	var b strings.Builder
	if c.Err != "" {
		fmt.Fprintf(&b, "error: %s\n", c.Err)
	}
	for _, text := range c.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", text)
	}
	for _, f := range c.Failures {
		fmt.Fprintf(&b, "%s: %s\n", f.Expectation, f.Message)
		if f.Diff != "" {
			d := f.Diff
			if color {
				d = explain.Colorize(d)
			}
			b.WriteString(d)
			if !strings.HasSuffix(d, "\n") {
				b.WriteByte('\n')
			}
		}
	}
	b.WriteString(c.Trace)
	return b.String()
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "") + "\n"
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// WriteText writes the human report: failing cases with their diffs and
// traces, one line per suite, and a summary.
func (r *Report) WriteText(w io.Writer, o TextOptions) error {
	var b strings.Builder
	for _, s := range r.Suites {
		if s.Err != nil {
			fmt.Fprintf(&b, "BAD  %s\n%s", s.File, indent(s.Err.Error(), "    "))
			continue
		}
		failed := 0
		for _, c := range s.Cases {
			switch {
			case c.Status != Pass:
				failed++
				fmt.Fprintf(&b, "--- FAIL: %s (%s)\n%s", c.FullName(), seconds(c.Elapsed), indent(CaseText(c, o.Color), "    "))
			case o.Verbose || len(c.Warnings) > 0:
				fmt.Fprintf(&b, "--- PASS: %s (%s)\n", c.FullName(), seconds(c.Elapsed))
			}
			if c.Status == Pass {
				for _, text := range c.Warnings {
					fmt.Fprintf(&b, "    warning: %s\n", text)
				}
			}
		}
		if failed > 0 {
			fmt.Fprintf(&b, "FAIL %s\t%s\t%d of %d cases failed\n", s.Name, s.File, failed, len(s.Cases))
		} else {
			fmt.Fprintf(&b, "ok   %s\t%s\t%d cases\n", s.Name, s.File, len(s.Cases))
		}
	}
	passed, failed, errored, bad := r.Counts()
	total := passed + failed + errored
	if r.Seed != 0 {
		fmt.Fprintf(&b, "shuffle seed: %d\n", r.Seed)
	}
	switch {
	case bad > 0:
		fmt.Fprintf(&b, "FAIL: %d of %d suites could not be run; %d of %d cases failed (%s)\n", bad, len(r.Suites), failed+errored, total, seconds(r.Elapsed))
	case failed+errored > 0:
		fmt.Fprintf(&b, "FAIL: %d of %d cases failed in %d suites (%s)\n", failed+errored, total, len(r.Suites), seconds(r.Elapsed))
	default:
		fmt.Fprintf(&b, "PASS: %d cases in %d suites (%s)\n", total, len(r.Suites), seconds(r.Elapsed))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JUnit XML, in the schema Jenkins and Ant read.

// JUnitTotals are the attributes the root and every suite share: a name,
// the counts of the cases below and their time.
type JUnitTotals struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
}

// JUnitTestSuites is the root element of a JUnit report.
type JUnitTestSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	JUnitTotals
	Suites []JUnitTestSuite `xml:"testsuite"`
}

// JUnitTestSuite is one suite file.
type JUnitTestSuite struct {
	JUnitTotals
	Timestamp string          `xml:"timestamp,attr,omitempty"`
	File      string          `xml:"file,attr,omitempty"`
	Cases     []JUnitTestCase `xml:"testcase"`
}

// JUnitTestCase is one case.
type JUnitTestCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *JUnitProblem `xml:"failure,omitempty"`
	Error     *JUnitProblem `xml:"error,omitempty"`
	Skipped   *JUnitProblem `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitProblem is a failure, error or skip: a one-line message and the
// full text.
type JUnitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func junitTime(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// JUnit converts the report to JUnit's structure. A suite that could not
// be run becomes a suite with one errored test case named "load".
func (r *Report) JUnit() JUnitTestSuites {
	root := JUnitTestSuites{JUnitTotals: JUnitTotals{Name: "mutatis", Time: junitTime(r.Elapsed)}}
	for _, s := range r.Suites {
		js := JUnitTestSuite{JUnitTotals: JUnitTotals{Name: s.Name, Time: junitTime(s.Elapsed)}, File: s.File}
		if s.Err != nil {
			js.Cases = append(js.Cases, JUnitTestCase{Name: "load", Classname: s.Name, Time: junitTime(0),
				Error: &JUnitProblem{Message: "invalid suite", Type: "input", Text: s.Err.Error()}})
			js.Errors++
		}
		for _, c := range s.Cases {
			tc := JUnitTestCase{Name: c.Name, Classname: s.Name, Time: junitTime(c.Elapsed)}
			switch c.Status {
			case Fail:
				js.Failures++
				msg := c.Failures[0].Expectation + ": " + firstLine(c.Failures[0].Message)
				if len(c.Failures) > 1 {
					msg += fmt.Sprintf(" (and %d more)", len(c.Failures)-1)
				}
				tc.Failure = &JUnitProblem{Message: msg, Type: c.Failures[0].Expectation, Text: CaseText(c, false)}
			case Error:
				js.Errors++
				tc.Error = &JUnitProblem{Message: firstLine(c.Err), Type: "error", Text: CaseText(c, false)}
			}
			js.Cases = append(js.Cases, tc)
		}
		js.Tests = len(js.Cases)
		root.Tests += js.Tests
		root.Failures += js.Failures
		root.Errors += js.Errors
		root.Suites = append(root.Suites, js)
	}
	return root
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// WriteJUnit writes the report as JUnit XML.
func (r *Report) WriteJUnit(w io.Writer) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(r.JUnit()); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// jsonReport is the JSON form of a Report.
type jsonReport struct {
	Passed  int          `json:"passed"`
	Failed  int          `json:"failed"`
	Errored int          `json:"errored"`
	Seed    uint64       `json:"seed,omitempty"`
	Elapsed string       `json:"elapsed"`
	Suites  []jsonSuites `json:"suites"`
}

type jsonSuites struct {
	Name    string        `json:"name"`
	File    string        `json:"file"`
	Error   string        `json:"error,omitempty"`
	Elapsed string        `json:"elapsed"`
	Cases   []*CaseResult `json:"cases"`
}

// WriteJSON writes the report as one JSON object: counts, and per suite
// every case with its status, failures (with diffs) and trace.
func (r *Report) WriteJSON(w io.Writer) error {
	passed, failed, errored, _ := r.Counts()
	out := jsonReport{Passed: passed, Failed: failed, Errored: errored, Seed: r.Seed, Elapsed: seconds(r.Elapsed), Suites: []jsonSuites{}}
	for _, s := range r.Suites {
		js := jsonSuites{Name: s.Name, File: s.File, Elapsed: seconds(s.Elapsed), Cases: s.Cases}
		if js.Cases == nil {
			js.Cases = []*CaseResult{}
		}
		if s.Err != nil {
			js.Error = s.Err.Error()
		}
		out.Suites = append(out.Suites, js)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
