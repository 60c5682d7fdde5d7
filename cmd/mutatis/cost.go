package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/spf13/cobra"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
)

func newCostCommand() *cobra.Command {
	var o costOptions
	cmd := &cobra.Command{
		Use:   "cost PATH...",
		Short: "Static worst-case CEL cost of MutatingAdmissionPolicies against kube-apiserver's limits",
		Long: `cost estimates, for every expression of every MutatingAdmissionPolicy, the
static cost range kube-apiserver's CEL cost model gives it, binding-independent:
with the schema of each kind the policy targets (CRD schemas found in PATH and
--resources bound lists, maps and strings with maxItems, maxProperties and
maxLength; built-in kinds carry no such limits offline), the worst target wins.

It compares every expression with the per-call limit (1,000,000), every
mutation plus the variables it uses with the mutation budget (10,000,000), and
all matchConditions plus their variables with the matchConditions budget
(2,500,000). An expression whose worst case can exceed a limit is explained:
which list, map or string drives it, why nothing bounds it, and what to change.

Exit status: 0 every worst case within the limits (and within --fail-over),
1 some worst case exceeds a limit or --fail-over percent of it, 2 bad input.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.paths = args
			o.failOverSet = cmd.Flags().Changed("fail-over")
			return runCost(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.resources, "resources", nil, "CRDs (and other objects) of the simulated cluster; repeatable")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	f.Float64Var(&o.failOver, "fail-over", 100, "exit 1 when a worst case exceeds this percent of its limit")
	return cmd
}

type costOptions struct {
	paths, resources []string
	output           string
	failOver         float64
	failOverSet      bool
}

// Statuses of an expression or budget against its limit.
const (
	costOK        = "ok"
	costOverLimit = "over-limit"
	costOverShare = "over-fail-over"
)

// costReport is the JSON output of mutatis cost.
type costReport struct {
	Limits struct {
		PerCall         int64 `json:"perCall"`
		Mutation        int64 `json:"mutation"`
		MatchConditions int64 `json:"matchConditions"`
	} `json:"limits"`
	FailOverPercent float64      `json:"failOverPercent"`
	Policies        []policyCost `json:"policies"`
	// Failed counts the expressions and budgets that are not ok.
	Failed int `json:"failed"`
}

type policyCost struct {
	Name        string           `json:"name"`
	Source      string           `json:"source"`
	Targets     []string         `json:"targets"`
	Params      string           `json:"params,omitempty"`
	Expressions []expressionCost `json:"expressions"`
	Budgets     []budgetCost     `json:"budgets"`
}

type expressionCost struct {
	Path string `json:"path"`
	Name string `json:"name,omitempty"`
	Kind string `json:"kind"`
	// Target is the kind whose schema gives the worst case.
	Target    string       `json:"target"`
	Schema    bool         `json:"schema"`
	Min       uint64       `json:"min"`
	Max       *uint64      `json:"max"` // null when unbounded
	Unbounded bool         `json:"unbounded"`
	Limit     int64        `json:"limit"`
	Percent   *float64     `json:"percentOfLimit"` // null when unbounded
	Status    string       `json:"status"`
	Drivers   []driverCost `json:"drivers,omitempty"`

	est    compiler.CostEstimate
	expr   *compiler.Expression
	target *costTarget
}

type driverCost struct {
	Path       string   `json:"path"`
	Kind       string   `json:"kind,omitempty"`
	Bound      *int64   `json:"bound"` // null when nothing bounds it
	Share      float64  `json:"share"`
	Uses       []string `json:"uses,omitempty"`
	Reason     string   `json:"reason"`
	Suggestion string   `json:"suggestion"`
}

type budgetCost struct {
	Name        string   `json:"name"`
	Target      string   `json:"target"`
	Expressions []string `json:"expressions"`
	Max         *uint64  `json:"max"`
	Unbounded   bool     `json:"unbounded"`
	Limit       int64    `json:"limit"`
	Percent     *float64 `json:"percentOfLimit"`
	Status      string   `json:"status"`
}

func runCost(cmd *cobra.Command, o costOptions) error {
	if o.output != "table" && o.output != "json" {
		return &exitError{code: exitUsage, err: fmt.Errorf("unknown output format %q (table or json)", o.output)}
	}
	if math.IsNaN(o.failOver) || o.failOver < 0 || o.failOver > 100 {
		return &exitError{code: exitUsage, err: fmt.Errorf("--fail-over must be a percent between 0 and 100, not %v", o.failOver)}
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
	if len(set.Policies) == 0 {
		return &exitError{code: exitUsage, err: fmt.Errorf("no MutatingAdmissionPolicy found in %s", strings.Join(o.paths, ", "))}
	}
	crds, problems := indexCRDs(objects)
	if len(problems) > 0 {
		return &exitError{code: exitUsage, err: problems}
	}
	comp, err := compiler.New()
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}

	report := &costReport{FailOverPercent: o.failOver}
	report.Limits.PerCall = compiler.PerCallLimit
	report.Limits.Mutation = compiler.MutationBudget
	report.Limits.MatchConditions = compiler.MatchConditionsBudget
	var compileErrs manifest.ErrorList
	for _, p := range set.Policies {
		cp, err := comp.Compile(p.Policy)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		if errs := cp.Errors(); len(errs) > 0 {
			compileErrs = append(compileErrs, &manifest.Error{Source: p.Source, Kind: "MutatingAdmissionPolicy", Name: p.Policy.Name, Errs: errs})
			continue
		}
		report.Policies = append(report.Policies, costOfPolicy(p, cp, crds, o.failOver))
	}
	if len(compileErrs) > 0 {
		return &exitError{code: exitUsage, err: compileErrs}
	}
	for _, p := range report.Policies {
		for _, e := range p.Expressions {
			if e.Status != costOK {
				report.Failed++
			}
		}
		for _, b := range p.Budgets {
			if b.Status != costOK {
				report.Failed++
			}
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
		printCostTable(out, report, o)
	}
	if report.Failed > 0 {
		return &exitError{code: exitProblem}
	}
	return nil
}

// costTarget is one kind a policy can be invoked for, with the schema that
// sizes its object (nil: nothing bounds it).
type costTarget struct {
	label string
	decl  *apiservercel.DeclType
	crd   *unstructured.Unstructured // the CRD serving it, if any
	gvk   schema.GroupVersionKind
}

// costOfPolicy estimates every expression of p for every kind it targets
// and keeps the worst case of each, then sums the budgets.
func costOfPolicy(p manifest.Policy, cp *compiler.Policy, crds *crdIndex, failOver float64) policyCost {
	targets := policyTargets(p.Policy, crds)
	var params *apiservercel.DeclType
	var paramsCRD *unstructured.Unstructured
	pc := policyCost{Name: p.Policy.Name, Source: p.Source.String()}
	if pk := p.Policy.Spec.ParamKind; pk != nil {
		pc.Params = pk.Kind + " " + pk.APIVersion
		if gv, err := schema.ParseGroupVersion(pk.APIVersion); err == nil {
			gvk := gv.WithKind(pk.Kind)
			if crd, ok := crds.objects[gvk]; ok {
				if dt, err := crds.schemas.DeclType(gvk); err == nil {
					params, paramsCRD = dt, crd
				}
			}
		}
	}
	for _, t := range targets {
		pc.Targets = append(pc.Targets, t.label)
	}

	// Per target: every expression's estimate; the worst target per
	// expression and per budget is reported.
	perTarget := make([]map[*compiler.Expression]compiler.CostEstimate, len(targets))
	for i, t := range targets {
		perTarget[i] = map[*compiler.Expression]compiler.CostEstimate{}
		for _, e := range cp.Expressions() {
			est := e.Cost
			if t.decl != nil || params != nil {
				est = e.EstimateForKind(t.decl, params)
			}
			perTarget[i][e] = est
		}
	}
	for _, e := range cp.Expressions() {
		worst := 0
		for i := range targets {
			if perTarget[i][e].Max > perTarget[worst][e].Max {
				worst = i
			}
		}
		est := perTarget[worst][e]
		ec := expressionCost{Path: e.Path.String(), Name: e.Name, Kind: e.Kind.String(), Target: targets[worst].label,
			Schema: est.Schema, Min: est.Min, Unbounded: est.Unbounded(), Limit: compiler.PerCallLimit,
			est: est, expr: e, target: targets[worst]}
		ec.Max, ec.Percent = maxAndPercent(est.Max, compiler.PerCallLimit)
		ec.Status = costStatus(est.Max, compiler.PerCallLimit, failOver)
		if ec.Status != costOK {
			ec.Drivers = explainDrivers(e.ExplainCost(targets[worst].decl, params), targets[worst], paramsCRD, pc.Params)
		}
		pc.Expressions = append(pc.Expressions, ec)
	}

	// Budgets: each mutation with the variables it evaluates, and all
	// matchConditions with theirs (one activation, variables once).
	vars := map[string]*compiler.Expression{}
	for _, v := range cp.Variables {
		vars[v.Name] = v
	}
	budget := func(name string, exprs []*compiler.Expression, limit int64) budgetCost {
		used := variableClosure(exprs, vars)
		all := append(append([]*compiler.Expression{}, exprs...), used...)
		worst, worstMax := 0, uint64(0)
		for i := range targets {
			var sum uint64
			for _, e := range all {
				sum = addSaturating(sum, perTarget[i][e].Max)
			}
			if i == 0 || sum > worstMax {
				worst, worstMax = i, sum
			}
		}
		b := budgetCost{Name: name, Target: targets[worst].label, Limit: limit, Unbounded: worstMax == math.MaxUint64}
		for _, e := range all {
			label := e.Path.String()
			if e.Kind == compiler.KindVariable {
				label = "variables." + e.Name
			}
			b.Expressions = append(b.Expressions, label)
		}
		b.Max, b.Percent = maxAndPercent(worstMax, limit)
		b.Status = costStatus(worstMax, limit, failOver)
		return b
	}
	for _, m := range cp.Mutations {
		pc.Budgets = append(pc.Budgets, budget(fmt.Sprintf("spec.mutations[%d]", m.Index), []*compiler.Expression{m}, compiler.MutationBudget))
	}
	if len(cp.MatchConditions) > 0 {
		pc.Budgets = append(pc.Budgets, budget("spec.matchConditions", cp.MatchConditions, compiler.MatchConditionsBudget))
	}
	return pc
}

// variableClosure returns the variables exprs evaluate, directly or through
// other variables, in policy order.
func variableClosure(exprs []*compiler.Expression, vars map[string]*compiler.Expression) []*compiler.Expression {
	seen := map[string]bool{}
	var visit func(e *compiler.Expression)
	visit = func(e *compiler.Expression) {
		for _, name := range e.VariableReferences() {
			if v, ok := vars[name]; ok && !seen[name] {
				seen[name] = true
				visit(v)
			}
		}
	}
	for _, e := range exprs {
		visit(e)
	}
	var out []*compiler.Expression
	for _, v := range vars {
		if seen[v.Name] {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

func addSaturating(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

func maxAndPercent(max uint64, limit int64) (*uint64, *float64) {
	if max == math.MaxUint64 {
		return nil, nil
	}
	pct := math.Round(float64(max)/float64(limit)*100*100) / 100
	return &max, &pct
}

// costStatus compares a worst case with its limit and the --fail-over share.
func costStatus(max uint64, limit int64, failOver float64) string {
	if max > uint64(limit) {
		return costOverLimit
	}
	if float64(max) > float64(limit)*failOver/100 {
		return costOverShare
	}
	return costOK
}

// policyTargets lists the kinds p's matchConstraints can select: each
// loaded CRD kind its resource rules name (wildcards included), and one
// schema-less target for everything else (built-in kinds, CRDs not loaded).
func policyTargets(p *admissionregistrationv1.MutatingAdmissionPolicy, crds *crdIndex) []*costTarget {
	var out []*costTarget
	seen := map[schema.GroupVersionKind]bool{}
	var others []string
	otherSeen := map[string]bool{}
	if mc := p.Spec.MatchConstraints; mc != nil {
		for _, r := range mc.ResourceRules {
			for _, g := range r.APIGroups {
				for _, v := range r.APIVersions {
					for _, res := range r.Resources {
						plural := strings.Split(res, "/")[0]
						matched := false
						for _, gvr := range crds.resources() {
							if (g == "*" || g == gvr.Group) && (v == "*" || v == gvr.Version) && (plural == "*" || plural == gvr.Resource) {
								matched = true
								gvk := crds.kinds[gvr]
								if seen[gvk] {
									continue
								}
								seen[gvk] = true
								t := &costTarget{label: gvk.Kind + " " + gvk.GroupVersion().String(), crd: crds.objects[gvk], gvk: gvk}
								if dt, err := crds.schemas.DeclType(gvk); err == nil {
									t.decl = dt
								}
								out = append(out, t)
							}
						}
						if !matched || g == "*" || v == "*" || plural == "*" {
							label := res
							if g != "" {
								label += "." + g
							}
							if !otherSeen[label] {
								otherSeen[label] = true
								others = append(others, label)
							}
						}
					}
				}
			}
		}
	}
	if len(others) > 0 || len(out) == 0 {
		label := strings.Join(others, ", ")
		if label == "" {
			label = "any"
		}
		out = append(out, &costTarget{label: label + " (no schema)"})
	}
	return out
}

// explainDrivers turns the compiler's size drivers into reasons and
// suggestions.
func explainDrivers(ds []compiler.SizeDriver, t *costTarget, paramsCRD *unstructured.Unstructured, paramKind string) []driverCost {
	var out []driverCost
	for _, d := range ds {
		path := renderPath(d.Path)
		if d.Path == nil {
			path = d.Source
		}
		dc := driverCost{Path: path, Kind: d.Kind, Share: math.Round(d.Share*1000) / 1000, Uses: d.Uses}
		if !d.Unbounded() {
			b := d.Bound
			dc.Bound = &b
		}
		dc.Reason, dc.Suggestion = driverReason(d, t, paramsCRD, paramKind)
		out = append(out, dc)
	}
	return out
}

// limitKeyword is the schema keyword that bounds a value of kind.
func limitKeyword(kind string) string {
	switch kind {
	case "list":
		return "maxItems"
	case "map":
		return "maxProperties"
	case "string", "bytes":
		return "maxLength"
	}
	return "maxItems/maxProperties/maxLength"
}

func driverReason(d compiler.SizeDriver, t *costTarget, paramsCRD *unstructured.Unstructured, paramKind string) (string, string) {
	kw := limitKeyword(d.Kind)
	uses := ""
	if len(d.Uses) > 0 {
		uses = " (used by " + strings.Join(d.Uses, ", ") + ")"
	}
	if len(d.Path) == 0 {
		return fmt.Sprintf("%s%s is a computed value whose size the cost model does not know", d.Source, uses),
			"iterate the field itself (e.g. guard with has()) so that its schema can bound it"
	}
	root, rest := d.Path[0], d.Path[1:]
	field := renderPath(d.Path)
	var crd *unstructured.Unstructured
	var what string
	switch root {
	case compiler.ObjectVar, compiler.OldObjectVar:
		crd, what = t.crd, "the target kind "+t.label
	case compiler.ParamsVar:
		crd, what = paramsCRD, "the paramKind "+paramKind
	case compiler.VariablesVar:
		return fmt.Sprintf("%s%s: the cost model does not carry the size of a variable into the expressions that use it (kube-apiserver's neither), so it is unbounded here", field, uses),
			fmt.Sprintf("do the size-dependent work inside variable %q, whose inputs the schema sizes, or bound those inputs", rest[0])
	default:
		return fmt.Sprintf("%s%s has no size limit: %s has no schema with %s", field, uses, root, kw),
			fmt.Sprintf("avoid iterating %s, or check its runtime cost on real requests (mutatis apply --explain)", field)
	}
	schemaPath := renderPath(append([]string{""}, rest...))[1:]
	if crd == nil {
		return fmt.Sprintf("%s%s has no size limit: %s has no schema with maxItems, maxProperties or maxLength (built-in kinds carry none offline)", field, uses, what),
			"iterate a bounded input instead (e.g. a param whose CRD sets maxItems), or measure the runtime cost on real objects (mutatis apply --explain); the per-call limit still stops it at run time"
	}
	version := t.gvk.Version
	if root == compiler.ParamsVar {
		version = ""
	}
	declared, found := declaredLimit(crd, version, rest, kw)
	switch {
	case !found:
		return fmt.Sprintf("%s%s is not declared in the schema of %s, so nothing bounds it", field, uses, what),
			fmt.Sprintf("declare %s in the openAPIV3Schema of CRD %s with %s", schemaPath, crd.GetName(), kw)
	case declared < 0:
		bound := ""
		if !d.Unbounded() {
			bound = fmt.Sprintf(" (kube-apiserver then estimates it from the 3 MiB request limit: up to %d)", d.Bound)
		}
		return fmt.Sprintf("%s%s has no %s in the schema of %s%s", field, uses, kw, what, bound),
			fmt.Sprintf("add %s to %s in the openAPIV3Schema of CRD %s", kw, schemaPath, crd.GetName())
	default:
		return fmt.Sprintf("%s%s: %s %d lets the cost model count up to %d", field, uses, kw, declared, d.Bound),
			lowerSuggestion(kw, schemaPath, crd.GetName())
	}
}

func lowerSuggestion(kw, schemaPath, crd string) string {
	s := fmt.Sprintf("lower %s of %s in CRD %s", kw, schemaPath, crd)
	if kw == "maxItems" {
		s += ", or iterate the list once instead of in nested comprehensions"
	}
	return s
}

// declaredLimit walks a CRD version's openAPIV3Schema along path and
// returns the value of keyword at its end (-1 when not set); found is false
// when the path leaves the declared schema.
func declaredLimit(crd *unstructured.Unstructured, version string, path []string, keyword string) (int64, bool) {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var node map[string]any
	for _, v := range versions {
		vm, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if name, _ := vm["name"].(string); version == "" || name == version {
			node, _, _ = unstructured.NestedMap(vm, "schema", "openAPIV3Schema")
			if version == "" {
				if storage, _ := vm["storage"].(bool); !storage {
					continue
				}
			}
			break
		}
	}
	if node == nil {
		return -1, false
	}
	for _, name := range path {
		var next map[string]any
		switch name {
		case "@items":
			next, _ = node["items"].(map[string]any)
		case "@values":
			next, _ = node["additionalProperties"].(map[string]any)
		case "@keys":
			// A comprehension over a dynamically typed list binds its
			// elements; map keys have no schema of their own.
			next, _ = node["items"].(map[string]any)
			if next == nil {
				return -1, true
			}
		default:
			props, _ := node["properties"].(map[string]any)
			next, _ = props[name].(map[string]any)
		}
		if next == nil {
			return -1, false
		}
		node = next
	}
	for _, kw := range strings.Split(keyword, "/") {
		switch v := node[kw].(type) {
		case int64:
			return v, true
		case float64:
			return int64(v), true
		}
	}
	return -1, true
}

// renderPath shows a cost-checker path as a CEL-like field path:
// object.spec.items[*].name (elements, map keys and values alike).
func renderPath(path []string) string {
	var b strings.Builder
	for i, p := range path {
		switch p {
		case "@items", "@values", "@keys":
			b.WriteString("[*]")
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		}
	}
	return b.String()
}

func printCostTable(w io.Writer, r *costReport, o costOptions) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tEXPRESSION\tTARGET\tMIN\tMAX\tOF PER-CALL LIMIT\tSTATUS")
	for _, p := range r.Policies {
		for _, e := range p.Expressions {
			label := e.Path
			if e.Name != "" {
				label += " (" + e.Name + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", p.Name, label, e.Target, e.Min, formatMax(e.Max), formatPercent(e.Percent), e.Status)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tBUDGET\tINCLUDES\tWORST CASE\tLIMIT\tOF LIMIT\tSTATUS")
	for _, p := range r.Policies {
		for _, b := range p.Budgets {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", p.Name, b.Name, b.includes(), formatMax(b.Max), b.Limit, formatPercent(b.Percent), b.Status)
		}
	}
	tw.Flush()

	for _, p := range r.Policies {
		for _, e := range p.Expressions {
			if e.Status == costOK {
				continue
			}
			limit := "the per-call limit (1000000)"
			if e.Status == costOverShare {
				limit = fmt.Sprintf("%g%% of the per-call limit (--fail-over)", o.failOver)
			}
			fmt.Fprintf(w, "\n%s: %s: worst case %s exceeds %s for %s\n", p.Name, e.Path, formatMax(e.Max), limit, e.Target)
			if len(e.Drivers) == 0 {
				fmt.Fprintln(w, "  no single input drives it: the cost comes from the expression's size itself")
			}
			for _, d := range e.Drivers {
				fmt.Fprintf(w, "  - %s (%.0f%% of the worst case)\n    suggestion: %s\n", d.Reason, d.Share*100, d.Suggestion)
			}
		}
		for _, b := range p.Budgets {
			if b.Status == costOK {
				continue
			}
			fmt.Fprintf(w, "\n%s: %s: worst case %s of %s exceeds %s for %s\n", p.Name, b.Name, formatMax(b.Max), strings.Join(b.Expressions, " + "),
				budgetLimit(b, o.failOver), b.Target)
		}
	}
	policies := "policies"
	if len(r.Policies) == 1 {
		policies = "policy"
	}
	fmt.Fprintf(w, "\n%d %s, %d not within the limits\n", len(r.Policies), policies, r.Failed)
}

// includes summarizes what a budget sums: "1 mutation + 2 variables".
func (b budgetCost) includes() string {
	own, vars := 0, 0
	for _, e := range b.Expressions {
		if strings.HasPrefix(e, "variables.") {
			vars++
		} else {
			own++
		}
	}
	what := "mutation"
	if strings.HasPrefix(b.Name, "spec.matchConditions") {
		what = "condition"
	}
	out := plural(own, what)
	if vars > 0 {
		out += " + " + plural(vars, "variable")
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func budgetLimit(b budgetCost, failOver float64) string {
	if b.Status == costOverShare {
		return fmt.Sprintf("%g%% of the budget %d (--fail-over)", failOver, b.Limit)
	}
	return fmt.Sprintf("the budget %d", b.Limit)
}

func formatMax(m *uint64) string {
	if m == nil {
		return "unbounded"
	}
	return fmt.Sprint(*m)
}

func formatPercent(p *float64) string {
	if p == nil {
		return "unbounded"
	}
	return fmt.Sprintf("%.2f%%", *p)
}

// crdIndex holds the CustomResourceDefinitions found among loaded objects:
// their schemas, the kind each served resource version has, and the CRD
// object serving each kind.
type crdIndex struct {
	schemas *applyconfig.Schemas
	kinds   map[schema.GroupVersionResource]schema.GroupVersionKind
	objects map[schema.GroupVersionKind]*unstructured.Unstructured
}

// indexCRDs registers every CustomResourceDefinition among objects; CRDs
// that cannot be registered are returned as problems.
func indexCRDs(objects []manifest.Object) (*crdIndex, manifest.ErrorList) {
	ix := &crdIndex{
		schemas: applyconfig.NewSchemas(),
		kinds:   map[schema.GroupVersionResource]schema.GroupVersionKind{},
		objects: map[schema.GroupVersionKind]*unstructured.Unstructured{},
	}
	var problems manifest.ErrorList
	for _, o := range objects {
		if o.Object.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if err := ix.schemas.AddCRD(o.Object); err != nil {
			problems = append(problems, &manifest.Error{Source: o.Source, Kind: o.Object.GetKind(), Name: o.Object.GetName(), Err: err})
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(o.Object.Object, "spec", "names", "plural")
		kind, _, _ := unstructured.NestedString(o.Object.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(o.Object.Object, "spec", "versions")
		for _, v := range versions {
			if vm, ok := v.(map[string]any); ok {
				name, _ := vm["name"].(string)
				gvk := schema.GroupVersionKind{Group: group, Version: name, Kind: kind}
				ix.kinds[schema.GroupVersionResource{Group: group, Version: name, Resource: plural}] = gvk
				ix.objects[gvk] = o.Object
			}
		}
	}
	return ix, problems
}

// resources returns the served resources, sorted for a stable report.
func (ix *crdIndex) resources() []schema.GroupVersionResource {
	out := make([]schema.GroupVersionResource, 0, len(ix.kinds))
	for gvr := range ix.kinds {
		out = append(out, gvr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
