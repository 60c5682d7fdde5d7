package cluster

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// Chain is kube-apiserver's mutating admission chain over the cluster:
// its built-in admission plugins (the cluster's Scheme), then the
// MutatingAdmissionPolicy plugin (Policies), then the
// MutatingAdmissionWebhook plugin (Webhooks), and the reinvocation round
// of admission.reinvoker around them (chain.Runner); then its validating
// stages, once, on what the registry would store (Admission.Validation).
type Chain struct {
	// Policies are the MutatingAdmissionPolicies and bindings; nil: none.
	Policies *engine.Evaluator
	// Webhooks are the MutatingWebhookConfigurations; nil: none.
	Webhooks *webhookclient.Dispatcher
	// ValidatingPolicies is the stage of the ValidatingAdmissionPolicy
	// plugin, and ValidatingWebhooks the ValidatingAdmissionWebhook
	// plugin's, run once after the registry's validation (Admission.
	// Validation); nil: none.
	ValidatingPolicies chain.Stage
	ValidatingWebhooks chain.Stage
}

// Plugin names of the chain's stages, as kube-apiserver names them
// (chain.Result.DeniedBy names these or a built-in plugin).
const (
	PolicyPlugin            = engine.PluginName
	WebhookPlugin           = webhookclient.PluginName
	ValidatingWebhookPlugin = webhookclient.ValidatingPluginName
)

// Webhooks returns a Dispatcher of configs over this cluster: its
// namespaces and resources for matching, its scheme, its authorizer for
// matchConditions, services reached at urls. opts.Previous and
// opts.MaxResponseBytes and opts.Metrics are kept; the rest is the
// cluster's.
func (c *Cluster) Webhooks(configs []*admissionregistrationv1.MutatingWebhookConfiguration, urls webhookclient.ServiceURLs, opts webhookclient.Options) (*webhookclient.Dispatcher, error) {
	opts.Matcher = matching.NewMatcher(c, c.Table)
	opts.Scheme = c.Scheme
	opts.Authorizer = c.Authorizer
	opts.ServiceURLs = urls
	return webhookclient.NewDispatcher(configs, opts)
}

// ValidatingWebhooks returns the ValidatingAdmissionWebhook stage of
// configs over this cluster, for Chain.ValidatingWebhooks, built as
// Webhooks builds the mutating one (previous: the dispatcher it replaces,
// or nil).
func (c *Cluster) ValidatingWebhooks(configs []*admissionregistrationv1.ValidatingWebhookConfiguration, urls webhookclient.ServiceURLs, opts webhookclient.Options, previous *webhookclient.ValidatingDispatcher) (*webhookclient.ValidatingDispatcher, error) {
	opts.Matcher = matching.NewMatcher(c, c.Table)
	opts.Scheme = c.Scheme
	opts.Authorizer = c.Authorizer
	opts.ServiceURLs = urls
	return webhookclient.NewValidatingDispatcher(configs, opts, previous)
}

// stages is ch as the list of stages the chain runs for d: the built-in
// plugins when they ran at decoding, the policies, the webhooks.
func (c *Cluster) stages(ch Chain, d *Decoded) []chain.Stage {
	stages := make([]chain.Stage, 0, 3)
	if d.admitPlugins {
		stages = append(stages, &plugins{c: c, changes: d.pluginChanges})
	}
	if ch.Policies != nil {
		stages = append(stages, ch.Policies)
	}
	if ch.Webhooks != nil {
		stages = append(stages, ch.Webhooks)
	}
	return stages
}

// plugins is the stage of kube-apiserver's built-in admission plugins
// before the policies. Their first round ran when the request was decoded
// (DecodeSteps: Decoded.Plugins); in the reinvocation round they run
// again, those that ran in the first round, with the same attributes, on
// the current object (none of them looks at IsReinvoke, and none asks for
// reinvocation).
type plugins struct {
	c       *Cluster
	changes bool
}

// Name names the stage; a refusal names the plugin (Outcome.DeniedBy).
func (p *plugins) Name() string { return "admission plugins" }

// Admit runs the plugins in the reinvocation round.
func (p *plugins) Admit(ctx context.Context, a *matching.Attributes, rc *chain.Context) (chain.Outcome, error) {
	if a.Object == nil || !rc.IsReinvoke() {
		return chain.Outcome{Object: objectOf(a)}, nil
	}
	out := chain.Outcome{Object: a.Object.Object}
	obj, steps, err := p.c.Plugins.AdmitSteps(ctx, schemeRequest(a), out.Object, oldObject(a), a.UserInfo, a.DryRun, p.changes)
	out.PluginSteps = steps
	if err != nil {
		return out, refused(&out, err)
	}
	out.Object = obj
	return out, nil
}

// refused puts err, the built-in plugins' error with out.PluginSteps
// their steps, into out: a refusal (an *apierrors.StatusError) as
// out.Denied by the plugin of the last step; any other error is returned,
// naming the plugin.
func refused(out *chain.Outcome, err error) error {
	if err == nil {
		return nil
	}
	by := pluginOf(out.PluginSteps)
	var status *apierrors.StatusError
	if !errors.As(err, &status) {
		return fmt.Errorf("%s: %w", by, err)
	}
	out.Denied, out.DeniedBy = status, by
	return nil
}

// pluginOf names the built-in plugin that refused the request: the last
// step's.
func pluginOf(steps []admissionplugins.Step) string {
	if len(steps) > 0 && steps[len(steps)-1].Err != nil {
		return steps[len(steps)-1].Plugin
	}
	return "admission plugins"
}

func objectOf(a *matching.Attributes) map[string]any {
	if a.Object == nil {
		return nil
	}
	return a.Object.Object
}

func oldObject(a *matching.Attributes) map[string]any {
	if a.OldObject == nil {
		return nil
	}
	return a.OldObject.Object
}
