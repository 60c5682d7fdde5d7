package cluster

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestClosedNamespaces: with ClosedNamespaces, the Namespaces given are
// the cluster's: a request in another one is refused by the
// NamespaceLifecycle plugin with kube-apiserver's 404, the system
// namespaces exist; without it, a namespace is made up (OnSynthesize).
func TestClosedNamespaces(t *testing.T) {
	const world = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
`
	pod := func(ns string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": ns},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}},
		}}
	}
	closed, err := New(load(t, world), Options{ClosedNamespaces: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"shop", "default", "kube-system"} {
		if _, err := closed.DecodeSteps(Request{Object: pod(ns)}); err != nil {
			t.Errorf("%s: %v", ns, err)
		}
	}
	_, err = closed.DecodeSteps(Request{Object: pod("ghost")})
	if !apierrors.IsNotFound(err) || err.Error() != `namespaces "ghost" not found` {
		t.Errorf("ghost: %v, want kube-apiserver's 404", err)
	}

	// Without it, the namespace is made up.
	open, err := New(load(t, world), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.DecodeSteps(Request{Object: pod("ghost")}); err != nil {
		t.Errorf("ghost, not closed: %v", err)
	}
}
