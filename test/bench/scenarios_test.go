package bench

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
)

var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	podGVK        = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	podGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	recordGVK     = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Record"}
	recordGVR     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "records"}
	gizmoGVK      = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gizmo"}
	gizmoGVR      = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"}
)

// deployment is the small Deployment of the per-mutation scenarios (the
// one test/differential uses).
func deployment() *appsv1.Deployment {
	return testobjects.BenchDeployment()
}

// pod is the Pod of the dispatcher scenarios.
func pod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "app", Image: "docker.io/library/nginx:1.27", Env: []corev1.EnvVar{{Name: "MODE", Value: "prod"}}},
				{Name: "proxy", Image: "envoy:1.30", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}},
			},
		},
	}
}

// record is a custom resource of about 1 MiB: entries list items, each
// with a name, a value, a weight and tags.
func record(entries int) *unstructured.Unstructured {
	items := make([]any, entries)
	for i := range items {
		items[i] = map[string]any{
			"name":   fmt.Sprintf("entry-%05d", i),
			"value":  strings.Repeat(string(rune('a'+i%26)), 120),
			"weight": int64(i),
			"tags":   []any{"blue", "green", fmt.Sprintf("t%d", i%7)},
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Record",
		"metadata": map[string]any{"name": "big", "namespace": "shop"},
		"spec":     map[string]any{"owner": "shop", "entries": items},
	}}
}

// gizmo is a custom resource whose schema has nested defaults
// (testdata/gizmos-crd.yaml), with n ports, routes and conditions, each
// defaulted inside.
func gizmo(n int) *unstructured.Unstructured {
	ports, routes, conds := make([]any, n), map[string]any{}, make([]any, n)
	for i := range ports {
		ports[i] = map[string]any{"name": fmt.Sprintf("port-%d", i), "port": int64(8000 + i)}
		routes[fmt.Sprintf("route-%d", i)] = map[string]any{"backend": map[string]any{"service": fmt.Sprintf("svc-%d", i)}}
		conds[i] = map[string]any{"type": fmt.Sprintf("Cond%d", i)}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gizmo",
		"metadata": map[string]any{"name": "gizmo", "namespace": "shop", "labels": map[string]any{"app": "gizmo"}},
		"spec": map[string]any{"ports": ports, "routes": routes, "words": []any{"a", "b"},
			"template": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "t"}}},
		"status": map[string]any{"conditions": conds},
	}}
}

// worldObjects are the namespaces and param objects every scenario sees:
// the namespace "shop" and ten ConfigMaps labelled role=defaults.
func worldObjects() []runtime.Object {
	out := []runtime.Object{&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"kubernetes.io/metadata.name": "shop", "env": "prod", "team": "payments"}}}}
	for i := 0; i < 10; i++ {
		out = append(out, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("defaults-%02d", i), Labels: map[string]string{"role": "defaults"}},
			Data:       map[string]string{"team": fmt.Sprintf("team-%02d", i)}})
	}
	return out
}

// mutation is one mutation of a scenario policy.
type mutation struct {
	jsonPatch bool
	expr      string
}

func ac(expr string) mutation { return mutation{expr: expr} }
func jp(expr string) mutation { return mutation{jsonPatch: true, expr: expr} }

// policy returns a policy with its binding, matching CREATE of the given
// resources (group/resource, "" group for core).
func policy(name string, group, resource string, ms ...mutation) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	exact := admissionregistrationv1.Exact
	never := admissionregistrationv1.NeverReinvocationPolicy
	fail := admissionregistrationv1.Fail
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{},
				ObjectSelector:    &metav1.LabelSelector{},
				MatchPolicy:       &exact,
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: []string{resource}, Scope: ptr.To(admissionregistrationv1.AllScopes)},
				}}},
			},
			FailurePolicy:      &fail,
			ReinvocationPolicy: never,
		},
	}
	for _, m := range ms {
		if m.jsonPatch {
			p.Spec.Mutations = append(p.Spec.Mutations, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: m.expr}})
		} else {
			p.Spec.Mutations = append(p.Spec.Mutations, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: m.expr}})
		}
	}
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}, MatchPolicy: &exact}},
	}
	return p, b
}

// mutationCases are the per-mutation scenarios, on the small Deployment.
var mutationCases = []struct {
	name string
	m    mutation
}{
	{"ac-label", ac(`Object{metadata: Object.metadata{labels: {"team": "shop"}}}`)},
	{"ac-sidecar", ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "sidecar", image: "busybox"}]}}}}`)},
	{"jsonpatch-label", jp(`[JSONPatch{op: "add", path: "/metadata/labels/team", value: "shop"}]`)},
	{"jsonpatch-escapekey", jp(`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/team"), value: "shop"}]`)},
}

