package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/lint"
	"github.com/mutatis-dev/mutatis/policytest"
	"github.com/mutatis-dev/mutatis/policytest/coverage"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

type testOptions struct {
	chainFlags

	policies    []string
	output      string
	run         string
	watch       bool
	interval    time.Duration
	shuffle     string
	idempotence bool
	noValidate  bool
	strict      bool
	update      bool
	color       colorMode
	verbose     bool
	parallel    int

	coverage     bool
	coverageHTML string
	coverageMin  float64
}

func newTestCommand() *cobra.Command {
	o := &testOptions{}
	cmd := &cobra.Command{
		Use:   "test [PATH...]",
		Short: "Run PolicyTest suites (*.mutatis-test.yaml) against MutatingAdmissionPolicies, offline",
		Long: `test finds the PolicyTest suites under PATH (default ".": files named
*.mutatis-test.yaml or *.mutatis-test.yml, searched recursively; testdata
directories are skipped unless named), admits every case's object through
the suite's policies as kube-apiserver 1.37 would, and checks the
expectations. See docs/testing.md.

Objects go through the admission plugins a default kube-apiserver runs
before the policies (docs/chain.md); --enable-admission-plugins,
--disable-admission-plugins and --admission-plugins choose others for the
suites that do not name theirs (admissionPlugins).

A suite's webhooks (or --webhooks, for the suites that name none) are
called after the policies, and every case runs through kube-apiserver's
whole chain, reinvocation round included; --service-url maps services to
reachable URLs (over a suite's serviceURLs). expect.applied and
expect.notApplied name webhooks as webhook:CONFIGURATION/WEBHOOK.

Errors that failurePolicy Ignore drops are printed as warnings of their
case; expect.ignoredErrors asserts them, and --strict fails a case with one
it does not name.

The schema-aware checks of mutatis lint run on every suite's policies; what
they find is printed on stderr as warnings, as mutatis apply prints them
("warning: lint error: ..."), and fails the run (exit 1) only with --strict.

Exit status: 0 every case passed; 1 a case failed, or no suite was found
under PATH; 2 bad input (an unreadable or invalid suite, named with file and
field path, or bad flags).`,

		RunE: func(cmd *cobra.Command, args []string) error { return runTest(cmd, o, args) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.policies, "policies", nil, "files or directories of policies and bindings for the suites that name none (a suite's own policies are relative to it; these, to the working directory)")
	f.StringVarP(&o.output, "output", "o", "text", "text, junit, json, or test2json (go test -json events, each case as it ends)")
	f.StringVar(&o.run, "run", "", `run only the cases whose "suite/case" name matches this regular expression`)
	f.BoolVar(&o.watch, "watch", false, "run again whenever a suite, policy or resource file changes")
	f.DurationVar(&o.interval, "watch-interval", 500*time.Millisecond, "how often --watch looks at the files")
	f.StringVar(&o.shuffle, "shuffle", "", "re-run every case with the policies in other orders and fail order-dependent cases; =SEED repeats an earlier run")
	f.Lookup("shuffle").NoOptDefVal = "random"
	f.BoolVar(&o.idempotence, "idempotence", false, "re-admit every final object and fail the cases where a policy changes it again (a suite's defaults.idempotence and a case's idempotence switch it per suite or case, skipIdempotence per policy)")
	f.BoolVar(&o.update, "update", false, "write the actual results into the expectations of failing cases (object, objectContains, patch, denied; inline or in the files they name), then run again")
	f.BoolVar(&o.strict, "strict", false, "fail the cases where failurePolicy Ignore dropped an error that expect.ignoredErrors does not name (otherwise a warning)")
	f.BoolVar(&o.noValidate, "no-validate", false, "do not validate admitted objects as kube-apiserver's registry would (expect.invalid then fails)")
	o.color = colorAuto
	f.Var(&o.color, "color", "color diffs: auto (on a terminal, unless NO_COLOR is set), always (also bare --color) or never")
	f.Lookup("color").NoOptDefVal = string(colorAlways)
	f.BoolVarP(&o.verbose, "verbose", "v", false, "list passing cases too")
	f.IntVar(&o.parallel, "parallel", 0, "cases evaluated at once (default GOMAXPROCS)")
	f.BoolVar(&o.coverage, "coverage", false, "report which mutations, bindings, matchConditions, variables and CEL branches the cases exercised, and which ValidatingAdmissionPolicy validations (true and false), messageExpressions, auditAnnotations, bindings, matchConditions and variables (docs/coverage.md)")
	f.StringVar(&o.coverageHTML, "coverage-html", "", "write the coverage report as HTML, with the expression sources highlighted, to this file (implies --coverage)")
	f.Float64Var(&o.coverageMin, "coverage-min", 0, "fail (exit 1) when the total coverage is below this percentage (implies --coverage)")
	o.chainFlags.add(f)
	cmd.AddCommand(newTestInitCommand(), newTestConvertCommand())
	return cmd
}

func runTest(cmd *cobra.Command, o *testOptions, args []string) error {
	ctx := cmd.Context()
	stdout := cmd.OutOrStdout()
	switch o.output {
	case "text", "junit", "json", "test2json":
	default:
		return badInput(fmt.Errorf("--output must be text, junit, json or test2json, not %q", o.output))
	}
	opts := policytest.Options{Idempotence: o.idempotence, NoValidate: o.noValidate, Strict: o.strict, Parallel: o.parallel, Policies: o.policies}
	if f := cmd.Flags(); f.Changed("admission-plugins") || f.Changed("enable-admission-plugins") || f.Changed("disable-admission-plugins") || f.Changed("admission-control-config-file") {
		if _, err := admissionplugins.Enabled(o.plugins); err != nil {
			return badInput(err)
		}
		opts.AdmissionPlugins = &o.plugins
	}
	var err error
	if opts.Webhooks, err = o.webhooks.load(ctx, cmd.InOrStdin()); err != nil {
		return badInput(err)
	}
	if opts.ServiceURLs, err = o.webhooks.urls(); err != nil {
		return badInput(err)
	}
	if o.run != "" {
		re, err := regexp.Compile(o.run)
		if err != nil {
			return badInput(fmt.Errorf("--run: %w", err))
		}
		opts.Run = re
	}
	if o.shuffle != "" {
		opts.Shuffle = true
		if o.shuffle == "random" {
			opts.Seed = uint64(time.Now().UnixNano())
		} else {
			seed, err := strconv.ParseUint(o.shuffle, 10, 64)
			if err != nil {
				return badInput(fmt.Errorf("--shuffle: the seed must be an unsigned integer, not %q", o.shuffle))
			}
			opts.Seed = seed
		}
	}
	paths := args
	if len(paths) == 0 {
		paths = []string{"."}
	}
	if o.update {
		if err := updateSuites(ctx, cmd.ErrOrStderr(), paths, opts); err != nil {
			var none *policytest.NoSuitesError
			if errors.As(err, &none) {
				return &exitError{code: exitProblem, err: err}
			}
			return &exitError{code: exitUsage, err: err}
		}
	}
	color := o.color.colors(stdout)
	withCoverage := o.coverage || o.coverageHTML != "" || o.coverageMin > 0
	once := func(ctx context.Context) (int, []string, error) {
		var rec *coverage.Recorder
		if withCoverage {
			rec = coverage.NewRecorder()
			opts.NewCompiler = func() (*compiler.Compiler, error) { return compiler.New(rec.CompilerOption()) }
			opts.NewValidatingCompiler = rec.ValidatingCompiler
			opts.Observe = rec.RecordResult
		}
		var events *policytest.EventWriter
		if o.output == "test2json" {
			events = policytest.NewEventWriter(stdout)
			opts.Done = events.Case
		}
		// lint's checks run beside the cases; their findings follow the report.
		// Without coverage they share the run's compiler, and so the
		// compilations of the policies both need.
		var comp *compiler.Compiler
		if rec == nil {
			comp, _ = compiler.New() // a failure is the run's to report
			opts.NewCompiler = func() (*compiler.Compiler, error) {
				if comp == nil {
					return compiler.New()
				}
				return comp, nil
			}
		}
		linter := lint.NewSuites(ctx, comp)
		defer linter.Wait() // none left running, whatever the way out
		opts.Loaded = linter.Loaded
		rep, err := policytest.RunFiles(ctx, paths, opts)
		var none *policytest.NoSuitesError
		if errors.As(err, &none) {
			// A CI gate that tests nothing must not pass.
			return exitProblem, nil, err
		}
		if err != nil && rep == nil {
			return exitUsage, nil, err
		}
		if werr := writeReport(stdout, o.output, rep, events, policytest.TextOptions{Color: color, Verbose: o.verbose}); werr != nil {
			return exitUsage, nil, werr
		}
		code := testExitCode(rep)
		if printSuiteFindings(cmd.ErrOrStderr(), linter, rep) > 0 && o.strict {
			code = max(code, exitProblem) // --strict: lint warnings fail the run
		}
		if rec != nil {
			// Machine-readable reports own stdout; the table goes to stderr then.
			w := stdout
			if o.output != "text" {
				w = cmd.ErrOrStderr()
			}
			covCode, cerr := writeCoverage(w, rec, rep, o)
			if cerr != nil {
				return exitUsage, nil, cerr
			}
			code = max(code, covCode)
		}
		return code, watchedFiles(rep), err
	}
	if !o.watch {
		code, _, err := once(ctx)
		if err != nil {
			var none *policytest.NoSuitesError
			if errors.As(err, &none) {
				return &exitError{code: exitProblem, err: err}
			}
			return &exitError{code: exitUsage, err: err}
		}
		if code != exitOK {
			return &exitError{code: code}
		}
		return nil
	}
	err = policytest.Watch(ctx, paths, o.interval, func(ctx context.Context) []string {
		_, files, err := once(ctx)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(cmd.ErrOrStderr(), err)
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "watching for changes (Ctrl-C to stop)")
		return files
	})
	if err != nil && ctx.Err() == nil {
		return &exitError{code: exitUsage, err: err}
	}
	return nil
}

