package differential

// Differential tests of the whole mutating admission chain: the same
// requests through
//
//   - kube-apiserver's: admission.Plugins.NewFromPlugins over the built-in
//     plugins (scheme.AdmissionPluginChain: their own code, chained as
//     kube-apiserver chains them), the MutatingAdmissionPolicy plugin
//     (k8s.io/apiserver's dispatcher behind generic.Plugin's exemptions)
//     and the MutatingAdmissionWebhook plugin (test/upstream), which wraps
//     them in admission.reinvoker, the reinvocation round of the chain;
//   - mutatis': cluster.Admit (a chain.Runner over engine.Evaluator and
//     webhookclient.Dispatcher);
//
// The stored objects (policy counters show how often each policy ran),
// refusals and the calls each test webhook received must be the same: the
// KEP-492 scenarios across plugins, with exact call counts.

import (
	"context"
	"encoding/json"
	"io"
	"net/url"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/manifest"
	kubescheme "github.com/mutatis-dev/mutatis/scheme"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/test/upstream"
	"github.com/mutatis-dev/mutatis/test/webhookserver"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// chainPolicies are the policies of every chain scenario, each selected
// by a label of the Pod (so a scenario picks its policies by labelling).
const chainPolicies = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: count-ifneeded}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {count-ifneeded: "true"}}
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{annotations: {"policy.example.com/ifneeded":
          string(int(object.metadata.?annotations["policy.example.com/ifneeded"].orValue("0")) + 1)}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: count-never}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {count-never: "true"}}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{annotations: {"policy.example.com/never":
          string(int(object.metadata.?annotations["policy.example.com/never"].orValue("0")) + 1)}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: log-shipper}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {inject-logging: "true"}}
  matchConditions:
  - name: not-already-injected
    expression: '!object.spec.containers.exists(c, c.name == "log-shipper")'
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{spec: Object.spec{containers: [Object.spec.containers{name: "log-shipper", image: "registry.example.com/log-shipper:1.4.2"}]}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: tier}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {tiered: "true"}}
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{annotations: {"policy.example.com/tier": "gold",
          "policy.example.com/containers": string(size(object.spec.containers))}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: after-stamp}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {stamped-by: webhook}}
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        [JSONPatch{op: "add", path: "/metadata/annotations", value: {"policy.example.com/after-stamp": "ran"}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: deny-sidecar}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {deny-sidecar: "true"}}
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        object.spec.containers.exists(c, c.name == "sidecar") ?
          [JSONPatch{op: "add", path: "/spec/containers/0/notAField", value: "x"}] : []
---
# Fails (ignored) until a sidecar is there: it changes nothing in the
# first round, so only the other plugins' change can reinvoke it.
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: wants-sidecar}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {wants-sidecar: "true"}}
  failurePolicy: Ignore
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        object.spec.containers.exists(c, c.name == "sidecar") ?
          Object{metadata: Object.metadata{annotations: {"policy.example.com/saw-sidecar": "yes"}}} :
          Object{metadata: Object.metadata{annotations: {"policy.example.com/saw-sidecar": string(int(object.metadata.name))}}}
`

const chainBindings = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: wants-sidecar}
spec: {policyName: wants-sidecar}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: count-ifneeded}
spec: {policyName: count-ifneeded}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: count-never}
spec: {policyName: count-never}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: log-shipper}
spec: {policyName: log-shipper}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: tier}
spec: {policyName: tier}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: after-stamp}
spec: {policyName: after-stamp}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: deny-sidecar}
spec: {policyName: deny-sidecar}
`

// chainLimitRange gives every container of the shop namespace a cpu
// request (LimitRanger).
const chainLimitRange = `
apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: shop}
spec:
  limits:
  - type: Container
    defaultRequest: {cpu: 100m}
`

// chainScenario is one request (a Pod in shop with labels) through a
// chain of webhook configurations.
type chainScenario struct {
	name    string
	labels  map[string]string
	configs func(w *webhookWorld) []*admissionregistrationv1.MutatingWebhookConfiguration
	// want are facts that make the scenario mean something.
	want func(t *testing.T, o chainOutcome)
}

// chainOutcome is what must be the same on both sides.
type chainOutcome struct {
	Object  map[string]any
	Code    int32
	Message string
	Calls   map[string]int
}

