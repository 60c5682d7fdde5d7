package coverage

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/policytest/coverage/decisions"
)

// Count is a number of covered items out of a total.
type Count struct {
	Covered int `json:"covered"`
	Total   int `json:"total"`
}

// Percent is 100 × Covered / Total, and 100 when there is nothing to cover.
func (c Count) Percent() float64 {
	if c.Total == 0 {
		return 100
	}
	return 100 * float64(c.Covered) / float64(c.Total)
}

// MarshalJSON adds the percentage to the JSON form.
func (c Count) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Covered int     `json:"covered"`
		Total   int     `json:"total"`
		Percent float64 `json:"percent"`
	}{c.Covered, c.Total, c.Percent()})
}

func (c Count) plus(o Count) Count {
	return Count{Covered: c.Covered + o.Covered, Total: c.Total + o.Total}
}

func (c Count) cell() string {
	if c.Total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", c.Covered, c.Total)
}

// Counts are the coverage metrics of a policy or of a whole report.
type Counts struct {
	// Mutations evaluated at least once.
	Mutations Count `json:"mutations"`
	// Bindings through which the policy was invoked (its mutations ran).
	Bindings Count `json:"bindings"`
	// MatchConditions outcomes: two per matchCondition, evaluated true and
	// evaluated false.
	MatchConditions Count `json:"matchConditions"`
	// Variables evaluated at least once.
	Variables Count `json:"variables"`
	// Branches: two per decision (see decisions.Decision), each outcome
	// observed at least once.
	Branches Count `json:"branches"`
	// Total is the sum of the five above.
	Total Count `json:"total"`
}

func (c Counts) plus(o Counts) Counts {
	return Counts{
		Mutations:       c.Mutations.plus(o.Mutations),
		Bindings:        c.Bindings.plus(o.Bindings),
		MatchConditions: c.MatchConditions.plus(o.MatchConditions),
		Variables:       c.Variables.plus(o.Variables),
		Branches:        c.Branches.plus(o.Branches),
		Total:           c.Total.plus(o.Total),
	}
}

// The states of an item in reports (and the CSS classes of the HTML).
const (
	StateCovered   = "covered"
	StatePartial   = "partial"
	StateUncovered = "uncovered"
)

func state(covered, total int) string {
	switch {
	case total > 0 && covered >= total:
		return StateCovered
	case covered > 0:
		return StatePartial
	}
	return StateUncovered
}

// Report is the coverage of a set of policies.
type Report struct {
	// Policies, sorted by name.
	Policies []PolicyReport `json:"policies"`
	// Totals over all policies.
	Totals Counts `json:"totals"`
	// Validating is the coverage of the ValidatingAdmissionPolicies
	// (Recorder.ValidatingReport), when the caller adds it.
	Validating *ValidatingReport `json:"validating,omitempty"`
}

// PolicyReport is the coverage of one policy.
type PolicyReport struct {
	Name   string `json:"name"`
	Counts Counts `json:"counts"`
	// Error tells why the policy's expressions are unknown (it could not be
	// compiled at all); its counts are then empty.
	Error string `json:"error,omitempty"`
	// Bindings of the policy, sorted by name.
	Bindings []BindingReport `json:"bindings"`
	// Expressions in policy order: variables, matchConditions, mutations.
	Expressions []ExpressionReport `json:"expressions"`
}

// BindingReport is the coverage of one binding.
type BindingReport struct {
	Name string `json:"name"`
	// Invocations counts the invocations through the binding that ran the
	// policy's mutations.
	Invocations int `json:"invocations"`
	// Selected counts the invocations whose matchResources selected the
	// request, including those its matchConditions then filtered out.
	Selected int `json:"selected"`
	// FalseConditions are the matchConditions that filtered it out.
	FalseConditions []string `json:"falseConditions,omitempty"`
	// State is covered (invoked), partial (selected, never invoked) or
	// uncovered.
	State string `json:"state"`
}

// ExpressionReport is the coverage of one expression.
type ExpressionReport struct {
	// Kind is variable, matchCondition, applyConfiguration or jsonPatch.
	Kind string `json:"kind"`
	// Name of a variable or matchCondition.
	Name string `json:"name,omitempty"`
	// Path is the expression's field path in the policy.
	Path   string `json:"path"`
	Source string `json:"source"`
	// CompileError is set when the expression did not compile (it is then
	// never evaluated).
	CompileError string `json:"compileError,omitempty"`
	// Evaluations counts the observed evaluations.
	Evaluations int `json:"evaluations"`
	// True and False tell whether a matchCondition was seen true and false.
	True  bool `json:"true,omitempty"`
	False bool `json:"false,omitempty"`
	// Branches counts this expression's branches.
	Branches  Count            `json:"branches"`
	Decisions []DecisionReport `json:"decisions,omitempty"`
	// State: covered when evaluated and every branch (and, for a
	// matchCondition, both results) was seen, partial when evaluated,
	// uncovered otherwise.
	State string `json:"state"`
}

