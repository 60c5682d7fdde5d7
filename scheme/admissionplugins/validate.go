package admissionplugins

import (
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/version"

	"github.com/mutatis-dev/mutatis/scheme"
)

// kubeVersion is kube-apiserver 1.37's effective version: binary and
// emulation version 1.37 (PodSecurity's "latest" is its policies of 1.37).
var kubeVersion = compatibility.NewEffectiveVersionFromString(version.DefaultKubeBinaryVersion, "", "")

// Phase is where in kube-apiserver's validating admission a built-in
// plugin validates: kube-apiserver runs the Validate of every plugin of
// its chain that has one, in the chain's order (All), once, after the
// registry's validation; the ValidatingAdmissionPolicy and
// ValidatingAdmissionWebhook plugins, which mutatis runs as stages of
// their own, split that list in two.
type Phase int

const (
	// BeforePolicies are the plugins before ValidatingAdmissionPolicy:
	// LimitRanger, ServiceAccount, PodSecurity, Priority,
	// PersistentVolumeClaimResize, RuntimeClass, the certificate plugins,
	// NodeDeclaredFeatureValidator, PodResizeValidator and the enabled
	// default-off ones.
	BeforePolicies Phase = iota
	// AfterWebhooks are the plugins after ValidatingAdmissionWebhook
	// (ResourceQuota, AlwaysDeny).
	AfterWebhooks

	phases = iota
)

// phaseOf is the phase of the plugin named name.
func phaseOf(name string) Phase {
	i := slices.IndexFunc(All, func(p Plugin) bool { return p.Name == name })
	vap := slices.IndexFunc(All, func(p Plugin) bool { return p.Name == "ValidatingAdmissionPolicy" })
	if i > vap {
		return AfterWebhooks
	}
	return BeforePolicies
}

// Validation is what the validating plugins of one Phase made of a
// request.
type Validation struct {
	// Steps are the plugins that handled the request, in order, until
	// the refusal (its Err) if one refused.
	Steps []Step
	// Warnings are their warnings (PodSecurity's on a pod template, or
	// under its warn label), as kube-apiserver returns them.
	Warnings []string
	// AuditAnnotations are their audit annotations (PodSecurity's
	// pod-security.kubernetes.io/enforce-policy, …/audit-violations …).
	AuditAnnotations map[string]string
}

// Validate runs the validating halves (admission.ValidationInterface) of
// the enabled plugins of phase at (those New chose and can build) on obj,
// the object of req as the registry would store it (nil for a DELETE or a
// CONNECT), with old the stored object (UPDATE, DELETE), on their internal
// forms, as kube-apiserver's createValidation/updateValidation run its
// admission chain's Validate. The error is the refusal of the plugin that
// refused (an *apierrors.StatusError: PodSecurity's `pods "p" is
// forbidden: violates PodSecurity "restricted:latest": …`, LimitRanger's
// maximum …), the last step's; any other error is a failure of the
// simulation. Kinds without a Go type are not validated.
func (p *Chain) Validate(ctx context.Context, at Phase, req scheme.Request, obj, old map[string]any, u user.Info, dryRun bool) (Validation, error) {
	return p.validate(ctx, at, req, obj, nil, old, u, dryRun)
}

// ValidateInternal is Validate of the object already in its internal form
// (scheme.Validation.Internal: the registry strategy's, which it spares
// converting again). internal is not modified: when plugins run, they get
// a copy of it, as kube-apiserver's createValidation hands them one.
func (p *Chain) ValidateInternal(ctx context.Context, at Phase, req scheme.Request, internal runtime.Object, old map[string]any, u user.Info, dryRun bool) (Validation, error) {
	return p.validate(ctx, at, req, nil, internal, old, u, dryRun)
}

// validate is Validate of obj, or of internal when it is set.
func (p *Chain) validate(ctx context.Context, at Phase, req scheme.Request, obj map[string]any, internal runtime.Object, old map[string]any, u user.Info, dryRun bool) (Validation, error) {
	var v Validation
	s := p.stores.scheme
	if !s.Recognizes(req.Kind) || obj == nil && internal == nil && old == nil {
		return v, nil
	}
	b, err := p.build()
	if err != nil {
		return v, err
	}
	chain := b.validating[at]
	if !chain.Handles(req.Operation) {
		return v, nil
	}
	kube, err := scheme.Kube()
	if err != nil {
		return v, err
	}
	if req.Namespace != "" {
		if err := p.stores.ensureNamespace(req.Namespace); err != nil {
			return v, err
		}
	}
	var oldInternal runtime.Object
	if internal != nil {
		internal = internal.DeepCopyObject()
	}
	if internal == nil && obj != nil {
		if internal, err = s.Internal(obj, req.Kind); err != nil {
			return v, err
		}
	}
	if old != nil {
		if oldInternal, err = s.Internal(old, req.Kind); err != nil {
			return v, err
		}
	}
	log, rec := &stepLog{}, &warnings{}
	ctx = context.WithValue(ctx, stepsKey{}, log)
	ctx = warning.WithWarningRecorder(ctx, rec)
	ctx = audit.WithAuditContext(ctx)
	attrs := admission.NewAttributesRecord(internal, oldInternal, req.Kind, req.Namespace, req.Name, req.Resource, req.Subresource, req.Operation, nil, dryRun, u)
	err = chain.Validate(ctx, attrs, admission.NewObjectInterfacesFromScheme(kube))
	v.Steps, v.Warnings = log.steps, rec.list
	v.AuditAnnotations = audit.AuditContextFrom(ctx).GetEventAnnotations()
	return v, err
}

// validationRecorder decorates a validating plugin to report its step to
// the recorder of the request's context.
type validationRecorder struct {
	name string
	admission.ValidationInterface
}

// Validate implements admission.ValidationInterface.
func (r validationRecorder) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	err := r.ValidationInterface.Validate(ctx, a, o)
	if log, _ := ctx.Value(stepsKey{}).(*stepLog); log != nil {
		log.steps = append(log.steps, Step{Plugin: r.name, Err: err})
	}
	return err
}

// warnings records the warnings of one request as kube-apiserver's
// warning recorder does: each text once, in order.
type warnings struct {
	mu   sync.Mutex
	list []string
}

// AddWarning implements warning.Recorder.
func (w *warnings) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if text != "" && !slices.Contains(w.list, text) {
		w.list = append(w.list, text)
	}
}
