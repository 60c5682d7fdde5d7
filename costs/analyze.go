package costs

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
)

// costTarget is one kind a policy can be invoked for, with the schema that
// sizes its object (nil: nothing bounds it).
type costTarget struct {
	label   string
	decl    *apiservercel.DeclType
	crd     *unstructured.Unstructured // the CRD serving it, if any
	gvk     schema.GroupVersionKind
	builtin bool
}

// analyzer holds what every policy of one Analyze call shares.
type analyzer struct {
	crds          *CRDIndex
	opts          Options
	failOver      float64
	namespaceDecl *apiservercel.DeclType
	requestDecl   *apiservercel.DeclType
}

// gateOf is the point target t is gated at.
func (a *analyzer) gateOf(t *costTarget) Point {
	if a.opts.Gate != "auto" {
		return Point(a.opts.Gate)
	}
	if t.crd != nil {
		return PointRequest
	}
	return PointProfile
}

// targetCost is everything estimated for one expression and one target.
type targetCost struct {
	est    map[Point]compiler.CostEstimate
	inputs map[string]*inputInfo
	order  []string
	nodes  map[int64]string
	fitted bool
	poly   poly
	approx bool
	fitOK  bool
}

// policyAnalysis is one policy being analyzed.
type policyAnalysis struct {
	a         *analyzer
	targets   []*costTarget
	roots     []map[string]*apiservercel.DeclType
	declared  []func(path []string, kind string) bool
	params    *apiservercel.DeclType
	paramsCRD *unstructured.Unstructured
	paramKind string
	res       *resolver
	// vars are the policy's variables by name.
	vars  map[string]*compiler.Expression
	costs []map[*compiler.Expression]*targetCost
}

func (a *analyzer) policy(p manifest.Policy, cp *compiler.Policy) Policy {
	pa, pc := a.analyze(p, cp)
	for _, m := range cp.Mutations {
		pc.Budgets = append(pc.Budgets, pa.budget(fmt.Sprintf("spec.mutations[%d]", m.Index), []*compiler.Expression{m}, compiler.MutationBudget))
	}
	if len(cp.MatchConditions) > 0 {
		pc.Budgets = append(pc.Budgets, pa.budget("spec.matchConditions", cp.MatchConditions, compiler.MatchConditionsBudget))
	}
	return pc
}

// analyze estimates every expression of cp for every kind p targets; the
// budgets are the caller's (budget).
func (a *analyzer) analyze(p manifest.Policy, cp *compiler.Policy) (*policyAnalysis, Policy) {
	pa := &policyAnalysis{a: a, targets: policyTargets(p.Policy, a.crds)}
	pc := Policy{Name: p.Policy.Name, Source: p.Source.String()}
	if pk := p.Policy.Spec.ParamKind; pk != nil {
		pc.Params = pk.Kind + " " + pk.APIVersion
		pa.paramKind = pc.Params
		if gv, err := schema.ParseGroupVersion(pk.APIVersion); err == nil {
			pa.params, pa.paramsCRD = a.crds.paramsDecl(gv.WithKind(pk.Kind))
		}
	}
	pa.vars = map[string]*compiler.Expression{}
	for _, v := range cp.Variables {
		pa.vars[v.Name] = v
	}
	pa.res = newResolver(pa.vars)
	for _, t := range pa.targets {
		pc.Targets = append(pc.Targets, t.label)
		roots := sizeRoots(t.decl, pa.params)
		roots[compiler.NamespaceVar] = a.namespaceDecl
		roots[compiler.RequestVar] = a.requestDecl
		pa.roots = append(pa.roots, roots)
		pa.declared = append(pa.declared, pa.declaredFunc(t))
		m := map[*compiler.Expression]*targetCost{}
		for _, e := range cp.Expressions() {
			m[e] = pa.estimate(len(pa.roots)-1, e)
		}
		pa.costs = append(pa.costs, m)
	}

	for _, e := range cp.Expressions() {
		pc.Expressions = append(pc.Expressions, pa.expression(e))
	}
	return pa, pc
}

