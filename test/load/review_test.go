package load

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

func TestReviewsDifferOnlyInTheUID(t *testing.T) {
	obj, err := ReadObject(context.Background(), "testdata/pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReviews(obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for seq := range 1000 {
		uid := r.UID(seq)
		if seen[uid] {
			t.Fatalf("uid %s repeats at %d", uid, seq)
		}
		seen[uid] = true
	}
	body := r.Body(r.UID(42))
	if len(body) != r.Size() {
		t.Errorf("body of %d bytes, Size() = %d", len(body), r.Size())
	}
	var rv admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &rv); err != nil {
		t.Fatal(err)
	}
	req := rv.Request
	switch {
	case rv.APIVersion != "admission.k8s.io/v1" || rv.Kind != "AdmissionReview" || req == nil:
		t.Fatalf("not a v1 AdmissionReview request: %s", body)
	case string(req.UID) != r.UID(42):
		t.Errorf("uid %q, want %q", req.UID, r.UID(42))
	case req.Operation != admissionv1.Create || req.Kind.Kind != "Pod" || req.Resource.Resource != "pods" || req.Namespace != "shop" || req.Name != "checkout-7d9c8b6f5-x2k4q":
		t.Errorf("request %s %v %v %s/%s, want a CREATE of pods shop/checkout-7d9c8b6f5-x2k4q", req.Operation, req.Kind, req.Resource, req.Namespace, req.Name)
	case req.UserInfo.Username != DefaultUser().GetName():
		t.Errorf("user %q", req.UserInfo.Username)
	}
	var pod map[string]any
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil || pod["kind"] != "Pod" {
		t.Errorf("object %s: %v", req.Object.Raw, err)
	}
}

func TestUIDIsTheFormattedRunAndSeq(t *testing.T) {
	for _, run := range []uint32{0, 1, 0xdeadbeef, 0xffffffff} {
		r := &Reviews{run: run}
		for _, seq := range []int{0, 1, 15, 16, 42, 1 << 20, 1<<48 - 1, 1 << 48, 1<<48 + 7, math.MaxInt} {
			if got, want := r.UID(seq), fmt.Sprintf("%08x-0000-4000-8000-%012x", run, uint64(seq)&(1<<48-1)); got != want {
				t.Errorf("run %#x seq %d: UID = %q, want %q", run, seq, got, want)
			}
		}
	}
}
