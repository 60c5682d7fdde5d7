package scheme

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// TestShadowedKindIsACustomResource: a CRD that serves a kind client-go's
// scheme also has a Go type for (WatchEvent in internal.apiserver.k8s.io/
// v1alpha1) makes every call of the Scheme take the object as the custom
// resource kube-apiserver's CRD handler serves — its spec kept, its
// structural defaults applied — and removing the CRD gives the Go type back.
// It fails when any of Recognizes, Normalize, Patch, DecodeRequest or
// Default takes the Go type (which has no spec: it drops it).
func TestShadowedKindIsACustomResource(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "internal.apiserver.k8s.io", Version: "v1alpha1", Kind: "WatchEvent"}
	s := New()
	if !s.Recognizes(gvk) {
		t.Fatalf("%s: want a built-in kind before the CRD", gvk)
	}
	if s.CustomResources().Shadows(gvk) {
		t.Fatal("shadowed before the CRD")
	}
	if err := s.AddCRD(loadCRD(t, "watchevents.yaml")); err != nil {
		t.Fatal(err)
	}
	if s.Recognizes(gvk) || !s.CustomResources().Shadows(gvk) {
		t.Fatalf("%s: recognized %v, shadowed %v with its CRD", gvk, s.Recognizes(gvk), s.CustomResources().Shadows(gvk))
	}
	in := obj(t, `{"apiVersion":"internal.apiserver.k8s.io/v1alpha1","kind":"WatchEvent","metadata":{"name":"w","namespace":"ns"},"spec":{"replicas":3}}`)
	defaulted := obj(t, `{"apiVersion":"internal.apiserver.k8s.io/v1alpha1","kind":"WatchEvent","metadata":{"name":"w","namespace":"ns"},"spec":{"replicas":3,"size":"medium"}}`)

	decoded, _, err := s.DecodeRequest(in, gvk)
	if err != nil || !reflect.DeepEqual(decoded, defaulted) {
		t.Errorf("DecodeRequest = %v, %v; want %v", decoded, err, defaulted)
	}
	if got, err := s.Normalize(in, gvk); err != nil || !reflect.DeepEqual(got, in) {
		t.Errorf("Normalize = %v, %v; want the object as it is", got, err)
	}
	if got, err := s.NormalizeRequest(in, gvk); err != nil || !reflect.DeepEqual(got, in) {
		t.Errorf("NormalizeRequest = %v, %v; want the object as it is", got, err)
	}
	if got, err := s.Default(in, gvk); err != nil || !reflect.DeepEqual(got, defaulted) {
		t.Errorf("Default = %v, %v; want %v", got, err, defaulted)
	}
	ops := []jsonpatch.Operation{{Op: "add", Path: "/type", Value: "ADDED", HasValue: true}, {Op: "replace", Path: "/spec/replicas", Value: int64(5), HasValue: true}}
	patched := obj(t, `{"apiVersion":"internal.apiserver.k8s.io/v1alpha1","kind":"WatchEvent","metadata":{"name":"w","namespace":"ns"},"spec":{"replicas":5,"size":"medium"},"type":"ADDED"}`)
	for name, patch := range map[string]func() (map[string]any, bool, error){
		"Patch":          func() (map[string]any, bool, error) { return s.Patch(defaulted, ops, gvk) },
		"patchReference": func() (map[string]any, bool, error) { return s.patchReference(defaulted, ops, gvk) },
		"PatchDefault":   func() (map[string]any, bool, error) { return s.PatchDefault(defaulted, ops, gvk) },
	} {
		if got, skipped, err := patch(); err != nil || skipped || !reflect.DeepEqual(got, patched) {
			t.Errorf("%s = %v, %v, %v; want %v", name, got, skipped, err, patched)
		}
	}

	s.RemoveCRD("watchevents.internal.apiserver.k8s.io")
	if !s.Recognizes(gvk) || s.CustomResources().Shadows(gvk) {
		t.Fatalf("%s: not a built-in kind again once its CRD is removed", gvk)
	}
	got, err := s.Normalize(in, gvk)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["spec"]; ok {
		t.Errorf("Normalize of the built-in WatchEvent kept spec: %v", got)
	}
}
