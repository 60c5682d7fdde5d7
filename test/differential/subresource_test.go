package differential

// Requests on subresources whose kind is not the resource's
// (deployments/scale: autoscaling/v1 Scale, pods/eviction: policy/v1
// Eviction, pods/binding: v1 Binding) through upstream's dispatcher with
// the type converters kube-apiserver's MutatingAdmissionPolicy plugin has:
// patch.NewTypeConverterManager without a static converter, over the
// OpenAPI v3 documents of kube-apiserver 1.37 (one per group/version, as
// /openapi/v3 serves them).

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	upstreammatching "k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/openapi"
)

// kubeOpenAPI serves kube-apiserver 1.37's OpenAPI v3 documents
// (api/openapi-spec/v3 of k8s.io/kubernetes) as an openapi.Client.
type kubeOpenAPI struct{ dir string }

type kubeOpenAPIDoc struct{ path, file string }

func (d kubeOpenAPIDoc) Schema(string) ([]byte, error) { return os.ReadFile(d.file) }
func (d kubeOpenAPIDoc) ServerRelativeURL() string     { return "/openapi/v3/" + d.path + "?hash=static" }

func (c kubeOpenAPI) Paths() (map[string]openapi.GroupVersion, error) {
	files, err := filepath.Glob(filepath.Join(c.dir, "*__*_openapi.json"))
	if err != nil {
		return nil, err
	}
	out := map[string]openapi.GroupVersion{}
	for _, f := range files {
		// api__v1_openapi.json → api/v1; apis__apps__v1_openapi.json → apis/apps/v1
		path := strings.ReplaceAll(strings.TrimSuffix(filepath.Base(f), "_openapi.json"), "__", "/")
		out[path] = kubeOpenAPIDoc{path: path, file: f}
	}
	return out, nil
}

// kubeAPIServerDispatcher is upstream's dispatcher with kube-apiserver's
// type converter manager.
func (w *dispatchWorld) kubeAPIServerDispatcher(t *testing.T) generic.Dispatcher[mutating.PolicyHook] {
	t.Helper()
	return mutating.NewDispatcher(w.authz, upstreammatching.NewMatcher(w.informerFactory.Core().V1().Namespaces().Lister(), fake.NewClientset()), kubeTypeConverters(t))
}

// kubeTypeConverters is kube-apiserver's type converter manager: no static
// converter, the OpenAPI documents of every group/version it serves.
func kubeTypeConverters(t testing.TB) patch.TypeConverterManager {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("locating k8s.io/kubernetes: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "api", "openapi-spec", "v3")
	tcm := patch.NewTypeConverterManager(nil, kubeOpenAPI{dir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go tcm.Run(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for tcm.GetTypeConverter(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}) == nil {
		if time.Now().After(deadline) {
			t.Fatal("type converter manager did not load the OpenAPI paths")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return tcm
}

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	scaleGVK       = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
)

func scale(replicas int32) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", ResourceVersion: "7"},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas}, Status: autoscalingv1.ScaleStatus{Replicas: 2, Selector: "app=web"}}
}

func subresourceCases() []equivalentCase {
	scaleUpdate := dispatchRequest{op: admission.Update, obj: scale(3), old: scale(2), gvk: scaleGVK, gvr: deploymentsGVR, subresource: "scale", namespace: "shop", name: "web"}
	eviction := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}}
	evictionCreate := dispatchRequest{op: admission.Create, obj: eviction, gvk: schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, gvr: podGVR, subresource: "eviction", namespace: "shop", name: "web"}
	binding := &corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}
	bindingCreate := dispatchRequest{op: admission.Create, obj: binding, gvk: schema.GroupVersionKind{Version: "v1", Kind: "Binding"}, gvr: podGVR, subresource: "binding", namespace: "shop", name: "web"}
	subRule := func(resources ...string) policyOpt {
		return withRules(rule([]string{"CREATE", "UPDATE"}, []string{"*"}, []string{"*"}, resources))
	}
	requestIsScale := withConditions(`request.subResource == "scale" && request.kind.group == "autoscaling" && request.kind.kind == "Scale" && request.resource.group == "apps" && request.resource.resource == "deployments" && request.requestSubResource == "scale"`,
		`object.apiVersion == "autoscaling/v1" && object.spec.replicas == 3 && oldObject.spec.replicas == 2`)
	return []equivalentCase{
		{name: "deployments/scale UPDATE, ApplyConfiguration: no type for Scale",
			policies: policies(newPolicy("p", subRule("deployments/scale"), requestIsScale,
				withMutations(acMutation(`Object{spec: Object.spec{replicas: 5}}`)))),
			request: scaleUpdate, want: "error applying patch: failed to convert patch object to typed object: no corresponding type for autoscaling/v1, Kind=Scale"},
		{name: "deployments/scale UPDATE, JSONPatch",
			policies: policies(newPolicy("p", subRule("*/scale"), requestIsScale,
				withMutations(jpMutation(`[JSONPatch{op: "replace", path: "/spec/replicas", value: 5}]`)))),
			request: scaleUpdate, want: "replicas: 5"},
		{name: "deployments/scale UPDATE: a rule on deployments does not match",
			policies: policies(newPolicy("p", subRule("deployments"))),
			request:  scaleUpdate, want: "replicas: 3"},
		{name: "pods/eviction CREATE, ApplyConfiguration: no type for Eviction",
			policies: policies(newPolicy("p", subRule("pods/eviction"))),
			request:  evictionCreate, want: "no corresponding type for policy/v1, Kind=Eviction"},
		{name: "pods/eviction CREATE, JSONPatch",
			policies: policies(newPolicy("p", subRule("pods/*"),
				withMutations(jpMutation(`[JSONPatch{op: "add", path: "/metadata/labels", value: {"evicted-by": request.userInfo.username}}]`)))),
			request: evictionCreate, want: "evicted-by: alice"},
		{name: "pods/binding CREATE, JSONPatch",
			policies: policies(newPolicy("p", subRule("pods/binding"),
				withMutations(jpMutation(`[JSONPatch{op: "replace", path: "/target/name", value: "node-2"}]`)))),
			request: bindingCreate, want: "name: node-2"},
		// Not here: an ApplyConfiguration on pods/binding, which kube-apiserver
		// merges with the v1 Binding schema of its core/v1 OpenAPI document;
		// client-go's embedded schema has no Binding (docs/fidelity.md).
	}
}

func TestSubresourcesMatchUpstream(t *testing.T) {
	w := newDispatchWorld(t)
	w.runCasesInternal(t, w.kubeAPIServerDispatcher(t), subresourceCases())
}
