//go:build linux

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/test/webhookserver"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// chainPolicyTemplates are the policies of the chains, by name; CHAIN is
// replaced by the chain's name (each policy selects the Pods labelled
// chain=CHAIN, so the chains share one kube-apiserver without seeing each
// other's policies).
var chainPolicyTemplates = map[string]string{
	"log-shipper": `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: CHAIN-log-shipper}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {chain: CHAIN}}
  matchConditions:
  - name: not-already-injected
    expression: '!object.spec.containers.exists(c, c.name == "log-shipper")'
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{spec: Object.spec{containers: [Object.spec.containers{name: "log-shipper", image: "registry.example.com/log-shipper:1.4.2",
          env: [Object.spec.containers.env{name: "LOG_SOURCE", value: "/var/log/app"}]}]}}`,
	"count-ifneeded": `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: CHAIN-count-ifneeded}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {chain: CHAIN}}
  failurePolicy: Fail
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{annotations: {"policy.example.com/ifneeded":
          string(int(object.metadata.?annotations["policy.example.com/ifneeded"].orValue("0")) + 1)}}}`,
	"count-never": `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: CHAIN-count-never}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {chain: CHAIN}}
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{annotations: {"policy.example.com/never":
          string(int(object.metadata.?annotations["policy.example.com/never"].orValue("0")) + 1)}}}`,
	"tier": `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: CHAIN-tier}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {chain: CHAIN}}
  failurePolicy: Fail
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{annotations: {"policy.example.com/tier": size(object.spec.containers) > 1 ? "gold" : "standard",
          "policy.example.com/containers": string(size(object.spec.containers))}}}`,
	"team-label": `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: CHAIN-team-label}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {chain: CHAIN}}
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"team": "payments"}}}'`,
	"after-stamp": `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: CHAIN-after-stamp}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {chain: CHAIN, stamped-by: webhook}}
  failurePolicy: Fail
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{annotations: {"policy.example.com/after-stamp": "ran"}}}'`,
	"wants-sidecar": `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: CHAIN-wants-sidecar}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    objectSelector: {matchLabels: {chain: CHAIN}}
  failurePolicy: Ignore
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        object.spec.containers.exists(c, c.name == "sidecar") ?
          Object{metadata: Object.metadata{annotations: {"policy.example.com/saw-sidecar": "yes"}}} :
          Object{metadata: Object.metadata{annotations: {"policy.example.com/saw-sidecar": string(int(object.metadata.name))}}}`,
}

// chainHook is a webhook of a chain: a path of the test webhook server,
// IfNeeded or not, in a configuration.
type chainHook struct {
	config, name, path string
	ifNeeded           bool
}

// chainCase is one chain: its policies, its webhooks, and whether its
// namespace has a LimitRange.
type chainCase struct {
	name     string
	policies []string
	hooks    []chainHook
	// validating are ValidatingWebhookConfigurations' webhooks (ifNeeded
	// unused): the validating stage, after the registry's validation.
	validating []chainHook
	limitRange bool
	// want are facts of the stored object that make the chain mean
	// something (the outcomes must be equal besides).
	want map[string]string
}

