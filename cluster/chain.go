package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// Chain is kube-apiserver's mutating admission chain over the cluster:
// its built-in admission plugins (the cluster's Scheme), then the
// MutatingAdmissionPolicy plugin (Policies), then the
// MutatingAdmissionWebhook plugin (Webhooks), and the reinvocation round
// of admission.reinvoker around them.
type Chain struct {
	// Policies are the MutatingAdmissionPolicies and bindings; nil: none.
	Policies *engine.Evaluator
	// Webhooks are the MutatingWebhookConfigurations; nil: none.
	Webhooks *webhookclient.Dispatcher
}

// Plugin names of the chain's stages, as kube-apiserver names them
// (Admission.DeniedBy names these or a built-in plugin).
const (
	PolicyPlugin  = "MutatingAdmissionPolicy"
	WebhookPlugin = "MutatingAdmissionWebhook"
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

// AdmitChain runs the request d (from DecodeSteps: decoded, and through
// the built-in plugins' first round) through the rest of ch as
// kube-apiserver's admission chain does, then what its registry does
// before storing the object (as Admit).
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
// the second round, as in a cluster.
//
// A refusal by any stage ends the request: Result.Denied holds it and
// DeniedBy names the stage. The error is for failures of mutatis itself.
func (c *Cluster) AdmitChain(ctx context.Context, ch Chain, d *Decoded) (*Admission, error) {
	a := d.Attributes
	out := &Admission{AuditAnnotations: map[string]string{}}
	var obj map[string]any
	if a.Object != nil {
		obj = a.Object.Object
	}
	policies, webhooks := &engine.ReinvocationState{}, &webhookclient.ReinvocationState{}
	for round := 1; round <= 2; round++ {
		if round == 2 {
			if !policies.ShouldReinvoke && !webhooks.ShouldReinvoke {
				break
			}
			out.Reinvoked = true
			policies.Reinvoke, webhooks.Reinvoke = true, true
			policies.ShouldReinvoke, webhooks.ShouldReinvoke = false, false
			if d.admitPlugins {
				var steps []admissionplugins.Step
				var err error
				obj, steps, err = c.Plugins.AdmitSteps(ctx, schemeRequest(a), obj, oldObject(a), a.UserInfo, a.DryRun, d.pluginChanges)
				out.ReinvokedPlugins = steps
				if err != nil {
					return out, c.refuse(out, err, pluginOf(steps))
				}
			}
		}
		cur := withObject(a, obj)
		if ch.Policies != nil {
			res, err := ch.Policies.Dispatch(ctx, cur, policies)
			if err != nil {
				return nil, err
			}
			out.Result.Invocations = append(out.Result.Invocations, res.Invocations...)
			out.Result.Ignored = append(out.Result.Ignored, res.Ignored...)
			out.Result.Reinvoke = res.Reinvoke
			if res.Denied != nil {
				out.Result.Denied, out.DeniedBy = res.Denied, PolicyPlugin
				return out, nil
			}
			obj = res.Object
			cur = withObject(a, obj)
		}
		if ch.Webhooks != nil {
			res, err := ch.Webhooks.Dispatch(ctx, cur, webhooks)
			if res != nil {
				out.WebhookCalls = append(out.WebhookCalls, res.Calls...)
				out.WebhookWarnings = append(out.WebhookWarnings, res.Warnings...)
				maps.Copy(out.AuditAnnotations, res.AuditAnnotations)
			}
			if err != nil {
				return out, c.refuse(out, err, WebhookPlugin)
			}
			obj = res.Object
		}
	}
	out.Result.Object = obj
	if err := c.store(ctx, a, out); err != nil {
		return nil, err
	}
	return out, nil
}

// refuse records err, a stage's refusal, as the chain's answer; an error
// that is not kube-apiserver's Status is mutatis' own and returned.
func (c *Cluster) refuse(out *Admission, err error, by string) error {
	var status *apierrors.StatusError
	if !errors.As(err, &status) {
		return fmt.Errorf("%s: %w", by, err)
	}
	out.Result.Denied, out.DeniedBy = status, by
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

// withObject is a with obj as its object.
func withObject(a *matching.Attributes, obj map[string]any) *matching.Attributes {
	cur := *a
	if obj != nil {
		cur.Object = &unstructured.Unstructured{Object: obj}
	}
	return &cur
}

func oldObject(a *matching.Attributes) map[string]any {
	if a.OldObject == nil {
		return nil
	}
	return a.OldObject.Object
}