// budget is the worst case of one runtime budget named name: exprs and
// the variables they evaluate, against limit.
func (pa *policyAnalysis) budget(name string, exprs []*compiler.Expression, limit int64) Budget {
	a := pa.a
	used := variableClosure(exprs, pa.vars)
	all := append(append([]*compiler.Expression{}, exprs...), used...)
	b := Budget{Name: name, Limit: limit, Points: map[Point]PointCost{}}
	for _, e := range all {
		label := e.Path.String()
		if e.Kind == compiler.KindVariable {
			label = "variables." + e.Name
		}
		b.Expressions = append(b.Expressions, label)
	}
	sum := func(i int, pt Point) uint64 {
		var s uint64
		for _, e := range all {
			s = addSaturating(s, pa.costs[i][e].est[pt].Max)
		}
		return s
	}
	for _, pt := range Points() {
		worst := pa.worst(func(i int) uint64 { return sum(i, pt) })
		b.Points[pt] = pa.pointCost(worst, sum(worst, pt), limit)
	}
	worst := pa.worst(func(i int) uint64 { return sum(i, a.gateOf(pa.targets[i])) })
	b.Gate = a.gateOf(pa.targets[worst])
	worstMax := sum(worst, b.Gate)
	b.Target = pa.targets[worst].label
	b.Unbounded = worstMax == math.MaxUint64
	b.Max, b.Percent = maxAndPercent(worstMax, limit)
	b.Status = costStatus(worstMax, limit, a.failOver)
	total, ok, approx := poly{}, true, false
	var inputs []FormulaInput
	for _, e := range all {
		tc := pa.fit(worst, e)
		if !tc.fitOK {
			ok = false
			break
		}
		total = total.add(tc.poly)
		approx = approx || tc.approx
		inputs = mergeInputs(inputs, pa.formulaInputs(worst, tc))
	}
	if ok {
		b.Formula = formulaOf(total, inputs, approx)
	}
	return b
}

// declaredFunc tells, for target t, whether a schema declares the size
// limit of the input at path (only CRDs do).
func (pa *policyAnalysis) declaredFunc(t *costTarget) func(path []string, kind string) bool {
	return func(path []string, kind string) bool {
		var crd *unstructured.Unstructured
		version := ""
		switch path[0] {
		case compiler.ObjectVar, compiler.OldObjectVar:
			crd, version = t.crd, t.gvk.Version
		case compiler.ParamsVar:
			crd = pa.paramsCRD
		}
		if crd == nil {
			return false
		}
		v, found := declaredLimit(crd, version, path[1:], limitKeyword(kind))
		return found && v >= 0
	}
}

func (pa *policyAnalysis) sizer(i int, pt Point) *pointSizer {
	return &pointSizer{point: pt, roots: pa.roots[i], declared: pa.declared[i], profile: pa.a.opts.Profile, res: pa.res}
}

// estimate estimates e for target i at every point.
func (pa *policyAnalysis) estimate(i int, e *compiler.Expression) *targetCost {
	tc := &targetCost{est: map[Point]compiler.CostEstimate{}}
	for _, pt := range Points() {
		if e.AST() == nil {
			tc.est[pt] = e.Cost
			continue
		}
		s := pa.sizer(i, pt)
		if pt == PointProfile {
			s.nodes = map[int64]string{}
		}
		est, ok := s.estimate(e)
		if !ok {
			est = e.Cost
		}
		tc.est[pt] = est
		if pt == PointProfile {
			tc.inputs, tc.order, tc.nodes = s.inputs, s.order, s.nodes
		}
	}
	return tc
}