// otherResources are what the policies that do not match a Pod request
// target: real built-in resources, so the index files them as it would in
// a cluster.
var otherResources = [][2]string{
	{"", "configmaps"}, {"", "secrets"}, {"", "services"}, {"", "serviceaccounts"},
	{"apps", "deployments"}, {"apps", "statefulsets"}, {"batch", "jobs"}, {"batch", "cronjobs"},
	{"networking.k8s.io", "ingresses"},
}

// dispatchScenario is a set of policies and one request through the whole
// admission (matching, params, matchConditions, mutations, reinvocation).
type dispatchScenario struct {
	name     string
	policies []*admissionregistrationv1.MutatingAdmissionPolicy
	bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	req      request
	crds     []string
	// unchanged is true when no policy matches (the object comes back as sent).
	unchanged bool
}

func podRequest() request {
	return request{obj: pod(), gvk: podGVK, gvr: podGVR, namespace: "shop", name: "web-0"}
}

// dispatchScenarios returns the scenarios of BenchmarkAdmit.
func dispatchScenarios() []dispatchScenario {
	var out []dispatchScenario

	// A Pod with 10 matching policies, one label each.
	s := dispatchScenario{name: "pod-10-matching", req: podRequest()}
	for i := 0; i < 10; i++ {
		p, b := policy(fmt.Sprintf("label-%02d", i), "", "pods", ac(fmt.Sprintf(`Object{metadata: Object.metadata{labels: {"policy-%02d": "yes"}}}`, i)))
		s.policies, s.bindings = append(s.policies, p), append(s.bindings, b)
	}
	out = append(out, s)

	// N policies of which one matches.
	for _, n := range []int{10, 100, 1000} {
		out = append(out, manyPolicies(fmt.Sprintf("policies-%d-1-matching", n), n, true))
	}
	out = append(out, manyPolicies("policies-1000-0-matching", 1000, false))

	// Params by selector: one binding, ten ConfigMaps, ten invocations.
	p, b := policy("team-from-params", "", "pods", ac(`Object{metadata: Object.metadata{labels: {"team-" + params.metadata.name: params.data.team}}}`))
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	deny := admissionregistrationv1.DenyAction
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "defaults"}}, ParameterNotFoundAction: &deny}
	out = append(out, dispatchScenario{name: "params-selector-10", policies: []*admissionregistrationv1.MutatingAdmissionPolicy{p},
		bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}, req: podRequest()})

	// A 1 MiB custom resource with 5,000 list items: one entry merged by
	// key and a label.
	p, b = policy("record-touch", "example.com", "records",
		ac(`Object{metadata: Object.metadata{labels: {"touched": "yes"}}, spec: Object.spec{entries: [Object.spec.entries{name: "entry-00042", value: "patched"}]}}`))
	out = append(out, dispatchScenario{name: "cr-1mib-5000-items", policies: []*admissionregistrationv1.MutatingAdmissionPolicy{p},
		bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}, crds: []string{"testdata/records-crd.yaml"},
		req: request{obj: record(5000), gvk: recordGVK, gvr: recordGVR, namespace: "shop", name: "big"}})
	// A custom resource with nested defaults (20 ports, routes and
	// conditions): a label, then a nested field; each mutation is
	// followed by structural defaulting.
	s = dispatchScenario{name: "cr-defaults-2-matching", crds: []string{"testdata/gizmos-crd.yaml"},
		req: request{obj: gizmo(20), gvk: gizmoGVK, gvr: gizmoGVR, namespace: "shop", name: "gizmo"}}
	for _, m := range []string{
		`Object{metadata: Object.metadata{labels: {"touched": "yes"}}}`,
		`Object{spec: Object.spec{strategy: Object.spec.strategy{type: "Recreate"}}}`,
	} {
		p, b := policy(fmt.Sprintf("gizmo-%d", len(s.policies)), "example.com", "gizmos", ac(m))
		s.policies, s.bindings = append(s.policies, p), append(s.bindings, b)
	}
	out = append(out, s)
	return out
}

// manyPolicies is n policies, one matching the Pod request when match is
// set; the others target other resources.
func manyPolicies(name string, n int, match bool) dispatchScenario {
	s := dispatchScenario{name: name, req: podRequest(), unchanged: !match}
	for i := 0; i < n; i++ {
		group, resource := "", "pods"
		if i > 0 || !match {
			r := otherResources[i%len(otherResources)]
			group, resource = r[0], r[1]
		}
		p, b := policy(fmt.Sprintf("policy-%04d", i), group, resource, ac(fmt.Sprintf(`Object{metadata: Object.metadata{labels: {"policy-%04d": "yes"}}}`, i)))
		s.policies, s.bindings = append(s.policies, p), append(s.bindings, b)
	}
	return s
}
