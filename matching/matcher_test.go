package matching

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// want is the expected outcome for one user (policy or webhook).
type want struct {
	match bool
	// resource and kind of the match; zero means the request's own.
	gvr schema.GroupVersionResource
	gvk schema.GroupVersionKind
	// err is the exact error text; empty means no error.
	err string
}

// matchCase is one request against one set of criteria. The criteria are expressed once and
// turned into a policy's MatchResources and a MutatingWebhook.
type matchCase struct {
	name string
	req  func(requests) *Attributes

	nsSel, objSel *metav1.LabelSelector // nil means {} unless nilSelectors
	nilSelectors  bool
	rules         []admissionregistrationv1.RuleWithOperations
	matchPolicy   *admissionregistrationv1.MatchPolicyType

	// Policy-only criteria; a case that sets them is not run for webhooks.
	resourceNames []string
	exclude       []admissionregistrationv1.NamedRuleWithOperations

	policy  want
	webhook *want // nil: same as policy
	// policyOnly skips the webhook (criteria webhooks do not have).
	policyOnly bool
}

func (c matchCase) matchResources() *admissionregistrationv1.MatchResources {
	mr := &admissionregistrationv1.MatchResources{
		NamespaceSelector:    c.nsSel,
		ObjectSelector:       c.objSel,
		MatchPolicy:          c.matchPolicy,
		ExcludeResourceRules: c.exclude,
	}
	if !c.nilSelectors {
		if mr.NamespaceSelector == nil {
			mr.NamespaceSelector = &metav1.LabelSelector{}
		}
		if mr.ObjectSelector == nil {
			mr.ObjectSelector = &metav1.LabelSelector{}
		}
	}
	for _, r := range c.rules {
		mr.ResourceRules = append(mr.ResourceRules, admissionregistrationv1.NamedRuleWithOperations{ResourceNames: c.resourceNames, RuleWithOperations: r})
	}
	return mr
}

func (c matchCase) webhookConfig() *admissionregistrationv1.MutatingWebhook {
	mr := c.matchResources()
	return &admissionregistrationv1.MutatingWebhook{
		Name:              "hook.example.com",
		NamespaceSelector: mr.NamespaceSelector,
		ObjectSelector:    mr.ObjectSelector,
		Rules:             c.rules,
		MatchPolicy:       c.matchPolicy,
	}
}

var (
	podsCreate = rule(ops(opCreate), strs(""), strs("v1"), strs("pods"), "")
	matchesAll = rule(ops(opAll), strs("*"), strs("*"), strs("*/*"), "")
)

