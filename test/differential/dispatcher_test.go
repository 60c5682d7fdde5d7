package differential

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// ---------------------------------------------------------------------------
// Policy and binding builders.

type policyOpt func(*admissionregistrationv1.MutatingAdmissionPolicy)

func rule(ops []string, groups, versions, resources []string) admissionregistrationv1.NamedRuleWithOperations {
	var o []admissionregistrationv1.OperationType
	for _, op := range ops {
		o = append(o, admissionregistrationv1.OperationType(op))
	}
	return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: o, Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources}}}
}

// defaultRules match CREATE and UPDATE of pods, configmaps, namespaces and deployments.
func defaultRules() []admissionregistrationv1.NamedRuleWithOperations {
	return []admissionregistrationv1.NamedRuleWithOperations{
		rule([]string{"CREATE", "UPDATE"}, []string{""}, []string{"v1"}, []string{"pods", "configmaps", "namespaces"}),
		rule([]string{"CREATE", "UPDATE"}, []string{"apps"}, []string{"v1"}, []string{"deployments"}),
	}
}

// setLabel is an ApplyConfiguration that sets one label.
func setLabel(key, valueExpr string) admissionregistrationv1.Mutation {
	return acMutation(fmt.Sprintf(`Object{metadata: Object.metadata{labels: {%q: %s}}}`, key, valueExpr))
}

// counterOf increments the annotation key (a reinvocation counter).
func counterOf(key string) admissionregistrationv1.Mutation {
	return acMutation(fmt.Sprintf(`Object{metadata: Object.metadata{annotations: {%q: string(int(object.metadata.?annotations[?%q].orValue("0")) + 1)}}}`, key, key))
}

func acMutation(expr string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
		ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expr}}
}

func jpMutation(expr string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expr}}
}

// newPolicy returns a policy as the API server stores it (defaults applied:
// failurePolicy Fail, matchPolicy Equivalent, empty selectors, reinvocation
// Never) that sets label <name>=yes on CREATE/UPDATE of the default resources.
func newPolicy(name string, opts ...policyOpt) *admissionregistrationv1.MutatingAdmissionPolicy {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
				MatchPolicy:   ptr.To(admissionregistrationv1.Equivalent),
				ResourceRules: defaultRules(),
			},
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations:          []admissionregistrationv1.Mutation{setLabel(name, `"yes"`)},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withRules(rules ...admissionregistrationv1.NamedRuleWithOperations) policyOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		p.Spec.MatchConstraints.ResourceRules = rules
	}
}

func withExclude(rules ...admissionregistrationv1.NamedRuleWithOperations) policyOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		p.Spec.MatchConstraints.ExcludeResourceRules = rules
	}
}

func withNamespaceSelector(s *metav1.LabelSelector) policyOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		p.Spec.MatchConstraints.NamespaceSelector = s
	}
}

func withObjectSelector(s *metav1.LabelSelector) policyOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) { p.Spec.MatchConstraints.ObjectSelector = s }
}

func withMatchPolicy(mp admissionregistrationv1.MatchPolicyType) policyOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) { p.Spec.MatchConstraints.MatchPolicy = &mp }
}

func withConditions(exprs ...string) policyOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		for i, e := range exprs {
			p.Spec.MatchConditions = append(p.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: fmt.Sprintf("cond-%d", i), Expression: e})
		}
	}
}

func withVariables(nameExpr ...string) policyOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		for i := 0; i+1 < len(nameExpr); i += 2 {
			p.Spec.Variables = append(p.Spec.Variables, admissionregistrationv1.Variable{Name: nameExpr[i], Expression: nameExpr[i+1]})
		}
	}
}

func withMutations(ms ...admissionregistrationv1.Mutation) policyOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) { p.Spec.Mutations = ms }
}

func withFailure(fp admissionregistrationv1.FailurePolicyType) policyOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) { p.Spec.FailurePolicy = &fp }
}

func withoutFailurePolicy() policyOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) { p.Spec.FailurePolicy = nil }
}

func ifNeeded() policyOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		p.Spec.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy
	}
}

func withParamKind(apiVersion, kind string) policyOpt {
	return func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: apiVersion, Kind: kind}
	}
}

type bindingOpt func(*admissionregistrationv1.MutatingAdmissionPolicyBinding)

func newBinding(name, policy string, opts ...bindingOpt) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy}}
	for _, o := range opts {
		o(b)
	}
	return b
}

func paramName(name, namespace string, action admissionregistrationv1.ParameterNotFoundActionType) bindingOpt {
	return func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
		b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: name, Namespace: namespace}
		if action != "" {
			b.Spec.ParamRef.ParameterNotFoundAction = &action
		}
	}
}

func paramSelector(sel *metav1.LabelSelector, namespace string, action admissionregistrationv1.ParameterNotFoundActionType) bindingOpt {
	return func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
		b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Selector: sel, Namespace: namespace}
		if action != "" {
			b.Spec.ParamRef.ParameterNotFoundAction = &action
		}
	}
}

func bindingMatch(mr *admissionregistrationv1.MatchResources) bindingOpt {
	return func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) { b.Spec.MatchResources = mr }
}

// bound returns one binding "<policy>-binding" per policy.
func bound(policies ...*admissionregistrationv1.MutatingAdmissionPolicy) []*admissionregistrationv1.MutatingAdmissionPolicyBinding {
	var out []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for _, p := range policies {
		out = append(out, newBinding(p.Name+"-binding", p.Name))
	}
	return out
}

func labelsSel(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func policies(ps ...*admissionregistrationv1.MutatingAdmissionPolicy) []*admissionregistrationv1.MutatingAdmissionPolicy {
	return ps
}

// ---------------------------------------------------------------------------
// Requests.

func gvkOf(obj runtime.Object) schema.GroupVersionKind { return obj.GetObjectKind().GroupVersionKind() }

func objectRequest(op admission.Operation, obj, old runtime.Object, gvr schema.GroupVersionResource) dispatchRequest {
	src := obj
	if src == nil {
		src = old
	}
	acc, err := metaAccessor(src)
	if err != nil {
		panic(err)
	}
	return dispatchRequest{op: op, obj: obj, old: old, gvk: gvkOf(src), gvr: gvr, namespace: acc.GetNamespace(), name: acc.GetName()}
}

func metaAccessor(obj runtime.Object) (metav1.Object, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	if o, ok := obj.(metav1.Object); ok {
		return o, nil
	}
	return nil, fmt.Errorf("%T has no metadata", obj)
}

var (
	namespaceGVR   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	clusterRoleGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	gadgetGVR      = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	mapbGVR        = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"}
)

func createPod() dispatchRequest { return objectRequest(admission.Create, pod(), nil, podGVR) }

func podIn(ns string, labels map[string]string) *corev1.Pod {
	p := pod()
	p.Namespace = ns
	p.Labels = labels
	return p
}

func createPodIn(ns string, labels map[string]string) dispatchRequest {
	return objectRequest(admission.Create, podIn(ns, labels), nil, podGVR)
}

func createDeployment() dispatchRequest {
	return objectRequest(admission.Create, deployment(), nil, deploymentGVR)
}

func updateDeployment(mutNew, mutOld func(*appsv1.Deployment)) dispatchRequest {
	return objectRequest(admission.Update, deployment(mutNew), deployment(mutOld), deploymentGVR)
}

func createConfigMap() dispatchRequest {
	return objectRequest(admission.Create, configMap(), nil, configMapGVR)
}

func nsObject(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func createNamespace(name string, labels map[string]string) dispatchRequest {
	r := objectRequest(admission.Create, nsObject(name, labels), nil, namespaceGVR)
	r.namespace = "" // kube-apiserver: CREATE of a namespace has no request namespace
	return r
}

func updateNamespace(name string, newLabels, oldLabels map[string]string) dispatchRequest {
	r := objectRequest(admission.Update, nsObject(name, newLabels), nsObject(name, oldLabels), namespaceGVR)
	r.namespace = name // other verbs carry the namespace's own name
	return r
}

func clusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: "reader", Labels: map[string]string{"app": "web"}},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
}

