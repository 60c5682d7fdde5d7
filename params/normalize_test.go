package params_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/params"
	"github.com/mutatis-dev/mutatis/scheme"
)

type namespaced struct{}

func (namespaced) Namespaced(schema.GroupVersionKind) (bool, bool) { return true, true }

// TestNormalizeIsTheTypedRoundTrip checks that a Collector presenting
// params through scheme.Scheme.Normalize (as the engine is wired)
// gives what the typed round trip gives — the same objects, the same
// errors — on real param objects of built-in kinds, as the API server
// stores them and with what a hand-written param may hold (unknown fields,
// nulls, whole floats, wrong types), and leaves the source objects as they
// were.
func TestNormalizeIsTheTypedRoundTrip(t *testing.T) {
	toU := func(o runtime.Object) map[string]any {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	cm := toU(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop", Labels: map[string]string{"role": "defaults"}},
		Data:       map[string]string{"memory": "512Mi"}, BinaryData: map[string][]byte{"b": []byte("\x00\x01")}})
	secret := toU(&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}})
	limits := toU(&corev1.LimitRange{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop"}})
	for _, tc := range []struct {
		name    string
		gvk     schema.GroupVersionKind
		obj     map[string]any
		wantErr bool
	}{
		{name: "ConfigMap", gvk: configMapGVK, obj: cm},
		{name: "Secret", gvk: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, obj: secret},
		{name: "LimitRange", gvk: limitRangeGVK, obj: limits},
		{name: "unknown fields and nulls", gvk: configMapGVK,
			obj: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "p", "namespace": "shop", "labels": nil, "x": 1.5},
				"data": map[string]any{"a": "b"}, "immutable": nil, "stray": map[string]any{"y": true}}},
		{name: "whole floats", gvk: limitRangeGVK,
			obj: map[string]any{"apiVersion": "v1", "kind": "LimitRange", "metadata": map[string]any{"name": "p", "namespace": "shop", "generation": float64(3)}}},
		{name: "wrong type", gvk: configMapGVK, wantErr: true,
			obj: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "p", "namespace": "shop"}, "data": "not a map"}},
		{name: "truncating number", gvk: limitRangeGVK, wantErr: true,
			obj: map[string]any{"apiVersion": "v1", "kind": "LimitRange", "metadata": map[string]any{"name": "p", "namespace": "shop", "generation": 1.5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.DeepCopyJSON(tc.obj)
			src := params.NewMemory(&unstructured.Unstructured{Object: tc.obj})
			kind := &admissionregistrationv1.ParamKind{APIVersion: tc.gvk.GroupVersion().String(), Kind: tc.gvk.Kind}
			ref := &admissionregistrationv1.ParamRef{Name: "p"}
			planned := &params.Collector{Source: src, Scopes: namespaced{}, Scheme: scheme.New()}
			typed := params.ReferenceCollector(planned)
			want, wantErr := typed.Collect(context.Background(), kind, ref, "shop")
			if (wantErr != nil) != tc.wantErr {
				t.Fatalf("typed round trip: error %v, want one: %v", wantErr, tc.wantErr)
			}
			for i := range 2 { // the second time with the normalizer's plans built
				got, err := planned.Collect(context.Background(), kind, ref, "shop")
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("round %d: error %v, want %v", i, err, wantErr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("round %d:\n got %#v\nwant %#v", i, got, want)
				}
			}
			if !reflect.DeepEqual(tc.obj, before) {
				t.Errorf("the source object changed:\n%#v\nwas %#v", tc.obj, before)
			}
		})
	}
}

var (
	configMapGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	limitRangeGVK = schema.GroupVersionKind{Version: "v1", Kind: "LimitRange"}
)
