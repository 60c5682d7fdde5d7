package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// WebhookOptions say how kube-apiserver reaches mutatis and how the
// MutatingWebhookConfigurations are named.
type WebhookOptions struct {
	// Name is the base name of the configurations: Name+"-fail" holds the
	// webhook for failurePolicy Fail policies, Name+"-ignore" the one for
	// Ignore policies. Default "mutatis".
	Name string
	// Namespace is excluded from both webhooks (lockout protection); it
	// defaults to Config.Namespace.
	Namespace string
	// Service is the in-cluster service reference (set its Path, e.g.
	// "/mutate", and Port; a nil Port means 443).
	Service *admissionregistrationv1.ServiceReference
	// URL is the out-of-cluster address, e.g. https://127.0.0.1:8443/mutate.
	URL string
	// CABundle is the PEM CA bundle that signed the serving certificate.
	CABundle []byte
	// TimeoutSeconds of both webhooks (1..30, default 10).
	TimeoutSeconds int32
	// ExcludeNamespaces are excluded from both webhooks too, after
	// Namespace (e.g. SystemNamespaces). kube-apiserver's own MAP plugin
	// excludes none: policies do not apply in them.
	ExcludeNamespaces []string
}

// SystemNamespaces are the namespaces `mutatis serve
// --exclude-system-namespaces` adds to the webhooks' exclusion: with a
// broad Fail policy and mutatis unavailable, kube-apiserver would reject
// the system pods and the node Leases in them.
var SystemNamespaces = []string{metav1.NamespaceSystem, corev1.NamespaceNodeLease}

// managed reports whether the controller manages webhook configurations.
func (o WebhookOptions) managed() bool { return o.Service != nil || o.URL != "" }

// ManagedByLabel marks the configurations the controller owns.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// lockoutConditions keep the webhooks away from mutatis' own objects: its
// shadow policies and bindings and its CustomResourceDefinitions, so that a
// broken policy or an unavailable mutatis can never block fixing them.
var lockoutConditions = []admissionregistrationv1.MatchCondition{
	{Name: "exclude-mutatis-resources", Expression: `request.resource.group != "` + ShadowGroup + `"`},
	{Name: "exclude-mutatis-crds", Expression: `!(request.resource.group == "apiextensions.k8s.io" && request.resource.resource == "customresourcedefinitions" && request.name.endsWith(".` + ShadowGroup + `"))`},
}

// mapOperations are the operations MutatingAdmissionPolicies handle; "*"
// in a policy rule means these (DELETE is not allowed).
var mapOperations = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Connect}

// WebhookConfigurations computes the configurations that make kube-apiserver
// call mutatis for every request one of policies can match: the rules are
// the union of the policies' matchConstraints.resourceRules (operations
// restricted to CREATE, UPDATE and CONNECT; resourceNames, exclusions and
// selectors are left to the engine, so the rules are a superset). Policies
// with failurePolicy Ignore go to the "-ignore" configuration, all others
// (Fail, the default) to "-fail"; a configuration is nil when no policy
// needs it. Only bound policies should be passed: an unbound policy does
// nothing.
func WebhookConfigurations(policies []*admissionregistrationv1.MutatingAdmissionPolicy, o WebhookOptions) (fail, ignore *admissionregistrationv1.MutatingWebhookConfiguration) {
	var failRules, ignoreRules []admissionregistrationv1.RuleWithOperations
	for _, p := range policies {
		rules := policyRules(p)
		if fp := p.Spec.FailurePolicy; fp != nil && *fp == admissionregistrationv1.Ignore {
			ignoreRules = append(ignoreRules, rules...)
		} else {
			failRules = append(failRules, rules...)
		}
	}
	if rules := dedupeRules(failRules); len(rules) > 0 {
		fail = webhookConfiguration(o, admissionregistrationv1.Fail, rules)
	}
	if rules := dedupeRules(ignoreRules); len(rules) > 0 {
		ignore = webhookConfiguration(o, admissionregistrationv1.Ignore, rules)
	}
	return fail, ignore
}

// WebhookConfigurationName returns the name of the configuration for a
// failure policy.
func WebhookConfigurationName(base string, fp admissionregistrationv1.FailurePolicyType) string {
	if fp == admissionregistrationv1.Ignore {
		return base + "-ignore"
	}
	return base + "-fail"
}

func policyRules(p *admissionregistrationv1.MutatingAdmissionPolicy) []admissionregistrationv1.RuleWithOperations {
	if p.Spec.MatchConstraints == nil {
		return nil
	}
	var out []admissionregistrationv1.RuleWithOperations
	for _, nr := range p.Spec.MatchConstraints.ResourceRules {
		var ops []admissionregistrationv1.OperationType
		seen := map[admissionregistrationv1.OperationType]bool{}
		for _, op := range nr.Operations {
			cand := []admissionregistrationv1.OperationType{op}
			if op == admissionregistrationv1.OperationAll {
				cand = mapOperations
			}
			for _, c := range cand {
				if c != admissionregistrationv1.Delete && !seen[c] {
					seen[c] = true
					ops = append(ops, c)
				}
			}
		}
		if len(ops) == 0 {
			continue
		}
		sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
		rule := *nr.Rule.DeepCopy()
		if rule.Scope == nil {
			s := admissionregistrationv1.AllScopes
			rule.Scope = &s
		}
		out = append(out, admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: rule})
	}
	return out
}

