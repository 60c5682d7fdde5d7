package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/mutatis-dev/mutatis/costs"
	"github.com/mutatis-dev/mutatis/harness"
)

// measureCosts runs the policies on the --measure objects at every scale
// (the harness of mutatis bench) and records, per expression, the largest
// runtime cost at each scale and its growth next to the formula's.
func measureCosts(cmd *cobra.Command, o costOptions, report *costs.Report) error {
	bo := &benchOptions{policies: o.paths, resources: o.resources, fixtures: o.measure}
	// One evaluation per expression and scale: only the cost is wanted.
	ms, err := benchFiles(cmd, bo, harness.Options{Scales: o.measureScales, BenchTime: time.Nanosecond})
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "cost: --measure: no policy binding matched any object; nothing measured")
	}
	samples := make([]costs.Sample, len(ms))
	for i, m := range ms {
		samples[i] = costs.Sample{Policy: m.Policy, Path: m.Path, Fixture: m.Fixture, Scale: m.Scale, RuntimeCost: m.RuntimeCost, Err: m.Err}
	}
	report.Record(samples)
	return nil
}

// checkScales requires ascending scales of at least 1.
func checkScales(scales []int) error {
	for i, s := range scales {
		if s < 1 || (i > 0 && s <= scales[i-1]) {
			return fmt.Errorf("--measure-scales %v: want ascending whole numbers of at least 1", scales)
		}
	}
	return nil
}