func createClusterRole() dispatchRequest {
	return objectRequest(admission.Create, clusterRole(), nil, clusterRoleGVR)
}

func updatePodStatus() dispatchRequest {
	p := pod()
	old := pod()
	p.Status.Phase = corev1.PodRunning
	r := objectRequest(admission.Update, p, old, podGVR)
	r.subresource = "status"
	return r
}

func connectPodExec() dispatchRequest {
	opts := &corev1.PodExecOptions{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodExecOptions"}, Container: "app", Command: []string{"sh"}, Stdin: true}
	return dispatchRequest{op: admission.Connect, obj: opts, gvk: gvkOf(opts), gvr: podGVR, subresource: "exec", namespace: "shop", name: "p"}
}

func createWidget() dispatchRequest {
	return objectRequest(admission.Create, widget(widgetSpec()), nil, widgetGVR)
}

func createGadget() dispatchRequest {
	g := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g", "namespace": "shop"}, "spec": map[string]any{"x": int64(1)}}}
	return objectRequest(admission.Create, g, nil, gadgetGVR)
}

func deletePod() dispatchRequest {
	r := objectRequest(admission.Delete, nil, pod(), podGVR)
	return r
}

func createBindingObject() dispatchRequest {
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "x"}}
	return objectRequest(admission.Create, b, nil, mapbGVR)
}

func asUser(r dispatchRequest, name string, groups ...string) dispatchRequest {
	r.user = &user.DefaultInfo{Name: name, UID: "uid-" + name, Groups: groups, Extra: map[string][]string{"scope": {"a", "b"}}}
	return r
}

// ---------------------------------------------------------------------------
// Scenarios.

type dispatchScenario struct {
	name     string
	policies []*admissionregistrationv1.MutatingAdmissionPolicy
	bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	req      dispatchRequest
	// Guards that the scenario exercises what its name says (checked on the
	// upstream outcome): wantDeny is a substring of the denial message ("" =
	// admitted); wantLabels/wantAnnotations must be on the final object
	// (value "-" = must be absent).
	wantDeny        string
	wantLabels      map[string]string
	wantAnnotations map[string]string
}

// knownDifferences are scenarios on which mutatis and kube-apiserver
// disagree. They are skipped (the engine owner fixes them); each entry says
// how they differ.
var knownDifferences = map[string]string{}

const broken = `Object{metadata: Object.metadata{labels: {"x": object.missing}}}`

