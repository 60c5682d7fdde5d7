package load

import (
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const testUID = "0badcafe-0000-4000-8000-000000000001"

// answer is an allowed review for testUID with a two-operation patch by
// two invocations; edit changes it before it is encoded.
func answer(t *testing.T, edit func(*admissionv1.AdmissionReview)) []byte {
	t.Helper()
	pt := admissionv1.PatchTypeJSONPatch
	rv := &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Response: &admissionv1.AdmissionResponse{
			UID: types.UID(testUID), Allowed: true, PatchType: &pt,
			Patch:            []byte(`[{"op":"add","path":"/metadata/labels/a","value":"b"},{"op":"remove","path":"/spec/x"}]`),
			AuditAnnotations: map[string]string{"policies": "p1/b1,p2/b2[shop/cm]"},
		},
	}
	if edit != nil {
		edit(rv)
	}
	b, err := json.Marshal(rv)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVerifyAcceptsOnlyAllowedAnswersWithAPatchForTheRequest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		body   []byte
		expect Expect
		want   string // the Failure kind; "" for none
	}{
		{"an allowed answer with a patch passes", answer(t, nil), Expect{}, ""},
		{"the expected number of invocations passes", answer(t, nil), Expect{Policies: 2}, ""},
		{"another number of invocations fails", answer(t, nil), Expect{Policies: 20}, KindPolicies},
		{"no invocations when some are expected fails", answer(t, func(rv *admissionv1.AdmissionReview) { rv.Response.AuditAnnotations = nil }), Expect{Policies: 1}, KindPolicies},
		{"ignored errors fail", answer(t, func(rv *admissionv1.AdmissionReview) {
			rv.Response.AuditAnnotations["ignored-errors"] = "p3/b3"
		}), Expect{}, KindIgnoredErr},
		{"another uid fails", answer(t, func(rv *admissionv1.AdmissionReview) { rv.Response.UID = "someone-else" }), Expect{}, KindUIDEchoed},
		{"a denial fails", answer(t, func(rv *admissionv1.AdmissionReview) {
			rv.Response.Allowed = false
			rv.Response.Result = &metav1.Status{Code: 403, Message: "denied by p1"}
		}), Expect{}, KindDenied},
		{"no patch fails", answer(t, func(rv *admissionv1.AdmissionReview) { rv.Response.Patch, rv.Response.PatchType = nil, nil }), Expect{}, KindNoPatch},
		{"a patch without patchType fails", answer(t, func(rv *admissionv1.AdmissionReview) { rv.Response.PatchType = nil }), Expect{}, KindNoPatch},
		{"an empty patch fails", answer(t, func(rv *admissionv1.AdmissionReview) { rv.Response.Patch = []byte(`[]`) }), Expect{}, KindNoPatch},
		{"a patch that is no list of operations fails", answer(t, func(rv *admissionv1.AdmissionReview) { rv.Response.Patch = []byte(`{"op":"add"}`) }), Expect{}, KindBadPatch},
		{"an operation without a path fails", answer(t, func(rv *admissionv1.AdmissionReview) { rv.Response.Patch = []byte(`[{"op":"add","value":1}]`) }), Expect{}, KindBadPatch},
		{"no response fails", answer(t, func(rv *admissionv1.AdmissionReview) { rv.Response = nil }), Expect{}, KindBadAnswer},
		{"another version fails", answer(t, func(rv *admissionv1.AdmissionReview) { rv.APIVersion = "admission.k8s.io/v1beta1" }), Expect{}, KindBadAnswer},
		{"a body that is not JSON fails", []byte("<html>"), Expect{}, KindBadAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.expect.Verify(tc.body, testUID)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Verify: %v", err)
			case tc.want != "" && KindOf(err) != tc.want:
				t.Errorf("Verify = %v, want a %q failure", err, tc.want)
			}
		})
	}
}

func TestCountPoliciesCountsTheInvocations(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		want        int
	}{
		{nil, 0},
		{map[string]string{"policies": ""}, 0},
		{map[string]string{"policies": "a/a"}, 1},
		{map[string]string{"policies": "a/a,b/b[ns/p],c/c"}, 3},
	} {
		if got := CountPolicies(tc.annotations); got != tc.want {
			t.Errorf("CountPolicies(%v) = %d, want %d", tc.annotations, got, tc.want)
		}
	}
}
