package costs

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"

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
		// Validations and AuditAnnotations are the budgets of a
		// ValidatingAdmissionPolicy's validations (with their
		// messageExpressions) and auditAnnotations; set when the report
		// has ValidatingAdmissionPolicies.
		Validations      int64 `json:"validations,omitempty"`
		AuditAnnotations int64 `json:"auditAnnotations,omitempty"`
	} `json:"limits"`
	// FailOverPercent is the percent of a limit above which a worst case
	// is not ok (100: the limit itself).
	FailOverPercent float64 `json:"failOverPercent"`
	// Gate is the --gate option: "auto" (the profile for built-in kinds,
	// the request-size bound for CRDs), "schema", "request" or "profile".
	Gate string `json:"gate"`
	// Profile is the realistic size profile (defaults, profile files and
	// --assume).
	Profile  []ProfileEntry `json:"profile"`
	Policies []Policy       `json:"policies"`
	// ValidatingPolicies are the ValidatingAdmissionPolicies (Options.Validating),
	// their expressions' kinds "variable", "matchCondition", "validation",
	// "messageExpression" and "auditAnnotation", their budgets
	// spec.matchConditions, spec.validations and spec.auditAnnotations.
	ValidatingPolicies []Policy `json:"validatingPolicies,omitempty"`
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
	// Gate is the point Max, Percent and Status are taken at (for the
	// worst target).
	Gate Point `json:"gate"`
	// Points is the worst case at each evaluation point (worst target).
	Points map[Point]PointCost `json:"points"`
	// Formula is the cost as a function of the sizes of its inputs, for
	// the worst target; nil when an input no point can bound drives it.
	Formula *Formula `json:"formula"`
	// SuperLinear flags the terms of Formula that grow faster than the
	// data they read.
	SuperLinear []SuperLinear `json:"superLinear,omitempty"`
	// Measured is the runtime cost measured on objects (--measure).
	Measured *Measured `json:"measured,omitempty"`
}

// PointCost is the worst case of an expression or budget at one
// evaluation point.
type PointCost struct {
	Target    string   `json:"target"`
	Max       *uint64  `json:"max"` // null when unbounded
	Unbounded bool     `json:"unbounded"`
	Percent   *float64 `json:"percentOfLimit"`
	Status    string   `json:"status"`
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
	// Gate, Points and Formula are as for an Expression (the formula is
	// the sum of the formulas of the expressions summed).
	Gate    Point               `json:"gate"`
	Points  map[Point]PointCost `json:"points"`
	Formula *Formula            `json:"formula"`
}

// Options tune Analyze.
type Options struct {
	// FailOver is the percent of a limit above which a worst case is not
	// ok (0 means 100).
	FailOver float64
	// Gate is "auto" (or ""), "schema", "request" or "profile".
	Gate string
	// Profile is the realistic size profile; nil means DefaultProfile().
	Profile *Profile
	// Validating are ValidatingAdmissionPolicies to analyze too (the
	// report's ValidatingPolicies).
	Validating []manifest.ValidatingPolicy
}

// Gates are the values of Options.Gate.
func Gates() []string {
	return []string{"auto", string(PointSchema), string(PointRequest), string(PointProfile)}
}

// Analyze is AnalyzeWith at the default options and failOver.
func Analyze(policies []manifest.Policy, crds *CRDIndex, failOver float64) (*Report, error) {
	return AnalyzeWith(policies, crds, Options{FailOver: failOver})
}

// AnalyzeWith compiles every policy and estimates its costs for every kind it
// targets (a CRD kind of crds its resource rules name, a built-in kind,
// and one schema-less target for everything else) at the three evaluation
// Points, comparing the worst case at the gate point with its limit and
// FailOver percent of it. Expressions that do not compile are an error,
// listing every such policy.
func AnalyzeWith(policies []manifest.Policy, crds *CRDIndex, opts Options) (*Report, error) {
	failOver := opts.FailOver
	if failOver == 0 {
		failOver = 100
	}
	if opts.Gate == "" {
		opts.Gate = "auto"
	}
	if !contains(Gates(), opts.Gate) {
		return nil, fmt.Errorf("unknown gate %q (%s)", opts.Gate, strings.Join(Gates(), ", "))
	}
	if opts.Profile == nil {
		opts.Profile = DefaultProfile()
	}
	a := &analyzer{crds: crds, opts: opts, failOver: failOver,
		namespaceDecl: plugincel.BuildNamespaceType(), requestDecl: plugincel.BuildRequestType()}
	comp, err := compiler.New()
	if err != nil {
		return nil, err
	}
	report := &Report{FailOverPercent: failOver, Gate: opts.Gate, Profile: opts.Profile.Entries()}
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
		report.Policies = append(report.Policies, a.policy(p, cp))
	}
	for _, p := range opts.Validating {
		pc, err := a.analyzeValidating(comp, p)
		var merr *manifest.Error
		switch {
		case errors.As(err, &merr):
			compileErrs = append(compileErrs, merr)
			continue
		case err != nil:
			return nil, err
		}
		report.ValidatingPolicies = append(report.ValidatingPolicies, pc)
	}
	if len(opts.Validating) > 0 {
		report.Limits.Validations = ValidationsBudget
		report.Limits.AuditAnnotations = AuditAnnotationsBudget
	}
	if len(compileErrs) > 0 {
		return nil, compileErrs
	}
	for _, p := range report.all() {
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

// all returns the report's policies, the mutating then the validating.
func (r *Report) all() []Policy {
	return append(append([]Policy{}, r.Policies...), r.ValidatingPolicies...)
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
