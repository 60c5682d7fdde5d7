package differential

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
	mut "github.com/mutatis-dev/mutatis/mutation"
	kubescheme "github.com/mutatis-dev/mutatis/scheme"
)

// TestIncrementalDefaultingAgrees runs random sequences of mutations on
// real objects within an admission (one mutation.Cache: after the first
// mutation only what a mutation changed is defaulted) and one by one
// outside it (Patcher.Mutate: every result defaulted whole), and fails
// unless every result is the same bit for bit.
func TestIncrementalDefaultingAgrees(t *testing.T) {
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	pt := &mut.Patcher{Schemas: applyconfig.NewSchemas(), Scheme: kubescheme.New()}
	objects := []incrementalObject{{deployment(), schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}}, {pod(), schema.GroupVersionKind{Version: "v1", Kind: "Pod"}}}
	mutations := []mutation{
		ac(`Object{metadata: Object.metadata{labels: {"team": "shop"}}}`),
		ac(`Object{metadata: Object.metadata{annotations: {"cost-center": "42"}}}`),
		jp(`[JSONPatch{op: "add", path: "/metadata/labels", value: {"a": "b"}}]`),
		jp(`[JSONPatch{op: "remove", path: "/metadata/labels"}]`),
		jp(`[JSONPatch{op: "add", path: "/metadata/annotations/x", value: "y"}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/replicas", value: 3}]`),
		jp(`[JSONPatch{op: "remove", path: "/spec/replicas"}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/nodeSelector", value: {"arch": "arm64"}}]`),
		jp(`[JSONPatch{op: "remove", path: "/spec/securityContext"}]`),
		jp(`[JSONPatch{op: "remove", path: "/spec/dnsPolicy"}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/tolerations", value: [{"key": "spot", "operator": "Exists"}]}]`),
		jp(`[JSONPatch{op: "test", path: "/metadata/name", value: "nobody"}]`),
		ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "sidecar", image: "busybox"}]}}}}`),
		ac(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "sidecar", image: "busybox"}]}}`),
		jp(`[JSONPatch{op: "add", path: "/spec/containers/0/ports", value: [{"containerPort": 80}]}]`),
		// Elements of lists, defaulted one by one (scheme's unitTable).
		jp(`[JSONPatch{op: "replace", path: "/spec/containers/0/image", value: "nginx:2"}]`),
		jp(`[JSONPatch{op: "replace", path: "/spec/template/spec/containers/0/image", value: "nginx:2"}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/containers/0/resources", value: {"limits": {"cpu": "500m", "memory": "1Gi"}}}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/template/spec/containers/1/resources", value: {"limits": {"cpu": "1"}}}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/containers/0/env", value: [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/template/spec/containers/0/env/-", value: {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/initContainers/-", value: {"name": "init2", "image": "busybox", "ports": [{"containerPort": 53}]}}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/template/spec/initContainers", value: [{"name": "init", "image": "busybox", "restartPolicy": "Always"}]}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/volumes", value: [{"name": "s", "secret": {"secretName": "s"}}]}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/template/spec/volumes/-", value: {"name": "cfg", "configMap": {"name": "c"}}}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/hostNetwork", value: true}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/containers/0/livenessProbe", value: {"httpGet": {"port": 8080}}}]`),
		jp(`[JSONPatch{op: "remove", path: "/spec/template/spec/containers/0"}]`),
		jp(`[JSONPatch{op: "remove", path: "/spec/containers/0/imagePullPolicy"}, JSONPatch{op: "remove", path: "/spec/containers/0/terminationMessagePath"}]`),
		ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "app", resources: Object.spec.template.spec.containers.resources{limits: {"memory": "64Mi"}}}]}}}}`),
		ac(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "app", ports: [Object.spec.containers.ports{containerPort: 9090}]}], tolerations: [Object.spec.tolerations{key: "spot", operator: "Exists"}]}}`),
	}
	agreeIncremental(t, comp, pt, objects, mutations, 200)
}

// incrementalObject is an object of agreeIncremental's sequences.
type incrementalObject struct {
	obj runtime.Object
	gvk schema.GroupVersionKind
}

