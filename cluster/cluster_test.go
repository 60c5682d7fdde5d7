package cluster

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/mutatis-dev/mutatis/manifest"
)

func load(t *testing.T, yamlText string) []manifest.Object {
	t.Helper()
	set, err := manifest.Load(context.Background(), []string{"-"}, strings.NewReader(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	return set.Objects
}

const world = `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {env: prod}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.storage.k8s.io, annotations: {api-approved.kubernetes.io: "unapproved, test"}}
spec:
  group: storage.k8s.io
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, listKind: GizmoList}
  versions:
  - name: v1alpha9
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cm-reader}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-reads}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cm-reader}
subjects: [{kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}]
`

func TestCluster(t *testing.T) {
	ctx := context.Background()
	var synthesized []string
	c, err := New(load(t, world), Options{OnSynthesize: func(name string) { synthesized = append(synthesized, name) }})
	if err != nil {
		t.Fatal(err)
	}

	shop, _ := c.Namespace(ctx, "shop")
	if shop.Labels["env"] != "prod" || shop.Labels["kubernetes.io/metadata.name"] != "shop" {
		t.Errorf("supplied namespace labels = %v", shop.Labels)
	}
	dev, _ := c.Namespace(ctx, "dev")
	if len(dev.Labels) != 1 || dev.Labels["kubernetes.io/metadata.name"] != "dev" {
		t.Errorf("synthesized namespace labels = %v", dev.Labels)
	}
	c.Namespace(ctx, "dev")
	if strings.Join(synthesized, ",") != "dev" {
		t.Errorf("synthesized = %v, want [dev] once", synthesized)
	}
	if got := strings.Join(c.Namespaces(), ","); got != "dev,shop" {
		t.Errorf("Namespaces() = %s", got)
	}
	// Namespaces are objects too (a paramKind may name them), with the
	// label kube-apiserver sets.
	p, err := c.Params.Get(ctx, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", "shop")
	if err != nil || p.GetLabels()["kubernetes.io/metadata.name"] != "shop" {
		t.Errorf("namespace as param: %v %v", p, err)
	}

	for _, tc := range []struct {
		name      string
		user      string
		wantAllow bool
	}{{"bound user", "alice", true}, {"other user", "bob", false}} {
		d, _, err := c.Authorizer.Authorize(ctx, authorizer.AttributesRecord{User: &user.DefaultInfo{Name: tc.user}, Verb: "get", Resource: "configmaps", Namespace: "shop", ResourceRequest: true})
		if err != nil {
			t.Fatal(err)
		}
		if (d == authorizer.DecisionAllow) != tc.wantAllow {
			t.Errorf("%s: decision %v", tc.name, d)
		}
	}
}

func TestAttributes(t *testing.T) {
	c, err := New(load(t, world), Options{})
	if err != nil {
		t.Fatal(err)
	}
	obj := func(apiVersion, kind, ns string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName("x")
		u.SetNamespace(ns)
		return u
	}
	for _, tc := range []struct {
		name                      string
		req                       Request
		wantOp                    admission.Operation
		wantResource, wantNS, err string
	}{
		{name: "pod without namespace goes to default", req: Request{Object: obj("v1", "Pod", "")}, wantOp: admission.Create, wantResource: "/v1, Resource=pods", wantNS: "default"},
		{name: "namespace flag fills in", req: Request{Object: obj("v1", "Pod", ""), Namespace: "b"}, wantOp: admission.Create, wantResource: "/v1, Resource=pods", wantNS: "b"},
		{name: "namespace flag must agree with the object", req: Request{Object: obj("v1", "Pod", "a"), Namespace: "b"}, err: `the namespace from the provided object "a" does not match the namespace "b"`},
		{name: "old object makes an UPDATE", req: Request{Object: obj("apps/v1", "Deployment", "shop"), OldObject: obj("apps/v1", "Deployment", "shop")}, wantOp: admission.Update, wantResource: "apps/v1, Resource=deployments", wantNS: "shop"},
		{name: "cluster-scoped CR has no namespace", req: Request{Object: obj("example.com/v1", "Widget", ""), Operation: "create"}, wantOp: admission.Create, wantResource: "example.com/v1, Resource=widgets"},
		{name: "CR in a group served built in: 404", req: Request{Object: obj("storage.k8s.io/v1alpha9", "Gizmo", "shop")}, err: "the server could not find the requested resource"},
		{name: "its subresource: 404", req: Request{Object: obj("storage.k8s.io/v1alpha9", "Gizmo", "shop"), Subresource: "status"}, err: "the server could not find the requested resource"},
		{name: "unknown kind", req: Request{Object: obj("example.com/v1", "Gadget", "")}, err: "kind example.com/v1, Kind=Gadget is not served by Kubernetes 1.37 nor by a supplied CRD"},
		{name: "bad operation", req: Request{Object: obj("v1", "Pod", ""), Operation: "PATCH"}, err: `operation must be CREATE, UPDATE, DELETE or CONNECT, not "PATCH"`},
		{name: "no object", req: Request{}, err: "the request has no object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := c.Attributes(tc.req)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Operation != tc.wantOp || a.Resource.String() != tc.wantResource || a.Namespace != tc.wantNS {
				t.Errorf("got %s %s ns=%q", a.Operation, a.Resource, a.Namespace)
			}
			if a.Object.GetNamespace() != tc.wantNS {
				t.Errorf("object namespace %q", a.Object.GetNamespace())
			}
			if a.UserInfo.GetName() != "admin" {
				t.Errorf("default user %q", a.UserInfo.GetName())
			}
		})
	}
}

func TestAttributesOfSubresources(t *testing.T) {
	c, err := New(load(t, world), Options{})
	if err != nil {
		t.Fatal(err)
	}
	obj := func(apiVersion, kind string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": "web", "namespace": "shop"}}}
	}
	for _, tc := range []struct {
		apiVersion, kind, sub string
		resource              schema.GroupVersionResource
		subresource, err      string
	}{
		{"autoscaling/v1", "Scale", "deployments/scale", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "scale", ""},
		{"autoscaling/v1", "Scale", "statefulsets.apps/scale", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, "scale", ""},
		{"autoscaling/v1", "Scale", "replicationcontrollers/scale", schema.GroupVersionResource{Version: "v1", Resource: "replicationcontrollers"}, "scale", ""},
		{"autoscaling/v1", "Scale", "scale", schema.GroupVersionResource{}, "",
			`subresource "scale" of kind autoscaling/v1, Kind=Scale is served by several resources (replicationcontrollers/scale, deployments.apps/scale, replicasets.apps/scale, statefulsets.apps/scale): name one as RESOURCE/scale`},
		{"autoscaling/v1", "Scale", "pods/scale", schema.GroupVersionResource{}, "", `no resource of Kubernetes 1.37 nor of a supplied CRD serves subresource "scale" with kind autoscaling/v1, Kind=Scale`},
		{"policy/v1", "Eviction", "eviction", schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "eviction", ""},
		{"v1", "Binding", "binding", schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "binding", ""},
		{"v1", "Binding", "", schema.GroupVersionResource{Version: "v1", Resource: "bindings"}, "", ""},
		{"v1", "Pod", "ephemeralcontainers", schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "ephemeralcontainers", ""},
		{"v1", "Pod", "resize", schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "resize", ""},
		{"v1", "Pod", "status", schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "status", ""},
		{"apps/v1", "Deployment", "status", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "status", ""},
		{"autoscaling/v2", "HorizontalPodAutoscaler", "status", schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}, "status", ""},
	} {
		t.Run(tc.kind+"_"+tc.sub, func(t *testing.T) {
			a, err := c.Attributes(Request{Object: obj(tc.apiVersion, tc.kind), Operation: admission.Update, OldObject: obj(tc.apiVersion, tc.kind), Subresource: tc.sub})
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Resource != tc.resource || a.Subresource != tc.subresource || a.Kind.Kind != tc.kind || a.Name != "web" || a.Namespace != "shop" {
				t.Fatalf("got %v %q %v %s/%s", a.Resource, a.Subresource, a.Kind, a.Namespace, a.Name)
			}
		})
	}
}