func matchCases() []matchCase {
	yes := want{match: true}
	no := want{}
	r := func(f func(requests) *Attributes) func(requests) *Attributes { return f }
	return []matchCase{
		// Operations.
		{name: "a CREATE rule matches a pod creation", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, policy: yes},
		{name: "an UPDATE rule does not match a pod creation", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opUpdate), strs(""), strs("v1"), strs("pods"), "")}, policy: no},
		{name: "the * operation matches an update", req: r(func(q requests) *Attributes { return q.podUpdate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs(""), strs("v1"), strs("pods"), "")}, policy: yes},
		{name: "a DELETE rule matches a pod deletion", req: r(func(q requests) *Attributes { return q.podDelete }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opDelete), strs(""), strs("v1"), strs("pods"), "")}, policy: yes},
		{name: "a CONNECT rule on pods/exec matches exec", req: r(func(q requests) *Attributes { return q.podExec }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opConnect), strs(""), strs("v1"), strs("pods/exec"), "")}, policy: yes},
		{name: "a CREATE rule does not match CONNECT", req: r(func(q requests) *Attributes { return q.podExec }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("*"), strs("*"), strs("*/*"), "")}, policy: no},
		{name: "the second of two rules can match", req: r(func(q requests) *Attributes { return q.deployCreate }), rules: []admissionregistrationv1.RuleWithOperations{podsCreate, rule(ops(opCreate), strs("apps"), strs("v1"), strs("deployments"), "")}, policy: yes},
		{name: "no operation in a rule matches nothing", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(nil, strs("*"), strs("*"), strs("*"), "")}, policy: no},

		// Resources and subresources.
		{name: "resource * matches pods", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs("*"), strs("*"), strs("*"), "")}, policy: yes},
		{name: "resource * does not match pods/status", req: r(func(q requests) *Attributes { return q.podStatus }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs("*"), strs("*"), strs("*"), "")}, policy: no},
		{name: "resource */* matches pods/status", req: r(func(q requests) *Attributes { return q.podStatus }), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},
		{name: "resource */* matches pods", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},
		{name: "resource pods/* matches pods/status", req: r(func(q requests) *Attributes { return q.podStatus }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs(""), strs("v1"), strs("pods/*"), "")}, policy: yes},
		{name: "resource pods/* also matches pods itself", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs(""), strs("v1"), strs("pods/*"), "")}, policy: yes},
		{name: "resource */status matches pods/status", req: r(func(q requests) *Attributes { return q.podStatus }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opUpdate), strs("*"), strs("*"), strs("*/status"), "")}, policy: yes},
		{name: "resource */status does not match pods/exec", req: r(func(q requests) *Attributes { return q.podExec }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs("*"), strs("*"), strs("*/status"), "")}, policy: no},
		{name: "resource pods does not match pods/status", req: r(func(q requests) *Attributes { return q.podStatus }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs(""), strs("v1"), strs("pods"), "")}, policy: no},
		{name: "deployments/scale matches with the Scale kind", req: r(func(q requests) *Attributes { return q.deployScale }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opUpdate), strs("apps"), strs("v1"), strs("deployments/scale"), "")}, policy: want{match: true, gvr: deployGVR, gvk: scaleGVK}},
		{name: "a custom resource matches by its group", req: r(func(q requests) *Attributes { return q.widgetV1Create }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("example.com"), strs("*"), strs("widgets"), "")}, policy: yes},

		// Groups and versions.
		{name: "group apps matches deployments", req: r(func(q requests) *Attributes { return q.deployCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("apps"), strs("*"), strs("*"), "")}, policy: yes},
		{name: "group apps does not match pods", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("apps"), strs("*"), strs("*"), "")}, policy: no},
		{name: "group * version * resource deployments", req: r(func(q requests) *Attributes { return q.deployCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("*"), strs("*"), strs("deployments"), "")}, policy: yes},
		{name: "version v1beta1 does not match apps/v1 under Exact", req: r(func(q requests) *Attributes { return q.deployCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("apps"), strs("v1beta1"), strs("deployments"), "")}, matchPolicy: policyType(admissionregistrationv1.Exact), policy: no},
		{name: "version v1beta1 does not match apps/v1 under Equivalent: not served in 1.37", req: r(func(q requests) *Attributes { return q.deployCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("apps"), strs("v1beta1"), strs("deployments"), "")}, matchPolicy: policyType(admissionregistrationv1.Equivalent), policy: no},
		{name: "a request for an unserved version still matches exactly", req: r(func(q requests) *Attributes { return q.deployCreateV1beta1 }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("apps"), strs("v1beta1"), strs("deployments"), "")}, matchPolicy: policyType(admissionregistrationv1.Equivalent), policy: yes},
		{name: "a request for an unserved version finds equivalents by group and resource", req: r(func(q requests) *Attributes { return q.deployCreateV1beta1 }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("apps"), strs("v1"), strs("deployments"), "")}, matchPolicy: policyType(admissionregistrationv1.Equivalent), policy: want{match: true, gvr: deployGVR, gvk: deployGVK}},

		// Scope.
		{name: "Namespaced scope matches a pod", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs("*"), strs("*"), strs("*"), admissionregistrationv1.NamespacedScope)}, policy: yes},
		{name: "Namespaced scope does not match a node", req: r(func(q requests) *Attributes { return q.nodeCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs("*"), strs("*"), strs("*"), admissionregistrationv1.NamespacedScope)}, policy: no},
		{name: "Namespaced scope does not match a namespace update", req: r(func(q requests) *Attributes { return q.nsUpdate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs("*"), strs("*"), strs("*"), admissionregistrationv1.NamespacedScope)}, policy: no},
		{name: "Cluster scope matches a node", req: r(func(q requests) *Attributes { return q.nodeCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs("*"), strs("*"), strs("*"), admissionregistrationv1.ClusterScope)}, policy: yes},
		{name: "Cluster scope matches a namespace update", req: r(func(q requests) *Attributes { return q.nsUpdate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs("*"), strs("*"), strs("*"), admissionregistrationv1.ClusterScope)}, policy: yes},
		{name: "Cluster scope does not match a pod", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs("*"), strs("*"), strs("*"), admissionregistrationv1.ClusterScope)}, policy: no},
		{name: "scope * matches a node", req: r(func(q requests) *Attributes { return q.nodeCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs("*"), strs("*"), strs("*"), admissionregistrationv1.AllScopes)}, policy: yes},
		{name: "an unknown scope matches nothing", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs("*"), strs("*"), strs("*"), "Galaxy")}, policy: no},

		// matchPolicy.
		{name: "Equivalent matches autoscaling/v1 through the v2 rule", req: r(func(q requests) *Attributes { return q.hpaV1Create }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("autoscaling"), strs("v2"), strs("horizontalpodautoscalers"), "")}, matchPolicy: policyType(admissionregistrationv1.Equivalent), policy: want{match: true, gvr: hpaV2GVR, gvk: hpaV2GVK}},
		{name: "Exact does not match autoscaling/v1 through the v2 rule", req: r(func(q requests) *Attributes { return q.hpaV1Create }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("autoscaling"), strs("v2"), strs("horizontalpodautoscalers"), "")}, matchPolicy: policyType(admissionregistrationv1.Exact), policy: no},
		{name: "no matchPolicy means Exact", req: r(func(q requests) *Attributes { return q.hpaV1Create }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("autoscaling"), strs("v2"), strs("horizontalpodautoscalers"), "")}, policy: no},
		{name: "Equivalent prefers the exact match", req: r(func(q requests) *Attributes { return q.hpaV1Create }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("autoscaling"), strs("*"), strs("horizontalpodautoscalers"), "")}, matchPolicy: policyType(admissionregistrationv1.Equivalent), policy: yes},
		{name: "Equivalent matches the status subresource of an equivalent", req: r(func(q requests) *Attributes { return q.hpaV1Status }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opUpdate), strs("autoscaling"), strs("v2"), strs("horizontalpodautoscalers/status"), "")}, matchPolicy: policyType(admissionregistrationv1.Equivalent), policy: want{match: true, gvr: hpaV2GVR, gvk: hpaV2GVK}},
		{name: "Equivalent matches core events through events.k8s.io", req: r(func(q requests) *Attributes { return q.eventCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("events.k8s.io"), strs("v1"), strs("events"), "")}, matchPolicy: policyType(admissionregistrationv1.Equivalent), policy: want{match: true, gvr: eventsV1GVR, gvk: eventsV1GVK}},
		{name: "Equivalent matches events.k8s.io through core events", req: r(func(q requests) *Attributes { return q.eventsV1Create }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs(""), strs("v1"), strs("events"), "")}, matchPolicy: policyType(admissionregistrationv1.Equivalent), policy: want{match: true, gvr: eventGVR, gvk: eventGVK}},
		{name: "Equivalent matches another version of a custom resource", req: r(func(q requests) *Attributes { return q.widgetBetaCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("example.com"), strs("v1"), strs("widgets"), "")}, matchPolicy: policyType(admissionregistrationv1.Equivalent), policy: want{match: true, gvr: widgetV1GVR, gvk: widgetV1GVK}},
		{name: "Equivalent does not cross unrelated resources", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("apps"), strs("v1"), strs("deployments"), "")}, matchPolicy: policyType(admissionregistrationv1.Equivalent), policy: no},
		{name: "an unknown matchPolicy is fuzzy for policies and exact for webhooks", req: r(func(q requests) *Attributes { return q.hpaV1Create }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("autoscaling"), strs("v2"), strs("horizontalpodautoscalers"), "")}, matchPolicy: policyType("Fuzzy"), policy: want{match: true, gvr: hpaV2GVR, gvk: hpaV2GVK}, webhook: &want{}},

		// namespaceSelector.
		{name: "namespaceSelector matches the namespace of a pod", req: r(func(q requests) *Attributes { return q.podCreate }), nsSel: selector("env=prod"), rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, policy: yes},
		{name: "namespaceSelector does not match another namespace", req: r(func(q requests) *Attributes { return q.podCreateDev }), nsSel: selector("env=prod"), rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, policy: no},
		{name: "namespaceSelector with NotIn", req: r(func(q requests) *Attributes { return q.podCreateDev }), nsSel: selector("env notin (prod,staging)"), rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, policy: yes},
		{name: "namespaceSelector does not apply to a node", req: r(func(q requests) *Attributes { return q.nodeCreate }), nsSel: selector("env=prod"), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},
		{name: "namespaceSelector matches a created namespace on its own labels", req: r(func(q requests) *Attributes { return q.nsCreate }), nsSel: selector("team=a"), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},
		{name: "namespaceSelector matches an updated namespace on its new labels", req: r(func(q requests) *Attributes { return q.nsUpdate }), nsSel: selector("env=prod"), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},
		{name: "namespaceSelector matches a deleted namespace on its stored labels", req: r(func(q requests) *Attributes { return q.nsDelete }), nsSel: selector("env=dev"), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},
		{name: "namespaceSelector matches namespaces/status on the stored labels", req: r(func(q requests) *Attributes { return q.nsStatus }), nsSel: selector("env=prod"), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},
		{name: "a missing namespace is an error when the rules match", req: r(func(q requests) *Attributes { return q.podCreateGhost }), nsSel: selector("env=prod"), rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, policy: want{err: `namespaces "ghost" not found`}},
		{name: "a missing namespace is no error when the rules do not match", req: r(func(q requests) *Attributes { return q.podCreateGhost }), nsSel: selector("env=prod"), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("apps"), strs("*"), strs("*"), "")}, policy: no},
		{name: "a missing namespace is not looked up for an empty selector", req: r(func(q requests) *Attributes { return q.podCreateGhost }), rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, policy: yes},
		{name: "an invalid namespaceSelector is an error when the rules match", req: r(func(q requests) *Attributes { return q.podCreate }), nsSel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Bogus"}}}, rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, policy: want{err: `Internal error occurred: "Bogus" is not a valid label selector operator`}},
		{name: "an invalid namespaceSelector is no error when the rules do not match", req: r(func(q requests) *Attributes { return q.podCreate }), nsSel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Bogus"}}}, rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opDelete), strs("*"), strs("*"), strs("*"), "")}, policy: no},
		{name: "an invalid namespaceSelector is ignored for cluster-scoped objects", req: r(func(q requests) *Attributes { return q.nodeCreate }), nsSel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Bogus"}}}, rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},
		{name: "a nil namespaceSelector matches no namespaced request", req: r(func(q requests) *Attributes { return q.podCreate }), nilSelectors: true, objSel: &metav1.LabelSelector{}, rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, policy: no},

		// objectSelector.
		{name: "objectSelector matches the new object", req: r(func(q requests) *Attributes { return q.podCreate }), objSel: selector("app=web"), rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, policy: yes},
		{name: "objectSelector does not match other labels", req: r(func(q requests) *Attributes { return q.podCreate }), objSel: selector("app=db"), rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, policy: no},
		{name: "objectSelector matches the old object of an update", req: r(func(q requests) *Attributes { return q.podUpdate }), objSel: selector("app=old"), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},
		{name: "objectSelector matches the old object of a deletion", req: r(func(q requests) *Attributes { return q.podDelete }), objSel: selector("app=web"), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},
		{name: "objectSelector never matches options without labels", req: r(func(q requests) *Attributes { return q.podExec }), objSel: selector("app=web"), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: no},
		{name: "objectSelector with DoesNotExist matches an object without the label", req: r(func(q requests) *Attributes { return q.podExec }), objSel: selector("!app"), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},
		{name: "an empty objectSelector matches a deletion", req: r(func(q requests) *Attributes { return q.podDelete }), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},
		{name: "objectSelector on a custom resource", req: r(func(q requests) *Attributes { return q.widgetBetaCreate }), objSel: selector("app in (web,api)"), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},
		{name: "an invalid objectSelector is an error when the rules match", req: r(func(q requests) *Attributes { return q.podCreate }), objSel: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "not a valid value!"}}, rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, policy: want{err: `Internal error occurred: values[0][app]: Invalid value: "not a valid value!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
		{name: "a failing namespace lookup loses to a non-matching objectSelector", req: r(func(q requests) *Attributes { return q.podCreateGhost }), nsSel: selector("env=prod"), objSel: selector("app=db"), rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, policy: no},
		{name: "both selectors must match", req: r(func(q requests) *Attributes { return q.deployCreate }), nsSel: selector("env=dev"), objSel: selector("app=web"), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, policy: yes},

		// Policy-only criteria.
		{name: "policies without resourceRules match everything, webhooks without rules nothing", req: r(func(q requests) *Attributes { return q.nodeCreate }), policy: yes, webhook: &want{}},
		{name: "excludeResourceRules win over resourceRules", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, exclude: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: podsCreate}}, policy: no, policyOnly: true},
		{name: "excludeResourceRules with a name exclude only that name", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, exclude: []admissionregistrationv1.NamedRuleWithOperations{{ResourceNames: strs("other"), RuleWithOperations: podsCreate}}, policy: yes, policyOnly: true},
		{name: "excludeResourceRules follow equivalents", req: r(func(q requests) *Attributes { return q.hpaV1Create }), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, matchPolicy: policyType(admissionregistrationv1.Equivalent), exclude: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: rule(ops(opAll), strs("autoscaling"), strs("v2"), strs("horizontalpodautoscalers"), "")}}, policy: no, policyOnly: true},
		{name: "excludeResourceRules alone leave the rest matched", req: r(func(q requests) *Attributes { return q.deployCreate }), exclude: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: podsCreate}}, policy: yes, policyOnly: true},
		{name: "resourceNames match the name", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, resourceNames: strs("db", "web"), policy: yes, policyOnly: true},
		{name: "resourceNames do not match another name", req: r(func(q requests) *Attributes { return q.podCreate }), rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, resourceNames: strs("db"), policy: no, policyOnly: true},
		{name: "resourceNames never match a generated name", req: r(func(q requests) *Attributes { return q.podGenerateName }), rules: []admissionregistrationv1.RuleWithOperations{podsCreate}, resourceNames: strs("web"), policy: no, policyOnly: true},
		{name: "resourceNames apply to equivalents", req: r(func(q requests) *Attributes { return q.hpaV1Create }), rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("autoscaling"), strs("v2"), strs("horizontalpodautoscalers"), "")}, matchPolicy: policyType(admissionregistrationv1.Equivalent), resourceNames: strs("web"), policy: want{match: true, gvr: hpaV2GVR, gvk: hpaV2GVK}, policyOnly: true},
		{name: "an excluded request with a missing namespace is no error", req: r(func(q requests) *Attributes { return q.podCreateGhost }), nsSel: selector("env=prod"), rules: []admissionregistrationv1.RuleWithOperations{matchesAll}, exclude: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: podsCreate}}, policy: no, policyOnly: true},
	}
}

func checkResult(t *testing.T, who string, a *Attributes, w want, got Result, err error) {
	t.Helper()
	if w.err != "" {
		if err == nil || err.Error() != w.err {
			t.Fatalf("%s: error %v, want %q", who, err, w.err)
		}
		if got.Matches {
			t.Fatalf("%s: matched with an error", who)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: unexpected error %v", who, err)
	}
	if got.Matches != w.match {
		t.Fatalf("%s: matches = %v, want %v", who, got.Matches, w.match)
	}
	if !w.match {
		if got != (Result{}) {
			t.Fatalf("%s: non-empty result %+v without a match", who, got)
		}
		return
	}
	gvr, gvk := w.gvr, w.gvk
	if gvr.Empty() {
		gvr, gvk = a.Resource, a.Kind
	}
	if got.Resource != gvr || got.Kind != gvk {
		t.Fatalf("%s: matched as %v %v, want %v %v", who, got.Resource, got.Kind, gvr, gvk)
	}
}

func TestMatchCases(t *testing.T) {
	tb := testTable(t)
	m := NewMatcher(testNamespaceGetter(), tb)
	q := testRequests(t)
	ctx := context.Background()
	cases := matchCases()
	if len(cases) < 50 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := c.req(q)
			got, err := m.MatchResources(ctx, a, c.matchResources())
			checkResult(t, "policy", a, c.policy, got, err)
			if c.policyOnly {
				return
			}
			w := c.policy
			if c.webhook != nil {
				w = *c.webhook
			}
			got, err = m.MutatingWebhookMatches(ctx, a, c.webhookConfig())
			checkResult(t, "webhook", a, w, got, err)
		})
	}
}

func TestPolicyAndBindingRequireSelectors(t *testing.T) {
	m := NewMatcher(testNamespaceGetter(), DefaultTable())
	q := testRequests(t)
	ctx := context.Background()
	all := []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: matchesAll}}

	policy := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if _, err := m.PolicyMatches(ctx, q.podCreate, policy); err == nil || err.Error() != "policy contained no match constraints, a required field" {
		t.Errorf("no constraints: %v", err)
	}
	policy.Spec.MatchConstraints = &admissionregistrationv1.MatchResources{ResourceRules: all, ObjectSelector: &metav1.LabelSelector{}}
	if _, err := m.PolicyMatches(ctx, q.podCreate, policy); err == nil || err.Error() != "a nil namespace selector was passed, please ensure selectors are initialized properly" {
		t.Errorf("nil namespace selector: %v", err)
	}
	policy.Spec.MatchConstraints = &admissionregistrationv1.MatchResources{ResourceRules: all, NamespaceSelector: &metav1.LabelSelector{}}
	if _, err := m.PolicyMatches(ctx, q.podCreate, policy); err == nil || err.Error() != "a nil object selector was passed, please ensure selectors are initialized properly" {
		t.Errorf("nil object selector: %v", err)
	}
	policy.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{}
	if r, err := m.PolicyMatches(ctx, q.podCreate, policy); err != nil || !r.Matches {
		t.Errorf("defaulted policy: %+v %v", r, err)
	}

	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	if ok, err := m.PolicyBindingMatches(ctx, q.podCreate, binding); err != nil || !ok {
		t.Errorf("binding without matchResources: %v %v", ok, err)
	}
	binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{}
	if _, err := m.PolicyBindingMatches(ctx, q.podCreate, binding); err == nil || err.Error() != "a nil namespace selector was passed, please ensure selectors are initialized properly" {
		t.Errorf("binding nil namespace selector: %v", err)
	}
	binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}}
	if ok, err := m.PolicyBindingMatches(ctx, q.podCreate, binding); err != nil || !ok {
		t.Errorf("binding with empty resourceRules: %v %v", ok, err)
	}
	binding.Spec.MatchResources.ResourceRules = []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: rule(ops(opCreate), strs("apps"), strs("*"), strs("*"), "")}}
	if ok, err := m.PolicyBindingMatches(ctx, q.podCreate, binding); err != nil || ok {
		t.Errorf("binding for apps: %v %v", ok, err)
	}

	for _, f := range []func() error{
		func() error { _, err := m.PolicyMatches(ctx, q.podCreate, nil); return err },
		func() error { _, err := m.PolicyBindingMatches(ctx, q.podCreate, nil); return err },
		func() error {
			_, err := m.MatchResources(ctx, nil, &admissionregistrationv1.MatchResources{})
			return err
		},
		func() error { _, err := m.MatchResources(ctx, q.podCreate, nil); return err },
		func() error { _, err := m.MutatingWebhookMatches(ctx, q.podCreate, nil); return err },
		func() error {
			_, err := m.ValidatingWebhookMatches(ctx, nil, &admissionregistrationv1.ValidatingWebhook{})
			return err
		},
	} {
		if f() == nil {
			t.Error("nil input accepted")
		}
	}
}

func TestMatcherWithoutTableOrNamespaces(t *testing.T) {
	q := testRequests(t)
	ctx := context.Background()
	m := NewMatcher(nil, nil)
	mr := &admissionregistrationv1.MatchResources{
		NamespaceSelector: selector("env=prod"), ObjectSelector: &metav1.LabelSelector{},
		MatchPolicy:   policyType(admissionregistrationv1.Equivalent),
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: rule(ops(opAll), strs("autoscaling"), strs("v2"), strs("*"), "")}},
	}
	if r, err := m.MatchResources(ctx, q.hpaV1Create, mr); err != nil || r.Matches {
		t.Errorf("no table: %+v %v", r, err)
	}
	mr.ResourceRules = []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: matchesAll}}
	if _, err := m.MatchResources(ctx, q.podCreate, mr); err == nil || err.Error() != "Internal error occurred: no namespace getter configured" {
		t.Errorf("no namespace getter: %v", err)
	}
	nilNS := NewMatcher(NamespaceGetterFunc(func(context.Context, string) (*corev1.Namespace, error) { return nil, nil }), nil)
	if _, err := nilNS.MatchResources(ctx, q.podCreate, mr); err == nil || err.Error() != `namespaces "default" not found` {
		t.Errorf("nil namespace: %v", err)
	}
}