// dedupeRules drops repeated rules and sorts them, so that the same policy
// set always gives the same configuration.
func dedupeRules(rules []admissionregistrationv1.RuleWithOperations) []admissionregistrationv1.RuleWithOperations {
	byKey := map[string]admissionregistrationv1.RuleWithOperations{}
	for _, r := range rules {
		b, _ := json.Marshal(r) // plain Go values always marshal
		byKey[string(b)] = r
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]admissionregistrationv1.RuleWithOperations, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

func webhookConfiguration(o WebhookOptions, fp admissionregistrationv1.FailurePolicyType, rules []admissionregistrationv1.RuleWithOperations) *admissionregistrationv1.MutatingWebhookConfiguration {
	fpCopy := fp
	matchPolicy := admissionregistrationv1.Equivalent
	sideEffects := admissionregistrationv1.SideEffectClassNone
	reinvocation := admissionregistrationv1.IfNeededReinvocationPolicy
	timeout := o.TimeoutSeconds
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: append([]byte(nil), o.CABundle...)}
	// Each configuration calls the endpoint that evaluates only its
	// policies (webhook.PathMutateFail, PathMutateIgnore), so a request both
	// match does not run every policy twice.
	suffix := "/fail"
	if fp == admissionregistrationv1.Ignore {
		suffix = "/ignore"
	}
	if o.Service != nil {
		svc := o.Service.DeepCopy()
		if svc.Port == nil {
			port := int32(443)
			svc.Port = &port
		}
		path := "/mutate"
		if svc.Path != nil {
			path = strings.TrimSuffix(*svc.Path, "/")
		}
		path += suffix
		svc.Path = &path
		cc.Service = svc
	} else {
		url := strings.TrimSuffix(o.URL, "/") + suffix
		cc.URL = &url
	}
	nsSelector := &metav1.LabelSelector{}
	var excluded []string
	for _, ns := range append([]string{o.Namespace}, o.ExcludeNamespaces...) {
		if ns != "" && !slices.Contains(excluded, ns) {
			excluded = append(excluded, ns)
		}
	}
	if len(excluded) > 0 {
		nsSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: excluded,
		}}
	}
	name := "fail.webhook." + ShadowGroup
	if fp == admissionregistrationv1.Ignore {
		name = "ignore.webhook." + ShadowGroup
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   WebhookConfigurationName(o.Name, fp),
			Labels: map[string]string{ManagedByLabel: "mutatis"},
		},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    name,
			ClientConfig:            cc,
			Rules:                   rules,
			FailurePolicy:           &fpCopy,
			MatchPolicy:             &matchPolicy,
			NamespaceSelector:       nsSelector,
			ObjectSelector:          &metav1.LabelSelector{},
			SideEffects:             &sideEffects,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      &reinvocation,
			MatchConditions:         append([]admissionregistrationv1.MatchCondition(nil), lockoutConditions...),
		}},
	}
}

// applyWebhookConfigurations makes the cluster's configurations equal to the
// desired ones (nil: deleted). It touches only the two names it owns.
func applyWebhookConfigurations(ctx context.Context, kube kubernetes.Interface, base string, fail, ignore *admissionregistrationv1.MutatingWebhookConfiguration) error {
	client := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	for _, d := range []struct {
		name    string
		desired *admissionregistrationv1.MutatingWebhookConfiguration
	}{
		{WebhookConfigurationName(base, admissionregistrationv1.Fail), fail},
		{WebhookConfigurationName(base, admissionregistrationv1.Ignore), ignore},
	} {
		current, err := client.Get(ctx, d.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if d.desired == nil {
				continue
			}
			if _, err := client.Create(ctx, d.desired, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating MutatingWebhookConfiguration %s: %w", d.name, err)
			}
		case err != nil:
			return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", d.name, err)
		case d.desired == nil:
			if err := client.Delete(ctx, d.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting MutatingWebhookConfiguration %s: %w", d.name, err)
			}
		case !apiequality.Semantic.DeepEqual(current.Webhooks, d.desired.Webhooks) || current.Labels[ManagedByLabel] != "mutatis":
			updated := current.DeepCopy()
			updated.Webhooks = d.desired.Webhooks
			if updated.Labels == nil {
				updated.Labels = map[string]string{}
			}
			updated.Labels[ManagedByLabel] = "mutatis"
			if _, err := client.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("updating MutatingWebhookConfiguration %s: %w", d.name, err)
			}
		}
	}
	return nil
}
