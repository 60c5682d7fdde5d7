package main

import (
	"fmt"
	"io"

	"github.com/mutatis-dev/mutatis/lint"
	"github.com/mutatis-dev/mutatis/policytest"
)

// printSuiteFindings waits for the checks of suites and prints, on w, the
// findings of the suites of rep in their order, with the wording of
// mutatis apply (lintLine), and returns how many it printed. A policy
// file shared by several suites is reported once per distinct set of
// findings. Suites that could not be loaded are skipped (they are bad
// input already), and so are suites rep does not hold (none of their cases
// selected).
func printSuiteFindings(w io.Writer, suites *lint.Suites, rep *policytest.Report) int {
	suites.Wait()
	if rep == nil {
		return 0
	}
	printed := map[string]bool{}
	for _, s := range rep.Suites {
		if s.Loaded == nil {
			continue
		}
		for _, f := range suites.Findings(s.Loaded) {
			if line := lintLine(f); !printed[line] {
				printed[line] = true
				io.WriteString(w, line)
			}
		}
	}
	return len(printed)
}

// lintLine is one finding as a warning line, "warning: lint SEVERITY:
// FINDING\n".
func lintLine(f lint.Finding) string {
	return fmt.Sprintf("warning: lint %s: %s\n", f.Severity, f)
}
