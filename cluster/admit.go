package cluster

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
)

// Admission is the outcome of one request in the simulated cluster: the
// mutating admission chain and what kube-apiserver does with its result
// before storing it.
type Admission struct {
	// Result is the chain's: the object, the refusal and the stage that
	// refused, the reinvocation round, every stage's records (policies'
	// invocations of both rounds, webhook calls, the built-in plugins'
	// steps of the reinvocation round), warnings and audit annotations.
	Result chain.Result
	// Object is the object kube-apiserver would go on to store (nil when
	// the request has none or was denied): the admitted object converted
	// through its internal version, as admission hands it to the registry.
	Object map[string]any
	// Warnings are the registry strategy's warnings.
	Warnings []string
	// Invalid is kube-apiserver's refusal of the admitted object by API
	// validation (a 422 for an invalid object), or nil.
	Invalid *apierrors.StatusError
	// Stored is the object as the registry would store it, after its
	// strategy (PrepareForCreate or PrepareForUpdate), without the system
	// fields the store sets (uid, creationTimestamp, resourceVersion); nil
	// when the object was not validated or is invalid.
	Stored map[string]any
	// Validation is the validating stage's result (the validating list of
	// the Chain run once on the stored object, or on the old object of a
	// DELETE): its refusal, warnings, audit annotations and records. Zero
	// when the request was refused before it or the Chain has no
	// validating stage.
	Validation chain.Result

	// internal is the stored object in its internal form as the
	// registry's strategy left it (scheme.Validation.Internal), for the
	// validating plugins; nil when it was not validated.
	internal runtime.Object
}

// Admit runs the request d (from DecodeSteps: decoded, and through the
// built-in plugins' first round) through the rest of ch as
// kube-apiserver's admission chain does (chain.Runner.Run over the built-in
// plugins, the policies, the webhooks), then, unless the request was
// refused, what its registry does before storing the object: the admitted
// object converted through its internal version and validated (unless
// NoValidate is set).
//
// The first round is the policies, then the webhooks, each on the object
// as the stage before left it. If either changed the object
// (SetShouldReinvoke: any change, whatever the reinvocationPolicy), the
// whole chain runs once more, as admission.reinvoker reruns it: the
// built-in plugins (those that ran in the first round, with the same
// attributes, on the current object), then the policies (those to
// reinvoke by their own rules, and every reinvocable one that ran if the
// object changed since they ran), then the webhooks (likewise). So a
// container a policy adds gets what the built-in plugins give every
// container (the service account token mount, LimitRange defaults) in
// the second round, as in a cluster. A Decoded whose request skipped the
// plugins (Request.SkipAdmissionPlugins) or that was built by hand
// (Decoded{Attributes: a}) runs the policies and webhooks alone.
//
// A refusal by any stage ends the request: Result.Denied holds it and
// Result.DeniedBy names the stage. An object the registry would store then
// goes through the Chain's validating stages (Validation), as
// kube-apiserver's createValidation/updateValidation run them; a DELETE
// or CONNECT goes through them with its old object. Refusal tells the
// first refusal of all. The error is for failures of mutatis itself.
func (c *Cluster) Admit(ctx context.Context, ch Chain, d *Decoded) (*Admission, error) {
	res, err := c.runner.Run(ctx, d.Attributes, c.stages(ch, d)...)
	if err != nil {
		return nil, err
	}
	out := &Admission{Result: res}
	if res.Denied != nil {
		return out, nil
	}
	if err := c.store(ctx, d.Attributes, out); err != nil {
		return nil, err
	}
	if err := c.validate(ctx, ch, d, out); err != nil {
		return nil, err
	}
	return out, nil
}

// store is what kube-apiserver does with the result of mutating admission
// (out.Result) before storing it: the admitted object converted through
// its internal version and validated, into out.
func (c *Cluster) store(ctx context.Context, a *matching.Attributes, out *Admission) error {
	res := out.Result
	out.Object = res.Object
	if res.Denied != nil || res.Object == nil {
		out.Object = nil
		return nil
	}
	var err error
	if !c.opts.NoDefaults && c.Scheme.Recognizes(a.Kind) {
		// dispatchInvocations converts the versioned object it mutated back
		// into the request's internal object; storage encodes that.
		if out.Object, err = c.Scheme.Convert(res.Object, a.Kind, a.Kind); err != nil {
			return apierrors.NewInternalError(err)
		}
	}
	if c.opts.NoValidate || c.opts.NoDefaults {
		// An object that was never defaulted is not what the registry
		// validates: validation needs the defaults.
		return nil
	}
	var old map[string]any
	if a.OldObject != nil {
		old = a.OldObject.Object
	}
	if a.Operation != admission.Create && a.Operation != admission.Update {
		return nil
	}
	v, err := c.Scheme.Validate(ctx, schemeRequest(a), out.Object, old)
	if err != nil {
		return err
	}
	if v != nil {
		out.Warnings, out.Invalid, out.Stored = v.Warnings, v.Invalid, v.Stored
		out.internal = v.Internal()
	}
	return nil
}
