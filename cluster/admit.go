package cluster

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// Admission is the outcome of one request in the simulated cluster: the
// mutating admission and what kube-apiserver does with its result before
// storing it.
type Admission struct {
	// Result is the engine's.
	Result engine.Result
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

	// What the rest of the chain did (AdmitChain; Admit leaves these
	// empty). Result then holds the policies' invocations of both rounds
	// and, in Denied, the refusal of whichever stage refused.

	// DeniedBy names the stage that refused the request: PolicyPlugin,
	// WebhookPlugin or a built-in plugin of the reinvocation round.
	DeniedBy string
	// Reinvoked tells that the chain ran its reinvocation round.
	Reinvoked bool
	// ReinvokedPlugins are the steps of the built-in plugins in the
	// reinvocation round.
	ReinvokedPlugins []admissionplugins.Step
	// WebhookCalls has one entry per webhook and round, in order.
	WebhookCalls []webhookclient.Call
	// WebhookWarnings are the webhooks' warnings, in order.
	WebhookWarnings []string
	// AuditAnnotations are the webhooks' and kube-apiserver's audit
	// annotations for them.
	AuditAnnotations map[string]string
}

// Admit runs a (from Attributes or Decode) through ev, then, unless the
// request was denied, converts the admitted object through its internal
// version and validates it as kube-apiserver's registry would (unless
// NoValidate is set). ev runs alone: no built-in plugin runs again and no
// webhook is called, whatever the policies do; AdmitChain runs the whole
// chain as kube-apiserver does.
func (c *Cluster) Admit(ctx context.Context, ev engine.Admitter, a *matching.Attributes) (*Admission, error) {
	res, err := ev.Admit(ctx, a)
	if err != nil {
		return nil, err
	}
	out := &Admission{Result: res}
	if err := c.store(ctx, a, out); err != nil {
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
	}
	return nil
}