// writeCoverage reports the coverage of a run and returns exitProblem when
// it is below --coverage-min.
func writeCoverage(w io.Writer, rec *coverage.Recorder, rep *policytest.Report, o *testOptions) (int, error) {
	// Every policy and binding of every suite, once (suites often share
	// policy files).
	var loaded []*policytest.Loaded
	for _, s := range rep.Suites {
		if s.Loaded != nil {
			loaded = append(loaded, s.Loaded)
		}
	}
	cov := rec.Report(
		uniqueByName(loaded, func(l *policytest.Loaded) []*admissionregistrationv1.MutatingAdmissionPolicy { return l.Policies }),
		uniqueByName(loaded, func(l *policytest.Loaded) []*admissionregistrationv1.MutatingAdmissionPolicyBinding {
			return l.Bindings
		}))
	// The ValidatingAdmissionPolicies likewise, in a table of their own.
	if vpolicies := uniqueByName(loaded, func(l *policytest.Loaded) []*admissionregistrationv1.ValidatingAdmissionPolicy {
		return l.ValidatingPolicies
	}); len(vpolicies) > 0 {
		cov.Validating = rec.ValidatingReport(vpolicies,
			uniqueByName(loaded, func(l *policytest.Loaded) []*admissionregistrationv1.ValidatingAdmissionPolicyBinding {
				return l.ValidatingBindings
			}))
	}
	fmt.Fprintln(w)
	if err := cov.WriteTable(w); err != nil {
		return exitUsage, err
	}
	if o.coverageHTML != "" {
		if err := writeFile(o.coverageHTML, func(f *os.File) error { return cov.WriteHTML(f) }); err != nil {
			return exitUsage, err
		}
		fmt.Fprintf(w, "coverage report written to %s\n", o.coverageHTML)
	}
	if o.coverageMin > 0 && cov.Percent() < o.coverageMin {
		fmt.Fprintf(w, "FAIL: coverage %.1f%% is below --coverage-min %g%%\n", cov.Percent(), o.coverageMin)
		return exitProblem, nil
	}
	return exitOK, nil
}

