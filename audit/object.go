package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// Verdict is what one policy and binding would do to one object, or why
// it would not act.
type Verdict struct {
	PolicyBinding
	// Acts is true when its mutations ran without error (they may still
	// have left the object as it was).
	Acts bool `json:"acts"`
	// Reason says why it does not act, or how it failed.
	Reason string `json:"reason,omitempty"`
	// Passes are the passes it ran in (1, 2 for reinvocation).
	Passes []int `json:"passes,omitempty"`
}

// ObjectReport is the answer to "what would mutate this object": every
// policy and binding, and the object's outcome.
type ObjectReport struct {
	Resource  string          `json:"resource"`
	Namespace string          `json:"namespace,omitempty"`
	Name      string          `json:"name"`
	Operation string          `json:"operation"`
	Outcome   Outcome         `json:"outcome"`
	Message   string          `json:"message,omitempty"`
	Patch     json.RawMessage `json:"patch,omitempty"`
	Ignored   []string        `json:"ignored,omitempty"`
	Verdicts  []Verdict       `json:"verdicts"`
	// RefusedBy, Warnings and ValidatingVerdicts are the validating
	// stage's: the plugin that refused the object, the warnings, and what
	// each ValidatingAdmissionPolicy binding of the audit decided.
	RefusedBy          string              `json:"refusedBy,omitempty"`
	Warnings           []string            `json:"warnings,omitempty"`
	ValidatingVerdicts []ValidatingVerdict `json:"validatingVerdicts,omitempty"`
}

// ValidatingVerdict is what one ValidatingAdmissionPolicy binding decided
// on one object, or why it did not evaluate it.
type ValidatingVerdict struct {
	PolicyBinding
	// Actions are the binding's validationActions.
	Actions []string `json:"actions"`
	// Evaluated is true when its validations ran; Failures are the
	// messages of those that failed (the object passes when there is
	// none).
	Evaluated bool     `json:"evaluated"`
	Failures  []string `json:"failures,omitempty"`
	// Reason says why it did not evaluate the object.
	Reason string `json:"reason,omitempty"`
}

// Explain evaluates obj, of resource res, and says for every policy and
// binding of the audit whether it would act on it and why not.
func (a *Auditor) Explain(ctx context.Context, res matching.Resource, obj *unstructured.Unstructured) *ObjectReport {
	ev := a.Evaluate(ctx, res, obj)
	out := &ObjectReport{Resource: resourceName(res), Namespace: obj.GetNamespace(), Name: obj.GetName(), Operation: string(a.operation), Outcome: ev.Outcome, Message: ev.Message}
	if len(ev.Patch) > 0 {
		out.Patch = ev.Patch
	}
	var invs []chain.Invocation
	if ev.Admission != nil {
		invs = ev.Admission.Result.Invocations
		for _, ig := range ev.Admission.Result.Ignored {
			out.Ignored = append(out.Ignored, ig.Message)
		}
	}
	policies := map[string]bool{}
	for _, p := range a.policies {
		policies[p.Name] = true
	}
	bound := map[string]bool{}
	for _, b := range a.bindings {
		pb := PolicyBinding{Policy: b.Spec.PolicyName, Binding: b.Name}
		bound[pb.Policy] = true
		v := Verdict{PolicyBinding: pb}
		for _, inv := range invs {
			if inv.Configuration != pb.Policy || inv.Hook != pb.Binding {
				continue
			}
			switch {
			case inv.Err != nil:
				v.Reason = fmt.Sprintf("pass %d: %s: %v", inv.Round+1, inv.Skip, inv.Err)
				if inv.Skip == chain.NotSkipped {
					v.Reason = fmt.Sprintf("pass %d: error: %v", inv.Round+1, inv.Err)
				}
			case inv.Ran():
				v.Acts = true
				v.Passes = append(v.Passes, inv.Round+1)
			case v.Reason == "" && inv.Skip != chain.SkipNotReinvoked:
				v.Reason = inv.SkipMessage()
			}
		}
		switch {
		case v.Acts:
			v.Reason = ""
		case !policies[pb.Policy]:
			v.Reason = "the binding names no policy of the audit"
		case v.Reason == "" && ev.Request == nil:
			v.Reason = "not evaluated: the request fails before the policies"
		case v.Reason == "":
			v.Reason = fmt.Sprintf("the policy's rules do not name %s on %s", a.operation, out.Resource)
		}
		out.Verdicts = append(out.Verdicts, v)
	}
	for _, p := range a.policies {
		if !bound[p.Name] {
			out.Verdicts = append(out.Verdicts, Verdict{PolicyBinding: PolicyBinding{Policy: p.Name}, Reason: "no binding names the policy"})
		}
	}
	out.ValidatingVerdicts = a.validatingVerdicts(ev)
	if ev.Admission != nil {
		out.Warnings = ev.Admission.Validation.Warnings
		if ev.Outcome == OutcomeDeny && ev.Admission.Result.Denied == nil {
			out.RefusedBy = ev.Admission.Validation.DeniedBy
		}
	}
	slices.SortStableFunc(out.Verdicts, func(x, y Verdict) int {
		if x.Acts != y.Acts {
			if x.Acts {
				return -1
			}
			return 1
		}
		return 0
	})
	return out
}

