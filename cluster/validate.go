package cluster

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/params"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/validating"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// validate runs kube-apiserver's validating admission for the request d
// into out: the list of validating stages (validatingStages), once, with
// no reinvocation (chain.Runner.RunOnce), on the object as the registry
// hands it to its createValidation/updateValidation (k8s.io/apiserver
// pkg/registry/generic/registry/store.go: after the strategy's
// PrepareForCreate/PrepareForUpdate and its validation), or, for a DELETE
// or a CONNECT, on the request's old object alone. It runs only when
// neither the mutating chain nor the registry refused the request: their
// refusals come first, as in kube-apiserver.
func (c *Cluster) validate(ctx context.Context, ch Chain, d *Decoded, out *Admission) error {
	if out.Result.Denied != nil || out.Invalid != nil {
		return nil
	}
	stages := c.validatingStages(ch, d, out.internal)
	if len(stages) == 0 {
		return nil
	}
	va := *d.Attributes
	switch va.Operation {
	case admission.Create, admission.Update:
		obj := out.Stored
		if obj == nil {
			// NoValidate or NoDefaults: the object as admission left it.
			obj = out.Object
		}
		if obj == nil {
			return nil
		}
		va.Object = &unstructured.Unstructured{Object: obj}
	default:
		va.Object = nil
	}
	res, err := c.runner.RunOnce(ctx, &va, stages...)
	out.Validation = res
	return err
}

// validatingStages is ch's validating list for d in kube-apiserver 1.37's
// order (k8s.io/kubernetes pkg/kubeapiserver/options/plugins.go,
// AllOrderedPlugins): the built-in plugins that validate before the
// ValidatingAdmissionPolicy plugin (PodSecurity, LimitRanger …), the
// ValidatingAdmissionPolicy plugin, then the ValidatingAdmissionWebhook
// plugin, those ch has, then the built-in plugins after them. The
// built-in plugins run when the request went through the plugins before
// MAP (neither NoDefaults nor Request.SkipAdmissionPlugins).
func (c *Cluster) validatingStages(ch Chain, d *Decoded, internal runtime.Object) []chain.Stage {
	var stages []chain.Stage
	if d.validatePlugins {
		stages = append(stages, &validatingPlugins{c: c, at: admissionplugins.BeforePolicies, internal: internal})
	}
	if ch.ValidatingPolicies != nil && !c.disabled[validating.PluginName] {
		stages = append(stages, ch.ValidatingPolicies)
	}
	if ch.ValidatingWebhooks != nil && !c.disabled[webhookclient.ValidatingPluginName] {
		stages = append(stages, ch.ValidatingWebhooks)
	}
	if d.validatePlugins {
		stages = append(stages, &validatingPlugins{c: c, at: admissionplugins.AfterWebhooks, internal: internal})
	}
	return stages
}

// Refusal is the request's refusal, the first in kube-apiserver's order,
// and who refused: the mutating chain's (a built-in plugin, a policy, a
// webhook: Result.DeniedBy), the registry's validation ("validation":
// Invalid, the 422), then the validating stage's (Validation.DeniedBy).
// nil when the request was admitted.
func (adm *Admission) Refusal() (status *apierrors.StatusError, by string) {
	switch {
	case adm.Result.Denied != nil:
		return adm.Result.Denied, adm.Result.DeniedBy
	case adm.Invalid != nil:
		return adm.Invalid, "validation"
	case adm.Validation.Denied != nil:
		return adm.Validation.Denied, adm.Validation.DeniedBy
	}
	return nil, ""
}

// ValidatingPolicies returns the stage of the ValidatingAdmissionPolicy
// plugin over this cluster (Chain.ValidatingPolicies): policies compiled
// with comp (nil for a new Compiler) and their bindings, matched against
// its namespaces and resources, params from its objects, objects presented
// in a matched version with its scheme, its authorizer for the CEL
// authorizer variables.
func (c *Cluster) ValidatingPolicies(comp *validating.Compiler, policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*validating.Evaluator, error) {
	return validating.NewEvaluator(validating.Config{
		Matcher:    matching.NewMatcher(c, c.Table),
		Params:     &params.Collector{Source: c.Params, Scopes: c},
		Scheme:     c.Scheme,
		Authorizer: c.Authorizer,
	}, comp, policies, bindings), nil
}
