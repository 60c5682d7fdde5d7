package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mutatis-dev/mutatis/policytest"
)

// updateSuites is the first pass of `mutatis test --update`: it runs the
// suites and writes the actual results into the expectations of the
// failing cases (policytest.Report.Update), saying on w what it wrote and
// what it could not. The run that follows reports the suites as they are
// then.
func updateSuites(ctx context.Context, w io.Writer, paths []string, opts policytest.Options) error {
	rep, err := policytest.RunFiles(ctx, paths, opts)
	if err != nil {
		return err
	}
	done, notDone, err := rep.Update()
	for _, u := range done {
		fmt.Fprintf(w, "updated %s: %s (%s)\n", u.File, u.Case, strings.Join(u.Expectations, ", "))
	}
	for _, n := range notDone {
		fmt.Fprintf(w, "not updated: %s: %s\n", n.Case, n.Reason)
	}
	return err
}
