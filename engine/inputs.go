package engine

import (
	"context"

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
	var res Result
	invs, errs := e.collect(ctx, a, 1, &res)
	if st := e.deny(a, errs); st != nil {
		return nil, st
	}
	namespace, st := e.namespaceObject(ctx, a)
	if st != nil {
		return nil, st
	}
	var object, oldObject map[string]any
	if a.Object != nil {
		object = a.Object.Object
	}
	if a.OldObject != nil {
		oldObject = a.OldObject.Object
	}
	admissionAttrs := a.AdmissionAttributes()
	out := make([]InvocationInput, 0, len(invs))
	for _, inv := range invs {
		versioned, err := e.toVersion(object, a.Kind, inv.kind)
		if err != nil {
			return nil, err
		}
		oldVersioned, err := e.toVersion(oldObject, a.Kind, inv.kind)
		if err != nil {
			return nil, err
		}
		in := compiler.Input{
			Object: versioned, OldObject: oldVersioned, Params: inv.param.Object,
			Authorizer: e.cfg.Authorizer, Attributes: admissionAttrs,
		}
		ii := InvocationInput{Policy: inv.hook.Policy.Name, Binding: inv.binding.Name, Compiled: inv.hook.Compiled}
		if inv.param.Object != nil {
			ii.Param = inv.param.Namespace + "/" + inv.param.Name
		}
		ii.MatchConditions = in
		ii.MatchConditions.Request = AdmissionRequest(a, a.Resource, inv.kind)
		ii.Mutations = in
		ii.Mutations.Request = AdmissionRequest(a, inv.resource, inv.kind)
		ii.Mutations.Namespace = namespace
		out = append(out, ii)
	}
	return out, nil
}
