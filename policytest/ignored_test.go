package policytest

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestIgnoredErrorsAreVisible: an error that failurePolicy Ignore drops
// never passes silently: it is a warning of its case, expect.ignoredErrors
// asserts it, and Strict fails a case with one it does not name.
func TestIgnoredErrorsAreVisible(t *testing.T) {
	const warning = `policy "team-label" binding "team-label" mutation 0: error ignored by failurePolicy Ignore: `
	for _, strict := range []bool{false, true} {
		rep, text := runText(t, Options{Strict: strict}, "testdata/ignored")
		if len(rep.Suites) != 1 || rep.Suites[0].Err != nil {
			t.Fatalf("suites = %+v", rep.Suites)
		}
		byName := map[string]*CaseResult{}
		for _, c := range rep.Suites[0].Cases {
			byName[c.Name] = c
		}
		expected, unexpected, absent := byName["an expected ignored error"], byName["an unexpected ignored error"], byName["an expected error that does not happen"]
		if expected.Status != Pass || len(expected.Warnings) != 0 {
			t.Errorf("strict=%v: an expected ignored error: %s, warnings %q", strict, expected.Status, expected.Warnings)
		}
		if absent.Status != Fail || len(absent.Failures) != 1 || absent.Failures[0].Expectation != "ignoredErrors" ||
			absent.Failures[0].Message != `no error ignored by failurePolicy Ignore matches "no such key"` {
			t.Errorf("strict=%v: an expected error that does not happen: %s %+v", strict, absent.Status, absent.Failures)
		}
		if !strict {
			if unexpected.Status != Pass || len(unexpected.Warnings) != 1 || !strings.HasPrefix(unexpected.Warnings[0], warning) {
				t.Errorf("an unexpected ignored error: %s, warnings %q", unexpected.Status, unexpected.Warnings)
			}
			if want := "--- PASS: ignored/an unexpected ignored error"; !strings.Contains(text, want) || !strings.Contains(text, "    warning: "+warning) {
				t.Errorf("the text report does not show the warning:\n%s", text)
			}
			continue
		}
		if unexpected.Status != Fail || len(unexpected.Failures) != 1 || !strings.HasPrefix(unexpected.Failures[0].Message, "unexpected "+warning) {
			t.Errorf("strict: an unexpected ignored error: %s %+v", unexpected.Status, unexpected.Failures)
		}
	}
}

// TestNoSuiteIsAnError: a run that finds nothing to test must not pass.
func TestNoSuiteIsAnError(t *testing.T) {
	dir := t.TempDir()
	_, err := RunFiles(context.Background(), []string{dir}, Options{})
	var none *NoSuitesError
	if !errors.As(err, &none) || !strings.Contains(err.Error(), dir) ||
		!strings.Contains(err.Error(), "*.mutatis-test.yaml or *.mutatis-test.yml") {
		t.Fatalf("err = %v, want a NoSuitesError naming %s", err, dir)
	}
}

// TestDiscoverFindsBothSpellings: *.mutatis-test.yml is a suite too.
func TestDiscoverFindsBothSpellings(t *testing.T) {
	files, err := Discover([]string{"testdata/ignored", "testdata/order"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"testdata/ignored/ignored.mutatis-test.yml", "testdata/order/order.mutatis-test.yaml"}
	if strings.Join(files, ",") != strings.Join(want, ",") {
		t.Fatalf("Discover = %q, want %q", files, want)
	}
}
