package differential

import (
	"context"
	"os"
	"strings"
	"testing"

	kubescheme "github.com/mutatis-dev/mutatis/scheme"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/internal/testobjects"
	mut "github.com/mutatis-dev/mutatis/mutation"
)

var (
	deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	podGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	configMapGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgetGVK     = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgetGVR     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	gadgetGVK     = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
)

func deployment(mut ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := testobjects.BenchDeployment()
	for _, f := range mut {
		if f != nil {
			f(d)
		}
	}
	return d
}

func pod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop", Finalizers: []string{"example.com/keep"}, Annotations: map[string]string{"a": "1"}},
		Spec: corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "app", Image: "nginx"}},
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
		},
	}
}

func configMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "shop"},
		Data:       map[string]string{"k": "v"},
	}
}

func widget(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "shop"},
		"spec":     spec,
	}}
}

func widgetSpec() map[string]any {
	return map[string]any{
		"size":  int64(3),
		"color": "red",
		"port":  "http",
		"tags":  []any{"a", "b"},
		"ports": []any{
			map[string]any{"name": "http", "protocol": "TCP", "number": int64(80)},
			map[string]any{"name": "dns", "protocol": "UDP", "number": int64(53)},
		},
		"steps":    []any{"build", "test"},
		"plain":    []any{"x"},
		"selector": map[string]any{"app": "w"},
		"settings": map[string]any{"a": "1"},
		"nested":   map[string]any{"inner": map[string]any{"level": int64(1), "names": []any{map[string]any{"first": "ann"}}}},
		"extra":    map[string]any{"anything": map[string]any{"goes": true}},
	}
}

func paramsConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: "shop"},
		Data: map[string]string{"cpu": "250m", "memory": "256Mi", "team": "payments", "registry": "mirror.example.com"}}
}

type patcherCase struct {
	name   string
	m      mutation
	object runtime.Object
	gvr    schema.GroupVersionResource
	// wantErr, when set, must be contained in both error texts: a guard that
	// the case exercises the error path it is named for.
	wantErr string
}

func ac(expr string) mutation { return mutation{expr: expr} }
func jp(expr string) mutation { return mutation{jsonPatch: true, expr: expr} }

