package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mutatis-dev/mutatis/binding"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/costs"
	"github.com/mutatis-dev/mutatis/lint"
	"github.com/mutatis-dev/mutatis/manifest"
)

// lintOptions are the flags of mutatis lint.
type lintOptions struct {
	noCost    bool
	output    string
	strict    bool
	resources []string
	policies  []string
}

func newLintCommand() *cobra.Command {
	var o lintOptions
	cmd := &cobra.Command{
		Use:   "lint [PATH...] [--policies PATH]",
		Short: "Validate and compile MutatingAdmissionPolicies and bindings",
		Long: `lint loads MutatingAdmissionPolicies and MutatingAdmissionPolicyBindings from
files, directories (recursively: .yaml, .yml, .json) or stdin ("-"), validates
them as kube-apiserver's API validation does, compiles every CEL expression,
and prints every problem with file, document, field path and, for CEL, the
line:column with a caret. It then prints the static cost estimate of every
expression against the per-call limit, after a warning for every expression
whose estimate is bounded and above it. Only regular files are read; pipe
input through "-".

The schema-aware checks (docs/lint.md) check every expression against the
schema of every kind the policy matches: built-in kinds, and CRDs among the
files or given with --resources. Their errors are problems (the runtime
would fail every evaluation that reaches them, and quotes its words);
their warnings are likely mistakes kube-apiserver accepts. With
--resources (the cluster's other objects: CRDs, params, Namespaces), a
paramKind nothing serves and params no object supplies are warnings too.
Every finding has the line and column of its field in the file.

-o json prints every problem and warning as JSON, -o sarif as a SARIF 2.1.0
log for code-scanning annotations; neither prints the cost table.

Exit status: 0 no problems (warnings included, unless --strict), 1 problems
found (unreadable or malformed files included; with --strict, warnings
too), 2 bad flags.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch o.output {
			case "text", "json", "sarif":
			default:
				return &exitError{code: exitUsage, err: fmt.Errorf("--output must be text, json or sarif, not %q", o.output)}
			}
			paths, err := policyPaths(args, o.policies)
			if err != nil {
				return err
			}
			return runLint(cmd, paths, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.noCost, "no-cost", false, "do not print the static cost table")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text, json or sarif (SARIF 2.1.0)")
	f.BoolVar(&o.strict, "strict", false, "exit 1 on warnings too")
	f.StringSliceVar(&o.resources, "resources", nil, "files or directories of the cluster's other objects (CRDs, params, Namespaces) the policies run with")
	f.StringSliceVar(&o.policies, "policies", nil, "files or directories of policies and bindings, besides the PATH arguments (as apply, test and bench take them)")
	return cmd
}

// policyPaths are the paths of lint's and cost's policies: the PATH
// arguments, then --policies; at least one is needed.
func policyPaths(args, policies []string) ([]string, error) {
	paths := append(slices.Clone(args), policies...)
	if len(paths) == 0 {
		return nil, badInput(errors.New("no policies: give PATH arguments or --policies"))
	}
	return paths, nil
}

func runLint(cmd *cobra.Command, paths []string, o lintOptions) error {
	out := cmd.OutOrStdout()
	showCost := !o.noCost && o.output == "text"
	set, err := manifest.Load(cmd.Context(), paths, cmd.InOrStdin())
	var problems manifest.ErrorList
	if err != nil {
		if !errors.As(err, &problems) || set == nil {
			return &exitError{code: exitUsage, err: err}
		}
	}
	// The cluster's other objects: schemas and params for the checks,
	// never linted themselves.
	objects := set.Objects
	if len(o.resources) > 0 {
		res, err := manifest.Load(cmd.Context(), o.resources, nil)
		if err != nil {
			var l manifest.ErrorList
			if !errors.As(err, &l) || res == nil {
				return &exitError{code: exitUsage, err: err}
			}
			problems = append(problems, l...)
		}
		objects = append(append([]manifest.Object{}, objects...), res.Objects...)
	}

	crds, crdProblems := costs.IndexCRDs(objects)
	problems = append(problems, crdProblems...)

	comp, err := compiler.New()
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	type compiled struct {
		src    manifest.Policy
		policy *compiler.Policy
	}
	var all []compiled
	for _, p := range set.Policies {
		cp, err := comp.Compile(p.Policy)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		// Report what the API server would refuse on create (422).
		errs, err := comp.Validate(p.Policy)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		if len(errs) > 0 {
			problems = append(problems, &manifest.Error{Source: p.Source, Kind: "MutatingAdmissionPolicy", Name: p.Policy.Name, Errs: errs})
		}
		all = append(all, compiled{src: p, policy: cp})
	}
	// Policies refused by API validation: add their CEL problems to the
	// same report, as the API server reports them all in one response.
	for _, p := range set.Rejected {
		errs, err := comp.Validate(p.Policy)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		for _, e := range problems {
			if e.Source == p.Source && e.Name == p.Policy.Name && len(errs) > 0 {
				e.Errs = append(e.Errs, errs...)
				errs = nil
			}
		}
	}
	// The estimates of every compiled expression, with the schema of the
	// target kind when one bounds them.
	var estimates []estimated
	for _, c := range all {
		for _, e := range crds.Estimates(c.src.Policy, c.policy) {
			estimates = append(estimates, estimated{source: c.src.Source, kind: "MutatingAdmissionPolicy", policy: c.src.Policy.Name, path: e.Expression.Path.String(), name: e.Expression.Name, cost: e.Cost})
		}
	}
	for _, p := range set.ValidatingPolicies {
		ests, err := crds.ValidatingEstimates(comp, p.Policy)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		for _, e := range ests {
			estimates = append(estimates, estimated{source: p.Source, kind: "ValidatingAdmissionPolicy", policy: p.Policy.Name, path: e.Path, name: e.Name, cost: e.Cost})
		}
	}
	// The schema-aware checks (package lint).
	checker := lint.NewChecker(objects, len(o.resources) > 0)
	var findings []lint.Finding
	for _, c := range all {
		findings = append(findings, checker.Policy(c.src, c.policy)...)
	}
	for _, p := range set.ValidatingPolicies {
		findings = append(findings, checker.ValidatingPolicy(comp, p)...)
	}
	findings = append(findings, checker.Set(set)...)
	lint.Locate(findings)
	nErrors := lint.Errors(findings)
	if o.output != "text" {
		return lintReport(out, o, set, problems, findings, bindingWarnings(set), estimates)
	}
	for _, p := range problems {
		fmt.Fprintln(out, p.Error())
	}
	for _, f := range findings {
		if f.Severity == lint.Error {
			fmt.Fprintln(out, f.String())
		}
	}
	var warnings []string
	for _, w := range bindingWarnings(set) {
		warnings = append(warnings, w.String())
	}
	warnings = append(warnings, costWarnings(estimates)...)
	for _, f := range findings {
		if f.Severity == lint.Warning {
			warnings = append(warnings, f.String())
		}
	}
	for _, w := range warnings {
		fmt.Fprintln(out, "warning:", w)
	}
	if showCost && len(all)+len(set.ValidatingPolicies) > 0 {
		if len(problems)+len(warnings)+len(findings) > 0 {
			fmt.Fprintln(out)
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "POLICY\tEXPRESSION\tESTIMATED COST\tOF PER-CALL LIMIT\tSCHEMA")
		for _, r := range estimates {
			label := r.path
			if r.name != "" {
				label += " (" + r.name + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.policy, label, formatCost(r.cost), formatShare(r.cost), schemaNote(r.cost))
		}
		tw.Flush()
	}
	fmt.Fprintf(out, "\n%d policies, %d bindings, %d problems, %d warnings\n", len(set.Policies)+len(set.ValidatingPolicies), len(set.Bindings)+len(set.ValidatingBindings), countProblems(problems)+nErrors, len(warnings))
	if len(problems) > 0 || nErrors > 0 || (o.strict && len(warnings) > 0) {
		return &exitError{code: exitProblem}
	}
	return nil
}

// lintReport writes lint's findings as JSON or SARIF: the problems of
// loading and validation, the binding and cost warnings and the
// schema-aware findings, each with its file and position.
func lintReport(out io.Writer, o lintOptions, set *manifest.Set, problems manifest.ErrorList, findings []lint.Finding, bindingWarns []binding.Warning, estimates []estimated) error {
	all := lint.Problems(problems)
	for _, w := range bindingWarns {
		all = append(all, lint.Finding{Severity: lint.Warning, Check: "binding", Source: sourceOf(set, w.Kind, w.Name), Kind: w.Kind, Name: w.Name, Field: w.Field, Message: w.Message})
	}
	for _, r := range estimates {
		if r.cost.Unbounded() || r.cost.Max <= compiler.PerCallLimit {
			continue
		}
		all = append(all, lint.Finding{Severity: lint.Warning, Check: "cost", Source: r.source, Kind: r.kind, Name: r.policy, Field: r.path,
			Message: fmt.Sprintf("estimated cost %d exceeds the per-call limit %d (%s): evaluations on inputs of the estimated sizes fail with \"operation cancelled: actual cost limit exceeded\"", r.cost.Max, uint64(compiler.PerCallLimit), overLimit(r.cost.Max))})
	}
	lint.Locate(all)
	all = append(all, findings...)
	nProblems, nWarnings := 0, 0
	for _, f := range all {
		if f.Severity == lint.Error {
			nProblems++
		} else {
			nWarnings++
		}
	}
	var err error
	if o.output == "sarif" {
		err = lint.WriteSARIF(out, all)
	} else {
		err = lint.WriteJSON(out, all, lint.Summary{Policies: len(set.Policies) + len(set.ValidatingPolicies), Bindings: len(set.Bindings) + len(set.ValidatingBindings), Problems: nProblems, Warnings: nWarnings})
	}
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if nProblems > 0 || (o.strict && nWarnings > 0) {
		return &exitError{code: exitProblem}
	}
	return nil
}

// sourceOf finds where the policy or binding named name was read.
func sourceOf(set *manifest.Set, kind, name string) manifest.Source {
	switch kind {
	case "MutatingAdmissionPolicy":
		for _, p := range set.Policies {
			if p.Policy.Name == name {
				return p.Source
			}
		}
	case "MutatingAdmissionPolicyBinding":
		for _, b := range set.Bindings {
			if b.Binding.Name == name {
				return b.Source
			}
		}
	}
	return manifest.Source{Item: -1}
}

// estimated is the static cost estimate of one compiled expression: of
// the policy named policy, of kind kind, read at source; path is the
// expression's field path and name its variable's or matchCondition's.
type estimated struct {
	source       manifest.Source
	kind, policy string
	path, name   string
	cost         compiler.CostEstimate
}

// costWarnings reports the expressions whose bounded estimate exceeds the
// per-call limit: kube-apiserver accepts them (MAP enforces no static
// limit) but cancels every evaluation that costs what the estimate allows,
// so on inputs of the sizes it assumes they can only fail. An unbounded
// estimate (some input without a size limit) says nothing of the sort and
// is only shown in the cost table.
func costWarnings(estimates []estimated) []string {
	var out []string
	for _, r := range estimates {
		if r.cost.Unbounded() || r.cost.Max <= compiler.PerCallLimit {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s %q: %s: estimated cost %d exceeds the per-call limit %d (%s): evaluations on inputs of the estimated sizes fail with \"operation cancelled: actual cost limit exceeded\"",
			r.source, r.kind, r.policy, r.path, r.cost.Max, uint64(compiler.PerCallLimit), overLimit(r.cost.Max)))
	}
	return out
}

// overLimit formats how many times the per-call limit a cost is.
func overLimit(cost uint64) string {
	return strconv.FormatFloat(float64(cost)/float64(compiler.PerCallLimit), 'f', 1, 64) + "x"
}

func countProblems(l manifest.ErrorList) int {
	n := 0
	for _, e := range l {
		if len(e.Errs) > 0 {
			n += len(e.Errs)
		} else {
			n++
		}
	}
	return n
}

// bindingWarnings reports what kube-apiserver accepts but is almost always a
// mistake (see binding.Check). A lone binding file is legitimate, so
// references to policies are checked only when policies were loaded.
func bindingWarnings(set *manifest.Set) []binding.Warning {
	policies, bindings := set.APIObjects()
	if len(policies) == 0 || len(bindings) == 0 {
		return nil
	}
	return binding.Check(policies, bindings)
}

func formatCost(c compiler.CostEstimate) string {
	if c.Unbounded() {
		return fmt.Sprintf("%d..unbounded", c.Min)
	}
	return fmt.Sprintf("%d..%d", c.Min, c.Max)
}

func formatShare(c compiler.CostEstimate) string {
	if c.Unbounded() {
		return "unbounded"
	}
	share := float64(c.Max) / float64(compiler.PerCallLimit) * 100
	if share > 100 {
		return fmt.Sprintf("%.1f%% (over)", math.Min(share, 1e9))
	}
	return fmt.Sprintf("%.2f%%", share)
}

func schemaNote(c compiler.CostEstimate) string {
	if c.Schema {
		return "yes"
	}
	return "-"
}