// DecisionReport is one decision of an expression and what was observed.
type DecisionReport struct {
	// Kind is the decision kind (decisions.Kind.String).
	Kind string `json:"kind"`
	// Start and End are byte offsets of the decision's text in Source.
	Start int    `json:"start"`
	End   int    `json:"end"`
	Text  string `json:"text"`
	// TrueLabel and FalseLabel name the outcomes: true/false, or
	// present/absent.
	TrueLabel  string `json:"trueLabel"`
	FalseLabel string `json:"falseLabel"`
	// True and False tell which outcomes were observed.
	True  bool `json:"true"`
	False bool `json:"false"`
	// State is covered (both outcomes), partial (one) or uncovered.
	State string `json:"state"`
}

// Percent is the total coverage of the report in percent (100 when there
// is nothing to cover): the items of the MutatingAdmissionPolicies and of
// the ValidatingAdmissionPolicies (Validating) together.
func (r *Report) Percent() float64 {
	if r.Validating == nil {
		return r.Totals.Total.Percent()
	}
	return r.Totals.Total.plus(r.Validating.Totals.Total).Percent()
}

// Report computes the coverage of policies and their bindings from what r
// recorded. Bindings of other policies are ignored.
func (r *Recorder) Report(policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) *Report {
	byPolicy := bindingsByPolicy(bindings, func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) string { return b.Spec.PolicyName })
	comp, compErr := r.compiler()
	out := &Report{Policies: []PolicyReport{}}
	for _, p := range sortedByName(policies) {
		pr := PolicyReport{Name: p.Name, Bindings: []BindingReport{}, Expressions: []ExpressionReport{}}
		var compiled *compiler.Policy
		err := compErr
		if err == nil {
			compiled, err = comp.Compile(p)
		}
		r.mu.Lock()
		pr.Bindings = bindingReports(r.bindings, p.Name, byPolicy[p.Name], &pr.Counts.Bindings)
		if err != nil {
			pr.Error = err.Error()
		} else {
			r.expressionReports(compiled, &pr)
		}
		r.mu.Unlock()
		c := &pr.Counts
		c.Total = c.Mutations.plus(c.Bindings).plus(c.MatchConditions).plus(c.Variables).plus(c.Branches)
		out.Policies = append(out.Policies, pr)
		out.Totals = out.Totals.plus(pr.Counts)
	}
	return out
}