// fit derives the formula of e for target i (once).
func (pa *policyAnalysis) fit(i int, e *compiler.Expression) *targetCost {
	tc := pa.costs[i][e]
	if tc.fitted {
		return tc
	}
	tc.fitted = true
	if tc.est[PointProfile].Unbounded() || e.AST() == nil {
		return tc
	}
	// The inputs varied: lists, maps and values of unknown kind, the most
	// influential first (strings stay at their profile length).
	base := tc.est[PointProfile].Max
	type cand struct {
		key  string
		drop uint64
	}
	var cands []cand
	for _, key := range tc.order {
		if k := tc.inputs[key].kind; k == "string" || k == "bytes" {
			continue
		}
		s := pa.sizer(i, PointProfile)
		s.override = map[string]uint64{key: 0}
		est, ok := s.estimate(e)
		if !ok || est.Max >= base {
			continue
		}
		cands = append(cands, cand{key, base - est.Max})
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].drop > cands[b].drop })
	approx := false
	if len(cands) > maxFormulaInputs {
		cands, approx = cands[:maxFormulaInputs], true
	}
	vars := make([]string, len(cands))
	for j, c := range cands {
		vars[j] = c.key
	}
	estimate := func(sizes map[string]uint64) (uint64, bool) {
		s := pa.sizer(i, PointProfile)
		s.override = sizes
		est, ok := s.estimate(e)
		return est.Max, ok
	}
	// Too many grid points: hold the least influential input at its
	// profile size, and try again.
	for {
		p, fitApprox, ok := fitFormula(vars, estimate)
		if ok {
			tc.poly, tc.approx, tc.fitOK = p, approx || fitApprox, true
			return tc
		}
		if len(vars) == 0 {
			return tc
		}
		vars, approx = vars[:len(vars)-1], true
	}
}

// formulaInputs lists the inputs of tc's formula with their profile sizes.
func (pa *policyAnalysis) formulaInputs(i int, tc *targetCost) []FormulaInput {
	seen := map[string]bool{}
	var out []FormulaInput
	for k := range tc.poly {
		for _, in := range monomialInputs(k) {
			if seen[in] {
				continue
			}
			seen[in] = true
			info := tc.inputs[in]
			fi := FormulaInput{Path: in}
			if info != nil {
				fi.Kind = info.kind
				fi.Profile, fi.ProfileKey = pa.a.opts.Profile.lookup(info.path, info.kind)
				if d := declAt(pa.roots[i], info.path); d != nil && d.MaxElements >= 0 && d.MaxElements < fi.Profile {
					fi.Profile, fi.ProfileKey = d.MaxElements, "schema"
				}
			}
			out = append(out, fi)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Path < out[b].Path })
	return out
}

func mergeInputs(a, b []FormulaInput) []FormulaInput {
	for _, x := range b {
		dup := false
		for _, y := range a {
			if y.Path == x.Path {
				dup = true
			}
		}
		if !dup {
			a = append(a, x)
		}
	}
	sort.Slice(a, func(i, j int) bool { return a[i].Path < a[j].Path })
	return a
}

// worst returns the index of the target with the largest value.
func (pa *policyAnalysis) worst(value func(i int) uint64) int {
	w := 0
	for i := range pa.targets {
		if value(i) > value(w) {
			w = i
		}
	}
	return w
}

func (pa *policyAnalysis) pointCost(i int, max uint64, limit int64) PointCost {
	pc := PointCost{Target: pa.targets[i].label, Unbounded: max == math.MaxUint64, Status: costStatus(max, limit, pa.a.failOver)}
	pc.Max, pc.Percent = maxAndPercent(max, limit)
	return pc
}