// TestDecodeAdmissionPlugins: Decode presents a Pod as the MAP plugin
// receives it, after kube-apiserver's Priority plugin (resolving the
// cluster's PriorityClasses) and DefaultTolerationSeconds.
func TestDecodeAdmissionPlugins(t *testing.T) {
	objects := load(t, `
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch}
value: 50
`)
	c, err := New(objects, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "shop"},
		"spec": map[string]any{"priorityClassName": "batch", "containers": []any{map[string]any{"name": "c", "image": "i"}}},
	}}
	a, _, err := c.Decode(Request{Object: pod.DeepCopy()})
	if err != nil {
		t.Fatal(err)
	}
	spec := a.Object.Object["spec"].(map[string]any)
	if spec["priority"] != int64(50) || spec["preemptionPolicy"] != "PreemptLowerPriority" {
		t.Errorf("priority %v, preemptionPolicy %v; want 50 from the PriorityClass, PreemptLowerPriority", spec["priority"], spec["preemptionPolicy"])
	}
	if tol, _ := spec["tolerations"].([]any); len(tol) != 2 {
		t.Errorf("tolerations %v, want DefaultTolerationSeconds' two", spec["tolerations"])
	}
	// NoDefaults: the object as written.
	if c, err = New(objects, Options{NoDefaults: true}); err != nil {
		t.Fatal(err)
	}
	a, _, err = c.Decode(Request{Object: pod.DeepCopy()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Object.Object["spec"].(map[string]any)["priority"]; ok {
		t.Errorf("NoDefaults: the plugins ran")
	}
}

// TestDecodeAdmissionPluginsReadTheObjects: the objects of the cluster
// (a ServiceAccount, a terminating Namespace) are what the plugins read;
// DecodeSteps reports the plugins that changed the object, and the steps
// until a refusal; SkipAdmissionPlugins runs none.
func TestDecodeAdmissionPluginsReadTheObjects(t *testing.T) {
	c, err := New(load(t, `
apiVersion: v1
kind: ServiceAccount
metadata: {name: builder, namespace: shop}
automountServiceAccountToken: false
imagePullSecrets: [{name: registry}]
---
apiVersion: v1
kind: Namespace
metadata: {name: leaving}
status: {phase: Terminating}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(ns, sa string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": ns},
			"spec": map[string]any{"serviceAccountName": sa, "containers": []any{map[string]any{"name": "c", "image": "i"}}},
		}}
	}
	d, err := c.DecodeSteps(Request{Object: pod("shop", "builder"), PluginChanges: true})
	if err != nil {
		t.Fatal(err)
	}
	cheap, err := c.DecodeSteps(Request{Object: pod("shop", "builder")})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cheap.Attributes.Object.Object, d.Attributes.Object.Object) || len(cheap.Plugins) != len(d.Plugins) {
		t.Errorf("without PluginChanges: %v, steps %+v; want the same object and plugins", cheap.Attributes.Object.Object, cheap.Plugins)
	}
	for _, st := range cheap.Plugins {
		if st.Changed {
			t.Errorf("without PluginChanges: step %+v reports a change", st)
		}
	}
	spec := d.Attributes.Object.Object["spec"].(map[string]any)
	if ips, _ := spec["imagePullSecrets"].([]any); len(ips) != 1 || spec["volumes"] != nil {
		t.Errorf("imagePullSecrets %v, volumes %v: want the ServiceAccount's secret and no token", spec["imagePullSecrets"], spec["volumes"])
	}
	var changed []string
	for _, st := range d.Plugins {
		if st.Changed {
			changed = append(changed, st.Plugin)
		}
	}
	if strings.Join(changed, ",") != "ServiceAccount,Priority,DefaultTolerationSeconds" {
		t.Errorf("changed by %v", changed)
	}

	d, err = c.DecodeSteps(Request{Object: pod("leaving", "")})
	const refusal = `pods "p" is forbidden: unable to create new content in namespace leaving because it is being terminated`
	if err == nil || err.Error() != refusal || d == nil || len(d.Plugins) != 1 || d.Plugins[0].Plugin != "NamespaceLifecycle" {
		t.Errorf("a pod in a terminating namespace: %v, %+v; want NamespaceLifecycle's %q", err, d, refusal)
	}

	a, _, err := c.Decode(Request{Object: pod("leaving", ""), SkipAdmissionPlugins: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Object.Object["spec"].(map[string]any)["priority"]; ok {
		t.Errorf("SkipAdmissionPlugins: the plugins ran")
	}
}

// TestNamespaceRequestNamespace: kube-apiserver's requests on a Namespace
// are in the namespace itself, CREATE included (handlers.createHandler
// sets the request namespace to the name); other cluster-scoped kinds
// have none.
func TestNamespaceRequestNamespace(t *testing.T) {
	c, err := New(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		obj  map[string]any
		want string
	}{
		{map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team"}}, "team"},
		{map[string]any{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": map[string]any{"name": "high"}, "value": int64(1)}, ""},
	} {
		a, err := c.Attributes(Request{Object: &unstructured.Unstructured{Object: tc.obj}})
		if err != nil {
			t.Fatal(err)
		}
		if a.Namespace != tc.want || a.Name != tc.obj["metadata"].(map[string]any)["name"] {
			t.Errorf("%s: namespace %q, name %q; want %q", tc.obj["kind"], a.Namespace, a.Name, tc.want)
		}
	}
}
