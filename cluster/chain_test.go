package cluster

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/test/webhookserver"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

const chainPolicies = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: log-shipper}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
    objectSelector: {matchLabels: {inject-logging: "true"}}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{spec: Object.spec{containers: [Object.spec.containers{name: "log-shipper", image: "registry.example.com/log-shipper:1.4.2"}]}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: log-shipper}
spec: {policyName: log-shipper}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: tier}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
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
kind: MutatingAdmissionPolicyBinding
metadata: {name: tier}
spec: {policyName: tier}
`

const chainResources = `
apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: shop}
spec:
  limits:
  - type: Container
    defaultRequest: {cpu: 100m}
`

// chainCase is one request through the chain: a pod's labels, the
// webhooks (paths on the test server, IfNeeded when marked with a
// trailing "+"), and what must come out.
type chainCase struct {
	name     string
	labels   map[string]string
	webhooks []string
	// containers: each container's name → its mounts' names, of the
	// stored object.
	mounts map[string][]string
	// requests: each container's name → its cpu request.
	requests   map[string]string
	reinvoked  bool
	calls      map[string]int
	annotation [2]string
	deniedBy   string
	denied     string
}

func TestAdmitChain(t *testing.T) {
	srv, err := webhookserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	token := "kube-api-access-xxxxx"
	cases := []chainCase{
		{name: "no plugin changes the object: one round", labels: map[string]string{"app": "web"},
			mounts: map[string][]string{"app": {token}}, requests: map[string]string{"app": "100m"}},
		{name: "a policy's container gets the token mount and the LimitRange default in the second round",
			labels: map[string]string{"inject-logging": "true"}, reinvoked: true,
			mounts:   map[string][]string{"app": {token}, "log-shipper": {token}},
			requests: map[string]string{"app": "100m", "log-shipper": "100m"}},
		{name: "a webhook's container gets them too", webhooks: []string{webhookserver.PathSidecar}, reinvoked: true,
			mounts:   map[string][]string{"app": {token}, "sidecar": {"istio-envoy", token}},
			requests: map[string]string{"app": "100m", "sidecar": "100m"}, calls: map[string]int{webhookserver.PathSidecar: 1}},
		{name: "an IfNeeded policy runs again after a webhook's change, seeing its container",
			labels: map[string]string{"tiered": "true"}, webhooks: []string{webhookserver.PathSidecar}, reinvoked: true,
			annotation: [2]string{"policy.example.com/containers", "2"}, calls: map[string]int{webhookserver.PathSidecar: 1}},
		{name: "a webhook reads what a policy wrote", labels: map[string]string{"tiered": "true"},
			webhooks: []string{webhookserver.PathReadsPolicy}, reinvoked: true, calls: map[string]int{webhookserver.PathReadsPolicy: 1},
			annotation: [2]string{"policy.example.com/tier", "gold"}},
		{name: "an IfNeeded webhook is reinvoked after the plugins change a policy's container",
			labels: map[string]string{"inject-logging": "true"}, webhooks: []string{webhookserver.PathNoop + "+"}, reinvoked: true,
			calls: map[string]int{webhookserver.PathNoop: 2}},
		{name: "a Never webhook is not", labels: map[string]string{"inject-logging": "true"}, webhooks: []string{webhookserver.PathNoop},
			reinvoked: true, calls: map[string]int{webhookserver.PathNoop: 1}},
		{name: "a webhook's denial is the chain's", webhooks: []string{webhookserver.PathDeny}, deniedBy: WebhookPlugin,
			denied: `admission webhook "w0.example.com" denied the request: pods may not run as root`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			cl, policies, bindings := chainCluster(t)
			ev, err := cl.Evaluator(nil, policies, bindings)
			if err != nil {
				t.Fatal(err)
			}
			ch := Chain{Policies: ev}
			if len(c.webhooks) > 0 {
				cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
				cfg.Name = "hooks"
				for i, p := range c.webhooks {
					ifNeeded := strings.HasSuffix(p, "+")
					cfg.Webhooks = append(cfg.Webhooks, srv.Webhook("w"+string(rune('0'+i))+".example.com", strings.TrimSuffix(p, "+"), func(w *admissionregistrationv1.MutatingWebhook) {
						if ifNeeded {
							w.ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
						}
					}))
				}
				if ch.Webhooks, err = cl.Webhooks([]*admissionregistrationv1.MutatingWebhookConfiguration{cfg}, nil, webhookclient.Options{}); err != nil {
					t.Fatal(err)
				}
			}
			pod := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": "web", "namespace": "shop"},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}},
			}}
			if c.labels != nil {
				pod.SetLabels(c.labels)
			}
			d, err := cl.DecodeSteps(Request{Object: pod})
			if err != nil {
				t.Fatal(err)
			}
			srv.ResetCalls()
			adm, err := cl.Admit(ctx, ch, d)
			if err != nil {
				t.Fatal(err)
			}
			if c.denied != "" {
				if adm.Result.Denied == nil || adm.Result.Denied.ErrStatus.Message != c.denied || adm.Result.DeniedBy != c.deniedBy {
					t.Fatalf("denied = %v by %q, want %q by %q", adm.Result.Denied, adm.Result.DeniedBy, c.denied, c.deniedBy)
				}
				return
			}
			if adm.Result.Denied != nil || adm.Invalid != nil {
				t.Fatalf("refused: %v %v", adm.Result.Denied, adm.Invalid)
			}
			if adm.Result.Reinvoked != c.reinvoked {
				t.Errorf("reinvoked = %v, want %v", adm.Result.Reinvoked, c.reinvoked)
			}
			for _, p := range webhookserver.Paths {
				if got := srv.Calls(p); got != c.calls[p] {
					t.Errorf("calls to %s = %d, want %d", p, got, c.calls[p])
				}
			}
			containers, _, _ := unstructured.NestedSlice(adm.Object, "spec", "containers")
			seen := map[string]bool{}
			for _, x := range containers {
				ctr := x.(map[string]any)
				name := ctr["name"].(string)
				seen[name] = true
				if want, ok := c.mounts[name]; ok {
					var got []string
					mounts, _, _ := unstructured.NestedSlice(ctr, "volumeMounts")
					for _, m := range mounts {
						got = append(got, m.(map[string]any)["name"].(string))
					}
					if strings.Join(got, ",") != strings.Join(want, ",") {
						t.Errorf("container %s mounts %v, want %v", name, got, want)
					}
				}
				if want, ok := c.requests[name]; ok {
					got, _, _ := unstructured.NestedString(ctr, "resources", "requests", "cpu")
					if got != want {
						t.Errorf("container %s requests cpu %q, want %q", name, got, want)
					}
				}
			}
			for name := range c.mounts {
				if !seen[name] {
					t.Errorf("no container %s in %v", name, containers)
				}
			}
			if k := c.annotation[0]; k != "" {
				if got, _, _ := unstructured.NestedString(adm.Object, "metadata", "annotations", k); got != c.annotation[1] {
					t.Errorf("annotation %s = %q, want %q", k, got, c.annotation[1])
				}
			}
		})
	}
}

// chainCluster is the cluster of chainPolicies and chainResources, and
// chainPolicies' policies and bindings.
func chainCluster(t *testing.T) (*Cluster, []*admissionregistrationv1.MutatingAdmissionPolicy, []*admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	t.Helper()
	cl, err := New(append(load(t, chainPolicies), load(t, chainResources)...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := manifest.Load(context.Background(), []string{"-"}, strings.NewReader(chainPolicies))
	if err != nil {
		t.Fatal(err)
	}
	policies, bindings := set.APIObjects()
	return cl, policies, bindings
}
