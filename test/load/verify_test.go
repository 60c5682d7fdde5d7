package load

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// answerFor is answer(t, edit) for the request uid.
func answerFor(t *testing.T, uid string, edit func(*admissionv1.AdmissionReview)) []byte {
	t.Helper()
	return answer(t, func(rv *admissionv1.AdmissionReview) {
		rv.Response.UID = types.UID(uid)
		if edit != nil {
			edit(rv)
		}
	})
}

// sameOutcome fails unless answers.verify and Expect.Verify agree on
// body: both accept it, or both refuse it with a failure of the same kind.
func sameOutcome(t *testing.T, a *answers, e Expect, body []byte, uid, what string) {
	t.Helper()
	got, want := a.verify(e, body, uid), e.Verify(body, uid)
	if (got == nil) != (want == nil) || (want != nil && KindOf(got) != KindOf(want)) {
		t.Errorf("%s: answers.verify = %v, Expect.Verify = %v", what, got, want)
	}
}

func TestAnswersAcceptWhatVerifyAccepts(t *testing.T) {
	const other = "0badcafe-0000-4000-8000-000000000002"
	e := Expect{Policies: 2}
	var a answers
	sameOutcome(t, &a, e, answer(t, nil), testUID, "the first answer")
	if a.last.Load() == nil {
		t.Fatal("an accepted answer without escapes was not remembered")
	}
	// Answers equal to the remembered one but for the uid.
	sameOutcome(t, &a, e, answerFor(t, other, nil), other, "the same answer for another request")
	sameOutcome(t, &a, e, answerFor(t, other, nil), testUID, "another request's answer")
	sameOutcome(t, &a, e, answer(t, nil), other, "the first answer for another request")
	sameOutcome(t, &a, Expect{Policies: 3}, answerFor(t, other, nil), other, "another Expect")
	sameOutcome(t, &a, Expect{}, answerFor(t, other, nil), other, "another Expect that accepts it")
	for _, uid := range []string{"", `a"b`, `a\u0062`, "ü", other + " "} {
		sameOutcome(t, &a, e, answerFor(t, uid, nil), uid, fmt.Sprintf("uid %q", uid))
	}
	// Every answer one byte away from the remembered one's for another
	// uid, and every cut of it.
	good := answerFor(t, other, nil)
	for i := range good {
		for _, c := range []byte{'"', '\\', '0', 'x', ' ', '}', good[i] ^ 1} {
			b := bytes.Clone(good)
			b[i] = c
			sameOutcome(t, &a, e, b, other, fmt.Sprintf("byte %d set to %q", i, c))
		}
		sameOutcome(t, &a, e, good[:i], other, fmt.Sprintf("the first %d bytes", i))
		sameOutcome(t, &a, e, append(bytes.Clone(good[:i]), good[i+1:]...), other, fmt.Sprintf("byte %d left out", i))
	}
	// Answers that are wrong in each way Verify checks, after a right one.
	for _, edit := range []func(*admissionv1.AdmissionReview){
		func(rv *admissionv1.AdmissionReview) { rv.Response.Allowed = false },
		func(rv *admissionv1.AdmissionReview) { rv.Response.Patch = []byte(`[]`) },
		func(rv *admissionv1.AdmissionReview) { rv.Response.Patch = []byte(`[{"op":"add","value":1}]`) },
		func(rv *admissionv1.AdmissionReview) { rv.Response.PatchType = nil },
		func(rv *admissionv1.AdmissionReview) { rv.Response.AuditAnnotations["ignored-errors"] = "p3/b3" },
		func(rv *admissionv1.AdmissionReview) { rv.Response.AuditAnnotations["policies"] = "p1/b1" },
		func(rv *admissionv1.AdmissionReview) { rv.APIVersion = "admission.k8s.io/v1beta1" },
		func(rv *admissionv1.AdmissionReview) { rv.Response.UID = testUID },
	} {
		sameOutcome(t, &a, e, answer(t, nil), testUID, "a right answer")
		body := answerFor(t, other, edit)
		if err := a.verify(e, body, other); err == nil {
			t.Errorf("a wrong answer was accepted: %s", body)
		}
	}
}

func TestAnswersRememberOnlyAnswersTheShortcutHolds(t *testing.T) {
	e := Expect{}
	for _, tc := range []struct {
		name string
		body []byte
		uid  string
	}{
		{"an escape in the answer", answer(t, func(rv *admissionv1.AdmissionReview) { rv.Response.AuditAnnotations["note"] = `a "quoted" word` }), testUID},
		{"the uid twice", answer(t, func(rv *admissionv1.AdmissionReview) { rv.Response.AuditAnnotations["note"] = testUID }), testUID},
		{"a uid with other characters", answerFor(t, "a.b", nil), "a.b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a answers
			if err := a.verify(e, tc.body, tc.uid); err != nil {
				t.Fatal(err)
			}
			if v := a.last.Load(); v != nil {
				t.Errorf("remembered %q + uid + %q", v.prefix, v.suffix)
			}
		})
	}
}
