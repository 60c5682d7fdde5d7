package differential

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

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
	type object struct {
		obj runtime.Object
		gvk schema.GroupVersionKind
	}
	objects := []object{{deployment(), schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}}, {pod(), schema.GroupVersionKind{Version: "v1", Kind: "Pod"}}}
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
	for round := range 200 {
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
