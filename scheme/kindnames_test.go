package scheme

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

// TestInvalidKindsNameTheirServedGroup: a type that several internal
// groups register (extensions registers apps' and networking's, events
// core's Event) is named in the registry's 422 by its first registered
// kind, which must be the group kube-apiserver 1.37.1 serves it in.
func TestInvalidKindsNameTheirServedGroup(t *testing.T) {
	s := New()
	if _, err := s.kube(); err != nil {
		t.Fatal(err)
	}
	for _, served := range []schema.GroupVersionKind{
		{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
		{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "apps", Version: "v1", Kind: "DaemonSet"},
		{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
		{Group: "", Version: "v1", Kind: "Event"},
	} {
		internal, err := legacyscheme.Scheme.New(schema.GroupVersionKind{Group: served.Group, Version: "__internal", Kind: served.Kind})
		if err != nil {
			t.Fatal(err)
		}
		kinds, _, err := legacyscheme.Scheme.ObjectKinds(internal)
		if err != nil {
			t.Fatal(err)
		}
		if kinds[0].GroupKind() != served.GroupKind() {
			t.Errorf("%s is named %s (registered as %v)", served.GroupKind(), kinds[0].GroupKind(), kinds)
		}
	}
	// And in a 422, through the strategy.
	o, gvk := decoded(t, s, `{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web", "namespace": "shop"}, "spec": {"rules": [{"host": "Bad_Host"}]}}`)
	v := validateCreate(t, s, o, gvk)
	if v.Invalid == nil || v.Invalid.ErrStatus.Details.Group != "networking.k8s.io" {
		t.Fatalf("got %v", v.Invalid)
	}
	const want = `Ingress.networking.k8s.io "web" is invalid: `
	if msg := v.Invalid.ErrStatus.Message; len(msg) < len(want) || msg[:len(want)] != want {
		t.Errorf("message %q, want it to start with %q", msg, want)
	}
}