func chainCases() []chainCase {
	token := "kube-api-access-xxxxx"
	return []chainCase{
		{name: "policy-sidecar-token", policies: []string{"log-shipper"},
			want: map[string]string{"mounts/log-shipper": token}},
		{name: "webhook-sidecar-token", hooks: []chainHook{{"mesh", "sidecar", webhookserver.PathSidecar, false}},
			want: map[string]string{"mounts/sidecar": "istio-envoy," + token}},
		{name: "ifneeded-policy-sees-webhook", policies: []string{"tier"}, hooks: []chainHook{{"mesh", "sidecar", webhookserver.PathSidecar, false}},
			want: map[string]string{"policy.example.com/containers": "2", "policy.example.com/tier": "gold"}},
		{name: "webhook-reads-policy", policies: []string{"tier"}, hooks: []chainHook{{"tiers", "tier-label", webhookserver.PathReadsPolicy, true}, {"z-mesh", "sidecar", webhookserver.PathSidecar, false}},
			want: map[string]string{"label/tier": "gold"}},
		{name: "ifneeded-webhook-after-in-tree", policies: []string{"log-shipper"}, hooks: []chainHook{{"count", "c", webhookserver.PathCounter + "/c", true}},
			want: map[string]string{"counter.example.com/c": "2", "mounts/log-shipper": token}},
		{name: "never-webhook-after-in-tree", policies: []string{"log-shipper"}, hooks: []chainHook{{"count", "c", webhookserver.PathCounter + "/c", false}},
			want: map[string]string{"counter.example.com/c": "1"}},
		{name: "full", policies: []string{"count-ifneeded"}, hooks: []chainHook{{"count", "c", webhookserver.PathCounter + "/c", true}},
			want: map[string]string{"counter.example.com/c": "2", "policy.example.com/ifneeded": "2"}},
		{name: "ifneeded-policy-alone", policies: []string{"count-ifneeded"},
			want: map[string]string{"policy.example.com/ifneeded": "2"}},
		{name: "partial", policies: []string{"count-ifneeded", "count-never"},
			hooks: []chainHook{{"a", "labels", webhookserver.PathLabels, true}, {"a", "noop", webhookserver.PathNoop, true}, {"a", "n", webhookserver.PathCounter + "/n", false}},
			want:  map[string]string{"policy.example.com/never": "1", "counter.example.com/n": "1", "label/stamped-by": "webhook"}},
		{name: "several-configurations", policies: []string{"tier", "count-ifneeded"},
			hooks: []chainHook{{"b", "labels", webhookserver.PathLabels, true}, {"b", "n", webhookserver.PathCounter + "/n", false},
				{"a", "sidecar", webhookserver.PathSidecar, true}, {"a", "reads", webhookserver.PathReadsPolicy, true}},
			want: map[string]string{"label/tier": "gold", "counter.example.com/n": "1"}},
		{name: "limitrange-reaches-sidecars", policies: []string{"log-shipper"}, hooks: []chainHook{{"mesh", "sidecar", webhookserver.PathSidecar, false}}, limitRange: true,
			want: map[string]string{"cpu/log-shipper": "100m", "cpu/sidecar": "100m"}},
		// count-never proves the policies are in effect (the dry runs
		// wait for its annotation) when after-stamp's absence is compared.
		{name: "policy-not-invoked-first-is-not-reinvoked", policies: []string{"after-stamp", "count-never"}, hooks: []chainHook{{"stamp", "labels", webhookserver.PathLabels, false}},
			want: map[string]string{"label/stamped-by": "webhook", "policy.example.com/after-stamp": "", "policy.example.com/never": "1"}},
		{name: "reinvoked-after-the-object-changed-since", policies: []string{"wants-sidecar"}, hooks: []chainHook{{"mesh", "sidecar", webhookserver.PathSidecar, false}},
			want: map[string]string{"policy.example.com/saw-sidecar": "yes"}},
		{name: "webhook-denial", policies: []string{"log-shipper"}, hooks: []chainHook{{"deny", "deny", webhookserver.PathDeny, false}},
			want: map[string]string{"error": `admission webhook "deny.CHAIN.example.com" denied the request: pods may not run as root`}},
		// The validating stage: a validating webhook reads the label a
		// policy set (admitted, with the webhook's warning), or refuses
		// the Pod without it.
		{name: "validating-webhook-reads-policy", policies: []string{"team-label"}, validating: []chainHook{{"require", "team", webhookserver.PathRequireLabel + "/team", false}},
			want: map[string]string{"label/team": "payments"}},
		{name: "validating-webhook-refuses", policies: []string{"log-shipper"}, validating: []chainHook{{"require", "team", webhookserver.PathRequireLabel + "/team", false}}},
	}
}

