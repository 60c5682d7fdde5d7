package audit

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/mutatis-dev/mutatis/policytest"
)

// JUnitFailing are the outcomes a JUnit report marks failed when no
// --fail-on is given: those that would refuse a request or fail it.
var JUnitFailing = FailOn{OutcomeDeny: true, OutcomeInvalid: true, OutcomeError: true}

// WriteJUnit writes r as JUnit XML (policytest's schema): one suite per
// audited resource, one test case per finding (unchanged objects are only
// counted in the summary), failed when fail (or JUnitFailing when fail is
// empty) says so.
func (r *Report) WriteJUnit(w io.Writer, fail FailOn) error {
	if len(fail) == 0 {
		fail = JUnitFailing
	}
	root := policytest.JUnitTestSuites{JUnitTotals: policytest.JUnitTotals{Name: "mutatis audit", Time: fmt.Sprintf("%.3f", r.Summary.Seconds)}}
	suites := map[string]int{}
	for _, res := range r.Summary.Resources {
		suites[res] = len(root.Suites)
		root.Suites = append(root.Suites, policytest.JUnitTestSuite{JUnitTotals: policytest.JUnitTotals{Name: res, Time: "0.000"}})
	}
	for _, f := range r.Findings {
		i, ok := suites[f.Resource]
		if !ok {
			suites[f.Resource] = len(root.Suites)
			i = len(root.Suites)
			root.Suites = append(root.Suites, policytest.JUnitTestSuite{JUnitTotals: policytest.JUnitTotals{Name: f.Resource, Time: "0.000"}})
		}
		s := &root.Suites[i]
		tc := policytest.JUnitTestCase{Name: f.Object(), Classname: f.Resource, Time: "0.000", SystemOut: findingText(f)}
		if fail.Fails(f) {
			tc.Failure = &policytest.JUnitProblem{Message: fmt.Sprintf("would %s: %s", verb(f.Outcome), firstLine(f.detail())), Type: string(f.Outcome), Text: findingText(f)}
			s.Failures++
		}
		s.Cases = append(s.Cases, tc)
		s.Tests++
	}
	for _, s := range root.Suites {
		root.Tests += s.Tests
		root.Failures += s.Failures
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// verb says an outcome after "would".
func verb(o Outcome) string {
	switch o {
	case OutcomeChange:
		return "change"
	case OutcomeDeny:
		return "be denied"
	case OutcomeInvalid:
		return "be refused by validation"
	case OutcomeError:
		return "fail"
	case OutcomeIgnored:
		return "meet errors ignored by failurePolicy Ignore"
	}
	return "be left unchanged"
}

// findingText is a finding in full, for people.
func findingText(f Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s would %s\n", f.Resource, f.Object(), verb(f.Outcome))
	if len(f.Policies) > 0 {
		fmt.Fprintf(&b, "policies: %s\n", strings.Join(f.Policies, ", "))
	}
	if f.Message != "" {
		fmt.Fprintf(&b, "message: %s\n", f.Message)
	}
	if f.Patch != "" {
		fmt.Fprintf(&b, "patch: %s\n", f.Patch)
	}
	for _, ig := range f.Ignored {
		fmt.Fprintf(&b, "ignored: %s\n", ig)
	}
	if f.RefusedBy != "" {
		fmt.Fprintf(&b, "refused by: %s\n", f.RefusedBy)
	}
	for _, v := range f.Validations {
		fmt.Fprintf(&b, "validation failed: %s\n", v)
	}
	for _, w := range f.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