// uniqueByName is the objects of of every suite, the first of each name
// (suites often share policy files), in order.
func uniqueByName[T interface{ GetName() string }](loaded []*policytest.Loaded, of func(*policytest.Loaded) []T) []T {
	var out []T
	seen := map[string]bool{}
	for _, l := range loaded {
		for _, o := range of(l) {
			if !seen[o.GetName()] {
				seen[o.GetName()] = true
				out = append(out, o)
			}
		}
	}
	return out
}

// testExitCode is 2 when a suite was bad input, 1 when a case failed, 0
// otherwise.
func testExitCode(rep *policytest.Report) int {
	_, failed, errored, bad := rep.Counts()
	switch {
	case bad > 0:
		return exitUsage
	case failed+errored > 0:
		return exitProblem
	}
	return exitOK
}

func watchedFiles(rep *policytest.Report) []string {
	var files []string
	for _, s := range rep.Suites {
		files = append(files, s.File)
		if s.Loaded != nil {
			files = append(files, s.Loaded.Files...)
		}
	}
	return files
}

func writeReport(w io.Writer, format string, rep *policytest.Report, events *policytest.EventWriter, o policytest.TextOptions) error {
	switch format {
	case "test2json":
		return events.Finish(rep)
	case "junit":
		return rep.WriteJUnit(w)
	case "json":
		return rep.WriteJSON(w)
	}
	return rep.WriteText(w, o)
}