// TestChain runs chains of policies and webhooks (test/webhookserver)
// through a real kube-apiserver with its default admission plugins and
// the native MAP plugin (DefaultAdmission), and requires the stored
// object, or the refusal, that mutatis' chain computes offline from the
// same objects (cluster.DecodeSteps and Admit, what `mutatis apply
// --webhooks … --policies …` runs): the built-in plugins, the policies,
// the webhooks and the reinvocation round across them. Each chain has its
// own namespace (with its default ServiceAccount, as
// kube-controller-manager would create it) and its policies and webhooks
// select its Pods only; the token volume's random suffix is read as
// mutatis' fixed one.
func TestChain(t *testing.T) {
	c := StartCluster(t, DefaultAdmission)
	srv, err := webhookserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	for _, cc := range chainCases() {
		t.Run(cc.name, func(t *testing.T) {
			set, configs, validating, pod := chainObjects(t, cc, srv)
			want := chainMutatis(t, ctx, set, configs, validating, pod)
			for _, o := range chainAPIObjects(t, set) {
				if _, err := c.Create(ctx, o, false); err != nil {
					t.Fatalf("creating %s: %v", kindKey(o), err)
				}
			}
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: cc.name}}
			if _, err := c.Client.CoreV1().ServiceAccounts(cc.name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			for _, cfg := range configs {
				obj := asObject(t, cfg, "MutatingWebhookConfiguration")
				if _, err := c.Create(ctx, obj, false); err != nil {
					t.Fatalf("creating %s: %v", cfg.Name, err)
				}
				defer func() { _ = c.Delete(context.Background(), obj) }()
			}
			for _, cfg := range validating {
				obj := asObject(t, cfg, "ValidatingWebhookConfiguration")
				if _, err := c.Create(ctx, obj, false); err != nil {
					t.Fatalf("creating %s: %v", cfg.Name, err)
				}
				defer func() { _ = c.Delete(context.Background(), obj) }()
			}
			// The plugins see policies, webhooks and the namespace's objects
			// through informers: dry-run until the answer is mutatis' (or
			// 60 s pass), then create.
			deadline := time.Now().Add(60 * time.Second)
			err := poll(ctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
				u, err := c.Create(ctx, pod, true)
				return time.Now().After(deadline) || diff("mutatis", want, "kube-apiserver", builtinOutcome(t, u, err)) == "", nil
			})
			if err != nil {
				t.Fatal(err)
			}
			u, err := c.Create(ctx, pod, false)
			got := builtinOutcome(t, u, err)
			if d := diff("mutatis", want, "kube-apiserver", got); d != "" {
				t.Errorf("the stored object differs:\n%s\nkube-apiserver's:\n%s", d, got.yaml())
			}
			checkChainFacts(t, cc, got)
		})
	}
}

// chainAPIObjects are the objects of set to create: the other objects
// (namespace first), then the policies and bindings.
func chainAPIObjects(t *testing.T, set *manifest.Set) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, o := range set.Objects {
		out = append(out, o.Object)
	}
	for _, p := range set.Policies {
		out = append(out, asObject(t, p.Policy, "MutatingAdmissionPolicy"))
	}
	for _, b := range set.Bindings {
		out = append(out, asObject(t, b.Binding, "MutatingAdmissionPolicyBinding"))
	}
	return out
}

// asObject is obj, of admissionregistration.k8s.io/v1 kind, unstructured.
func asObject(t *testing.T, obj runtime.Object, kind string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("admissionregistration.k8s.io/v1")
	u.SetKind(kind)
	return u
}

