package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
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
	_, err := fmt.Fprintln(w)
	return err
}