// validatingVerdicts are the verdicts of the audit's
// ValidatingAdmissionPolicy bindings on the evaluation ev.
func (a *Auditor) validatingVerdicts(ev *Evaluation) []ValidatingVerdict {
	var records []chain.Validation
	if ev.Admission != nil {
		records = ev.Admission.Validation.Validations
	}
	var out []ValidatingVerdict
	for _, b := range a.vbindings {
		v := ValidatingVerdict{PolicyBinding: PolicyBinding{Policy: b.Spec.PolicyName, Binding: b.Name}}
		for _, act := range b.Spec.ValidationActions {
			v.Actions = append(v.Actions, string(act))
		}
		found := false
		for _, r := range records {
			if r.Configuration != v.Policy || r.Hook != v.Binding {
				continue
			}
			found = true
			if !r.Ran() {
				if v.Reason == "" {
					v.Reason = r.SkipMessage()
					if r.Err != nil {
						v.Reason += ": " + r.Err.Error()
					}
				}
				continue
			}
			v.Evaluated, v.Reason = true, ""
			for _, d := range r.Decisions {
				if d.Action == chain.DecisionDeny {
					v.Failures = append(v.Failures, d.Message)
				}
			}
		}
		switch {
		case found:
		case ev.Admission == nil || ev.Outcome == OutcomeDeny && ev.Admission.Validation.Denied == nil || ev.Outcome == OutcomeInvalid:
			v.Reason = "not evaluated: the request is refused before the validating stage"
		case ev.Admission.Validation.Denied != nil && beforePolicies(ev.Admission.Validation.DeniedBy):
			v.Reason = "not evaluated: " + ev.Admission.Validation.DeniedBy + " refused the request first"
		default:
			v.Reason = "the policy's rules do not name the request"
		}
		out = append(out, v)
	}
	return out
}

// beforePolicies tells whether the built-in plugin named plugin validates
// before the ValidatingAdmissionPolicy plugin in kube-apiserver's order
// (admissionplugins.All).
func beforePolicies(plugin string) bool {
	i := slices.IndexFunc(admissionplugins.All, func(p admissionplugins.Plugin) bool { return p.Name == plugin })
	vap := slices.IndexFunc(admissionplugins.All, func(p admissionplugins.Plugin) bool { return p.Name == "ValidatingAdmissionPolicy" })
	return i >= 0 && i < vap
}

// WriteText writes the object report for people.
func (o *ObjectReport) WriteText(w io.Writer) error {
	name := o.Name
	if o.Namespace != "" {
		name = o.Namespace + "/" + name
	}
	fmt.Fprintf(w, "%s %s on %s: would %s\n", o.Resource, name, o.Operation, verb(o.Outcome))
	if o.Message != "" {
		fmt.Fprintf(w, "message: %s\n", o.Message)
	}
	if len(o.Patch) > 0 {
		fmt.Fprintf(w, "patch: %s\n", o.Patch)
	}
	for _, ig := range o.Ignored {
		fmt.Fprintf(w, "ignored: %s\n", ig)
	}
	for _, v := range o.Verdicts {
		who := fmt.Sprintf("policy %q", v.Policy)
		if v.Binding != "" {
			who += fmt.Sprintf(" binding %q", v.Binding)
		}
		if v.Acts {
			fmt.Fprintf(w, "  acts:     %s (pass %v)\n", who, v.Passes)
		} else {
			fmt.Fprintf(w, "  inactive: %s: %s\n", who, v.Reason)
		}
	}
	if o.RefusedBy != "" {
		fmt.Fprintf(w, "refused by: %s\n", o.RefusedBy)
	}
	for _, v := range o.ValidatingVerdicts {
		who := fmt.Sprintf("ValidatingAdmissionPolicy %q binding %q [%s]", v.Policy, v.Binding, strings.Join(v.Actions, ","))
		switch {
		case !v.Evaluated:
			fmt.Fprintf(w, "  not evaluated: %s: %s\n", who, v.Reason)
		case len(v.Failures) == 0:
			fmt.Fprintf(w, "  passes:   %s\n", who)
		default:
			fmt.Fprintf(w, "  fails:    %s: %s\n", who, strings.Join(v.Failures, "; "))
		}
	}
	for _, warning := range o.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	_, err := fmt.Fprintln(w)
	return err
}
