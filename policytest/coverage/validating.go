package coverage

import (
	"fmt"
	"io"
	"text/tabwriter"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/validating"
)

// ValidatingCompiler returns a ValidatingAdmissionPolicy compiler whose
// policies tell r which of their expressions upstream's Validator
// evaluated and to what (validating.NewObservedCompiler): their decisions
// are an unobserved compiler's.
func (r *Recorder) ValidatingCompiler() *validating.Compiler {
	return validating.NewObservedCompiler(r)
}

// ObserveValidating implements validating.Observer.
func (r *Recorder) ObserveValidating(o validating.Observation) {
	result := resultOf(o.Value, o.Err)
	r.mu.Lock()
	defer r.mu.Unlock()
	key := exprKey{policy: o.Policy, path: o.Path}
	evaluated(r.vexpressions, key, result)
}

// recordValidations records the ValidatingAdmissionPolicy bindings of an
// admission's validating stage: a binding is invoked when an evaluation
// through it ran the validations, selected when its matchResources
// selected the request. r.mu must be held.
func (r *Recorder) recordValidations(vs []chain.Validation) {
	for _, v := range vs {
		if rec := selectedBinding(r.vbindings, v.Record); rec != nil && v.Ran() {
			rec.invoked++
		}
	}
}

// ValidatingCounts are the coverage metrics of a ValidatingAdmissionPolicy
// or of all of a report's.
type ValidatingCounts struct {
	// Validations: two per validation, seen true (passed) and seen false
	// (failed).
	Validations Count `json:"validations"`
	// MessageExpressions evaluated at least once.
	MessageExpressions Count `json:"messageExpressions"`
	// AuditAnnotations whose valueExpression was evaluated at least once.
	AuditAnnotations Count `json:"auditAnnotations"`
	// Bindings through which the policy's validations ran.
	Bindings Count `json:"bindings"`
	// MatchConditions outcomes: two per matchCondition, true and false.
	MatchConditions Count `json:"matchConditions"`
	// Variables evaluated at least once.
	Variables Count `json:"variables"`
	// Total is the sum of the six above.
	Total Count `json:"total"`
}

func (c ValidatingCounts) plus(o ValidatingCounts) ValidatingCounts {
	return ValidatingCounts{
		Validations:        c.Validations.plus(o.Validations),
		MessageExpressions: c.MessageExpressions.plus(o.MessageExpressions),
		AuditAnnotations:   c.AuditAnnotations.plus(o.AuditAnnotations),
		Bindings:           c.Bindings.plus(o.Bindings),
		MatchConditions:    c.MatchConditions.plus(o.MatchConditions),
		Variables:          c.Variables.plus(o.Variables),
		Total:              c.Total.plus(o.Total),
	}
}

// ValidatingPolicyReport is the coverage of one ValidatingAdmissionPolicy.
type ValidatingPolicyReport struct {
	Name   string           `json:"name"`
	Counts ValidatingCounts `json:"counts"`
	// Bindings of the policy, sorted by name.
	Bindings []BindingReport `json:"bindings"`
	// Expressions in policy order: variables, matchConditions,
	// validations (each with its messageExpression), auditAnnotations.
	// Their Kind is variable, matchCondition, validation,
	// messageExpression or auditAnnotation; True and False tell a
	// validation or matchCondition seen true and false; Branches are not
	// measured (zero).
	Expressions []ExpressionReport `json:"expressions"`
}

// ValidatingReport is the coverage of a set of ValidatingAdmissionPolicies.
type ValidatingReport struct {
	// Policies, sorted by name.
	Policies []ValidatingPolicyReport `json:"policies"`
	// Totals over all policies.
	Totals ValidatingCounts `json:"totals"`
}

// Percent is the total coverage of the report in percent (100 when there
// is nothing to cover).
func (r *ValidatingReport) Percent() float64 { return r.Totals.Total.Percent() }

