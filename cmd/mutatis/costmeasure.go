package main

import (
	"fmt"
	"sort"
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
	type key struct{ policy, path string }
	worst := map[key]map[int]int64{}
	errs := map[key][]string{}
	for _, m := range ms {
		k := key{m.Policy, m.Path}
		if m.Err != "" {
			errs[k] = append(errs[k], fmt.Sprintf("%s at ×%d: %s", m.Fixture, m.Scale, m.Err))
			continue
		}
		if worst[k] == nil {
			worst[k] = map[int]int64{}
		}
		if m.RuntimeCost > worst[k][m.Scale] {
			worst[k][m.Scale] = m.RuntimeCost
		}
	}
	for pi := range report.Policies {
		p := &report.Policies[pi]
		for ei := range p.Expressions {
			e := &p.Expressions[ei]
			k := key{p.Name, e.Path}
			byScale := worst[k]
			if len(byScale) == 0 && len(errs[k]) == 0 {
				continue
			}
			var scales []int
			for s := range byScale {
				scales = append(scales, s)
			}
			sort.Ints(scales)
			var cs []int64
			for _, s := range scales {
				cs = append(cs, byScale[s])
			}
			e.Measured = costs.NewMeasured(scales, cs, e.Formula)
			e.Measured.Errors = errs[k]
		}
	}
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
