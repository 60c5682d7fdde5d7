package audit

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mutatis-dev/mutatis/chain"
)

// Finding is what the policies would do to one object, or to the Pods of
// one controller that they would all treat the same way (Count).
type Finding struct {
	// Resource is plural.group; Kind the object's kind.
	Resource  string `json:"resource"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's (of a group, its first Pod's by name).
	Name    string  `json:"name"`
	Outcome Outcome `json:"outcome"`
	// Message is the denial, the 422 or the error, as kube-apiserver's
	// Status.message.
	Message string `json:"message,omitempty"`
	// Patch is the JSON patch of a change.
	Patch string `json:"-"`
	// Policies are the policy/binding pairs that ran on the object, or
	// failed on it.
	Policies []string `json:"policies,omitempty"`
	// Ignored are the errors failurePolicy Ignore dropped.
	Ignored []string `json:"ignored,omitempty"`
	// Owner is the controller of a Pod ("ReplicaSet/web-5d4f8"), when its
	// Pods are grouped.
	Owner string `json:"owner,omitempty"`
	// Count is the number of objects (Pods of Owner) the finding stands for.
	Count int64 `json:"count"`
	// RefusedBy names the validating stage's plugin that refused the
	// object (OutcomeDeny after the registry's validation):
	// "ValidatingAdmissionPolicy", "PodSecurity", a validating webhook's
	// plugin or another built-in plugin.
	RefusedBy string `json:"refusedBy,omitempty"`
	// Validations are the ValidatingAdmissionPolicy validations that fail
	// on the object, each with its binding's validationActions: with Deny
	// they refuse it, with Warn they warn, with Audit they are only
	// recorded (validation.policy.admission.k8s.io/validation_failure).
	Validations []ValidationFailure `json:"validationFailures,omitempty"`
	// Warnings are the validating stage's warnings (a Warn binding's,
	// PodSecurity's warn level), as kube-apiserver returns them.
	Warnings []string `json:"warnings,omitempty"`

	invocations []chain.Invocation
	validations []chain.Validation
}

// ValidationFailure is one failing validation of a
// ValidatingAdmissionPolicy binding on an object.
type ValidationFailure struct {
	Policy  string `json:"policy"`
	Binding string `json:"binding"`
	// Param is "namespace/name" of the param, if any.
	Param string `json:"param,omitempty"`
	// Actions are the binding's validationActions.
	Actions []string `json:"actions"`
	// Message is the validation's message (or the error's).
	Message string `json:"message"`
	// Error tells the failure is an error of the policy (evaluation,
	// configuration) under failurePolicy Fail, not a false validation.
	Error bool `json:"error,omitempty"`
}

func (v ValidationFailure) String() string {
	return fmt.Sprintf("%s/%s [%s]: %s", v.Policy, v.Binding, strings.Join(v.Actions, ","), v.Message)
}

// MarshalJSON writes the patch as JSON, not as a string.
func (f Finding) MarshalJSON() ([]byte, error) {
	type plain Finding
	out := struct {
		plain
		Patch json.RawMessage `json:"patch,omitempty"`
	}{plain: plain(f)}
	if f.Patch != "" {
		out.Patch = json.RawMessage(f.Patch)
	}
	return json.Marshal(out)
}

// Object names the finding's object: namespace/name, or the owner's Pods.
func (f Finding) Object() string {
	name := f.Name
	if f.Owner != "" {
		name = fmt.Sprintf("%s (%d pods)", f.Owner, f.Count)
	}
	if f.Namespace != "" {
		return f.Namespace + "/" + name
	}
	return name
}

// PolicyBinding names a policy and one of its bindings.
type PolicyBinding struct {
	Policy  string `json:"policy"`
	Binding string `json:"binding"`
}

func (p PolicyBinding) String() string { return p.Policy + "/" + p.Binding }

// PolicyStats count what one policy and binding did over the audit (Pods
// grouped by controller count one each).
type PolicyStats struct {
	PolicyBinding
	// Considered: the binding was evaluated for the object (its policy's
	// rules name the request).
	Considered int64 `json:"considered"`
	// Applied: its mutations ran without error.
	Applied int64 `json:"applied"`
	// ConditionFalse: a matchCondition was false.
	ConditionFalse int64 `json:"conditionFalse"`
	// Errors: the invocation failed (denied under failurePolicy Fail, or
	// ignored).
	Errors int64 `json:"errors"`
	// Changed, Denied and Invalid count the objects it applied to (or
	// failed on) with that outcome.
	Changed int64 `json:"changed"`
	Denied  int64 `json:"denied"`
	Invalid int64 `json:"invalid"`
}

// Cost is the runtime cost of one mutation over the audit.
type Cost struct {
	PolicyBinding
	// Mutation is the mutation's index in the policy.
	Mutation int `json:"mutation"`
	// Max is the highest cost charged for one evaluation, on MaxObject.
	Max       int64  `json:"max"`
	MaxObject string `json:"maxObject"`
	// Total and Evaluations give the mean.
	Total       int64 `json:"total"`
	Evaluations int64 `json:"evaluations"`
}

// Summary sums an audit up.
type Summary struct {
	Operation string   `json:"operation"`
	Resources []string `json:"resources"`
	Policies  int      `json:"policies"`
	Bindings  int      `json:"bindings"`
	// Objects counts the audited objects; Outcomes by outcome.
	Objects  int64             `json:"objects"`
	Outcomes map[Outcome]int64 `json:"outcomes"`
	// WithIgnored counts the objects with errors failurePolicy Ignore
	// dropped, whatever their outcome.
	WithIgnored int64 `json:"withIgnoredErrors"`
	// ValidatingPolicies and ValidatingBindings count the audited
	// ValidatingAdmissionPolicies; WithValidationFailures the objects a
	// validation of theirs fails on, whatever the binding's actions, and
	// WithWarnings the objects the validating stage warns about.
	ValidatingPolicies     int     `json:"validatingPolicies,omitempty"`
	ValidatingBindings     int     `json:"validatingBindings,omitempty"`
	WithValidationFailures int64   `json:"withValidationFailures,omitempty"`
	WithWarnings           int64   `json:"withWarnings,omitempty"`
	Seconds                float64 `json:"seconds"`
}

// Report is the result of an audit.
type Report struct {
	Summary  Summary       `json:"summary"`
	Policies []PolicyStats `json:"policies"`
	// ValidatingPolicies count what each ValidatingAdmissionPolicy binding
	// did over the audit.
	ValidatingPolicies []ValidatingStats `json:"validatingPolicies,omitempty"`
	// Costs are the heaviest mutations, by their highest cost.
	Costs []Cost `json:"heaviestCosts"`
	// Findings are the objects not left unchanged, gravest first.
	Findings []Finding `json:"findings"`

	stats  map[PolicyBinding]*PolicyStats
	vstats map[PolicyBinding]*ValidatingStats
	costs  map[costKey]*Cost
	groups map[string]int
	// names holds one copy of each text the findings share (intern).
	names map[string]string
}

// ValidatingStats count what one ValidatingAdmissionPolicy binding did
// over the audit, in objects (every Pod of a controller counts).
type ValidatingStats struct {
	PolicyBinding
	// Actions are the binding's validationActions.
	Actions []string `json:"actions"`
	// Considered: the binding was evaluated for the object (its policy and
	// binding select it); Evaluated: its validations ran (matchConditions
	// true, params found).
	Considered int64 `json:"considered"`
	Evaluated  int64 `json:"evaluated"`
	// Failed: objects a validation fails on (false, or an error under
	// failurePolicy Fail), whatever the actions: what Deny would refuse.
	Failed int64 `json:"failed"`
}

type costKey struct {
	PolicyBinding
	mutation int
}

// HeaviestCosts is how many mutations Report.Costs keeps.
const HeaviestCosts = 10

func newReport(a *Auditor) *Report {
	r := &Report{
		Summary: Summary{Operation: string(a.operation), Policies: len(a.policies), Bindings: len(a.bindings), Outcomes: map[Outcome]int64{}},
		stats:   map[PolicyBinding]*PolicyStats{},
		vstats:  map[PolicyBinding]*ValidatingStats{},
		costs:   map[costKey]*Cost{},
		groups:  map[string]int{},
		names:   map[string]string{},
	}
	for _, res := range a.targets {
		r.Summary.Resources = append(r.Summary.Resources, resourceName(res))
	}
	for _, b := range a.bindings {
		pb := PolicyBinding{Policy: b.Spec.PolicyName, Binding: b.Name}
		r.stats[pb] = &PolicyStats{PolicyBinding: pb}
	}
	r.Summary.ValidatingPolicies, r.Summary.ValidatingBindings = len(a.vpolicies), len(a.vbindings)
	for _, b := range a.vbindings {
		pb := PolicyBinding{Policy: b.Spec.PolicyName, Binding: b.Name}
		s := &ValidatingStats{PolicyBinding: pb}
		for _, act := range b.Spec.ValidationActions {
			s.Actions = append(s.Actions, string(act))
		}
		r.vstats[pb] = s
	}
	return r
}

// add counts f in the report and keeps it unless the object is unchanged.
func (r *Report) add(f Finding) {
	r.Summary.Objects++
	r.Summary.Outcomes[f.Outcome]++
	if len(f.Ignored) > 0 {
		r.Summary.WithIgnored++
	}
	object := f.Resource + " " + f.Name
	if f.Namespace != "" {
		object = f.Resource + " " + f.Namespace + "/" + f.Name
	}
	for _, inv := range f.invocations {
		pb := PolicyBinding{Policy: inv.Configuration, Binding: inv.Hook}
		s := r.stats[pb]
		if s == nil {
			s = &PolicyStats{PolicyBinding: pb}
			r.stats[pb] = s
		}
		// The counts are the first pass's: a reinvocation is the same
		// request.
		if inv.Round == 0 && inv.Skip != chain.SkipPolicyNotSelected && inv.Skip != chain.SkipBindingNotSelected {
			s.Considered++
			switch {
			case inv.Err != nil:
				s.Errors++
			case inv.Skip == chain.SkipMatchConditionFalse:
				s.ConditionFalse++
			case inv.Ran():
				s.Applied++
			}
		}
		if (inv.Ran() || inv.Err != nil) && inv.Round == 0 {
			switch f.Outcome {
			case OutcomeChange:
				s.Changed++
			case OutcomeDeny:
				s.Denied++
			case OutcomeInvalid:
				s.Invalid++
			}
		}
		for i, m := range inv.Mutations {
			k := costKey{pb, i}
			c := r.costs[k]
			if c == nil {
				c = &Cost{PolicyBinding: pb, Mutation: i}
				r.costs[k] = c
			}
			c.Total += m.Cost
			c.Evaluations++
			// Of the objects with the highest cost, the first by name:
			// the workers finish in any order.
			if m.Cost > c.Max || c.MaxObject == "" || (m.Cost == c.Max && object < c.MaxObject) {
				c.Max, c.MaxObject = m.Cost, object
			}
		}
	}
	failed := map[PolicyBinding]bool{}
	for _, v := range f.Validations {
		failed[PolicyBinding{Policy: v.Policy, Binding: v.Binding}] = true
	}
	counted := map[PolicyBinding]bool{}
	for _, v := range f.validations {
		pb := PolicyBinding{Policy: v.Configuration, Binding: v.Hook}
		s := r.vstats[pb]
		if s == nil || counted[pb] || v.Skip == chain.SkipPolicyNotSelected || v.Skip == chain.SkipBindingNotSelected {
			continue // a policy without bindings, or one param of several already counted
		}
		counted[pb] = true
		s.Considered++
		if v.Ran() {
			s.Evaluated++
		}
		if failed[pb] {
			s.Failed++
		}
	}
	if len(f.Validations) > 0 {
		r.Summary.WithValidationFailures++
	}
	if len(f.Warnings) > 0 {
		r.Summary.WithWarnings++
	}
	f.invocations, f.validations = nil, nil
	if f.Outcome == OutcomeUnchanged && len(f.Validations) == 0 && len(f.Warnings) == 0 {
		return
	}
	// Objects treated alike share their texts: the same label added
	// everywhere is one patch in memory, whatever the number of objects
	// (the live heap, hence the collector's work, stays small).
	for i := range f.Policies {
		f.Policies[i] = r.intern(f.Policies[i])
	}
	f.Patch, f.Message, f.Resource, f.Kind, f.Namespace = r.intern(f.Patch), r.intern(f.Message), r.intern(f.Resource), r.intern(f.Kind), r.intern(f.Namespace)
	if f.Owner != "" {
		parts := append([]string{f.Resource, f.Namespace, f.Owner, string(f.Outcome), f.Message, f.Patch, f.RefusedBy}, f.Ignored...)
		parts = append(parts, f.Warnings...)
		for _, v := range f.Validations {
			parts = append(parts, v.String())
		}
		key := strings.Join(parts, "\x00")
		if i, ok := r.groups[key]; ok {
			g := &r.Findings[i]
			g.Count++
			// The group is named by its first Pod by name, whatever
			// order the workers finish in.
			g.Name = min(g.Name, f.Name)
			return
		}
		r.groups[key] = len(r.Findings)
	}
	r.Findings = append(r.Findings, f)
}

// intern returns the one copy of s the report keeps.
func (r *Report) intern(s string) string {
	if kept, ok := r.names[s]; ok {
		return kept
	}
	r.names[s] = s
	return s
}

// finish orders the report.
func (r *Report) finish(elapsed time.Duration) {
	r.Summary.Seconds = elapsed.Seconds()
	rank := func(o Outcome) int { return slices.Index(Outcomes, o) }
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(rank(a.Outcome), rank(b.Outcome)), cmp.Compare(a.Resource, b.Resource),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Owner, b.Owner), cmp.Compare(a.Name, b.Name))
	})
	r.Policies = r.Policies[:0]
	for _, s := range r.stats {
		r.Policies = append(r.Policies, *s)
	}
	slices.SortFunc(r.Policies, func(a, b PolicyStats) int {
		return cmp.Or(cmp.Compare(a.Policy, b.Policy), cmp.Compare(a.Binding, b.Binding))
	})
	r.ValidatingPolicies = r.ValidatingPolicies[:0]
	for _, s := range r.vstats {
		r.ValidatingPolicies = append(r.ValidatingPolicies, *s)
	}
	slices.SortFunc(r.ValidatingPolicies, func(a, b ValidatingStats) int {
		return cmp.Or(cmp.Compare(a.Policy, b.Policy), cmp.Compare(a.Binding, b.Binding))
	})
	r.Costs = r.Costs[:0]
	for _, c := range r.costs {
		r.Costs = append(r.Costs, *c)
	}
	slices.SortFunc(r.Costs, func(a, b Cost) int {
		return cmp.Or(cmp.Compare(b.Max, a.Max), cmp.Compare(a.Policy, b.Policy), cmp.Compare(a.Binding, b.Binding), cmp.Compare(a.Mutation, b.Mutation))
	})
	if len(r.Costs) > HeaviestCosts {
		r.Costs = r.Costs[:HeaviestCosts]
	}
}

// FailOn is the set of outcomes that fail an audit (--fail-on).
type FailOn map[Outcome]bool

// failOnValidation is the FailOn key of --fail-on validation.
const failOnValidation Outcome = "validation"

// ParseFailOn reads --fail-on values: change (an object would change),
// deny (an object would be denied or refused by validation), error (an
// evaluation fails, or an error would be ignored by failurePolicy
// Ignore) and validation (a ValidatingAdmissionPolicy validation fails on
// an object, whatever its binding's actions).
func ParseFailOn(values []string) (FailOn, error) {
	out := FailOn{}
	for _, v := range values {
		switch v {
		case "change":
			out[OutcomeChange] = true
		case "deny":
			out[OutcomeDeny], out[OutcomeInvalid] = true, true
		case "error":
			out[OutcomeError], out[OutcomeIgnored] = true, true
		case "validation":
			out[failOnValidation] = true
		default:
			return nil, fmt.Errorf("--fail-on must be change, deny, error or validation, not %q", v)
		}
	}
	return out, nil
}

// Fails tells whether a finding fails the audit.
func (s FailOn) Fails(f Finding) bool {
	return s[f.Outcome] || (s[OutcomeIgnored] && len(f.Ignored) > 0) || (s[failOnValidation] && len(f.Validations) > 0)
}

// Failed tells whether any finding of r fails the audit.
func (s FailOn) Failed(r *Report) bool {
	return slices.ContainsFunc(r.Findings, s.Fails)
}

// WriteJSON writes r as indented JSON, one finding at a time: a report
// of a hundred thousand findings is never held twice in memory.
func (r *Report) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriter(w)
	field := func(name string, v any, last bool) error {
		b, err := json.MarshalIndent(v, "  ", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(bw, "  %q: %s", name, b)
		if !last {
			bw.WriteString(",")
		}
		_, err = bw.WriteString("\n")
		return err
	}
	bw.WriteString("{\n")
	policies, costs := r.Policies, r.Costs
	if policies == nil {
		policies = []PolicyStats{}
	}
	if costs == nil {
		costs = []Cost{}
	}
	for _, f := range []struct {
		name string
		v    any
	}{{"summary", r.Summary}, {"policies", policies}, {"validatingPolicies", r.ValidatingPolicies}, {"heaviestCosts", costs}} {
		if f.name == "validatingPolicies" && len(r.ValidatingPolicies) == 0 {
			continue
		}
		if err := field(f.name, f.v, false); err != nil {
			return err
		}
	}
	if len(r.Findings) == 0 {
		bw.WriteString("  \"findings\": []\n}\n")
		return bw.Flush()
	}
	bw.WriteString("  \"findings\": [\n")
	for i, f := range r.Findings {
		b, err := json.MarshalIndent(f, "    ", "  ")
		if err != nil {
			return err
		}
		bw.WriteString("    ")
		bw.Write(b)
		if i < len(r.Findings)-1 {
			bw.WriteString(",")
		}
		bw.WriteString("\n")
	}
	bw.WriteString("  ]\n}\n")
	return bw.Flush()
}

// Headline is the one-line summary of the audit.
func (r *Report) Headline() string {
	s := r.Summary
	var parts []string
	for _, o := range Outcomes {
		parts = append(parts, fmt.Sprintf("%s %d", o, s.Outcomes[o]))
	}
	return fmt.Sprintf("audited %d objects as %s with %d policies and %d bindings in %.1fs: %s",
		s.Objects, s.Operation, s.Policies, s.Bindings, s.Seconds, strings.Join(parts, ", "))
}

// WriteTable writes r for a terminal: the summary, one line per finding
// (the patch shortened to its operations' paths), the per-policy counts
// and the heaviest costs.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintln(w, r.Headline())
	fmt.Fprintf(w, "resources: %s\n", strings.Join(r.Summary.Resources, ", "))
	if r.Summary.WithIgnored > 0 {
		fmt.Fprintf(w, "objects with errors ignored by failurePolicy Ignore: %d\n", r.Summary.WithIgnored)
	}
	if s := r.Summary; s.ValidatingPolicies > 0 {
		fmt.Fprintf(w, "ValidatingAdmissionPolicies: %d, bindings: %d; objects a validation fails on: %d; objects warned about: %d\n",
			s.ValidatingPolicies, s.ValidatingBindings, s.WithValidationFailures, s.WithWarnings)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(r.Findings) > 0 {
		fmt.Fprintln(tw, "\nOUTCOME\tRESOURCE\tOBJECT\tPOLICIES\tDETAIL")
		for _, f := range r.Findings {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Outcome, f.Resource, f.Object(), strings.Join(f.Policies, ","), oneLine(f.detail()))
		}
	}
	if len(r.Policies) > 0 {
		fmt.Fprintln(tw, "\nPOLICY\tBINDING\tCONSIDERED\tAPPLIED\tCONDITION FALSE\tERRORS\tCHANGED\tDENIED\tINVALID")
		for _, s := range r.Policies {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", s.Policy, s.Binding, s.Considered, s.Applied, s.ConditionFalse, s.Errors, s.Changed, s.Denied, s.Invalid)
		}
	}
	if len(r.ValidatingPolicies) > 0 {
		fmt.Fprintln(tw, "\nVALIDATING POLICY\tBINDING\tACTIONS\tCONSIDERED\tEVALUATED\tFAILED")
		for _, s := range r.ValidatingPolicies {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", s.Policy, s.Binding, strings.Join(s.Actions, ","), s.Considered, s.Evaluated, s.Failed)
		}
	}
	if len(r.Costs) > 0 {
		fmt.Fprintln(tw, "\nHEAVIEST MUTATIONS\tMAX COST\tMEAN COST\tON")
		for _, c := range r.Costs {
			fmt.Fprintf(tw, "%s mutation %d\t%d\t%d\t%s\n", c.PolicyBinding, c.Mutation, c.Max, c.Total/max(c.Evaluations, 1), c.MaxObject)
		}
	}
	return tw.Flush()
}

// detail is the finding's message, or its patch's operations.
func (f Finding) detail() string {
	parts := []string{f.mutatingDetail()}
	if parts[0] == "" || f.Outcome == OutcomeDeny && f.RefusedBy != "" {
		parts = parts[:0] // the refusal's message says it
		if f.RefusedBy != "" {
			parts = append(parts, f.RefusedBy+": "+f.Message)
		}
	}
	for _, v := range f.Validations {
		if f.RefusedBy == "" || !slices.Contains(v.Actions, "Deny") {
			parts = append(parts, "validation failed: "+v.String())
		}
	}
	for _, w := range f.Warnings {
		// A Warn binding's warning is its validation failure, listed.
		if !strings.HasPrefix(w, "Validation failed for ValidatingAdmissionPolicy '") {
			parts = append(parts, "warning: "+w)
		}
	}
	return strings.Join(parts, "; ")
}

// mutatingDetail is the finding's message, or its patch's operations, or
// the errors failurePolicy Ignore dropped.
func (f Finding) mutatingDetail() string {
	if f.Message != "" {
		return f.Message
	}
	if f.Patch != "" {
		var ops []struct{ Op, Path string }
		if json.Unmarshal([]byte(f.Patch), &ops) == nil {
			var parts []string
			for _, op := range ops {
				parts = append(parts, op.Op+" "+op.Path)
			}
			return strings.Join(parts, ", ")
		}
	}
	if len(f.Ignored) > 0 {
		return "ignored: " + strings.Join(f.Ignored, "; ")
	}
	return ""
}

// oneLine keeps a table row on one line of at most 160 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 160 {
		return string(r[:157]) + "..."
	}
	return s
}
