package params

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/scheme"
)

func TestMemoRemembersByObject(t *testing.T) {
	var m Memo
	derived := 0
	derive := func(o *unstructured.Unstructured) func() (any, error) {
		return func() (any, error) {
			derived++
			return o.GetName(), nil
		}
	}
	a := obj("v1", "ConfigMap", "shop", "a", nil)
	same := obj("v1", "ConfigMap", "shop", "a", nil) // equal content, another object
	for range 3 {
		if v, err := m.Get(a, derive(a)); err != nil || v != "a" {
			t.Fatalf("Get(a) = %v, %v", v, err)
		}
	}
	if derived != 1 {
		t.Fatalf("derived %d times for one object, want 1", derived)
	}
	if _, err := m.Get(same, derive(same)); err != nil || derived != 2 {
		t.Fatalf("another object with the same content: derived %d times, err %v; want 2 (by identity)", derived, err)
	}

	// An error is returned, not remembered.
	b := obj("v1", "ConfigMap", "shop", "b", nil)
	boom := errors.New("boom")
	if _, err := m.Get(b, func() (any, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if v, err := m.Get(b, derive(b)); err != nil || v != "b" {
		t.Fatalf("after an error: Get(b) = %v, %v", v, err)
	}

	// Bounded: past memoLimit values it starts over, and still answers
	// right.
	objs := make([]*unstructured.Unstructured, memoLimit+10)
	for i := range objs {
		objs[i] = obj("v1", "ConfigMap", "shop", fmt.Sprint(i), nil)
		if v, err := m.Get(objs[i], derive(objs[i])); err != nil || v != fmt.Sprint(i) {
			t.Fatalf("Get(%d) = %v, %v", i, v, err)
		}
	}
	if n := len(m.values); n > memoLimit {
		t.Fatalf("%d values held, limit %d", n, memoLimit)
	}
	if v, err := m.Get(objs[0], derive(objs[0])); err != nil || v != "0" {
		t.Fatalf("after starting over: Get(0) = %v, %v", v, err)
	}
}

// TestMemoConcurrent: many goroutines on the same objects get each
// object's value (run with -race).
func TestMemoConcurrent(t *testing.T) {
	var m Memo
	objs := make([]*unstructured.Unstructured, 20)
	for i := range objs {
		objs[i] = obj("v1", "ConfigMap", "shop", fmt.Sprint(i), nil)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for round := range 50 {
				o := objs[round%len(objs)]
				v, err := m.Get(o, func() (any, error) { return o.GetName(), nil })
				if err != nil || v != o.GetName() {
					errs <- fmt.Errorf("Get(%s) = %v, %v", o.GetName(), v, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestCollectWithMemoIsCollect: a Collector with a Memo collects what one
// without does, built-in (presented typed) and custom resource params, on
// every request, and follows a param replaced by a changed copy.
func TestCollectWithMemoIsCollect(t *testing.T) {
	ctx := context.Background()
	src := NewMemory(
		obj("v1", "ConfigMap", "shop", "defaults", map[string]any{"tier": "a"}),
		obj("v1", "ConfigMap", "shop", "other", map[string]any{"tier": "a"}),
		obj("example.com/v1", "Setting", "", "global", map[string]any{"tier": "a"}),
	)
	plain := &Collector{Source: src, Scopes: scopes{configMapGVK: true, settingGVK: false}, Scheme: scheme.New()}
	memo := *plain
	memo.Memo = new(Memo)
	selector := &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "a"}}}
	cases := []struct {
		name string
		kind *admissionregistrationv1.ParamKind
		ref  *admissionregistrationv1.ParamRef
	}{
		{"built-in by selector", &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}, selector},
		{"built-in by name", &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}, &admissionregistrationv1.ParamRef{Name: "defaults"}},
		{"custom resource", &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "Setting"}, &admissionregistrationv1.ParamRef{Name: "global"}},
	}
	collect := func(t *testing.T, c *Collector, kind *admissionregistrationv1.ParamKind, ref *admissionregistrationv1.ParamRef) []Param {
		t.Helper()
		ps, err := c.Collect(ctx, kind, ref, "shop")
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 0 {
			t.Fatal("no params")
		}
		return ps
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := collect(t, plain, tc.kind, tc.ref)
			for round := range 3 {
				if got := collect(t, &memo, tc.kind, tc.ref); !reflect.DeepEqual(got, want) {
					t.Fatalf("round %d: with a Memo\n%+v\nwithout\n%+v", round, got, want)
				}
			}
		})
	}

	// A changed param is a new object: the Memo presents it anew.
	changed := obj("v1", "ConfigMap", "shop", "defaults", map[string]any{"tier": "a"})
	changed.Object["data"] = map[string]any{"k": "changed"}
	src.Put(changed)
	kind := cases[1].kind
	got := collect(t, &memo, kind, cases[1].ref)
	if data := got[0].Object["data"].(map[string]any)["k"]; data != "changed" {
		t.Fatalf("after Put of a changed copy: data.k = %v", data)
	}
	if want := collect(t, plain, kind, cases[1].ref); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the change: with a Memo\n%+v\nwithout\n%+v", got, want)
	}
}
