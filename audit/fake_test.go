package audit

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
)

// fakeCluster is a dynamic fake client holding the objects of the files,
// able to list every built-in resource.
func fakeCluster(t *testing.T, files ...string) *dynamicfake.FakeDynamicClient {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{}
	for _, r := range matching.DefaultTable().Resources() {
		listKinds[r.GroupVersionResource()] = r.Kind + "List"
	}
	var objs []runtime.Object
	if len(files) > 0 {
		set, err := manifest.Load(context.Background(), files, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range set.Objects {
			objs = append(objs, o.Object)
		}
		// ValidatingAdmissionPolicies and bindings as the cluster stores
		// them (manifest keeps them apart from the other objects).
		for _, p := range set.ValidatingPolicies {
			objs = append(objs, stored(t, p.Policy, "ValidatingAdmissionPolicy"))
		}
		for _, b := range set.ValidatingBindings {
			objs = append(objs, stored(t, b.Binding, "ValidatingAdmissionPolicyBinding"))
		}
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
}

// stored is obj as admissionregistration.k8s.io/v1 kind, unstructured.
func stored(t *testing.T, obj any, kind string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(manifest.GroupName + "/v1")
	u.SetKind(kind)
	return u
}

// loadPolicies reads a policy file for Options.
func loadPolicies(t *testing.T, file string) Options {
	t.Helper()
	set, err := manifest.Load(context.Background(), []string{file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, b := set.APIObjects()
	return Options{Policies: p, Bindings: b, Resources: set.Objects}
}

func listedResources(c *dynamicfake.FakeDynamicClient) map[string]bool {
	out := map[string]bool{}
	for _, a := range c.Actions() {
		if a.GetVerb() == "list" {
			out[a.GetResource().Resource] = true
		}
	}
	return out
}

func objectNamed(items []unstructured.Unstructured, name string) *unstructured.Unstructured {
	for i := range items {
		if items[i].GetName() == name {
			return &items[i]
		}
	}
	return nil
}