func dispatchScenarios() []dispatchScenario {
	ignore := admissionregistrationv1.Ignore
	allow, deny := admissionregistrationv1.AllowAction, admissionregistrationv1.DenyAction
	single := func(p *admissionregistrationv1.MutatingAdmissionPolicy) ([]*admissionregistrationv1.MutatingAdmissionPolicy, []*admissionregistrationv1.MutatingAdmissionPolicyBinding) {
		return policies(p), bound(p)
	}
	sc := func(name string, p *admissionregistrationv1.MutatingAdmissionPolicy, req dispatchRequest) dispatchScenario {
		ps, bs := single(p)
		return dispatchScenario{name: name, policies: ps, bindings: bs, req: req}
	}
	yes := func(keys ...string) map[string]string {
		m := map[string]string{}
		for _, k := range keys {
			m[k] = "yes"
		}
		return m
	}
	absent := func(keys ...string) map[string]string {
		m := map[string]string{}
		for _, k := range keys {
			m[k] = "-"
		}
		return m
	}
	with := func(s dispatchScenario, f func(*dispatchScenario)) dispatchScenario { f(&s); return s }
	wantL := func(s dispatchScenario, l map[string]string) dispatchScenario { s.wantLabels = l; return s }
	wantA := func(s dispatchScenario, a map[string]string) dispatchScenario { s.wantAnnotations = a; return s }
	wantD := func(s dispatchScenario, d string) dispatchScenario { s.wantDeny = d; return s }
	cmParams := withParamKind("v1", "ConfigMap")
	teamLabel := withMutations(setLabel("team", `params.data.team`))

	out := []dispatchScenario{
		// --- Resource rules -------------------------------------------------
		wantL(sc("rules: exact rule matches a pod CREATE", newPolicy("p"), createPod()), yes("p")),
		wantL(sc("rules: deployments-only rule skips a pod", newPolicy("p", withRules(rule([]string{"CREATE"}, []string{"apps"}, []string{"v1"}, []string{"deployments"}))), createPod()), absent("p")),
		wantL(sc("rules: all wildcards match a configmap", newPolicy("p", withRules(rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"}))), createConfigMap()), yes("p")),
		wantL(sc("rules: */status matches pods/status", newPolicy("p", withRules(rule([]string{"UPDATE"}, []string{""}, []string{"v1"}, []string{"*/status"}))), updatePodStatus()), yes("p")),
		wantL(sc("rules: */status does not match the main resource", newPolicy("p", withRules(rule([]string{"CREATE"}, []string{""}, []string{"v1"}, []string{"*/status"}))), createPod()), absent("p")),
		wantL(sc("rules: pods/* matches pods/status", newPolicy("p", withRules(rule([]string{"UPDATE"}, []string{""}, []string{"v1"}, []string{"pods/*"}))), updatePodStatus()), yes("p")),
		wantL(sc("rules: pods does not match pods/status", newPolicy("p", withRules(rule([]string{"UPDATE"}, []string{""}, []string{"v1"}, []string{"pods"}))), updatePodStatus()), absent("p")),
		wantL(sc("rules: */* matches the main resource too", newPolicy("p", withRules(rule([]string{"CREATE"}, []string{""}, []string{"v1"}, []string{"*/*"}))), createPod()), yes("p")),
		wantL(sc("rules: excludeResourceRules beat resourceRules", newPolicy("p", withExclude(rule([]string{"*"}, []string{""}, []string{"*"}, []string{"pods"}))), createPod()), absent("p")),
		wantL(sc("rules: excludeResourceRules for another resource do not exclude", newPolicy("p", withExclude(rule([]string{"*"}, []string{""}, []string{"*"}, []string{"configmaps"}))), createPod()), yes("p")),
		wantL(sc("rules: resourceNames include the object", newPolicy("p", withRules(func() admissionregistrationv1.NamedRuleWithOperations {
			r := rule([]string{"CREATE"}, []string{""}, []string{"v1"}, []string{"pods"})
			r.ResourceNames = []string{"other", "p"}
			return r
		}())), createPod()), yes("p")),
		wantL(sc("rules: resourceNames exclude other names", newPolicy("p", withRules(func() admissionregistrationv1.NamedRuleWithOperations {
			r := rule([]string{"CREATE"}, []string{""}, []string{"v1"}, []string{"pods"})
			r.ResourceNames = []string{"other"}
			return r
		}())), createPod()), absent("p")),
		wantL(sc("rules: scope Namespaced matches a pod", newPolicy("p", withRules(func() admissionregistrationv1.NamedRuleWithOperations {
			r := rule([]string{"CREATE"}, []string{"*"}, []string{"*"}, []string{"*"})
			r.Scope = ptr.To(admissionregistrationv1.NamespacedScope)
			return r
		}())), createPod()), yes("p")),
		wantL(sc("rules: scope Namespaced skips a clusterrole", newPolicy("p", withRules(func() admissionregistrationv1.NamedRuleWithOperations {
			r := rule([]string{"CREATE"}, []string{"*"}, []string{"*"}, []string{"*"})
			r.Scope = ptr.To(admissionregistrationv1.NamespacedScope)
			return r
		}())), createClusterRole()), absent("p")),
		wantL(sc("rules: scope Cluster matches a clusterrole", newPolicy("p", withRules(func() admissionregistrationv1.NamedRuleWithOperations {
			r := rule([]string{"CREATE"}, []string{"*"}, []string{"*"}, []string{"*"})
			r.Scope = ptr.To(admissionregistrationv1.ClusterScope)
			return r
		}())), createClusterRole()), yes("p")),
		wantL(sc("rules: scope Cluster skips a pod", newPolicy("p", withRules(func() admissionregistrationv1.NamedRuleWithOperations {
			r := rule([]string{"CREATE"}, []string{"*"}, []string{"*"}, []string{"*"})
			r.Scope = ptr.To(admissionregistrationv1.ClusterScope)
			return r
		}())), createPod()), absent("p")),
		wantL(sc("rules: UPDATE-only rule skips CREATE", newPolicy("p", withRules(rule([]string{"UPDATE"}, []string{"apps"}, []string{"v1"}, []string{"deployments"}))), createDeployment()), absent("p")),
		wantL(sc("rules: UPDATE-only rule matches UPDATE", newPolicy("p", withRules(rule([]string{"UPDATE"}, []string{"apps"}, []string{"v1"}, []string{"deployments"}))), updateDeployment(nil, nil)), yes("p")),
		wantL(sc("rules: Exact matchPolicy with another version does not match", newPolicy("p", withMatchPolicy(admissionregistrationv1.Exact), withRules(rule([]string{"CREATE"}, []string{"apps"}, []string{"v1beta1"}, []string{"deployments"}))), createDeployment()), absent("p")),
		wantL(sc("rules: Equivalent matchPolicy with an unserved version does not match", newPolicy("p", withRules(rule([]string{"CREATE"}, []string{"apps"}, []string{"v1beta1"}, []string{"deployments"}))), createDeployment()), absent("p")),
		// kube-apiserver's type converter manager has core/v1's OpenAPI
		// document, so an options object reaches the patcher (no 503): the
		// ApplyConfiguration fails under Ignore, the request is admitted.
		sc("rules: CONNECT pods/exec reaches the patcher (its error ignored under Ignore)", newPolicy("p", withFailure(ignore), withRules(rule([]string{"CONNECT"}, []string{""}, []string{"v1"}, []string{"pods/exec"}))), connectPodExec()),
		sc("rules: CONNECT with a false matchCondition is untouched", newPolicy("p", withConditions(`request.operation != "CONNECT"`), withRules(rule([]string{"*"}, []string{""}, []string{"v1"}, []string{"pods/exec"}))), connectPodExec()),
		sc("rules: CONNECT with a JSONPatch no-op list on an options object is admitted unchanged", newPolicy("p", withRules(rule([]string{"CONNECT"}, []string{""}, []string{"v1"}, []string{"pods/exec"})),
			withMutations(jpMutation(`[JSONPatch{op: "test", path: "/container", value: "app"}].filter(p, false)`))), connectPodExec()),
		sc("rules: DELETE is not handled by MutatingAdmissionPolicy", newPolicy("p", withRules(rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"}))), deletePod()),
		sc("rules: admission policy bindings are exempt", newPolicy("p", withRules(rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"}))), createBindingObject()),
		wantL(sc("rules: custom resource with a schema", newPolicy("p", withRules(rule([]string{"CREATE"}, []string{"example.com"}, []string{"v1"}, []string{"widgets"})),
			withMutations(acMutation(`Object{spec: Object.spec{color: "blue", size: object.spec.size + 1}}`), setLabel("p", `"yes"`))), createWidget()), yes("p")),
		wantD(sc("rules: custom resource without a schema is a 503", newPolicy("p", withFailure(ignore), withRules(rule([]string{"CREATE"}, []string{"example.com"}, []string{"v1"}, []string{"gadgets"}))), createGadget()), "Gadget not found"),

		// --- Namespace and object selectors ---------------------------------
		wantL(sc("selectors: namespaceSelector env=prod matches shop", newPolicy("p", withNamespaceSelector(labelsSel("env", "prod"))), createPod()), yes("p")),
		wantL(sc("selectors: namespaceSelector env=prod skips dev", newPolicy("p", withNamespaceSelector(labelsSel("env", "prod"))), createPodIn("dev", nil)), absent("p")),
		wantL(sc("selectors: namespaceSelector NotIn expression", newPolicy("p", withNamespaceSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "dev"}}}})), createPod()), yes("p")),
		wantL(sc("selectors: namespaceSelector ignored for cluster-scoped objects", newPolicy("p", withNamespaceSelector(labelsSel("env", "prod")),
			withRules(rule([]string{"CREATE"}, []string{"rbac.authorization.k8s.io"}, []string{"v1"}, []string{"clusterroles"}))), createClusterRole()), yes("p")),
		wantL(sc("selectors: Namespace CREATE matched on its own labels", newPolicy("p", withNamespaceSelector(labelsSel("env", "qa"))), createNamespace("qa", map[string]string{"env": "qa"})), yes("p")),
		wantL(sc("selectors: Namespace UPDATE matched on its own new labels", newPolicy("p", withNamespaceSelector(labelsSel("env", "staging"))), updateNamespace("shop", map[string]string{"env": "staging"}, map[string]string{"env": "prod"})), yes("p")),
		wantL(sc("selectors: objectSelector matches new labels", newPolicy("p", withObjectSelector(labelsSel("app", "web"))), createDeployment()), yes("p")),
		wantL(sc("selectors: objectSelector matches old labels on UPDATE", newPolicy("p", withObjectSelector(labelsSel("app", "web"))),
			updateDeployment(func(d *appsv1.Deployment) { d.Labels = map[string]string{"app": "api"} }, nil)), yes("p")),
		wantL(sc("selectors: objectSelector skips", newPolicy("p", withObjectSelector(labelsSel("app", "db"))), createDeployment()), absent("p")),
		wantL(sc("selectors: objectSelector Exists on a pod without labels", newPolicy("p", withObjectSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpDoesNotExist}}})), createPod()), yes("p")),
		wantD(sc("selectors: invalid objectSelector is a policy configuration error", newPolicy("p", withObjectSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}})), createPod()), "failed to configure policy"),
		wantL(sc("selectors: invalid selector is not reported when rules do not match", newPolicy("p", withObjectSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}),
			withRules(rule([]string{"CREATE"}, []string{"apps"}, []string{"v1"}, []string{"deployments"}))), createPod()), absent("p")),
		wantD(sc("selectors: request namespace that does not exist", newPolicy("p", withNamespaceSelector(labelsSel("env", "prod"))), createPodIn("ghost", nil)), "not found"),
		wantD(sc("selectors: nil matchConstraints", newPolicy("p", func(p *admissionregistrationv1.MutatingAdmissionPolicy) { p.Spec.MatchConstraints = nil }), createPod()), "no match constraints"),
		wantD(sc("selectors: nil namespaceSelector in matchConstraints", newPolicy("p", withNamespaceSelector(nil)), createPod()), "nil namespace selector"),

		// --- Bindings -------------------------------------------------------
		wantL(with(sc("bindings: matchResources namespaceSelector ANDed with the policy", newPolicy("p"), createPodIn("dev", nil)), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", bindingMatch(&admissionregistrationv1.MatchResources{
				NamespaceSelector: labelsSel("env", "prod"), ObjectSelector: &metav1.LabelSelector{}}))}
		}), absent("p")),
		wantL(with(sc("bindings: matchResources without resourceRules only adds selectors", newPolicy("p"), createDeployment()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", bindingMatch(&admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: labelsSel("app", "web")}))}
		}), yes("p")),
		wantL(with(sc("bindings: matchResources resourceRules narrow the policy", newPolicy("p"), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", bindingMatch(&admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"*"}, []string{""}, []string{"v1"}, []string{"configmaps"})}}))}
		}), absent("p")),
		wantL(with(sc("bindings: matchResources excludeResourceRules", newPolicy("p"), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", bindingMatch(&admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
				ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"*"}, []string{""}, []string{"v1"}, []string{"pods"})}}))}
		}), absent("p")),
		wantD(with(sc("bindings: nil objectSelector in matchResources is a binding configuration error", newPolicy("p"), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", bindingMatch(&admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{}}))}
		}), "failed to configure binding"),
		wantA(with(sc("bindings: two matching bindings run the policy twice", newPolicy("p", withMutations(counterOf("count"))), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b2", "p"), newBinding("b1", "p")}
		}), map[string]string{"count": "2"}),
		wantL(with(sc("bindings: a binding for a missing policy and a policy without binding do nothing", newPolicy("p"), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "missing")}
		}), absent("p")),

		// --- Params ---------------------------------------------------------
		wantL(with(sc("params: by name in the request namespace", newPolicy("p", cmParams, teamLabel), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("defaults", "", ""))}
		}), map[string]string{"team": "payments"}),
		wantL(with(sc("params: by name in an explicit namespace", newPolicy("p", cmParams, teamLabel), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("defaults", "dev", ""))}
		}), map[string]string{"team": "dev-team"}),
		wantL(with(sc("params: not found with Allow skips the binding", newPolicy("p", cmParams, teamLabel), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("nope", "", allow))}
		}), absent("team")),
		wantL(with(sc("params: not found without an action skips the binding", newPolicy("p", cmParams, teamLabel), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("nope", "", ""))}
		}), absent("team")),
		wantD(with(sc("params: not found with Deny denies", newPolicy("p", cmParams, teamLabel), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("nope", "", deny))}
		}), "no params found"),
		wantL(with(sc("params: not found with Deny under Ignore admits", newPolicy("p", cmParams, teamLabel, withFailure(ignore)), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("nope", "", deny))}
		}), absent("team")),
		wantL(with(sc("params: a selector gives N params and N evaluations", newPolicy("p", cmParams, withMutations(setLabel("from-", `"x"`), acMutation(`Object{metadata: Object.metadata{labels: {"from-" + params.metadata.name: params.data.team}}}`))), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramSelector(labelsSel("role", "defaults"), "", ""))}
		}), map[string]string{"from-defaults": "payments", "from-gold": "gold-team", "from-unlabelled": "-"}),
		wantL(with(sc("params: an empty selector lists every param of the namespace", newPolicy("p", cmParams, withMutations(acMutation(`Object{metadata: Object.metadata{labels: {"from-" + params.metadata.name: params.data.team}}}`))), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramSelector(&metav1.LabelSelector{}, "", ""))}
		}), map[string]string{"from-unlabelled": "nobody", "from-defaults": "payments"}),
		wantD(with(sc("params: a selector matching nothing with Deny denies", newPolicy("p", cmParams, teamLabel), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramSelector(labelsSel("role", "none"), "", deny))}
		}), "no params found"),
		wantD(with(sc("params: namespaced paramKind for a cluster-scoped request", newPolicy("p", cmParams, teamLabel, withRules(rule([]string{"CREATE"}, []string{"*"}, []string{"*"}, []string{"clusterroles"}))), createClusterRole()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("defaults", "", deny))}
		}), "cannot use namespaced paramRef"),
		wantL(with(sc("params: namespaced paramKind with explicit namespace for a cluster-scoped request", newPolicy("p", cmParams, teamLabel, withRules(rule([]string{"CREATE"}, []string{"*"}, []string{"*"}, []string{"clusterroles"}))), createClusterRole()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("cluster-defaults", "kube-system", deny))}
		}), map[string]string{"team": "platform"}),
		wantL(with(sc("params: cluster-scoped paramKind by name", newPolicy("p", withParamKind("v1", "Namespace"), withMutations(setLabel("env", `params.metadata.labels.env`))), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("dev", "", deny))}
		}), map[string]string{"env": "dev"}),
		wantD(with(sc("params: cluster-scoped paramKind with a namespace is an error", newPolicy("p", withParamKind("v1", "Namespace"), withMutations(setLabel("env", `params.metadata.labels.env`))), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("dev", "shop", deny))}
		}), "must not be provided for a cluster-scoped"),
		wantL(with(sc("params: cluster-scoped paramKind by selector", newPolicy("p", withParamKind("v1", "Namespace"), withMutations(acMutation(`Object{metadata: Object.metadata{labels: {"ns-" + params.metadata.name: "seen"}}}`))), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramSelector(labelsSel("env", "dev"), "", deny))}
		}), map[string]string{"ns-dev": "seen", "ns-shop": "-"}),
		wantD(with(sc("params: unknown paramKind is a policy configuration error", newPolicy("p", withParamKind("example.com/v1", "Nope"), teamLabel), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("x", "", ""))}
		}), "Nope"),
		wantL(with(sc("params: paramKind without paramRef evaluates once with null params", newPolicy("p", cmParams, withMutations(setLabel("null", `string(params == null)`))), createPod()), func(s *dispatchScenario) {
			s.bindings = bound(s.policies...)
		}), map[string]string{"null": "true"}),
		wantL(with(sc("params: typed params have no apiVersion/kind", newPolicy("p", cmParams, withMutations(setLabel("haskind", `string(has(params.kind)) + "-" + string(has(params.apiVersion))`))), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("defaults", "", ""))}
		}), map[string]string{"haskind": "false-false"}),
		wantL(with(sc("params: secret params", newPolicy("p", withParamKind("v1", "Secret"), withMutations(setLabel("tok", `string(params.data.token)`))), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("token", "", ""))}
		}), nil),
		wantD(with(sc("params: name and selector together are an error", newPolicy("p", cmParams, teamLabel), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
				b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "defaults", Selector: &metav1.LabelSelector{}}
			})}
		}), "mutually exclusive"),
		wantD(with(sc("params: neither name nor selector is an error", newPolicy("p", cmParams, teamLabel), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
				b.Spec.ParamRef = &admissionregistrationv1.ParamRef{}
			})}
		}), "one of name or selector"),
		wantL(with(sc("params: two bindings with different params", newPolicy("p", cmParams, withMutations(acMutation(`Object{metadata: Object.metadata{labels: {"from-" + params.metadata.namespace: params.data.team}}}`))), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("a", "p", paramName("defaults", "", "")), newBinding("b", "p", paramName("defaults", "dev", ""))}
		}), map[string]string{"from-shop": "payments", "from-dev": "dev-team"}),

		// --- matchConditions ------------------------------------------------
		wantL(sc("conditions: true runs the policy", newPolicy("p", withConditions(`object.metadata.name == "p"`, `request.operation == "CREATE"`)), createPod()), yes("p")),
		wantL(sc("conditions: false skips the policy", newPolicy("p", withConditions(`true`, `object.metadata.name == "other"`)), createPod()), absent("p")),
		wantD(sc("conditions: error under Fail denies", newPolicy("p", withConditions(`object.nope == 1`)), createPod()), "no such key"),
		wantL(sc("conditions: error under Ignore skips", newPolicy("p", withFailure(ignore), withConditions(`object.nope == 1`)), createPod()), absent("p")),
		wantL(sc("conditions: a false condition wins over an error", newPolicy("p", withConditions(`object.nope == 1`, `false`)), createPod()), absent("p")),
		wantD(sc("conditions: two errors are aggregated", newPolicy("p", withConditions(`object.nope == 1`, `object.nope2 == 1`)), createPod()), "nope2"),
		wantL(with(sc("conditions: params are visible", newPolicy("p", cmParams, withConditions(`params.data.team == "payments"`)), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramName("defaults", "", "")), newBinding("c", "p", paramName("defaults", "dev", ""))}
		}), yes("p")),
		wantL(sc("conditions: namespaceObject is null", newPolicy("p", withConditions(`namespaceObject == null`)), createPod()), yes("p")),
		wantL(sc("conditions: authorizer allows configmaps get", newPolicy("p", withConditions(`authorizer.group("").resource("configmaps").namespace("shop").check("get").allowed()`)), createPod()), yes("p")),
		wantL(sc("conditions: authorizer denies secrets get", newPolicy("p", withConditions(`authorizer.group("").resource("secrets").namespace("shop").check("get").allowed()`)), createPod()), absent("p")),
		wantL(sc("conditions: authorizer.requestResource for system:masters", newPolicy("p", withConditions(`authorizer.requestResource.check("create").allowed()`)), asUser(createPod(), "root", "system:masters")), yes("p")),
		wantD(sc("conditions: compile error under Fail denies", newPolicy("p", withConditions(`object.metadata.name ==`)), createPod()), "compilation failed"),
		wantL(sc("conditions: compile error under Ignore skips", newPolicy("p", withFailure(ignore), withConditions(`undeclared.x`)), createPod()), absent("p")),
		wantD(sc("conditions: cost budget exceeded", newPolicy("p", withConditions(`[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, "abc".matches("a.*c")))))))`)), createPod()), "cost"),
		wantL(sc("conditions: variables are visible", newPolicy("p", withVariables("n", `object.metadata.name`), withConditions(`variables.n == "p"`)), createPod()), yes("p")),

		// --- Variables ------------------------------------------------------
		wantL(sc("variables: used by a mutation", newPolicy("p", withVariables("team", `"t-" + object.metadata.namespace`), withMutations(setLabel("team", `variables.team`))), createPod()), map[string]string{"team": "t-shop"}),
		wantL(sc("variables: a later variable uses an earlier one", newPolicy("p", withVariables("a", `object.metadata.name`, "b", `variables.a + "-" + variables.a`), withMutations(setLabel("v", `variables.b`))), createPod()), map[string]string{"v": "p-p"}),
		wantL(sc("variables: an erroring variable that is not used is harmless", newPolicy("p", withVariables("bad", `object.missing`, "good", `"ok"`), withMutations(setLabel("v", `variables.good`))), createPod()), map[string]string{"v": "ok"}),
		wantD(sc("variables: an erroring variable that is used fails", newPolicy("p", withVariables("bad", `object.missing`), withMutations(setLabel("v", `variables.bad`))), createPod()), "no such key"),
		wantD(sc("variables: a variable compile error fails the mutation that uses it", newPolicy("p", withVariables("bad", `object.`), withMutations(setLabel("v", `variables.bad`))), createPod()), ""),

		// --- Reinvocation ---------------------------------------------------
		wantA(sc("reinvocation: a single IfNeeded counter runs twice", newPolicy("p", ifNeeded(), withMutations(counterOf("count"))), createConfigMap()), map[string]string{"count": "2"}),
		wantA(sc("reinvocation: a single Never counter runs once", newPolicy("p", withMutations(counterOf("count"))), createConfigMap()), map[string]string{"count": "1"}),
		wantA(func() dispatchScenario {
			a, b, c := newPolicy("a", ifNeeded(), withMutations(counterOf("count"))), newPolicy("b", ifNeeded(), withMutations(counterOf("count"))), newPolicy("c", withMutations(counterOf("count")))
			return dispatchScenario{name: "reinvocation: two IfNeeded and one Never counter reach five", policies: policies(a, b, c), bindings: bound(a, b, c), req: createConfigMap()}
		}(), map[string]string{"count": "5"}),
		wantA(func() dispatchScenario {
			a, b := newPolicy("a", withMutations(counterOf("count"))), newPolicy("b", ifNeeded(), withMutations(counterOf("count")))
			return dispatchScenario{name: "reinvocation: Never first, IfNeeded last", policies: policies(a, b), bindings: bound(a, b), req: createConfigMap()}
		}(), map[string]string{"count": "3"}),
		wantA(func() dispatchScenario {
			a, b := newPolicy("a", ifNeeded(), withMutations(counterOf("a"))), newPolicy("b", withMutations(setLabel("b", `"yes"`)))
			return dispatchScenario{name: "reinvocation: IfNeeded counter reinvoked after a later Never change", policies: policies(a, b), bindings: bound(a, b), req: createConfigMap()}
		}(), map[string]string{"a": "2"}),
		wantA(sc("reinvocation: a no-op IfNeeded mutation still reinvokes (dirty)", newPolicy("p", ifNeeded(), withMutations(counterOf("count"), acMutation(`Object{metadata: Object.metadata{name: object.metadata.name}}`))), createPod()), map[string]string{"count": "2"}),
		wantA(sc("reinvocation: an IfNeeded policy whose condition turns false is not rerun", newPolicy("p", ifNeeded(), withConditions(`!has(object.metadata.annotations) || !("count" in object.metadata.annotations)`), withMutations(counterOf("count"))), createConfigMap()), map[string]string{"count": "1"}),
		wantA(with(sc("reinvocation: each param is a separate invocation", newPolicy("p", ifNeeded(), cmParams, withMutations(counterOf("count"))), createPod()), func(s *dispatchScenario) {
			s.bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{newBinding("b", "p", paramSelector(labelsSel("role", "defaults"), "", ""))}
		}), map[string]string{"count": "4"}),
		wantA(sc("reinvocation: a failed JSONPatch test still marks the object dirty", newPolicy("p", ifNeeded(), withMutations(counterOf("count"), jpMutation(`[JSONPatch{op: "test", path: "/metadata/name", value: "other"}]`))), createPod()), map[string]string{"count": "2"}),
		wantA(func() dispatchScenario {
			a := newPolicy("a", ifNeeded(), withMutations(counterOf("a")))
			b := newPolicy("b", ifNeeded(), withConditions(`object.metadata.?annotations[?"a"].orValue("") == "1"`), withMutations(counterOf("b")))
			return dispatchScenario{name: "reinvocation: pass-2 conditions see the pass-1 object", policies: policies(a, b), bindings: bound(a, b), req: createConfigMap()}
		}(), map[string]string{"a": "2", "b": "1"}),
		wantA(sc("reinvocation: an erroring IfNeeded policy under Ignore", newPolicy("p", ifNeeded(), withFailure(ignore), withMutations(counterOf("count"), acMutation(broken))), createPod()), map[string]string{"count": "2"}),

		// --- Failure policies and errors -----------------------------------
		wantD(sc("errors: runtime error under Fail denies", newPolicy("p", withMutations(acMutation(broken))), createPod()), "resulted in error"),
		wantL(sc("errors: runtime error under Ignore admits", newPolicy("p", withFailure(ignore), withMutations(acMutation(broken))), createPod()), absent("x")),
		wantD(sc("errors: unset failurePolicy means Fail", newPolicy("p", withoutFailurePolicy(), withMutations(acMutation(broken))), createPod()), "resulted in error"),
		wantL(sc("errors: a failing mutation does not stop the next under Ignore", newPolicy("p", withFailure(ignore), withMutations(acMutation(broken), setLabel("after", `"yes"`))), createPod()), yes("after")),
		wantD(sc("errors: a failing mutation does not stop the next under Fail", newPolicy("p", withMutations(acMutation(broken), setLabel("after", `"yes"`))), createPod()), "resulted in error"),
		wantD(func() dispatchScenario {
			a, b := newPolicy("a", withMutations(acMutation(broken))), newPolicy("b", withMutations(jpMutation(`[JSONPatch{op: "remove", path: "/metadata/labels/none"}]`)))
			return dispatchScenario{name: "errors: two failing policies give two causes", policies: policies(a, b), bindings: bound(a, b), req: createPod()}
		}(), "policy 'a'"),
		wantD(func() dispatchScenario {
			a, b := newPolicy("a", withFailure(ignore), withMutations(acMutation(broken))), newPolicy("b", withMutations(acMutation(`Object{metadata: Object.metadata{labels: "x"}}`)))
			return dispatchScenario{name: "errors: Ignore errors are dropped, Fail errors kept", policies: policies(a, b), bindings: bound(a, b), req: createPod()}
		}(), "policy 'b'"),
		wantD(sc("errors: mutation compile error under Fail", newPolicy("p", withMutations(acMutation(`Object{`))), createPod()), "compilation failed"),
		wantL(sc("errors: mutation compile error under Ignore", newPolicy("p", withFailure(ignore), withMutations(acMutation(`Object{`), setLabel("after", `"yes"`))), createPod()), yes("after")),
		wantD(sc("errors: params without paramKind do not compile", newPolicy("p", withMutations(setLabel("x", `params.data.team`))), createPod()), "undeclared reference"),
		wantD(sc("errors: ApplyConfiguration that is not an Object", newPolicy("p", withMutations(acMutation(`"string"`))), createPod()), "must evaluate to Object"),
		wantD(sc("errors: JSONPatch with a wrong result type", newPolicy("p", withMutations(jpMutation(`[{"op": "add"}]`))), createPod()), "list(JSONPatch)"),
		wantD(sc("errors: strict decoding error is a status error even under Ignore", newPolicy("p", withFailure(ignore), withMutations(jpMutation(`[JSONPatch{op: "add", path: "/spec/notAField", value: 1}]`))), createPod()), "strict decoding"),
		wantD(sc("errors: atomic list in ApplyConfiguration under Fail", newPolicy("p", withMutations(acMutation(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{tolerations: [Object.spec.template.spec.tolerations{key: "x", operator: "Exists"}]}}}}`))), createDeployment()), "atomic"),
		wantD(sc("errors: per-call cost limit in a mutation", newPolicy("p", withMutations(setLabel("x", `string([1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, "abc".matches("a.*c"))))))))`))), createPod()), "cost"),
		wantL(sc("errors: per-call cost limit under Ignore", newPolicy("p", withFailure(ignore), withMutations(setLabel("x", `string([1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, "abc".matches("a.*c"))))))))`))), createPod()), absent("x")),
		wantD(func() dispatchScenario {
			p := newPolicy("p", cmParams, teamLabel)
			return dispatchScenario{name: "errors: one erroring binding among two", policies: policies(p), req: createPod(), bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{
				newBinding("a", "p", paramName("nope", "", deny)), newBinding("b", "p", paramName("defaults", "", deny))}}
		}(), "binding 'a'"),

		// --- Patch types and inputs ------------------------------------------
		wantL(sc("patch: JSONPatch adds a label with escapeKey", newPolicy("p", withMutations(jpMutation(`[JSONPatch{op: "add", path: "/metadata/labels", value: {}}, JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/team"), value: "shop"}]`))), createPod()), map[string]string{"example.com/team": "shop"}),
		sc("patch: ApplyConfiguration merges a sidecar into a deployment", newPolicy("p", withMutations(acMutation(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "sidecar", image: "busybox"}]}}}}`))), createDeployment()),
		wantL(sc("patch: AC then JSONPatch sees the previous output", newPolicy("p", withMutations(setLabel("first", `"1"`), jpMutation(`[JSONPatch{op: "add", path: "/metadata/labels/second", value: object.metadata.labels["first"] + "2"}]`))), createDeployment()), map[string]string{"first": "1", "second": "12"}),
		wantL(sc("patch: oldObject on UPDATE", newPolicy("p", withMutations(setLabel("old", `string(oldObject.spec.replicas)`))), updateDeployment(nil, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](7) })), map[string]string{"old": "7"}),
		wantL(sc("patch: request fields", newPolicy("p", withMutations(setLabel("req", `request.userInfo.username + "." + request.operation + "." + request.namespace + "." + request.name + "." + string(request.dryRun) + "." + request.resource.resource + "." + request.kind.kind + "." + request.userInfo.extra["scope"][1]`))), asUser(createPod(), "bob", "devs")), map[string]string{"req": "bob.CREATE.shop.p.false.pods.Pod.b"}),
		wantL(sc("patch: dry run", newPolicy("p", withMutations(setLabel("dry", `string(request.dryRun)`))), func() dispatchRequest { r := createPod(); r.dryRun = true; return r }()), map[string]string{"dry": "true"}),
		wantL(sc("patch: namespaceObject in a mutation", newPolicy("p", withMutations(setLabel("env", `namespaceObject.metadata.labels.env + "/" + namespaceObject.metadata.annotations.owner`))), createPod()), map[string]string{"env": "prod/shop-team"}),
		wantL(sc("patch: namespaceObject is null for a Namespace CREATE", newPolicy("p", withMutations(setLabel("null", `string(namespaceObject == null)`))), createNamespace("qa", nil)), map[string]string{"null": "true"}),
		wantL(sc("patch: namespaceObject is null for a Namespace UPDATE", newPolicy("p", withMutations(setLabel("null", `string(namespaceObject == null)`))), updateNamespace("shop", map[string]string{"a": "b"}, nil)), map[string]string{"null": "true"}),
		wantL(sc("patch: authorizer in a mutation", newPolicy("p", withMutations(setLabel("can", `string(authorizer.group("").resource("configmaps").namespace("shop").check("get").allowed())`))), createPod()), map[string]string{"can": "true"}),
		wantL(sc("patch: request options", newPolicy("p", withMutations(setLabel("fm", `request.options.fieldManager`))), func() dispatchRequest {
			r := createPod()
			r.options = &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}, FieldManager: "kubectl"}
			return r
		}()), map[string]string{"fm": "kubectl"}),
		sc("patch: JSONPatch removes a finalizer from a pod", newPolicy("p", withMutations(jpMutation(`[JSONPatch{op: "remove", path: "/metadata/finalizers/0"}]`))), createPod()),
		wantL(sc("patch: ApplyConfiguration on a cluster-scoped object", newPolicy("p", withRules(rule([]string{"CREATE"}, []string{"rbac.authorization.k8s.io"}, []string{"v1"}, []string{"clusterroles"}))), createClusterRole()), yes("p")),
		sc("patch: JSONPatch sets a custom resource field", newPolicy("p", withRules(rule([]string{"CREATE"}, []string{"example.com"}, []string{"v1"}, []string{"widgets"})),
			withMutations(jpMutation(`[JSONPatch{op: "replace", path: "/spec/color", value: "green"}, JSONPatch{op: "add", path: "/spec/tags/-", value: "c"}]`))), createWidget()),
	}
	return out
}

func TestDispatcherMatchesUpstream(t *testing.T) {
	w := newDispatchWorld(t)
	scenarios := dispatchScenarios()
	if len(scenarios) < 60 {
		t.Fatalf("need at least 60 scenarios, have %d", len(scenarios))
	}
	seen := map[string]bool{}
	for _, s := range scenarios {
		if seen[s.name] {
			t.Fatalf("duplicate scenario name %q", s.name)
		}
		seen[s.name] = true
	}
	for name := range knownDifferences {
		if !seen[name] {
			t.Errorf("knownDifferences names an unknown scenario %q", name)
		}
	}
	ctx := context.Background()
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			if why, ok := knownDifferences[s.name]; ok {
				t.Skip("known difference: " + why)
			}
			theirs, _ := w.runUpstream(ctx, s.policies, s.bindings, s.req)
			ours, _, err := w.runOurs(ctx, s.policies, s.bindings, s.req)
			if err != nil {
				t.Fatal(err)
			}
			if err := compareOutcomes(ours, theirs); err != nil {
				t.Fatal(err)
			}
			checkGuards(t, s, theirs)
		})
	}
}

// checkGuards verifies the scenario's stated expectation on the upstream
// outcome, so that a scenario cannot silently stop testing what it names.
func checkGuards(t *testing.T, s dispatchScenario, out dispatchOutcome) {
	t.Helper()
	if out.err != nil {
		t.Fatalf("guard: unexpected error %v", out.err)
	}
	if s.wantDeny != "" || (out.status != nil && strings.Contains(s.name, "error") && s.wantDeny == "") {
		if out.status == nil {
			t.Fatalf("guard: scenario must be denied (%q), was admitted", s.wantDeny)
		}
		if !strings.Contains(out.status.Message, s.wantDeny) {
			t.Fatalf("guard: denial %q does not contain %q", out.status.Message, s.wantDeny)
		}
		return
	}
	if out.status != nil {
		t.Fatalf("guard: scenario must be admitted, was denied: %s", out.status.Message)
	}
	check := func(field string, want map[string]string) {
		got, _, _ := unstructured.NestedStringMap(out.object, "metadata", field)
		for k, v := range want {
			g, ok := got[k]
			switch {
			case v == "-" && ok:
				t.Fatalf("guard: %s %q must be absent, is %q", field, k, g)
			case v != "-" && g != v:
				t.Fatalf("guard: %s %q = %q, want %q", field, k, g, v)
			}
		}
	}
	check("labels", s.wantLabels)
	check("annotations", s.wantAnnotations)
}

// ---------------------------------------------------------------------------
// Randomized, order-independent policy sets.

// randomPool is a fixed pool of policies, compiled once on each side. Each
// writes only keys of its own (label "<name>", label "<name>-<param>",
// annotation "<name>-count") so that any subset is order-independent;
// matchConditions only read request fields, so pass-2 conditions do not
// depend on the order either.
func randomPool(r *rand.Rand, n int) []*admissionregistrationv1.MutatingAdmissionPolicy {
	ruleSets := []func() []admissionregistrationv1.NamedRuleWithOperations{
		defaultRules,
		func() []admissionregistrationv1.NamedRuleWithOperations {
			return []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"})}
		},
		func() []admissionregistrationv1.NamedRuleWithOperations {
			return []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"CREATE"}, []string{""}, []string{"v1"}, []string{"pods", "configmaps"})}
		},
		func() []admissionregistrationv1.NamedRuleWithOperations {
			return []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"UPDATE"}, []string{"*"}, []string{"*"}, []string{"*/*"})}
		},
		func() []admissionregistrationv1.NamedRuleWithOperations {
			r := rule([]string{"CREATE", "UPDATE"}, []string{"*"}, []string{"*"}, []string{"*"})
			r.Scope = ptr.To(admissionregistrationv1.ClusterScope)
			return []admissionregistrationv1.NamedRuleWithOperations{r}
		},
		func() []admissionregistrationv1.NamedRuleWithOperations {
			r := rule([]string{"CREATE", "UPDATE"}, []string{"", "apps"}, []string{"v1"}, []string{"pods", "deployments"})
			r.ResourceNames = []string{"web", "p"}
			return []admissionregistrationv1.NamedRuleWithOperations{r}
		},
	}
	nsSelectors := []*metav1.LabelSelector{{}, {}, labelsSel("env", "prod"),
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"dev", "qa"}}}}}
	objSelectors := []*metav1.LabelSelector{{}, {}, labelsSel("app", "web"),
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}}
	conditions := [][]string{nil, nil, {`request.operation == "CREATE"`}, {`!object.metadata.name.startsWith("x")`, `request.namespace != "kube-system"`},
		{`object.metadata.name == "p"`}, {`object.nope == 1`}}
	var out []*admissionregistrationv1.MutatingAdmissionPolicy
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("r%02d", i)
		opts := []policyOpt{
			withRules(ruleSets[r.Intn(len(ruleSets))]()...),
			withNamespaceSelector(nsSelectors[r.Intn(len(nsSelectors))]),
			withObjectSelector(objSelectors[r.Intn(len(objSelectors))]),
			withConditions(conditions[r.Intn(len(conditions))]...),
		}
		if r.Intn(3) == 0 {
			opts = append(opts, withExclude(rule([]string{"*"}, []string{""}, []string{"*"}, []string{"configmaps"})))
		}
		if r.Intn(2) == 0 {
			opts = append(opts, ifNeeded())
		}
		if r.Intn(3) == 0 {
			opts = append(opts, withFailure(admissionregistrationv1.Ignore))
		}
		var ms []admissionregistrationv1.Mutation
		withParams := r.Intn(3) == 0
		if withParams {
			opts = append(opts, withParamKind("v1", "ConfigMap"))
			ms = append(ms, acMutation(fmt.Sprintf(`Object{metadata: Object.metadata{labels: {%q + params.metadata.name: params.data.team}}}`, name+"-")))
		}
		switch r.Intn(7) {
		case 0:
			ms = append(ms, setLabel(name, `"v"`))
		case 1:
			ms = append(ms, jpMutation(fmt.Sprintf(`[JSONPatch{op: "add", path: "/metadata/annotations", value: {}}, JSONPatch{op: "add", path: "/metadata/annotations/%s", value: "v"}]`, name+"-count")))
		case 2:
			ms = append(ms, counterOf(name+"-count"))
		case 3:
			ms = append(ms, counterOf(name+"-count"), setLabel(name, `object.metadata.name`))
		case 4:
			ms = append(ms, acMutation(broken), counterOf(name+"-count")) // error, then a counter
		case 5:
			ms = append(ms, acMutation(`Object{metadata: Object.metadata{name: object.metadata.name}}`)) // no-op but dirty
		case 6:
			opts = append(opts, withVariables("v", `request.userInfo.username + "-" + string(size(object.metadata.?labels.orValue({})) >= 0)`))
			ms = append(ms, setLabel(name, `variables.v`))
		}
		opts = append(opts, withMutations(ms...))
		out = append(out, newPolicy(name, opts...))
	}
	return out
}

func randomBindings(r *rand.Rand, p *admissionregistrationv1.MutatingAdmissionPolicy) []*admissionregistrationv1.MutatingAdmissionPolicyBinding {
	n := 1 + r.Intn(2)
	var out []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for i := 0; i < n; i++ {
		var opts []bindingOpt
		switch r.Intn(5) {
		case 0:
			opts = append(opts, bindingMatch(&admissionregistrationv1.MatchResources{NamespaceSelector: labelsSel("env", "prod"), ObjectSelector: &metav1.LabelSelector{}}))
		case 1:
			opts = append(opts, bindingMatch(&admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"*"}, []string{""}, []string{"v1"}, []string{"pods", "namespaces"})}}))
		}
		if p.Spec.ParamKind != nil {
			actions := []admissionregistrationv1.ParameterNotFoundActionType{"", admissionregistrationv1.AllowAction, admissionregistrationv1.DenyAction}
			action := actions[r.Intn(len(actions))]
			switch r.Intn(5) {
			case 0:
				opts = append(opts, paramName("defaults", "", action))
			case 1:
				opts = append(opts, paramName("missing", "", action))
			case 2:
				opts = append(opts, paramSelector(labelsSel("role", "defaults"), "", action))
			case 3:
				opts = append(opts, paramSelector(&metav1.LabelSelector{}, "kube-system", action))
			case 4: // no paramRef: params == null, the mutation fails on it
			}
		}
		out = append(out, newBinding(fmt.Sprintf("%s-b%d", p.Name, i), p.Name, opts...))
	}
	return out
}

func randomRequest(r *rand.Rand) dispatchRequest {
	var req dispatchRequest
	switch r.Intn(10) {
	case 0:
		req = createPod()
	case 1:
		req = createPodIn("dev", map[string]string{"tier": "fe"})
	case 2:
		req = createDeployment()
	case 3:
		req = updateDeployment(func(d *appsv1.Deployment) { d.Labels["tier"] = "x" }, nil)
	case 4:
		req = createConfigMap()
	case 5:
		req = createNamespace("qa", map[string]string{"env": "qa", "tier": "t"})
	case 6:
		req = createClusterRole()
	case 7:
		req = updatePodStatus()
	case 8:
		req = createPodIn("kube-system", map[string]string{"app": "web"})
	case 9:
		req = updateNamespace("dev", map[string]string{"env": "dev", "x": "y"}, map[string]string{"env": "dev"})
	}
	if r.Intn(4) == 0 {
		req = asUser(req, "root", "system:masters")
	}
	return req
}

// TestDispatcherRandomizedMatchesUpstream draws policy subsets from a random
// pool, binds them randomly and sends random requests; both implementations
// must agree on every combination. The seed is logged; set
// MUTATIS_DISPATCH_SEED to replay one.
func TestDispatcherRandomizedMatchesUpstream(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("MUTATIS_DISPATCH_SEED"); s != "" {
		if _, err := fmt.Sscan(s, &seed); err != nil {
			t.Fatal(err)
		}
	}
	combinations := valuetest.Sweep(1000, 200) // make test-long: the full sweep
	t.Logf("seed %d, %d combinations (MUTATIS_DISPATCH_SEED=%d to replay)", seed, combinations, seed)
	r := rand.New(rand.NewSource(seed))
	w := newDispatchWorld(t)
	pool := randomPool(r, 40)
	ctx := context.Background()
	start := time.Now()
	denied, mutated, failures := 0, 0, 0
	for i := 0; i < combinations; i++ {
		k := 1 + r.Intn(4)
		perm := r.Perm(len(pool))[:k]
		var ps []*admissionregistrationv1.MutatingAdmissionPolicy
		var bs []*admissionregistrationv1.MutatingAdmissionPolicyBinding
		for _, j := range perm {
			ps = append(ps, pool[j])
			bs = append(bs, randomBindings(r, pool[j])...)
		}
		req := randomRequest(r)
		theirs, _ := w.runUpstream(ctx, ps, bs, req)
		ours, _, err := w.runOurs(ctx, ps, bs, req)
		if err != nil {
			t.Fatal(err)
		}
		if theirs.status != nil {
			denied++
		} else if req.obj != nil {
			if orig, _ := toUnstructured(req.obj.DeepCopyObject()); !equalIgnoringTypeMeta(orig, theirs.object) {
				mutated++
			}
		}
		if err := compareOutcomes(ours, theirs); err != nil {
			failures++
			var names []string
			for _, p := range ps {
				names = append(names, p.Name)
			}
			t.Errorf("combination %d (policies %v, request %s %s %s/%s): %v", i, names, req.op, req.gvr.Resource, req.namespace, req.name, err)
			if failures >= 5 {
				t.Fatal("too many failures")
			}
		}
	}
	t.Logf("%d combinations in %v: %d denied, %d mutated", combinations, time.Since(start), denied, mutated)
	if denied == 0 || mutated == 0 {
		t.Fatalf("the generator is degenerate: %d denied, %d mutated", denied, mutated)
	}
}

func equalIgnoringTypeMeta(a, b map[string]any) bool {
	return fmt.Sprint(a["metadata"]) == fmt.Sprint(b["metadata"]) && fmt.Sprint(a["spec"]) == fmt.Sprint(b["spec"]) && fmt.Sprint(a["data"]) == fmt.Sprint(b["data"])
}