// sortedByName is objs (nil ones left out) sorted by name, in their
// order where names are equal.
func sortedByName[T any, P interface {
	*T
	GetName() string
}](objs []P) []P {
	out := make([]P, 0, len(objs))
	for _, o := range objs {
		if o != nil {
			out = append(out, o)
		}
	}
	slices.SortStableFunc(out, func(a, b P) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// bindingsByPolicy is the names of bindings (nil ones left out), sorted,
// by the name of the policy each binds (policyName).
func bindingsByPolicy[T any, B interface {
	*T
	GetName() string
}](bindings []B, policyName func(B) string) map[string][]string {
	out := map[string][]string{}
	for _, b := range bindings {
		if b != nil {
			out[policyName(b)] = append(out[policyName(b)], b.GetName())
		}
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

// bindingReports reports the bindings of policy, by name, from records
// (Recorder.bindings or vbindings) and counts them in c: a binding is
// covered when an evaluation through it ran the policy, partial when its
// matchResources selected a request. The Recorder's mu must be held.
func bindingReports(records map[bindingKey]*bindingRecord, policy string, names []string, c *Count) []BindingReport {
	out := []BindingReport{}
	for _, name := range names {
		br := BindingReport{Name: name, State: StateUncovered}
		if rec := records[bindingKey{policy: policy, binding: name}]; rec != nil {
			br.Invocations, br.Selected = rec.invoked, rec.selected
			for cond := range rec.falseConditions {
				br.FalseConditions = append(br.FalseConditions, cond)
			}
			sort.Strings(br.FalseConditions)
			switch {
			case rec.invoked > 0:
				br.State = StateCovered
			case rec.selected > 0:
				br.State = StatePartial
			}
		}
		*c = c.plus(Count{Covered: btoi(br.Invocations > 0), Total: 1})
		out = append(out, br)
	}
	return out
}

// expressionReports must be called with r.mu held.
func (r *Recorder) expressionReports(p *compiler.Policy, pr *PolicyReport) {
	c := &pr.Counts
	for _, e := range p.Expressions() {
		path := e.Path.String()
		er := ExpressionReport{Kind: e.Kind.String(), Name: e.Name, Path: path, Source: e.Source}
		if e.Err != nil {
			er.CompileError = e.Err.Error()
		}
		rec := r.expressions[exprKey{policy: p.Name, path: path}]
		var outcomes []compiler.Outcome
		var results compiler.Outcome
		if rec != nil {
			er.Evaluations = rec.evaluations
			outcomes = rec.outcomes
			results = rec.results
		}
		for i, d := range decisionsOf(e) {
			dr := DecisionReport{Kind: d.Kind.String(), Start: d.Start, End: d.End, Text: e.Source[d.Start:d.End],
				TrueLabel: "true", FalseLabel: "false"}
			if d.Kind.Presence() {
				dr.TrueLabel, dr.FalseLabel = "present", "absent"
			}
			if i < len(outcomes) {
				dr.True = outcomes[i]&compiler.OutcomeTrue != 0
				dr.False = outcomes[i]&compiler.OutcomeFalse != 0
			}
			n := btoi(dr.True) + btoi(dr.False)
			dr.State = state(n, 2)
			er.Branches = er.Branches.plus(Count{Covered: n, Total: 2})
			er.Decisions = append(er.Decisions, dr)
		}
		covered, total := er.Branches.Covered, er.Branches.Total
		switch e.Kind {
		case compiler.KindVariable:
			c.Variables = c.Variables.plus(Count{Covered: btoi(er.Evaluations > 0), Total: 1})
		case compiler.KindMatchCondition:
			results |= r.conditions[conditionKey{policy: p.Name, condition: e.Name}]
			// An invocation that got past the matchConditions saw them all true.
			results |= r.conditions[conditionKey{policy: p.Name}] & compiler.OutcomeTrue
			er.True = results&compiler.OutcomeTrue != 0
			er.False = results&compiler.OutcomeFalse != 0
			n := btoi(er.True) + btoi(er.False)
			c.MatchConditions = c.MatchConditions.plus(Count{Covered: n, Total: 2})
			covered, total = covered+n, total+2
		default:
			c.Mutations = c.Mutations.plus(Count{Covered: btoi(er.Evaluations > 0), Total: 1})
		}
		c.Branches = c.Branches.plus(er.Branches)
		er.setState(covered, total)
		pr.Expressions = append(pr.Expressions, er)
	}
}

// setState sets er.State from what was seen of it: uncovered when it was
// never evaluated (nor seen true or false), covered when its items
// (branches, a matchCondition's or validation's two results) were all
// seen, partial otherwise.
func (er *ExpressionReport) setState(covered, total int) {
	switch {
	case er.Evaluations == 0 && !er.True && !er.False:
		er.State = StateUncovered
	case covered == total:
		er.State = StateCovered
	default:
		er.State = StatePartial
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes one aligned row per policy and a TOTAL row: covered/total
// for each metric ("-" when the policy has none) and the total percentage;
// then, with Validating, the ValidatingAdmissionPolicies' table
// (ValidatingReport.WriteTable) after an empty line (alone when there is
// no MutatingAdmissionPolicy).
func (r *Report) WriteTable(w io.Writer) error {
	if r.Validating != nil {
		if len(r.Policies) > 0 {
			if err := r.mutatingTable(w); err != nil {
				return err
			}
			fmt.Fprintln(w)
		}
		return r.Validating.WriteTable(w)
	}
	return r.mutatingTable(w)
}

func (r *Report) mutatingTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tMUTATIONS\tBINDINGS\tMATCHCONDITIONS\tVARIABLES\tBRANCHES\tTOTAL")
	row := func(name string, c Counts) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, c.Mutations.cell(), c.Bindings.cell(),
			c.MatchConditions.cell(), c.Variables.cell(), c.Branches.cell(), formatPercent(c.Total.Percent()))
	}
	for _, p := range r.Policies {
		row(p.Name, p.Counts)
	}
	row("TOTAL", r.Totals)
	return tw.Flush()
}

func formatPercent(p float64) string { return fmt.Sprintf("%.1f%%", p) }

// decisionsOf lists the decisions of e (none when it did not compile), in
// the order of the outcomes the Recorder's probes observed.
func decisionsOf(e *compiler.Expression) []decisions.Decision {
	if e.AST() == nil {
		return nil
	}
	return decisions.Of(e.AST().NativeRep(), e.Source)
}