// chainObjects are the objects of a chain: its namespace (and
// LimitRange), policies and bindings as a manifest set, its webhook
// configurations, and the Pod.
func chainObjects(t *testing.T, cc chainCase, srv *webhookserver.Server) (*manifest.Set, []*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, *unstructured.Unstructured) {
	t.Helper()
	docs := []string{"apiVersion: v1\nkind: Namespace\nmetadata: {name: " + cc.name + "}"}
	if cc.limitRange {
		docs = append(docs, "apiVersion: v1\nkind: LimitRange\nmetadata: {name: defaults, namespace: "+cc.name+"}\nspec:\n  limits:\n  - type: Container\n    defaultRequest: {cpu: 100m}")
	}
	for _, p := range cc.policies {
		docs = append(docs, strings.ReplaceAll(chainPolicyTemplates[p], "CHAIN", cc.name),
			"apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicyBinding\nmetadata: {name: "+cc.name+"-"+p+"}\nspec: {policyName: "+cc.name+"-"+p+"}")
	}
	set, err := manifest.Parse(cc.name+".yaml", []byte(strings.Join(docs, "\n---\n")))
	if err != nil {
		t.Fatal(err)
	}
	byConfig := map[string]*admissionregistrationv1.MutatingWebhookConfiguration{}
	var configs []*admissionregistrationv1.MutatingWebhookConfiguration
	for _, h := range cc.hooks {
		name := cc.name + "-" + h.config
		cfg := byConfig[name]
		if cfg == nil {
			cfg = &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
			byConfig[name] = cfg
			configs = append(configs, cfg)
		}
		cfg.Webhooks = append(cfg.Webhooks, srv.Webhook(h.name+"."+cc.name+".example.com", h.path, func(w *admissionregistrationv1.MutatingWebhook) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"chain": cc.name}}
			w.Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
			if h.ifNeeded {
				w.ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
			}
		}))
	}
	var validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, h := range cc.validating {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: cc.name + "-" + h.config}}
		cfg.Webhooks = append(cfg.Webhooks, srv.ValidatingWebhook(h.name+"."+cc.name+".example.com", h.path, func(w *admissionregistrationv1.MutatingWebhook) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"chain": cc.name}}
			w.Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
		}))
		validating = append(validating, cfg)
	}
	pod := mustObject(fmt.Sprintf(`{apiVersion: v1, kind: Pod, metadata: {name: web, namespace: %s, labels: {chain: %s}},
  spec: {containers: [{name: app, image: "nginx:1.27"}]}}`, cc.name, cc.name))
	return set, configs, validating, pod
}

// chainMutatis is mutatis' outcome of a chain, as `mutatis apply
// --webhooks … --policies …` computes it.
func chainMutatis(t *testing.T, ctx context.Context, set *manifest.Set, configs []*admissionregistrationv1.MutatingWebhookConfiguration, validating []*admissionregistrationv1.ValidatingWebhookConfiguration, pod *unstructured.Unstructured) outcome {
	t.Helper()
	sim, err := cluster.New(set.Objects, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	policies, bindings := set.APIObjects()
	ev, err := sim.Evaluator(nil, policies, bindings)
	if err != nil {
		t.Fatal(err)
	}
	ch := cluster.Chain{Policies: ev}
	if len(configs) > 0 {
		if ch.Webhooks, err = sim.Webhooks(configs, nil, webhookclient.Options{}); err != nil {
			t.Fatal(err)
		}
		defer ch.Webhooks.Close(nil)
	}
	if len(validating) > 0 {
		vd, err := sim.ValidatingWebhooks(validating, nil, webhookclient.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer vd.Close(nil)
		ch.ValidatingWebhooks = vd
	}
	d, err := sim.DecodeSteps(cluster.Request{Object: pod.DeepCopy(), User: adminInfo()})
	if err != nil {
		t.Fatal(err)
	}
	adm, err := sim.Admit(ctx, ch, d)
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := adm.Refusal(); status != nil {
		return outcomeOfStatus(status)
	}
	return withoutTimes(outcome{Object: normalize(adm.Stored)})
}

// checkChainFacts checks the facts a chain case wants of the stored
// object: "mounts/C" (container C's volume mounts), "cpu/C" (its cpu
// request), "label/K", "error" (the refusal), or an annotation.
func checkChainFacts(t *testing.T, cc chainCase, o outcome) {
	t.Helper()
	for k, want := range cc.want {
		want = strings.ReplaceAll(want, "CHAIN", cc.name)
		var got string
		switch kind, arg, _ := strings.Cut(k, "/"); {
		case k == "error":
			if o.Error != nil {
				got = o.Error.Message
			}
		case kind == "label":
			got, _, _ = unstructured.NestedString(o.Object, "metadata", "labels", arg)
		case kind == "mounts" || kind == "cpu":
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "containers")
			for _, x := range cs {
				ctr := x.(map[string]any)
				if ctr["name"] != arg {
					continue
				}
				if kind == "cpu" {
					got, _, _ = unstructured.NestedString(ctr, "resources", "requests", "cpu")
					continue
				}
				vms, _, _ := unstructured.NestedSlice(ctr, "volumeMounts")
				var names []string
				for _, vm := range vms {
					names = append(names, vm.(map[string]any)["name"].(string))
				}
				got = strings.Join(names, ",")
			}
		default:
			got, _, _ = unstructured.NestedString(o.Object, "metadata", "annotations", k)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}
