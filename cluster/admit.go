package cluster

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/matching"
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
}

// Admit runs a (from Attributes or Decode) through ev, then, unless the
// request was denied, converts the admitted object through its internal
// version and validates it as kube-apiserver's registry would (unless
// NoValidate is set).
func (c *Cluster) Admit(ctx context.Context, ev engine.Admitter, a *matching.Attributes) (*Admission, error) {
	res, err := ev.Admit(ctx, a)
	if err != nil {
		return nil, err
	}
	out := &Admission{Result: res, Object: res.Object}
	if res.Denied != nil || res.Object == nil {
		out.Object = nil
		return out, nil
	}
	if !c.NoDefaults && c.Scheme.Recognizes(a.Kind) {
		// dispatchInvocations converts the versioned object it mutated back
		// into the request's internal object; storage encodes that.
		if out.Object, err = c.Scheme.Convert(res.Object, a.Kind, a.Kind); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	if c.NoValidate || c.NoDefaults {
		// An object that was never defaulted is not what the registry
		// validates: validation needs the defaults.
		return out, nil
	}
	var old map[string]any
	if a.OldObject != nil {
		old = a.OldObject.Object
	}
	if a.Operation != admission.Create && a.Operation != admission.Update {
		return out, nil
	}
	v, err := c.Scheme.Validate(ctx, schemeRequest(a), out.Object, old)
	if err != nil {
		return nil, err
	}
	if v != nil {
		out.Warnings, out.Invalid, out.Stored = v.Warnings, v.Invalid, v.Stored
	}
	return out, nil
}
