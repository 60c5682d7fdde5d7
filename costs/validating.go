package costs

import (
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
)

// The runtime budgets kube-apiserver's ValidatingAdmissionPolicy plugin
// gives one evaluation of a policy × binding × param (k8s.io/apiserver
// plugin/policy/validating validator.go, dispatcher.go): the
// matchConditions share celconfig.RuntimeCELCostBudgetMatchConditions;
// the validations share celconfig.RuntimeCELCostBudget and the
// messageExpressions have what they left; the auditAnnotations have a
// budget of their own. A variable is charged to the first expression of
// each that evaluates it. Every expression has the per-call limit.
const (
	// ValidationsBudget is the budget of the validations and their
	// messageExpressions.
	ValidationsBudget = celconfig.RuntimeCELCostBudget
	// AuditAnnotationsBudget is the budget of the auditAnnotations.
	AuditAnnotationsBudget = celconfig.RuntimeCELCostBudget
)

// Role is what a ValidatingAdmissionPolicy's expression is, where a
// Surrogate holds it as a variable.
type Role struct {
	// Kind is "validation", "messageExpression" or "auditAnnotation".
	Kind string
	// Path is the expression's field path in the ValidatingAdmissionPolicy.
	Path string
}

// Surrogate is a ValidatingAdmissionPolicy as a MutatingAdmissionPolicy
// that mutates nothing, for the analyses that measure or estimate
// expressions one by one (cost here, bench in harness): the same name,
// paramKind, matchConstraints, failurePolicy, matchConditions and
// variables, then the validations, messageExpressions and auditAnnotations
// as variables after them. That is what their cost is: an expression of
// any type in the same environment of stored expressions (object,
// oldObject, request, params, namespaceObject, authorizer, the variables
// before them); kube-apiserver checks their types at create time, which
// the manifest's loading did. It is never admitted with: the
// ValidatingAdmissionPolicy plugin itself is package validating's.
type Surrogate struct {
	Policy *admissionregistrationv1.MutatingAdmissionPolicy
	// Roles names each added variable (by its name) as the expression it
	// stands for.
	Roles map[string]Role
}

// SurrogateOf returns vap's Surrogate.
func SurrogateOf(vap *admissionregistrationv1.ValidatingAdmissionPolicy) Surrogate {
	m := &admissionregistrationv1.MutatingAdmissionPolicy{}
	m.Name = vap.Name
	m.Spec.ParamKind = vap.Spec.ParamKind
	m.Spec.MatchConstraints = vap.Spec.MatchConstraints
	m.Spec.FailurePolicy = vap.Spec.FailurePolicy
	for _, c := range vap.Spec.MatchConditions {
		m.Spec.MatchConditions = append(m.Spec.MatchConditions, admissionregistrationv1.MatchCondition(c))
	}
	for _, v := range vap.Spec.Variables {
		m.Spec.Variables = append(m.Spec.Variables, admissionregistrationv1.Variable(v))
	}
	roles := map[string]Role{}
	add := func(kind, path, expr string) {
		// Not a name a policy can declare: never referenced.
		name := fmt.Sprintf("__%s_%d", kind, len(roles))
		roles[name] = Role{Kind: kind, Path: path}
		m.Spec.Variables = append(m.Spec.Variables, admissionregistrationv1.Variable{Name: name, Expression: expr})
	}
	for i, v := range vap.Spec.Validations {
		add("validation", fmt.Sprintf("spec.validations[%d].expression", i), v.Expression)
		if v.MessageExpression != "" {
			add("messageExpression", fmt.Sprintf("spec.validations[%d].messageExpression", i), v.MessageExpression)
		}
	}
	for i, an := range vap.Spec.AuditAnnotations {
		add("auditAnnotation", fmt.Sprintf("spec.auditAnnotations[%d].valueExpression", i), an.ValueExpression)
	}
	return Surrogate{Policy: m, Roles: roles}
}

// SurrogateBinding is b as a binding of the Surrogate: the same policy
// name, paramRef and matchResources.
func SurrogateBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	mb := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	mb.Name = b.Name
	mb.Spec.PolicyName = b.Spec.PolicyName
	mb.Spec.ParamRef = b.Spec.ParamRef
	mb.Spec.MatchResources = b.Spec.MatchResources
	return mb
}

