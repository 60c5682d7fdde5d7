package cluster

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// validatingPlugins is a stage of kube-apiserver's built-in plugins that
// validate (admissionplugins.Chain.Validate): at BeforePolicies, those
// before the ValidatingAdmissionPolicy plugin (LimitRanger, ServiceAccount,
// PodSecurity, Priority, … PodResizeValidator); at AfterWebhooks, those
// after the ValidatingAdmissionWebhook plugin. They run on the request's
// object as the registry would store it, or a DELETE's old object; their
// warnings and audit annotations are the stage's, a refusal names the
// plugin (Outcome.DeniedBy).
type validatingPlugins struct {
	c  *Cluster
	at admissionplugins.Phase
	// internal is the request's object as the registry's strategy left
	// it (scheme.Validation.Internal), or nil: then the plugins convert
	// the stage's object.
	internal runtime.Object
}

// Name names the stage; a refusal names the plugin.
func (p *validatingPlugins) Name() string { return "admission plugins" }

// Admit runs the plugins' Validate.
func (p *validatingPlugins) Admit(ctx context.Context, a *matching.Attributes, _ *chain.Context) (chain.Outcome, error) {
	out := chain.Outcome{Object: objectOf(a)}
	var v admissionplugins.Validation
	var err error
	if p.internal != nil && a.Object != nil {
		v, err = p.c.Plugins.ValidateInternal(ctx, p.at, schemeRequest(a), p.internal, oldObject(a), a.UserInfo, a.DryRun)
	} else {
		v, err = p.c.Plugins.Validate(ctx, p.at, schemeRequest(a), out.Object, oldObject(a), a.UserInfo, a.DryRun)
	}
	out.PluginSteps, out.Warnings, out.AuditAnnotations = v.Steps, v.Warnings, v.AuditAnnotations
	return out, refused(&out, err)
}