// expression reports e: its worst target at the gate, every point, the
// formula and what drives a worst case that is not ok.
func (pa *policyAnalysis) expression(e *compiler.Expression) Expression {
	a := pa.a
	ec := Expression{Path: e.Path.String(), Name: e.Name, Kind: e.Kind.String(), Limit: compiler.PerCallLimit, Points: map[Point]PointCost{}}
	for _, pt := range Points() {
		w := pa.worst(func(i int) uint64 { return pa.costs[i][e].est[pt].Max })
		ec.Points[pt] = pa.pointCost(w, pa.costs[w][e].est[pt].Max, compiler.PerCallLimit)
	}
	worst := pa.worst(func(i int) uint64 { return pa.costs[i][e].est[a.gateOf(pa.targets[i])].Max })
	t := pa.targets[worst]
	ec.Gate = a.gateOf(t)
	est := pa.costs[worst][e].est[ec.Gate]
	ec.Target, ec.Min, ec.Unbounded = t.label, est.Min, est.Unbounded()
	ec.Schema = t.decl != nil || pa.params != nil
	ec.Max, ec.Percent = maxAndPercent(est.Max, compiler.PerCallLimit)
	ec.Status = costStatus(est.Max, compiler.PerCallLimit, a.failOver)

	tc := pa.fit(worst, e)
	if tc.fitOK {
		ec.Formula = formulaOf(tc.poly, pa.formulaInputs(worst, tc), tc.approx)
		ec.SuperLinear = superLinear(tc.poly, pa.uses(e, tc))
	}
	if ec.Status != StatusOK {
		if ec.Gate == PointProfile && tc.fitOK {
			ec.Drivers = pa.profileDrivers(worst, e, tc)
		} else {
			ec.Drivers = explainDrivers(ExplainCost(e, t.decl, pa.params), t, pa.paramsCRD, pa.paramKind)
		}
	}
	return ec
}

// uses names the constructs that make e's cost depend on each input.
func (pa *policyAnalysis) uses(e *compiler.Expression, tc *targetCost) map[string][]string {
	if e.AST() == nil {
		return nil
	}
	return sizeUses(e, tc.nodes)
}

// profileDrivers explains a worst case over its limit at the profile point:
// the inputs of the formula whose limiting to one item removes at least a
// tenth of it.
func (pa *policyAnalysis) profileDrivers(i int, e *compiler.Expression, tc *targetCost) []Driver {
	inputs := pa.formulaInputs(i, tc)
	sizes := map[string]float64{}
	for _, in := range inputs {
		sizes[in.Path] = float64(in.Profile)
	}
	total := tc.poly.eval(sizes)
	if total <= 0 {
		return nil
	}
	uses := pa.uses(e, tc)
	superl := superLinear(tc.poly, uses)
	var out []Driver
	for _, in := range inputs {
		one := map[string]float64{}
		for k, v := range sizes {
			one[k] = v
		}
		one[in.Path] = 1
		share := (total - tc.poly.eval(one)) / total
		if share < explainMinShare {
			continue
		}
		bound := in.Profile
		d := Driver{Path: in.Path, Kind: in.Kind, Bound: &bound, Share: math.Round(share*1000) / 1000, Uses: iterating(uses[in.Path])}
		usedBy := ""
		if len(d.Uses) > 0 {
			usedBy = " (used by " + strings.Join(d.Uses, ", ") + ")"
		}
		d.Reason = fmt.Sprintf("%s%s is sized %d by the profile (%s)", in.Path, usedBy, in.Profile, in.ProfileKey)
		d.Suggestion = fmt.Sprintf("if real objects hold fewer, say so with --assume %s=N (or a --profile file); otherwise do less work per item", profileKeyFor(in))
		for _, sl := range superl {
			if contains(sl.Inputs, in.Path) {
				d.Suggestion = fmt.Sprintf("the cost is %s in %s: iterate it once (e.g. build the set or map you look up first, in a variable) instead of in nested comprehensions; %s", sl.Growth, in.Path, d.Suggestion)
				break
			}
		}
		out = append(out, d)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Share > out[b].Share })
	return out
}

// profileKeyFor is the --assume key to size in (its profile key, or its
// full path when a generic key sized it).
func profileKeyFor(in FormulaInput) string {
	switch in.ProfileKey {
	case ProfileList, ProfileMap, ProfileString, "schema", "":
		return in.Path
	}
	return in.ProfileKey
}