func (o chainOutcome) String() string {
	js, _ := json.MarshalIndent(o, "", "  ")
	return string(js)
}

func (o chainOutcome) annotation(key string) string {
	v, _, _ := unstructured.NestedString(o.Object, "metadata", "annotations", key)
	return v
}

func (o chainOutcome) mounts(container string) []string {
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "containers")
	for _, c := range cs {
		if m := c.(map[string]any); m["name"] == container {
			var out []string
			vms, _, _ := unstructured.NestedSlice(m, "volumeMounts")
			for _, vm := range vms {
				out = append(out, vm.(map[string]any)["name"].(string))
			}
			return out
		}
	}
	return nil
}

// mapPlugin is the MutatingAdmissionPolicy plugin as kube-apiserver runs
// it (mutating.Plugin: generic.Plugin's Handles and exemptions around the
// dispatcher, over the policy source's hooks).
type mapPlugin struct {
	*admission.Handler
	dispatcher generic.Dispatcher[mutating.PolicyHook]
	hooks      []mutating.PolicyHook
}

func (p *mapPlugin) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if upstream.Exempt(a.GetResource().GroupResource()) {
		return nil
	}
	return p.dispatcher.Dispatch(ctx, a, o, p.hooks)
}

type noConfig struct{}

func (noConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }

type chainRig struct {
	dw       *dispatchWorld
	ww       *webhookWorld
	policies []*admissionregistrationv1.MutatingAdmissionPolicy
	bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	objects  []manifest.Object
}

func newChainRig(t *testing.T) *chainRig {
	r := &chainRig{dw: newDispatchWorld(t), ww: newWebhookWorld(t)}
	set, err := manifest.Load(context.Background(), []string{"-"}, strings.NewReader(chainPolicies+"---\n"+chainBindings+"---\n"+chainLimitRange))
	if err != nil {
		t.Fatal(err)
	}
	r.policies, r.bindings = set.APIObjects()
	r.objects = append(append(r.objects, set.Objects...), asManifest(t, namespacesAsObjects(r.dw.namespaces))...)
	return r
}

func asManifest(t *testing.T, objs []runtime.Object) []manifest.Object {
	var out []manifest.Object
	for _, o := range objs {
		m, err := toUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, manifest.Object{Object: &unstructured.Unstructured{Object: m}})
	}
	return out
}

func (r *chainRig) pod(labels map[string]string) *unstructured.Unstructured {
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27"}}},
	}}
	if labels != nil {
		pod.SetLabels(labels)
	}
	return pod
}

// runMutatis admits the scenario's Pod through cluster.Admit.
func (r *chainRig) runMutatis(t *testing.T, s chainScenario, configs []*admissionregistrationv1.MutatingWebhookConfiguration) (chainOutcome, *cluster.Admission) {
	ctx := context.Background()
	cl, err := cluster.New(r.objects, cluster.Options{NoValidate: true})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := cl.Evaluator(r.dw.compiler, r.policies, r.bindings)
	if err != nil {
		t.Fatal(err)
	}
	ch := cluster.Chain{Policies: ev}
	if configs != nil {
		if ch.Webhooks, err = cl.Webhooks(configs, r.ww.services, webhookclient.Options{}); err != nil {
			t.Fatal(err)
		}
		defer ch.Webhooks.Close(nil)
	}
	d, err := cl.DecodeSteps(cluster.Request{Object: r.pod(s.labels)})
	if err != nil {
		t.Fatal(err)
	}
	r.ww.srv.ResetCalls()
	adm, err := cl.Admit(ctx, ch, d)
	if err != nil {
		t.Fatal(err)
	}
	out := chainOutcome{Calls: r.calls()}
	if adm.Result.Denied != nil {
		out.Code, out.Message = adm.Result.Denied.ErrStatus.Code, adm.Result.Denied.ErrStatus.Message
		return out, adm
	}
	out.Object = mapRoundTrip(t, adm.Object)
	return out, adm
}

func (r *chainRig) calls() map[string]int {
	out := map[string]int{}
	for _, p := range webhookserver.Paths {
		if n := r.ww.srv.Calls(p); n > 0 {
			out[p] = n
		}
	}
	return out
}

