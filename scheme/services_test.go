package scheme

import (
	"context"
	"net/netip"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// TestValidateService: a Service goes through its registry's BeginCreate
// (IP families, clusterIPs, allocations) before the strategy, as in
// genericregistry.Store.Create; without it every Service would be refused
// with "spec.clusterIPs: Required value".
func TestValidateService(t *testing.T) {
	s := New()
	kind := schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	req := Request{Operation: admission.Create, Kind: kind, Resource: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Namespace: "ns", Name: "svc"}
	store := func(svc string) map[string]any {
		t.Helper()
		decoded, _, err := s.DecodeRequest(obj(t, svc), kind)
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.Validate(context.Background(), req, decoded, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v.Invalid != nil {
			t.Fatalf("refused: %v", v.Invalid)
		}
		return v.Stored["spec"].(map[string]any)
	}

	headless := store(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc","namespace":"ns"},"spec":{"clusterIP":"None","selector":{"a":"b"},"ports":[{"port":80}]}}`)
	for k, want := range map[string]any{"clusterIPs": []any{"None"}, "ipFamilies": []any{"IPv4"}, "ipFamilyPolicy": "SingleStack"} {
		if got := headless[k]; !reflect.DeepEqual(got, want) {
			t.Errorf("headless: %s = %v, want %v", k, got, want)
		}
	}

	// An allocated IP is a free one of kube-apiserver's default range; a
	// node port is the dummy one of kube-apiserver's dry runs.
	np := store(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc","namespace":"ns"},"spec":{"type":"NodePort","selector":{"a":"b"},"ports":[{"port":80}]}}`)
	ip, err := netip.ParseAddr(np["clusterIP"].(string))
	if err != nil || !netip.MustParsePrefix("10.0.0.0/24").Contains(ip) || !reflect.DeepEqual(np["clusterIPs"], []any{np["clusterIP"]}) {
		t.Errorf("clusterIP %v, clusterIPs %v: want one IP of 10.0.0.0/24", np["clusterIP"], np["clusterIPs"])
	}
	if port := np["ports"].([]any)[0].(map[string]any)["nodePort"]; port != int64(32769) {
		t.Errorf("nodePort %v, want 32769 (portallocator's dry-run AllocateNext)", port)
	}
}
