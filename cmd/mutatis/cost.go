package main

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mutatis-dev/mutatis/costs"
	"github.com/mutatis-dev/mutatis/manifest"
)

func newCostCommand() *cobra.Command {
	var o costOptions
	cmd := &cobra.Command{
		Use:   "cost [PATH...] [--policies PATH] [--gate auto|schema|request|profile] [--assume PATH=N] [--profile FILE] [--measure OBJECTS]",
		Short: "Static worst-case CEL cost of MutatingAdmissionPolicies against kube-apiserver's limits",
		Long: `cost estimates, for every expression of every MutatingAdmissionPolicy, the
static cost range kube-apiserver's CEL cost model gives it, binding-independent:
with the schema of each kind the policy targets (CRD schemas found in PATH and
--resources bound lists, maps and strings with maxItems, maxProperties and
maxLength; built-in kinds carry no such limits offline), the worst target wins.

Every expression and budget is evaluated at three points: the limits its
schema declares (schema), the request-size bound kube-apiserver's estimator
uses where none is declared (request), and a realistic size profile (profile:
documented defaults for well-known lists, maps and strings such as
containers, env and labels, changed with --assume PATH=N and --profile FILE).
Its cost is also shown as a formula in the sizes of the lists and maps it
reads, and terms that grow faster than the data (a power of one size, a
product of unrelated sizes) are flagged as super-linear. The gate applies at
the profile for built-in kinds and at the request-size bound for CRDs
(--gate auto), or at the point --gate names.

It compares every expression with the per-call limit (1,000,000), every
mutation plus the variables it uses with the mutation budget (10,000,000), and
all matchConditions plus their variables with the matchConditions budget
(2,500,000). An expression whose worst case can exceed a limit is explained:
which list, map or string drives it, why nothing bounds it, and what to change.

ValidatingAdmissionPolicies are estimated alike (variables, matchConditions,
validations, messageExpressions, auditAnnotations), against the per-call
limit and the budgets kube-apiserver gives them: the matchConditions'
(2,500,000), the validations' with their messageExpressions (10,000,000) and
the auditAnnotations' (10,000,000).

--measure OBJECTS evaluates the policies on those objects with every list
multiplied by 1, 2, 4 and 8 (the harness of mutatis bench --scale) and
compares the measured growth of each expression's runtime cost with its
formula's.

Exit status: 0 every worst case within the limits (and within --fail-over),
1 some worst case exceeds a limit or --fail-over percent of it, 2 bad input.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := policyPaths(args, o.policies)
			if err != nil {
				return err
			}
			o.paths = paths
			o.failOverSet = cmd.Flags().Changed("fail-over")
			return runCost(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.resources, "resources", nil, "CRDs (and other objects) of the simulated cluster; repeatable, or split on commas")
	f.StringSliceVar(&o.policies, "policies", nil, "files or directories of policies and bindings, besides the PATH arguments")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	f.Float64Var(&o.failOver, "fail-over", 100, "exit 1 when a worst case exceeds this percent of its limit")
	f.StringVar(&o.gate, "gate", "auto", "the point the limits apply at: auto (profile for built-in kinds, request for CRDs), schema, request or profile")
	f.StringSliceVar(&o.assume, "assume", nil, "size of an input in the profile, PATH=N (e.g. spec.containers=20, containers[*].env=50, list=16); repeatable, or split on commas")
	f.StringSliceVar(&o.profileFiles, "profile", nil, "profile files (YAML map of PATH: N) applied over the default profile, before --assume")
	f.StringSliceVar(&o.measure, "measure", nil, "objects to measure the runtime cost on, every list scaled by --measure-scales")
	f.IntSliceVar(&o.measureScales, "measure-scales", []int{1, 2, 4, 8}, "the scales of --measure, ascending")
	return cmd
}

type costOptions struct {
	paths, resources []string
	policies         []string
	output           string
	failOver         float64
	failOverSet      bool
	gate             string
	assume           []string
	profileFiles     []string
	measure          []string
	measureScales    []int
}

// costProfile builds the profile of --profile and --assume.
func costProfile(o costOptions) (*costs.Profile, error) {
	p := costs.DefaultProfile()
	for _, f := range o.profileFiles {
		if err := p.LoadProfileFile(f); err != nil {
			return nil, fmt.Errorf("--profile: %w", err)
		}
	}
	for _, a := range o.assume {
		if err := p.Assume(a); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func runCost(cmd *cobra.Command, o costOptions) error {
	if o.output != "table" && o.output != "json" {
		return &exitError{code: exitUsage, err: fmt.Errorf("unknown output format %q (table or json)", o.output)}
	}
	if math.IsNaN(o.failOver) || o.failOver < 0 || o.failOver > 100 {
		return &exitError{code: exitUsage, err: fmt.Errorf("--fail-over must be a percent between 0 and 100, not %v", o.failOver)}
	}
	if !slices.Contains(costs.Gates(), o.gate) {
		return &exitError{code: exitUsage, err: fmt.Errorf("unknown --gate %q (%s)", o.gate, strings.Join(costs.Gates(), ", "))}
	}
	profile, err := costProfile(o)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if err := checkScales(o.measureScales); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	set, err := manifest.Load(cmd.Context(), o.paths, cmd.InOrStdin())
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	objects := set.Objects
	if len(o.resources) > 0 {
		res, err := manifest.Load(cmd.Context(), o.resources, cmd.InOrStdin())
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		objects = append(append([]manifest.Object{}, objects...), res.Objects...)
	}
	if len(set.Policies)+len(set.ValidatingPolicies) == 0 {
		return &exitError{code: exitUsage, err: fmt.Errorf("no MutatingAdmissionPolicy found in %s", strings.Join(o.paths, ", "))}
	}
	crds, problems := costs.IndexCRDs(objects)
	if len(problems) > 0 {
		return &exitError{code: exitUsage, err: problems}
	}
	report, err := costs.AnalyzeWith(set.Policies, crds, costs.Options{FailOver: o.failOver, Gate: o.gate, Profile: profile, Validating: set.ValidatingPolicies})
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if len(o.measure) > 0 {
		if err := measureCosts(cmd, o, report); err != nil {
			return err
		}
	}

	out := cmd.OutOrStdout()
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
	} else {
		report.WriteTable(out, o.failOver)
	}
	if report.Failed > 0 {
		return &exitError{code: exitProblem}
	}
	return nil
}
