package cluster

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/manifest"
)

// TestCustomResourceScaleMutation: a policy that mutates a custom
// resource's scale gets kube-apiserver's refusal (the CRD handler's
// converter will not convert the mutated Scale back to autoscaling/v1;
// the set of test/e2e crd-scale-jsonpatch, where kube-apiserver answers so).
func TestCustomResourceScaleMutation(t *testing.T) {
	data, err := os.ReadFile("../test/e2e/testdata/equivalent/crd-scale-jsonpatch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := manifest.Parse("crd-scale-jsonpatch.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(set.Objects[:len(set.Objects)-1], Options{})
	if err != nil {
		t.Fatal(err)
	}
	policies, bindings := set.APIObjects()
	ev, err := c.Evaluator(nil, policies, bindings)
	if err != nil {
		t.Fatal(err)
	}
	scale := func(replicas int64) *unstructured.Unstructured {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(`{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "gz", "namespace": "eq", "resourceVersion": "1"}}`), &m); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		if err := unstructured.SetNestedField(u.Object, replicas, "spec", "replicas"); err != nil {
			t.Fatal(err)
		}
		return u
	}
	d, err := c.DecodeSteps(Request{Object: scale(5), OldObject: scale(1), Subresource: "gizmos/scale"})
	if err != nil {
		t.Fatal(err)
	}
	adm, err := c.Admit(t.Context(), Chain{Policies: ev}, d)
	if err != nil {
		t.Fatal(err)
	}
	const want = "policy 'gizmo-scale' with binding 'gizmo-scale' denied request: request to convert CR to an invalid group/version: autoscaling/v1"
	if adm.Result.Denied == nil || adm.Result.Denied.ErrStatus.Message != want {
		t.Fatalf("got %+v, want the refusal %q", adm.Result.Denied, want)
	}
}
