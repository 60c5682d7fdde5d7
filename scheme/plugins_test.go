package scheme

import (
	"context"
	"errors"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// TestAdmitPlugins: the Priority and DefaultTolerationSeconds plugins of
// kube-apiserver's default chain, as a Pod CREATE meets them before MAP.
func TestAdmitPlugins(t *testing.T) {
	s := New()
	if err := s.AddPriorityClass(obj(t, `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high"},"value":1000,"preemptionPolicy":"Never"}`)); err != nil {
		t.Fatal(err)
	}
	podKind := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	req := Request{Operation: admission.Create, Kind: podKind, Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "ns", Name: "p"}
	u := &user.DefaultInfo{Name: "admin"}
	admit := func(pod string) (map[string]any, error) {
		decoded, _, err := s.DecodeRequest(obj(t, pod), podKind)
		if err != nil {
			t.Fatal(err)
		}
		return s.AdmitPlugins(context.Background(), req, decoded, nil, u, false)
	}
	spec := func(o map[string]any) map[string]any { return o["spec"].(map[string]any) }

	got, err := admit(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"c","image":"i"}],
		"tolerations":[{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":10}]}}`)
	if err != nil {
		t.Fatal(err)
	}
	if p, pp := spec(got)["priority"], spec(got)["preemptionPolicy"]; p != int64(0) || pp != "PreemptLowerPriority" {
		t.Errorf("priority %v, preemptionPolicy %v; want 0, PreemptLowerPriority (no default PriorityClass)", p, pp)
	}
	// The pod's own unreachable toleration stays; not-ready is added.
	want := []any{
		map[string]any{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": int64(10)},
		map[string]any{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": int64(300)},
	}
	if tol := spec(got)["tolerations"]; !reflect.DeepEqual(tol, want) {
		t.Errorf("tolerations %v, want %v", tol, want)
	}

	got, err = admit(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"priorityClassName":"high","containers":[{"name":"c","image":"i"}]}}`)
	if err != nil {
		t.Fatal(err)
	}
	if p, pp := spec(got)["priority"], spec(got)["preemptionPolicy"]; p != int64(1000) || pp != "Never" {
		t.Errorf("priority %v, preemptionPolicy %v; want the PriorityClass's 1000, Never", p, pp)
	}

	_, err = admit(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"priorityClassName":"missing","containers":[{"name":"c","image":"i"}]}}`)
	var status *apierrors.StatusError
	if !errors.As(err, &status) || status.ErrStatus.Code != 403 || status.ErrStatus.Message != `pods "p" is forbidden: no PriorityClass with name missing was found` {
		t.Errorf("unknown priorityClassName: %v, want the Priority plugin's 403", err)
	}

	// Other kinds pass unchanged.
	cm := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"},"data":{"a":"b"}}`)
	cmReq := Request{Operation: admission.Create, Kind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "ns", Name: "c"}
	if got, err := s.AdmitPlugins(context.Background(), cmReq, cm, nil, u, false); err != nil || !reflect.DeepEqual(got, cm) {
		t.Errorf("ConfigMap: %v, %v", got, err)
	}
}