// ValidatingReport computes the coverage of ValidatingAdmissionPolicies and
// their bindings from what r recorded (through ValidatingCompiler and
// RecordResult). Bindings of other policies are ignored.
func (r *Recorder) ValidatingReport(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) *ValidatingReport {
	byPolicy := bindingsByPolicy(bindings, func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) string { return b.Spec.PolicyName })
	r.mu.Lock()
	defer r.mu.Unlock()
	out := &ValidatingReport{Policies: []ValidatingPolicyReport{}}
	for _, p := range sortedByName(policies) {
		pr := ValidatingPolicyReport{Name: p.Name, Expressions: []ExpressionReport{}}
		pr.Bindings = bindingReports(r.vbindings, p.Name, byPolicy[p.Name], &pr.Counts.Bindings)
		r.validatingExpressionReports(p, &pr)
		c := &pr.Counts
		c.Total = c.Validations.plus(c.MessageExpressions).plus(c.AuditAnnotations).plus(c.Bindings).plus(c.MatchConditions).plus(c.Variables)
		out.Policies = append(out.Policies, pr)
		out.Totals = out.Totals.plus(pr.Counts)
	}
	return out
}

// validatingExpressionReports must be called with r.mu held.
func (r *Recorder) validatingExpressionReports(p *admissionregistrationv1.ValidatingAdmissionPolicy, pr *ValidatingPolicyReport) {
	c := &pr.Counts
	// add reports one expression: evaluated once covers it, or, when
	// twoWays, seen true and seen false do.
	add := func(kind validating.ExpressionKind, name, path, source string, count *Count, twoWays bool) {
		er := ExpressionReport{Kind: string(kind), Name: name, Path: path, Source: source}
		rec := r.vexpressions[exprKey{policy: p.Name, path: path}]
		if rec != nil {
			er.Evaluations = rec.evaluations
			er.True = twoWays && rec.results&compiler.OutcomeTrue != 0
			er.False = twoWays && rec.results&compiler.OutcomeFalse != 0
		}
		covered, total := btoi(er.Evaluations > 0), 1
		if twoWays {
			covered, total = btoi(er.True)+btoi(er.False), 2
		}
		*count = count.plus(Count{Covered: covered, Total: total})
		er.setState(covered, total)
		pr.Expressions = append(pr.Expressions, er)
	}
	for i, v := range p.Spec.Variables {
		add(validating.KindVariable, v.Name, fmt.Sprintf("spec.variables[%d].expression", i), v.Expression, &c.Variables, false)
	}
	for i, mc := range p.Spec.MatchConditions {
		add(validating.KindMatchCondition, mc.Name, fmt.Sprintf("spec.matchConditions[%d].expression", i), mc.Expression, &c.MatchConditions, true)
	}
	for i, v := range p.Spec.Validations {
		add(validating.KindValidation, "", fmt.Sprintf("spec.validations[%d].expression", i), v.Expression, &c.Validations, true)
		if v.MessageExpression != "" {
			add(validating.KindMessageExpression, "", fmt.Sprintf("spec.validations[%d].messageExpression", i), v.MessageExpression, &c.MessageExpressions, false)
		}
	}
	for i, a := range p.Spec.AuditAnnotations {
		add(validating.KindAuditAnnotation, a.Key, fmt.Sprintf("spec.auditAnnotations[%d].valueExpression", i), a.ValueExpression, &c.AuditAnnotations, false)
	}
}

// WriteTable writes one aligned row per policy and a TOTAL row, as
// Report.WriteTable does, with the ValidatingAdmissionPolicies' metrics.
func (r *ValidatingReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VALIDATINGPOLICY\tVALIDATIONS\tMESSAGES\tAUDITANNOTATIONS\tBINDINGS\tMATCHCONDITIONS\tVARIABLES\tTOTAL")
	row := func(name string, c ValidatingCounts) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, c.Validations.cell(), c.MessageExpressions.cell(), c.AuditAnnotations.cell(),
			c.Bindings.cell(), c.MatchConditions.cell(), c.Variables.cell(), formatPercent(c.Total.Percent()))
	}
	for _, p := range r.Policies {
		row(p.Name, p.Counts)
	}
	row("TOTAL", r.Totals)
	return tw.Flush()
}