func patcherCases() []patcherCase {
	dep := deployment()
	return []patcherCase{
		// ApplyConfiguration on built-in kinds.
		{name: "AC adds a label", m: ac(`Object{metadata: Object.metadata{labels: {"team": "shop"}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC overwrites a label", m: ac(`Object{metadata: Object.metadata{labels: {"app": "other"}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC adds an annotation to an object without annotations", m: ac(`Object{metadata: Object.metadata{annotations: {"x/y": "z"}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC sets replicas", m: ac(`Object{spec: Object.spec{replicas: 5}}`), object: dep, gvr: deploymentGVR},
		{name: "AC sets replicas from arithmetic on the object", m: ac(`Object{spec: Object.spec{replicas: object.spec.replicas * 2}}`), object: dep, gvr: deploymentGVR},
		{name: "AC merges a container by name", m: ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "app", image: "nginx:1.28"}]}}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC appending a sidecar with args is refused (args is atomic)", m: ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "sidecar", image: "busybox", args: ["sleep", "1d"]}]}}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC appends a sidecar container", m: ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "sidecar", image: "busybox"}]}}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC adds env by name to a container", m: ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "app", env: [Object.spec.template.spec.containers.env{name: "LOG", value: "debug"}]}]}}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC overwrites env by name", m: ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "app", env: [Object.spec.template.spec.containers.env{name: "MODE", value: "dev"}]}]}}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC setting atomic tolerations is refused", m: ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{tolerations: [Object.spec.template.spec.tolerations{key: "x", operator: "Exists"}]}}}}`), object: dep, gvr: deploymentGVR, wantErr: "may not mutate atomic"},
		{name: "AC adds a volume by name", m: ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{volumes: [Object.spec.template.spec.volumes{name: "logs", emptyDir: Object.spec.template.spec.volumes.emptyDir{medium: "Memory"}}]}}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC setting the atomic selector is refused", m: ac(`Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {"a": "b"}}}}`), object: dep, gvr: deploymentGVR, wantErr: "may not mutate atomic"},
		{name: "AC merges resources requests map", m: ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "proxy", resources: Object.spec.template.spec.containers.resources{requests: {"cpu": "100m"}}}]}}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC sets a container port by key", m: ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "proxy", ports: [Object.spec.template.spec.containers.ports{containerPort: 9090, protocol: "TCP", name: "admin"}]}]}}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC with an unknown field is refused", m: ac(`Object{spec: Object.spec{notAField: 1}}`), object: dep, gvr: deploymentGVR, wantErr: "field not declared in schema"},
		{name: "AC with a string where a map belongs is refused", m: ac(`Object{metadata: Object.metadata{labels: "x"}}`), object: dep, gvr: deploymentGVR, wantErr: "expected map"},
		{name: "AC with a mismatched initializer type name is refused", m: ac(`Object{spec: Object.spec{template: Object.spec.wrong{}}}`), object: dep, gvr: deploymentGVR, wantErr: "type mismatch"},
		{name: "AC with null is refused", m: ac(`Object{metadata: Object.metadata{labels: null}}`), object: dep, gvr: deploymentGVR},
		{name: "AC with an int where a string belongs is refused", m: ac(`Object{metadata: Object.metadata{labels: {"a": 1}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC empty Object changes nothing", m: ac(`Object{}`), object: dep, gvr: deploymentGVR},
		{name: "AC sets a pod security context struct", m: ac(`Object{spec: Object.spec{securityContext: Object.spec.securityContext{runAsNonRoot: true, seccompProfile: Object.spec.securityContext.seccompProfile{type: "RuntimeDefault"}}}}`), object: pod(), gvr: podGVR},
		{name: "AC one Object type built twice with different fields, compared as types", m: ac(`Object{metadata: Object.metadata{labels: {"same": string(type(Object.spec{a: 1}) == type(Object.spec{b: "x"})), "other": string(type(Object.spec{}) == type(Object.metadata{})), "eq": string(Object.spec{a: 1} == Object.spec{a: 1}), "ne": string(Object.spec{a: 1} == Object.spec{b: 1})}}}`), object: pod(), gvr: podGVR},
		{name: "AC one nested Object type with two field sets in one list", m: ac(`Object{spec: Object.spec{initContainers: [Object.spec.initContainers{name: "a", image: "busybox:1.36"}, Object.spec.initContainers{name: "b", workingDir: "/w", image: "busybox:1.36"}]}}`), object: pod(), gvr: podGVR},
		{name: "JSON one Object type built twice with different fields", m: jp(`[JSONPatch{op: "add", path: "/spec/template/spec/containers/-", value: Object.spec.template.spec.containers{name: "s1", image: "busybox"}}, JSONPatch{op: "add", path: "/spec/template/spec/containers/-", value: Object.spec.template.spec.containers{name: "s2", args: ["x"], image: "busybox"}}]`), object: dep, gvr: deploymentGVR},
		{name: "AC adds a finalizer to the finalizer set, applied items first", m: ac(`Object{metadata: Object.metadata{finalizers: ["example.com/new"]}}`), object: pod(), gvr: podGVR},
		{name: "AC re-adds an existing finalizer", m: ac(`Object{metadata: Object.metadata{finalizers: ["example.com/keep"]}}`), object: pod(), gvr: podGVR},
		{name: "AC merges init containers", m: ac(`Object{spec: Object.spec{initContainers: [Object.spec.initContainers{name: "init", image: "busybox:1.36"}]}}`), object: pod(), gvr: podGVR},
		{name: "AC setting the atomic node selector is refused", m: ac(`Object{spec: Object.spec{nodeSelector: {"disk": "ssd"}}}`), object: pod(), gvr: podGVR},
		{name: "AC adds tolerations to a pod without any is refused (atomic)", m: ac(`Object{spec: Object.spec{tolerations: [Object.spec.tolerations{key: "x", operator: "Exists"}]}}`), object: pod(), gvr: podGVR, wantErr: "may not mutate atomic"},
		{name: "AC sets configmap data", m: ac(`Object{data: {"new": "value", "k": "changed"}}`), object: configMap(), gvr: configMapGVR},
		{name: "AC uses a variable", m: mutation{expr: `Object{metadata: Object.metadata{labels: {"replicas": string(variables.r)}}}`, variables: [][2]string{{"r", "object.spec.replicas"}}}, object: dep, gvr: deploymentGVR},
		{name: "AC uses params", m: mutation{expr: `Object{metadata: Object.metadata{labels: {"team": params.data.team}}}`, params: paramsConfigMap()}, object: dep, gvr: deploymentGVR},
		{name: "AC sees params without apiVersion", m: mutation{expr: `Object{metadata: Object.metadata{labels: {"has-kind": string(has(params.kind))}}}`, params: paramsConfigMap()}, object: dep, gvr: deploymentGVR},
		{name: "AC default requests from params for every container", m: mutation{expr: `Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: object.spec.template.spec.containers.map(c, Object.spec.template.spec.containers{name: c.name, resources: Object.spec.template.spec.containers.resources{requests: {"cpu": params.data.cpu, "memory": params.data.memory}}})}}}}`, params: paramsConfigMap()}, object: dep, gvr: deploymentGVR},
		{name: "AC runtime error is reported with the expression", m: ac(`Object{spec: Object.spec{replicas: object.spec.missing}}`), object: dep, gvr: deploymentGVR, wantErr: "resulted in error"},
		{name: "AC compile error is reported", m: ac(`Object{spec: }`), object: dep, gvr: deploymentGVR, wantErr: "compilation failed"},
		{name: "AC wrong result type is refused", m: ac(`"not an object"`), object: dep, gvr: deploymentGVR, wantErr: "must evaluate to Object"},
		{name: "AC sees apiVersion and kind of a typed object", m: ac(`Object{metadata: Object.metadata{labels: {"kind": string(object.kind), "v": string(object.apiVersion).replace("/", ".")}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC sees whether creationTimestamp is set on typed objects", m: ac(`Object{metadata: Object.metadata{labels: {"ts": string(has(object.metadata.creationTimestamp))}}}`), object: dep, gvr: deploymentGVR},
		{name: "AC with a list of labels built by comprehension", m: ac(`Object{metadata: Object.metadata{labels: object.spec.template.spec.containers.map(c, c.name).transformMapEntry(i, n, {"c-" + n: "yes"})}}`), object: dep, gvr: deploymentGVR},
		{name: "AC on a kind without schema is a 503", m: ac(`Object{}`), object: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"}}}, gvr: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}, wantErr: "Resource kind example.com/v1, Kind=Gadget not found"},

		// ApplyConfiguration on a custom resource.
		{name: "AC CR sets a scalar", m: ac(`Object{spec: Object.spec{size: 7}}`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "AC CR sets int-or-string to an int", m: ac(`Object{spec: Object.spec{port: 8080}}`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "AC CR unions a set list", m: ac(`Object{spec: Object.spec{tags: ["c", "a"]}}`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "AC CR merges a map list by both keys", m: ac(`Object{spec: Object.spec{ports: [Object.spec.ports{name: "http", protocol: "TCP", number: 8080}, Object.spec.ports{name: "http", protocol: "UDP", number: 8081}]}}`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "AC CR setting an atomic list is refused", m: ac(`Object{spec: Object.spec{steps: ["deploy"]}}`), object: widget(widgetSpec()), gvr: widgetGVR, wantErr: "may not mutate atomic"},
		{name: "AC CR setting a list without list-type is refused (atomic)", m: ac(`Object{spec: Object.spec{plain: ["y"]}}`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "AC CR setting an atomic map is refused", m: ac(`Object{spec: Object.spec{selector: {"x": "y"}}}`), object: widget(widgetSpec()), gvr: widgetGVR, wantErr: "may not mutate atomic"},
		{name: "AC CR merges a granular map", m: ac(`Object{spec: Object.spec{settings: {"b": "2"}}}`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "AC CR sets a nested struct field", m: ac(`Object{spec: Object.spec{nested: Object.spec.nested{inner: Object.spec.nested.inner{level: 2}}}}`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "AC CR sets preserve-unknown-fields content", m: ac(`Object{spec: Object.spec{extra: Object.spec.extra{free: {"form": "yes"}}}}`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "AC CR unknown field is refused", m: ac(`Object{spec: Object.spec{shape: "round"}}`), object: widget(widgetSpec()), gvr: widgetGVR, wantErr: "field not declared in schema"},
		{name: "AC CR wrong scalar type is refused", m: ac(`Object{spec: Object.spec{size: "big"}}`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "AC CR on an object with an empty spec", m: ac(`Object{spec: Object.spec{color: "blue", tags: ["x"]}}`), object: widget(map[string]any{}), gvr: widgetGVR},
		{name: "AC CR tolerates duplicate keys in the live map list", m: ac(`Object{spec: Object.spec{color: "green"}}`), object: widget(map[string]any{"ports": []any{map[string]any{"name": "a", "protocol": "TCP"}, map[string]any{"name": "a", "protocol": "TCP"}}}), gvr: widgetGVR},
		{name: "AC CR sets labels on a custom resource", m: ac(`Object{metadata: Object.metadata{labels: {"size": string(object.spec.size)}}}`), object: widget(widgetSpec()), gvr: widgetGVR},

		// JSONPatch on built-in kinds.
		{name: "JSON adds a label", m: jp(`[JSONPatch{op: "add", path: "/metadata/labels/team", value: "shop"}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON adds a label with an escaped key", m: jp(`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/team"), value: "shop"}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON adds annotations map", m: jp(`[JSONPatch{op: "add", path: "/metadata/annotations", value: {"a": "b"}}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON replaces replicas", m: jp(`[JSONPatch{op: "replace", path: "/spec/replicas", value: 9}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON removes replicas", m: jp(`[JSONPatch{op: "remove", path: "/spec/replicas"}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON test that does not hold drops the whole patch", m: jp(`[JSONPatch{op: "test", path: "/spec/replicas", value: 100}, JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON passing test applies the patch", m: jp(`[JSONPatch{op: "test", path: "/spec/replicas", value: 2}, JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON appends a container", m: jp(`[JSONPatch{op: "add", path: "/spec/template/spec/containers/-", value: Object.spec.template.spec.containers{name: "side", image: "busybox"}}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON inserts a container at index 0", m: jp(`[JSONPatch{op: "add", path: "/spec/template/spec/containers/0", value: {"name": "first", "image": "x"}}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON replaces an image", m: jp(`[JSONPatch{op: "replace", path: "/spec/template/spec/containers/0/image", value: "mirror.example.com/nginx:1.27"}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON appends a toleration", m: jp(`[JSONPatch{op: "add", path: "/spec/template/spec/tolerations/-", value: {"key": "x", "operator": "Exists"}}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON moves a label to an annotation", m: jp(`[JSONPatch{op: "add", path: "/metadata/annotations", value: {}}, JSONPatch{op: "move", from: "/metadata/labels/app", path: "/metadata/annotations/app"}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON copies a label", m: jp(`[JSONPatch{op: "copy", from: "/metadata/labels/app", path: "/metadata/labels/copy"}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON removes a missing path fails", m: jp(`[JSONPatch{op: "remove", path: "/metadata/annotations/none"}]`), object: dep, gvr: deploymentGVR, wantErr: "JSON Patch:"},
		{name: "JSON replace of a missing key adds it, then strict decoding fails", m: jp(`[JSONPatch{op: "replace", path: "/spec/paused2", value: true}]`), object: dep, gvr: deploymentGVR, wantErr: "strict decoding error"},
		{name: "JSON replace of a missing known key adds it", m: jp(`[JSONPatch{op: "replace", path: "/spec/paused", value: true}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON add to a missing parent fails", m: jp(`[JSONPatch{op: "add", path: "/spec/none/x", value: 1}]`), object: dep, gvr: deploymentGVR, wantErr: "JSON Patch:"},
		{name: "JSON index out of range fails", m: jp(`[JSONPatch{op: "add", path: "/spec/template/spec/containers/5", value: {"name": "x"}}]`), object: dep, gvr: deploymentGVR, wantErr: "JSON Patch:"},
		{name: "JSON unknown field fails strict decoding", m: jp(`[JSONPatch{op: "add", path: "/spec/notAField", value: 1}]`), object: dep, gvr: deploymentGVR, wantErr: "strict decoding error"},
		{name: "JSON wrong type fails decoding", m: jp(`[JSONPatch{op: "replace", path: "/spec/replicas", value: "three"}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON big integer becomes a string and fails decoding", m: jp(`[JSONPatch{op: "replace", path: "/spec/replicas", value: 9007199254740993}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON unknown op fails", m: jp(`[JSONPatch{op: "frobnicate", path: "/spec/replicas"}]`), object: dep, gvr: deploymentGVR, wantErr: "JSON Patch:"},
		{name: "JSON untyped empty list is refused", m: jp(`[]`), object: dep, gvr: deploymentGVR},
		{name: "JSON patch built from the object", m: jp(`object.spec.template.spec.containers.filter(c, c.image.startsWith("docker.io/")).map(c, JSONPatch{op: "replace", path: "/spec/template/spec/containers/0/image", value: c.image.substring(10)})`), object: dep, gvr: deploymentGVR},
		{name: "JSON adds a finalizer", m: jp(`[JSONPatch{op: "add", path: "/metadata/finalizers/-", value: "example.com/new"}]`), object: pod(), gvr: podGVR},
		{name: "JSON replaces the whole data map", m: jp(`[JSONPatch{op: "replace", path: "/data", value: {"x": "y"}}]`), object: configMap(), gvr: configMapGVR},
		{name: "JSON adds data with tilde and slash keys", m: jp(`[JSONPatch{op: "add", path: "/data/" + jsonpatch.escapeKey("a~b/c"), value: "v"}]`), object: configMap(), gvr: configMapGVR},
		{name: "JSON with a variable and params", m: mutation{jsonPatch: true, expr: `[JSONPatch{op: "add", path: "/data/team", value: variables.t}]`, variables: [][2]string{{"t", "params.data.team"}}, params: paramsConfigMap()}, object: configMap(), gvr: configMapGVR},
		{name: "JSON runtime error", m: jp(`[JSONPatch{op: "add", path: "/data/x", value: object.data.missing}]`), object: configMap(), gvr: configMapGVR, wantErr: "resulted in error"},
		{name: "JSON wrong result type is refused", m: jp(`[{"op": "add"}]`), object: configMap(), gvr: configMapGVR, wantErr: "must evaluate to list(JSONPatch)"},
		{name: "JSON Object value with mismatched type names is not checked upstream either", m: jp(`[JSONPatch{op: "add", path: "/spec/template", value: Object.spec.wrong{}}]`), object: dep, gvr: deploymentGVR},
		{name: "JSON typed empty list changes nothing", m: jp(`[JSONPatch{op: "test", path: "/spec/replicas", value: 2}].filter(p, false)`), object: dep, gvr: deploymentGVR},
		{name: "JSON on a kind without schema is a 503", m: jp(`[]`), object: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"}}}, gvr: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}, wantErr: "not found"},

		// JSONPatch on a custom resource (decoded as unstructured: no strict
		// schema check, as upstream).
		{name: "JSON CR adds an undeclared field (no strict decoding for CRs)", m: jp(`[JSONPatch{op: "add", path: "/spec/shape", value: "round"}]`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "JSON CR appends to a map list", m: jp(`[JSONPatch{op: "add", path: "/spec/ports/-", value: {"name": dyn("https"), "protocol": dyn("TCP"), "number": dyn(443)}}]`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "JSON CR removes a nested field", m: jp(`[JSONPatch{op: "remove", path: "/spec/nested/inner/level"}]`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "JSON CR replaces with a double", m: jp(`[JSONPatch{op: "replace", path: "/spec/size", value: 2.5}]`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "JSON CR replaces with an integral double", m: jp(`[JSONPatch{op: "replace", path: "/spec/size", value: 2.0}]`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "JSON CR test on a list element", m: jp(`[JSONPatch{op: "test", path: "/spec/tags/1", value: "b"}, JSONPatch{op: "add", path: "/spec/tags/-", value: "c"}]`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "JSON CR test on a number compares as JSON", m: jp(`[JSONPatch{op: "test", path: "/spec/size", value: 3}, JSONPatch{op: "replace", path: "/spec/color", value: "blue"}]`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "JSON CR sets a null value", m: jp(`[JSONPatch{op: "add", path: "/spec/color", value: null}]`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "JSON CR adds a bool and a list", m: jp(`[JSONPatch{op: "add", path: "/spec/extra/flags", value: [true, false]}]`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "JSON CR bad pointer fails", m: jp(`[JSONPatch{op: "add", path: "spec", value: 1}]`), object: widget(widgetSpec()), gvr: widgetGVR, wantErr: "JSON Patch:"},
		{name: "JSON CR move into own child fails", m: jp(`[JSONPatch{op: "move", from: "/spec/nested", path: "/spec/nested/inner/x"}]`), object: widget(widgetSpec()), gvr: widgetGVR},
		{name: "JSON CR replaces the root", m: jp(`[JSONPatch{op: "replace", path: "/spec", value: {"size": 1}}]`), object: widget(widgetSpec()), gvr: widgetGVR},
	}
}

// loadCRD adds the CRD of the YAML file path to schemas and returns it.
func loadCRD(t testing.TB, schemas *applyconfig.Schemas, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := schemas.AddCRD(u); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestPatchersMatchUpstream runs every case through mutatis (compiler +
// mutation.Patcher) and through k8s.io/apiserver's patchers with the same type
// converter, and requires identical objects or identical errors.
func TestPatchersMatchUpstream(t *testing.T) {
	schemas := applyconfig.NewSchemas()
	loadCRD(t, schemas, "testdata/widgets-crd.yaml")
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	pt := &mut.Patcher{Schemas: schemas, Scheme: kubescheme.New()}
	cases := patcherCases()
	if len(cases) < 80 {
		t.Fatalf("the differential table must hold at least 80 cases, has %d", len(cases))
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gvk := tc.object.GetObjectKind().GroupVersionKind()
			tconv, tcErr := schemas.TypeConverter(gvk)
			if tcErr != nil {
				tconv = nil
			}
			theirs, theirErr := upstreamMutate(ctx, tc.m, tc.object, gvk, tc.gvr, kubeScheme(), tconv)

			policy, err := comp.Compile(tc.m.policy())
			if err != nil {
				t.Fatal(err)
			}
			obj, err := toUnstructured(tc.object.DeepCopyObject())
			if err != nil {
				t.Fatal(err)
			}
			in := compiler.Input{Object: obj}
			if tc.m.params != nil {
				if in.Params, err = toUnstructured(tc.m.params); err != nil {
					t.Fatal(err)
				}
			}
			ours, _, ourErr := pt.Mutate(ctx, policy, policy.Mutations[0], in, gvk)
			if err := sameOutcome(ours, ourErr, theirs, theirErr); err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && (ourErr == nil || !strings.Contains(ourErr.Error(), tc.wantErr)) {
				t.Fatalf("case is meant to fail with %q, got %v", tc.wantErr, ourErr)
			}
			if (ourErr != nil) != expectsFailure(tc.name) {
				t.Fatalf("case %q: error = %v; the case name says whether it must fail", tc.name, ourErr)
			}
		})
	}
}

// expectsFailure tells from a case name whether both sides must fail.
func expectsFailure(name string) bool {
	return strings.Contains(name, "refused") || strings.Contains(name, "fail") || strings.Contains(name, "503") || strings.Contains(name, "error")
}