// analyzeValidating estimates a ValidatingAdmissionPolicy as analyze does
// a MutatingAdmissionPolicy, through its Surrogate: the sizes, points,
// formulas and drivers of the same analysis. The report names each
// expression by its own field path and kind (validation,
// messageExpression, auditAnnotation). The budgets are the plugin's:
// spec.matchConditions, spec.validations (validations and
// messageExpressions) and spec.auditAnnotations.
func (a *analyzer) analyzeValidating(comp *compiler.Compiler, p manifest.ValidatingPolicy) (Policy, error) {
	vap := p.Policy
	sur := SurrogateOf(vap)
	m, roles := sur.Policy, sur.Roles
	cp, err := comp.Compile(m)
	if err != nil {
		return Policy{}, err
	}
	comp.Forget(m.Name) // a compilation of the report's own, not of a policy
	if errs := cp.Errors(); len(errs) > 0 {
		return Policy{}, &manifest.Error{Source: p.Source, Kind: "ValidatingAdmissionPolicy", Name: vap.Name, Errs: errs}
	}
	pa, pc := a.analyze(manifest.Policy{Source: p.Source, Policy: m}, cp)
	var validations, audits []*compiler.Expression
	for _, v := range cp.Variables {
		switch roles[v.Name].Kind {
		case "validation", "messageExpression":
			validations = append(validations, v)
		case "auditAnnotation":
			audits = append(audits, v)
		}
	}
	if len(cp.MatchConditions) > 0 {
		pc.Budgets = append(pc.Budgets, pa.budget("spec.matchConditions", cp.MatchConditions, compiler.MatchConditionsBudget))
	}
	if len(validations) > 0 {
		pc.Budgets = append(pc.Budgets, pa.budget("spec.validations", validations, ValidationsBudget))
	}
	if len(audits) > 0 {
		pc.Budgets = append(pc.Budgets, pa.budget("spec.auditAnnotations", audits, AuditAnnotationsBudget))
	}
	// Name every synthetic variable by its own field.
	for i := range pc.Expressions {
		e := &pc.Expressions[i]
		if r, ok := roles[e.Name]; ok {
			e.Path, e.Kind, e.Name = r.Path, r.Kind, ""
		}
	}
	// In the order kube-apiserver evaluates them: the matchConditions
	// before the validations (variables first, as they are compiled).
	rank := func(e Expression) int {
		switch e.Kind {
		case "variable":
			return 0
		case "matchCondition":
			return 1
		}
		return 2
	}
	sort.SliceStable(pc.Expressions, func(i, j int) bool { return rank(pc.Expressions[i]) < rank(pc.Expressions[j]) })
	for i := range pc.Budgets {
		b := &pc.Budgets[i]
		for j, label := range b.Expressions {
			if r, ok := roles[strings.TrimPrefix(label, "variables.")]; ok {
				b.Expressions[j] = r.Path
			}
		}
	}
	return pc, nil
}

// ValidatingEstimate is the static cost estimate of one expression of a
// ValidatingAdmissionPolicy, as Estimates gives a MutatingAdmissionPolicy's.
type ValidatingEstimate struct {
	// Path is the expression's field path in the policy; Name the
	// variable's or matchCondition's name.
	Path, Name string
	Cost       compiler.CostEstimate
}

// ValidatingEstimates returns the estimate of every expression of vap that
// compiles (through its Surrogate, compiled with comp), in the surrogate's
// order (variables, matchConditions, validations with their
// messageExpressions, auditAnnotations): what mutatis lint shows.
func (ix *CRDIndex) ValidatingEstimates(comp *compiler.Compiler, vap *admissionregistrationv1.ValidatingAdmissionPolicy) ([]ValidatingEstimate, error) {
	sur := SurrogateOf(vap)
	cp, err := comp.Compile(sur.Policy)
	if err != nil {
		return nil, err
	}
	comp.Forget(sur.Policy.Name)
	var out []ValidatingEstimate
	for _, e := range ix.Estimates(sur.Policy, cp) {
		ve := ValidatingEstimate{Path: e.Expression.Path.String(), Name: e.Expression.Name, Cost: e.Cost}
		if r, ok := sur.Roles[e.Expression.Name]; ok {
			ve.Path, ve.Name = r.Path, ""
		}
		out = append(out, ve)
	}
	rank := func(e ValidatingEstimate) int {
		switch {
		case strings.HasPrefix(e.Path, "spec.variables"):
			return 0
		case strings.HasPrefix(e.Path, "spec.matchConditions"):
			return 1
		}
		return 2
	}
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	return out, nil
}
