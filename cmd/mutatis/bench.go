package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mutatis-dev/mutatis/explain"
	"github.com/mutatis-dev/mutatis/harness"
	"github.com/mutatis-dev/mutatis/policytest"
)

type benchOptions struct {
	policies, resources, fixtures []string
	suites                        []string
	scales                        []int
	benchTime                     time.Duration
	output                        string
	chart                         bool
	report, save, baseline        string
	maxRegression                 float64
	minTimeChange                 time.Duration
	metric                        string
	progress                      bool
}

func newBenchCommand() *cobra.Command {
	o := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench (--policies PATH… -f FIXTURE… | --suite PATH…)",
		Short: "Measure the runtime cost, time and allocations of every CEL expression",
		Long: `bench evaluates every expression (variables, matchConditions, mutations) of
every policy binding that matches each fixture object, repeatedly, and reports
the runtime cost kube-apiserver charges, ns/op, allocations and cost units per
µs, next to the static estimate and the per-call limit. --scale multiplies
every list of the fixtures to show how cost and time grow with object size.

Exit status: 0, 1 when --baseline is given and a measurement regressed by more
than --max-regression percent, 2 on bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, o) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.policies, "policies", nil, "files or directories of policies and bindings (required)")
	f.StringSliceVar(&o.resources, "resources", nil, "files or directories of Namespaces, params, CRDs and RBAC objects")
	f.StringSliceVarP(&o.fixtures, "filename", "f", nil, "files or directories of objects to measure against (each object is a CREATE request)")
	f.StringSliceVar(&o.suites, "suite", nil, "PolicyTest suites (files or directories) whose cases are measured, each with its suite's policies and resources")
	f.IntSliceVar(&o.scales, "scale", []int{1}, "factors every list of a fixture is multiplied by, e.g. 1,10,100,1000")
	f.DurationVar(&o.benchTime, "benchtime", 100*time.Millisecond, "minimum time spent evaluating each expression")
	f.StringVarP(&o.output, "output", "o", "table", "table or json")
	f.BoolVar(&o.chart, "chart", false, "draw how cost and time grow with the scale (terminal)")
	f.StringVar(&o.report, "report", "", "write an HTML report with one plot per expression to this file")
	f.StringVar(&o.save, "save", "", "save the measurements as a baseline file")
	f.StringVar(&o.baseline, "baseline", "", "compare with a baseline saved by --save")
	f.Float64Var(&o.maxRegression, "max-regression", 10, "with --baseline: the allowed increase in percent")
	f.StringVar(&o.metric, "metric", "cost", "with --baseline: compare cost (deterministic, the default), time (same machine only) or both")
	f.DurationVar(&o.minTimeChange, "min-time-change", time.Microsecond, "with --baseline and --metric time or both: the least increase of ns/op that is a regression, whatever the percentage (fast expressions must not flake a CI gate)")
	f.BoolVar(&o.progress, "progress", true, "show a progress bar on stderr when it is a terminal")
	return cmd
}

func runBench(cmd *cobra.Command, o *benchOptions) error {
	stderr := cmd.ErrOrStderr()
	switch o.output {
	case "table", "json":
	default:
		return badInput(fmt.Errorf("--output must be table or json, not %q", o.output))
	}
	metric := harness.Metric(o.metric)
	switch metric {
	case harness.MetricCost, harness.MetricTime, harness.MetricBoth:
	default:
		return badInput(fmt.Errorf("--metric must be cost, time or both, not %q", o.metric))
	}
	var base []harness.Measurement
	if o.baseline != "" {
		f, err := os.Open(o.baseline)
		if err != nil {
			return badInput(err)
		}
		base, err = harness.ReadBaseline(f)
		f.Close()
		if err != nil {
			return badInput(fmt.Errorf("%s: %w", o.baseline, err))
		}
	}
	if len(o.suites) == 0 && (len(o.policies) == 0 || len(o.fixtures) == 0) {
		return badInput(errors.New("give --policies and --filename, or --suite"))
	}
	opts := harness.Options{Scales: o.scales, BenchTime: o.benchTime}
	if o.progress && explain.IsTerminal(stderr) {
		opts.Progress = func(done, total int) {
			const width = 30
			n := done * width / total
			fmt.Fprintf(stderr, "\r[%s%s] %d/%d expressions", strings.Repeat("=", n), strings.Repeat(" ", width-n), done, total)
			if done == total {
				fmt.Fprintln(stderr)
			}
		}
	}
	var ms []harness.Measurement
	if len(o.fixtures) > 0 {
		got, err := benchFiles(cmd, o, opts)
		if err != nil {
			return err
		}
		ms = append(ms, got...)
	}
	if len(o.suites) > 0 {
		got, err := benchSuites(cmd, o, opts)
		if err != nil {
			return err
		}
		ms = append(ms, got...)
	}
	harness.Sort(ms)
	if len(ms) == 0 {
		fmt.Fprintln(stderr, "bench: no policy binding matched any fixture")
	}
	out := cmd.OutOrStdout()
	switch o.output {
	case "json":
		if err := harness.WriteJSON(out, ms); err != nil {
			return err
		}
	default:
		if err := harness.WriteTable(out, ms); err != nil {
			return err
		}
	}
	if o.chart {
		harness.WriteChart(out, ms)
	}
	if o.report != "" {
		if err := writeFile(o.report, func(f *os.File) error { return harness.WriteHTML(f, ms) }); err != nil {
			return err
		}
	}
	if o.save != "" {
		if err := writeFile(o.save, func(f *os.File) error { return harness.WriteJSON(f, ms) }); err != nil {
			return err
		}
	}
	if o.baseline != "" {
		regs := harness.CompareWith(base, ms, harness.CompareOptions{MaxPercent: o.maxRegression, Metric: metric, MinTimeChange: o.minTimeChange})
		for _, r := range regs {
			fmt.Fprintln(stderr, "regression:", r)
		}
		if len(regs) > 0 {
			return &exitError{code: exitProblem, err: fmt.Errorf("%d measurement(s) regressed by more than %g%% against %s", len(regs), o.maxRegression, o.baseline)}
		}
	}
	return nil
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// benchFiles measures --policies against the objects of --filename.
func benchFiles(cmd *cobra.Command, o *benchOptions, opts harness.Options) ([]harness.Measurement, error) {
	files := harness.Files{Policies: o.policies, Resources: o.resources, Fixtures: o.fixtures, Stdin: cmd.InOrStdin()}
	return benchInput(harness.RunFiles(cmd.Context(), files, opts))
}

// benchSuites measures every case of the --suite suites, each in its own
// simulated cluster with its suite's policies.
func benchSuites(cmd *cobra.Command, o *benchOptions, opts harness.Options) ([]harness.Measurement, error) {
	files, err := policytest.Discover(o.suites)
	if err != nil {
		return nil, badInput(err)
	}
	if len(files) == 0 {
		return nil, badInput(fmt.Errorf("--suite: no *.mutatis-test.yaml under %s", strings.Join(o.suites, ", ")))
	}
	return benchInput(harness.RunSuites(cmd.Context(), files, opts))
}

// benchInput gives the harness' input errors the exit code of bad input.
func benchInput(ms []harness.Measurement, err error) ([]harness.Measurement, error) {
	if errors.Is(err, harness.ErrNoFixtures) {
		return nil, badInput(errors.New("--filename: no objects found"))
	}
	if ie := (*harness.InputError)(nil); errors.As(err, &ie) {
		return nil, badInput(ie.Err)
	}
	return ms, err
}