// runUpstream admits the same Pod through kube-apiserver's chain.
func (r *chainRig) runUpstream(t *testing.T, s chainScenario, configs []*admissionregistrationv1.MutatingWebhookConfiguration) chainOutcome {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The request body as kube-apiserver's handler decodes it (defaulted),
	// in its internal version.
	cl, err := cluster.New(nil, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := cl.Attributes(cluster.Request{Object: r.pod(s.labels), SkipAdmissionPlugins: true})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(a.Object.Object, pod); err != nil {
		t.Fatal(err)
	}

	// The built-in plugins, over their own stores holding the LimitRange.
	stores := admissionplugins.NewStores(kubescheme.New())
	lr, err := manifest.Load(ctx, []string{"-"}, strings.NewReader(chainLimitRange))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stores.Add(lr.Objects[0].Object.Object); err != nil {
		t.Fatal(err)
	}
	plugins, err := admissionplugins.New(stores, admissionplugins.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	inTree, err := plugins.Handler("shop")
	if err != nil {
		t.Fatal(err)
	}
	var objects []runtime.Object
	for _, ns := range r.dw.namespaces {
		objects = append(objects, ns.DeepCopy())
	}
	for _, c := range configs {
		objects = append(objects, c.DeepCopy())
	}
	services := map[string]*url.URL{}
	for k, u := range r.ww.services {
		services[upstream.ServiceKey(k.Namespace, k.Name, k.Port)] = u
	}
	webhooks, err := upstream.MutatingWebhooks(ctx, objects, services, r.ww.authz)
	if err != nil {
		t.Fatal(err)
	}
	policies := &mapPlugin{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Connect),
		dispatcher: r.dw.dispatcher, hooks: r.dw.upstreamHooks(r.policies, r.bindings)}

	registry := admission.NewPlugins()
	registry.Register("BuiltIn", func(io.Reader) (admission.Interface, error) { return inTree, nil })
	registry.Register(cluster.PolicyPlugin, func(io.Reader) (admission.Interface, error) { return policies, nil })
	registry.Register(cluster.WebhookPlugin, func(io.Reader) (admission.Interface, error) { return webhooks, nil })
	chain, err := registry.NewFromPlugins([]string{"BuiltIn", cluster.PolicyPlugin, cluster.WebhookPlugin}, noConfig{}, admission.PluginInitializers{}, nil)
	if err != nil {
		t.Fatal(err)
	}

	sch := kubeScheme()
	attrs := admission.NewAttributesRecord(internalOf(t, pod, webhookPodGVK), nil, webhookPodGVK, "shop", "web", podGVR, "", admission.Create, nil, false, cluster.DefaultUser())
	oi := &admission.RuntimeObjectInterfaces{ObjectCreater: sch, ObjectTyper: sch, ObjectDefaulter: sch, ObjectConvertor: sch, EquivalentResourceMapper: r.dw.table}
	r.ww.srv.ResetCalls()
	err = chain.(admission.MutationInterface).Admit(ctx, attrs, oi)
	out := chainOutcome{Calls: r.calls()}
	if err != nil {
		out.Code, out.Message, _ = webhookErrorOutcome(err)
		return out
	}
	versioned, err := sch.ConvertToVersion(attrs.GetObject(), webhookPodGVK.GroupVersion())
	if err != nil {
		t.Fatal(err)
	}
	out.Object = mapRoundTrip(t, typedToMap(t, versioned))
	return out
}

func wantCalls(want map[string]int) func(t *testing.T, o chainOutcome) {
	return func(t *testing.T, o chainOutcome) {
		t.Helper()
		if !reflect.DeepEqual(o.Calls, want) {
			t.Errorf("calls = %v, want %v", o.Calls, want)
		}
	}
}

func wantAnnotation(key, value string) func(t *testing.T, o chainOutcome) {
	return func(t *testing.T, o chainOutcome) {
		t.Helper()
		if got := o.annotation(key); got != value {
			t.Errorf("annotation %s = %q, want %q", key, got, value)
		}
	}
}

func wantMounts(container string, names ...string) func(t *testing.T, o chainOutcome) {
	return func(t *testing.T, o chainOutcome) {
		t.Helper()
		if got := o.mounts(container); !reflect.DeepEqual(got, names) {
			t.Errorf("container %s mounts %v, want %v", container, got, names)
		}
	}
}

func wantChainDenied(code int32, fragment string) func(t *testing.T, o chainOutcome) {
	return func(t *testing.T, o chainOutcome) {
		t.Helper()
		if o.Code != code || !strings.Contains(o.Message, fragment) {
			t.Errorf("got %d %q, want %d containing %q", o.Code, o.Message, code, fragment)
		}
	}
}

func allOf(fs ...func(t *testing.T, o chainOutcome)) func(t *testing.T, o chainOutcome) {
	return func(t *testing.T, o chainOutcome) {
		t.Helper()
		for _, f := range fs {
			f(t, o)
		}
	}
}

func chainScenarios() []chainScenario {
	one := func(hooks ...func(w *webhookWorld) admissionregistrationv1.MutatingWebhook) func(w *webhookWorld) []*admissionregistrationv1.MutatingWebhookConfiguration {
		return func(w *webhookWorld) []*admissionregistrationv1.MutatingWebhookConfiguration {
			var hs []admissionregistrationv1.MutatingWebhook
			for _, h := range hooks {
				hs = append(hs, h(w))
			}
			return []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("hooks", hs...)}
		}
	}
	hook := func(name, path string, opts ...hookOpt) func(w *webhookWorld) admissionregistrationv1.MutatingWebhook {
		return func(w *webhookWorld) admissionregistrationv1.MutatingWebhook { return w.urlHook(name, path, opts...) }
	}
	token := "kube-api-access-" + admissionplugins.TokenVolumeSuffix
	return []chainScenario{
		{name: "none: Never policy and webhook, nothing reinvoked", labels: map[string]string{"count-never": "true"},
			configs: one(hook("n.example.com", counterPath("n"))),
			want:    allOf(wantAnnotation("policy.example.com/never", "1"), wantAnnotation("counter.example.com/n", "1"), wantCalls(map[string]int{webhookserver.PathCounter: 1}))},
		{name: "none: no webhook, no policy changes the object", labels: map[string]string{"app": "web"},
			want: allOf(wantMounts("app", token), wantCalls(map[string]int{}))},
		{name: "in-tree only: a policy's container gets the token mount in the second round",
			labels: map[string]string{"inject-logging": "true"},
			want:   allOf(wantMounts("log-shipper", token), wantMounts("app", token))},
		{name: "in-tree only: an IfNeeded webhook runs again after the built-in plugins change the object",
			labels:  map[string]string{"inject-logging": "true"},
			configs: one(hook("noop.example.com", webhookserver.PathNoop, hookIfNeeded)),
			want:    allOf(wantMounts("log-shipper", token), wantCalls(map[string]int{webhookserver.PathNoop: 2}))},
		{name: "in-tree only: a Never webhook does not", labels: map[string]string{"inject-logging": "true"},
			configs: one(hook("noop.example.com", webhookserver.PathNoop)),
			want:    wantCalls(map[string]int{webhookserver.PathNoop: 1})},
		{name: "a webhook's sidecar gets the token mount and is seen by an IfNeeded policy", labels: map[string]string{"tiered": "true"},
			configs: one(hook("sidecar.example.com", webhookserver.PathSidecar)),
			want:    allOf(wantMounts("sidecar", "istio-envoy", token), wantAnnotation("policy.example.com/containers", "2"), wantCalls(map[string]int{webhookserver.PathSidecar: 1}))},
		{name: "full: an IfNeeded counter policy and an IfNeeded counter webhook", labels: map[string]string{"count-ifneeded": "true"},
			configs: one(hook("c.example.com", counterPath("c"), hookIfNeeded)),
			want:    allOf(wantAnnotation("policy.example.com/ifneeded", "2"), wantAnnotation("counter.example.com/c", "2"), wantCalls(map[string]int{webhookserver.PathCounter: 2}))},
		{name: "full: an IfNeeded counter policy alone", labels: map[string]string{"count-ifneeded": "true"},
			want: wantAnnotation("policy.example.com/ifneeded", "2")},
		{name: "partial: IfNeeded and Never policies, IfNeeded webhook then Never webhook that changes",
			labels: map[string]string{"count-ifneeded": "true", "count-never": "true"},
			configs: one(hook("labels.example.com", webhookserver.PathLabels, hookIfNeeded), hook("noop.example.com", webhookserver.PathNoop, hookIfNeeded),
				hook("n.example.com", counterPath("n"))),
			want: allOf(wantAnnotation("policy.example.com/never", "1"), wantAnnotation("counter.example.com/n", "1"),
				wantCalls(map[string]int{webhookserver.PathLabels: 2, webhookserver.PathNoop: 2, webhookserver.PathCounter: 1}))},
		{name: "several webhooks across configurations with policies", labels: map[string]string{"tiered": "true", "count-ifneeded": "true"},
			configs: func(w *webhookWorld) []*admissionregistrationv1.MutatingWebhookConfiguration {
				return []*admissionregistrationv1.MutatingWebhookConfiguration{
					mwConfig("b", w.urlHook("labels.example.com", webhookserver.PathLabels, hookIfNeeded), w.urlHook("count.example.com", counterPath("n"))),
					mwConfig("a", w.urlHook("sidecar.example.com", webhookserver.PathSidecar, hookIfNeeded), w.urlHook("reads.example.com", webhookserver.PathReadsPolicy, hookIfNeeded)),
				}
			},
			want: allOf(wantAnnotation("policy.example.com/tier", "gold"), wantCalls(map[string]int{webhookserver.PathSidecar: 2, webhookserver.PathReadsPolicy: 2, webhookserver.PathLabels: 2, webhookserver.PathCounter: 1}))},
		{name: "an IfNeeded policy that changed nothing is reinvoked when a webhook changed the object since", labels: map[string]string{"wants-sidecar": "true"},
			configs: one(hook("sidecar.example.com", webhookserver.PathSidecar)),
			want:    allOf(wantAnnotation("policy.example.com/saw-sidecar", "yes"), wantCalls(map[string]int{webhookserver.PathSidecar: 1}))},
		{name: "an IfNeeded policy that changed nothing is not reinvoked when nothing changed the object", labels: map[string]string{"wants-sidecar": "true", "count-never": "true"},
			want: allOf(wantAnnotation("policy.example.com/saw-sidecar", ""), wantAnnotation("policy.example.com/never", "1"))},
		{name: "a webhook reads what a policy wrote", labels: map[string]string{"tiered": "true"},
			configs: one(hook("reads.example.com", webhookserver.PathReadsPolicy)),
			want:    wantCalls(map[string]int{webhookserver.PathReadsPolicy: 1})},
		{name: "a policy that matches only after a webhook's change is not invoked in the second round",
			configs: one(hook("labels.example.com", webhookserver.PathLabels)),
			want:    allOf(wantAnnotation("policy.example.com/after-stamp", ""), wantCalls(map[string]int{webhookserver.PathLabels: 1}))},
		{name: "a policy's error in the second round, on a webhook's sidecar, refuses the request", labels: map[string]string{"deny-sidecar": "true", "count-never": "true"},
			configs: one(hook("sidecar.example.com", webhookserver.PathSidecar)),
			want:    wantCalls(map[string]int{webhookserver.PathSidecar: 1})},
		{name: "a webhook's denial after the policies", labels: map[string]string{"inject-logging": "true"},
			configs: one(hook("deny.example.com", webhookserver.PathDeny)),
			want:    wantChainDenied(403, `admission webhook "deny.example.com" denied the request: pods may not run as root`)},
	}
}

// TestChainAgainstUpstream runs every scenario through kube-apiserver's
// chain and mutatis' and requires the same outcome.
func TestChainAgainstUpstream(t *testing.T) {
	r := newChainRig(t)
	for _, s := range chainScenarios() {
		t.Run(s.name, func(t *testing.T) {
			var configs []*admissionregistrationv1.MutatingWebhookConfiguration
			if s.configs != nil {
				configs = s.configs(r.ww)
			}
			want := r.runUpstream(t, s, configs)
			got, adm := r.runMutatis(t, s, configs)
			if !reflect.DeepEqual(want, got) {
				t.Errorf("mutatis differs from kube-apiserver:\nupstream: %s\nmutatis: %s", want, got)
				for _, inv := range adm.Result.Invocations {
					t.Logf("policy %+v", inv)
				}
				for _, c := range adm.Result.Calls {
					t.Logf("webhook %+v", c)
				}
			}
			if s.want != nil {
				s.want(t, got)
			}
		})
	}
}
