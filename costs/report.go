package costs

import (
	"fmt"
	"math"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
)

// Statuses of an expression or budget against its limit.
const (
	// StatusOK: the worst case is within the limit and the fail-over share.
	StatusOK = "ok"
	// StatusOverLimit: the worst case exceeds the limit.
	StatusOverLimit = "over-limit"
	// StatusOverFailOver: the worst case is within the limit but exceeds
	// the fail-over percent of it.
	StatusOverFailOver = "over-fail-over"
)

// Report is the static worst-case cost of a set of policies against
// kube-apiserver's limits; its JSON form is the output of mutatis cost -o
// json.
type Report struct {
	// Limits are the per-call limit and the two budgets.
	Limits struct {
		PerCall         int64 `json:"perCall"`
		Mutation        int64 `json:"mutation"`
		MatchConditions int64 `json:"matchConditions"`
	} `json:"limits"`
	// FailOverPercent is the percent of a limit above which a worst case
	// is not ok (100: the limit itself).
	FailOverPercent float64  `json:"failOverPercent"`
	Policies        []Policy `json:"policies"`
	// Failed counts the expressions and budgets that are not ok.
	Failed int `json:"failed"`
}

// Policy is the cost of one policy: each expression for its worst target
// kind, and each budget.
type Policy struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// Targets are the kinds the policy can be invoked for (see Analyze).
	Targets []string `json:"targets"`
	// Params is the paramKind ("Kind apiVersion"), if any.
	Params      string       `json:"params,omitempty"`
	Expressions []Expression `json:"expressions"`
	Budgets     []Budget     `json:"budgets"`
}

// Expression is the static cost of one expression against the per-call
// limit.
type Expression struct {
	// Path is the expression's field path in the policy, Name the
	// variable's or matchCondition's name and Kind its compiler.Kind.
	Path string `json:"path"`
	Name string `json:"name,omitempty"`
	Kind string `json:"kind"`
	// Target is the kind whose schema gives the worst case.
	Target string `json:"target"`
	// Schema tells whether a schema sized the estimate.
	Schema bool `json:"schema"`
	// Min and Max are the estimated range of runtime costs.
	Min       uint64  `json:"min"`
	Max       *uint64 `json:"max"` // null when unbounded
	Unbounded bool    `json:"unbounded"`
	// Limit is the per-call limit, Percent the share of it Max is.
	Limit   int64    `json:"limit"`
	Percent *float64 `json:"percentOfLimit"` // null when unbounded
	// Status is StatusOK, StatusOverLimit or StatusOverFailOver.
	Status string `json:"status"`
	// Drivers explain a worst case that is not ok.
	Drivers []Driver `json:"drivers,omitempty"`
}

// Driver is an input that drives an expression's worst case (a SizeDriver),
// with why nothing bounds it better and what to change.
type Driver struct {
	Path       string   `json:"path"`
	Kind       string   `json:"kind,omitempty"`
	Bound      *int64   `json:"bound"` // null when nothing bounds it
	Share      float64  `json:"share"`
	Uses       []string `json:"uses,omitempty"`
	Reason     string   `json:"reason"`
	Suggestion string   `json:"suggestion"`
}

// Budget is the worst case of one runtime budget: a mutation and the
// variables it evaluates, or all matchConditions and theirs.
type Budget struct {
	// Name is "spec.mutations[i]" or "spec.matchConditions".
	Name string `json:"name"`
	// Target is the kind whose schemas give the worst sum.
	Target string `json:"target"`
	// Expressions are the paths of the expressions summed, variables as
	// "variables.NAME".
	Expressions []string `json:"expressions"`
	// Max is the worst sum (null when unbounded), Limit the budget and
	// Percent the share of it Max is.
	Max       *uint64  `json:"max"`
	Unbounded bool     `json:"unbounded"`
	Limit     int64    `json:"limit"`
	Percent   *float64 `json:"percentOfLimit"`
	// Status is StatusOK, StatusOverLimit or StatusOverFailOver.
	Status string `json:"status"`
}

// Analyze compiles every policy and estimates its costs for every kind it
// targets (a CRD kind of crds its resource rules name, with the sizes its
// schema allows, and one schema-less target for everything else),
// comparing each worst case with its limit and failOver percent of it.
// Expressions that do not compile are an error, listing every such policy.
func Analyze(policies []manifest.Policy, crds *CRDIndex, failOver float64) (*Report, error) {
	comp, err := compiler.New()
	if err != nil {
		return nil, err
	}
	report := &Report{FailOverPercent: failOver}
	report.Limits.PerCall = compiler.PerCallLimit
	report.Limits.Mutation = compiler.MutationBudget
	report.Limits.MatchConditions = compiler.MatchConditionsBudget
	var compileErrs manifest.ErrorList
	for _, p := range policies {
		cp, err := comp.Compile(p.Policy)
		if err != nil {
			return nil, err
		}
		if errs := cp.Errors(); len(errs) > 0 {
			compileErrs = append(compileErrs, &manifest.Error{Source: p.Source, Kind: "MutatingAdmissionPolicy", Name: p.Policy.Name, Errs: errs})
			continue
		}
		report.Policies = append(report.Policies, costOfPolicy(p, cp, crds, failOver))
	}
	if len(compileErrs) > 0 {
		return nil, compileErrs
	}
	for _, p := range report.Policies {
		for _, e := range p.Expressions {
			if e.Status != StatusOK {
				report.Failed++
			}
		}
		for _, b := range p.Budgets {
			if b.Status != StatusOK {
				report.Failed++
			}
		}
	}
	return report, nil
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
func costOfPolicy(p manifest.Policy, cp *compiler.Policy, crds *CRDIndex, failOver float64) Policy {
	targets := policyTargets(p.Policy, crds)
	var params *apiservercel.DeclType
	var paramsCRD *unstructured.Unstructured
	pc := Policy{Name: p.Policy.Name, Source: p.Source.String()}
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
				est = estimateForKind(e, t.decl, params)
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
		ec := Expression{Path: e.Path.String(), Name: e.Name, Kind: e.Kind.String(), Target: targets[worst].label,
			Schema: est.Schema, Min: est.Min, Unbounded: est.Unbounded(), Limit: compiler.PerCallLimit}
		ec.Max, ec.Percent = maxAndPercent(est.Max, compiler.PerCallLimit)
		ec.Status = costStatus(est.Max, compiler.PerCallLimit, failOver)
		if ec.Status != StatusOK {
			ec.Drivers = explainDrivers(ExplainCost(e, targets[worst].decl, params), targets[worst], paramsCRD, pc.Params)
		}
		pc.Expressions = append(pc.Expressions, ec)
	}

	// Budgets: each mutation with the variables it evaluates, and all
	// matchConditions with theirs (one activation, variables once).
	vars := map[string]*compiler.Expression{}
	for _, v := range cp.Variables {
		vars[v.Name] = v
	}
	budget := func(name string, exprs []*compiler.Expression, limit int64) Budget {
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
		b := Budget{Name: name, Target: targets[worst].label, Limit: limit, Unbounded: worstMax == math.MaxUint64}
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
		for _, name := range VariableReferences(e) {
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
		return StatusOverLimit
	}
	if float64(max) > float64(limit)*failOver/100 {
		return StatusOverFailOver
	}
	return StatusOK
}
