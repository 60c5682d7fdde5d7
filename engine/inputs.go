package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/matching"
)

// InvocationInput is what the expressions of one matched invocation see in
// the first pass, before any mutation ran.
type InvocationInput struct {
	// Policy, Binding and Param ("namespace/name" or "") identify the
	// invocation as Invocation does.
	Policy, Binding, Param string
	// Compiled is the compiled policy.
	Compiled *compiler.Policy
	// MatchConditions is the input of the policy's matchConditions
	// (namespaceObject is null there, as upstream).
	MatchConditions compiler.Input
	// Mutations is the input of its variables and mutations.
	Mutations compiler.Input
}

// Inputs returns the invocations whose policy and binding match a, with
// the inputs their expressions are evaluated with, in evaluation order.
// Whether their matchConditions hold is not decided here. The cost harness
// evaluates single expressions with them, exactly as Admit would.
func (e *Evaluator) Inputs(ctx context.Context, a *matching.Attributes) ([]InvocationInput, error) {
	// The object as Admit presents it to the first pass.
	obj, err := e.requestObject(a)
	if err != nil {
		return nil, err
	}
	cur := *a
	if obj != nil {
		cur.Object = &unstructured.Unstructured{Object: obj}
	}
	a = &cur
	var res chain.Outcome
	var views viewSet
	invs, errs := e.collect(ctx, a, e.appendCandidates(nil, a), nil, 1, &res, &views)
	if st := e.deny(a, errs, 1, &res); st != nil {
		return nil, st
	}
	namespace, st := e.namespaceObject(ctx, a)
	if st != nil {
		return nil, st
	}
	admissionAttrs := a.AdmissionAttributes()
	out := make([]InvocationInput, 0, len(invs))
	for _, inv := range invs {
		view := views.get(inv.kind)
		in := compiler.Input{
			Object: view.object, OldObject: view.oldObject, Params: inv.param.Object,
			Authorizer: e.cfg.Authorizer, Attributes: admissionAttrs,
		}
		ii := InvocationInput{Policy: inv.hook.Policy.Name, Binding: inv.binding.Name, Compiled: inv.hook.Compiled}
		if inv.param.Object != nil {
			ii.Param = inv.param.Namespace + "/" + inv.param.Name
		}
		ii.MatchConditions = in
		ii.MatchConditions.Request = a.AdmissionRequest(a.Resource, inv.kind)
		ii.Mutations = in
		ii.Mutations.Request = a.AdmissionRequest(inv.resource, inv.kind)
		ii.Mutations.Namespace = namespace
		out = append(out, ii)
	}
	return out, nil
}