// agreeIncremental runs rounds random sequences of mutations on objects
// through one mutation.Cache and one by one (Patcher.Mutate), and fails
// unless every result is the same bit for bit.
func agreeIncremental(t *testing.T, comp *compiler.Compiler, pt *mut.Patcher, objects []incrementalObject, mutations []mutation, rounds int) {
	t.Helper()
	var compiled []*compiler.Policy
	for _, m := range mutations {
		p, err := comp.Compile(m.policy())
		if err != nil {
			t.Fatal(err)
		}
		compiled = append(compiled, p)
	}
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	for round := range rounds {
		o := objects[round%len(objects)]
		start, err := toUnstructured(o.obj)
		if err != nil {
			t.Fatal(err)
		}
		start, err = pt.NormalizeRequest(start, o.gvk)
		if err != nil {
			t.Fatal(err)
		}
		var cache mut.Cache
		inAdmission, oneByOne := start, start
		for step := range 1 + r.IntN(6) {
			p := compiled[r.IntN(len(compiled))]
			got, _, gotErr := cache.Mutate(ctx, pt, p, p.Mutations[0], compiler.Input{Object: inAdmission}, o.gvk)
			want, _, wantErr := pt.Mutate(ctx, p, p.Mutations[0], compiler.Input{Object: oneByOne}, o.gvk)
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("round %d step %d: error %v, want %v", round, step, gotErr, wantErr)
			}
			if gotErr != nil {
				continue // the admission keeps its object
			}
			if !valuetest.BitsEqual(got, want) {
				t.Fatalf("round %d step %d (%s): incremental defaulting differs\n got: %s\nwant: %s", round, step, p.Mutations[0].Source, jsonText(got), jsonText(want))
			}
			inAdmission, oneByOne = got, want
		}
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestIncrementalCRDefaultingAgrees is TestIncrementalDefaultingAgrees for
// a custom resource whose schema defaults nested objects, lists and maps
// of objects, nullable fields and int-or-string, under
// x-kubernetes-preserve-unknown-fields and in an embedded resource
// (scheme/testdata/crd/gizmos.yaml): after the first mutation only what a
// mutation changed is defaulted structurally.
func TestIncrementalCRDefaultingAgrees(t *testing.T) {
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	const crdFile = "../../scheme/testdata/crd/gizmos.yaml"
	pt := &mut.Patcher{Schemas: applyconfig.NewSchemas(), Scheme: kubescheme.New()}
	if err := pt.Scheme.AddCRD(loadCRD(t, pt.Schemas, crdFile)); err != nil {
		t.Fatal(err)
	}
	gizmo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gizmo",
		"metadata": map[string]any{"name": "g", "namespace": "shop", "labels": map[string]any{"app": "g"}},
		"spec": map[string]any{
			"ports":    []any{map[string]any{"name": "http", "port": int64(80)}, map[string]any{"name": "https", "port": int64(443), "options": map[string]any{"retries": int64(2)}}},
			"routes":   map[string]any{"a": map[string]any{"weight": int64(5)}, "b": map[string]any{}},
			"counters": map[string]any{"x": int64(1)},
			"matrix":   []any{[]any{map[string]any{"w": "x"}}},
			"extra":    map[string]any{"unknown": map[string]any{"deep": true}},
			"template": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "t"}},
		},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready"}}},
	}}
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gizmo"}
	mutations := []mutation{
		ac(`Object{metadata: Object.metadata{labels: {"team": "shop"}}}`),
		ac(`Object{spec: Object.spec{strategy: Object.spec.strategy{type: "Recreate"}}}`),
		ac(`Object{spec: Object.spec{replicas: 4}}`),
		ac(`Object{spec: Object.spec{routes: {"c": Object.spec.routes{backend: Object.spec.routes.backend{service: "s"}}}}}`),
		jp(`[JSONPatch{op: "remove", path: "/spec/strategy"}]`),
		jp(`[JSONPatch{op: "remove", path: "/spec/replicas"}]`),
		jp(`[JSONPatch{op: "remove", path: "/spec/nullableObject"}]`),
		jp(`[JSONPatch{op: "replace", path: "/spec/nullableObject", value: null}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/withDefault", value: null}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/nullableWithDefault", value: null}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/ports/-", value: {"name": dyn("new"), "options": dyn({})}}]`),
		jp(`[JSONPatch{op: "remove", path: "/spec/ports/0/options"}]`),
		jp(`[JSONPatch{op: "remove", path: "/spec/ports/0"}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/routes/d", value: {}}]`),
		jp(`[JSONPatch{op: "remove", path: "/spec/routes/a/backend"}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/counters/y", value: null}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/words", value: [dyn("a"), dyn(null)]}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/matrix/0/-", value: {}}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/extra/inner", value: {"other": 1}}]`),
		jp(`[JSONPatch{op: "remove", path: "/spec/extra/level"}]`),
		jp(`[JSONPatch{op: "remove", path: "/spec/template/spec"}]`),
		jp(`[JSONPatch{op: "add", path: "/spec/strategy/maxSurge", value: 3}]`),
		jp(`[JSONPatch{op: "copy", from: "/spec/routes/a", path: "/spec/routes/e"}]`),
		jp(`[JSONPatch{op: "move", from: "/spec/ports/1", path: "/spec/ports/0"}]`),
		jp(`[JSONPatch{op: "add", path: "/status/conditions/-", value: {"type": "Synced"}}]`),
		jp(`[JSONPatch{op: "remove", path: "/status/phase"}]`),
		jp(`[JSONPatch{op: "remove", path: "/spec"}]`),
	}
	agreeIncremental(t, comp, pt, []incrementalObject{{gizmo, gvk}}, mutations, 300)
}
