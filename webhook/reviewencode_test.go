package webhook

import (
	"bytes"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// response is the AdmissionResponse of the encoder's tests: uid, patch,
// annotation values, warnings from the arguments (none when empty).
func response(uid string, patch []byte, allowed bool, values, warnings []string) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: types.UID(uid), Allowed: allowed, Patch: patch, Warnings: warnings}
	if patch != nil {
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
	}
	keys := []string{AnnotationPolicies, AnnotationIgnoredErrors, AnnotationReinvoke, "a", "Z", "policies2", "b", "c", "d"}
	for i, v := range values {
		if resp.AuditAnnotations == nil {
			resp.AuditAnnotations = map[string]string{}
		}
		resp.AuditAnnotations[keys[i%len(keys)]] = v
	}
	return resp
}

// checkEncodeReview fails t when encodeReview differs from encoding/json.
func checkEncodeReview(t *testing.T, apiVersion string, resp *admissionv1.AdmissionResponse) (direct bool) {
	t.Helper()
	got, err := encodeReview(apiVersion, resp)
	want, wantErr := encodeReviewReference(apiVersion, resp)
	if err != nil || wantErr != nil || !bytes.Equal(got, want) {
		t.Fatalf("%+v:\n got %s (%v)\nwant %s (%v)", resp, got, err, want, wantErr)
	}
	_, direct = appendReview(nil, apiVersion, resp)
	return direct
}

// TestEncodeReview holds encodeReview to encoding/json on admissions with
// and without patches, annotations and warnings, denials, and strings
// that need escaping, and requires which are written directly.
func TestEncodeReview(t *testing.T) {
	patch := []byte(`[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`)
	denied := response("u1", nil, false, nil, nil)
	denied.Result = &apierrors.NewForbidden(admissionv1.Resource("pods"), "p", nil).ErrStatus
	for _, tc := range []struct {
		apiVersion string
		resp       *admissionv1.AdmissionResponse
		direct     bool
	}{
		{"admission.k8s.io/v1", response("u1", nil, true, nil, nil), true},
		{"admission.k8s.io/v1beta1", response("u1", patch, true, []string{"p/b,q/c", "", "true"}, nil), true},
		{"admission.k8s.io/v1", response("", []byte{}, true, nil, []string{}), true},
		{"admission.k8s.io/v1", response("u1", []byte{0, 1, 2, 0xff, 0xfe}, false, []string{"1", "2", "3", "4", "5", "6", "7", "8"}, []string{"w1", "", "w <&> 3"}), true},
		{"admission.k8s.io/v1", response("u1", patch, true, []string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}, nil), false},
		{"admission.k8s.io/v1", denied, false},
		{"admission.k8s.io/v1", response(`u"1`, nil, true, nil, nil), false},
		{"admission.k8s.io/v1", response("u1", nil, true, []string{"a\\b"}, nil), false},
		{"admission.k8s.io/v1", response("u1", nil, true, []string{"é"}, nil), false},
		{"admission.k8s.io/v1", response("u1", nil, true, nil, []string{"mutatis: pass 1: p/b: error: \"x\"\n"}), false},
		{"admission.k8s.io/v1", response("u1", nil, true, nil, []string{"\u2028", "\xff", "\x7f"}), false},
	} {
		if direct := checkEncodeReview(t, tc.apiVersion, tc.resp); direct != tc.direct {
			t.Errorf("%+v: written directly %v, want %v", tc.resp, direct, tc.direct)
		}
	}
}

// FuzzEncodeReview holds encodeReview to encoding/json on any strings.
func FuzzEncodeReview(f *testing.F) {
	f.Add("u1", []byte("[]"), true, "p/b", "true", "w")
	f.Add("", []byte(nil), false, "", "\x00é\u2028", "\"\\<>&")
	f.Fuzz(func(t *testing.T, uid string, patch []byte, allowed bool, v1, v2, w string) {
		checkEncodeReview(t, "admission.k8s.io/v1", response(uid, patch, allowed, []string{v1, v2}, []string{w, v1}))
		checkEncodeReview(t, "admission.k8s.io/v1beta1", response(uid, nil, allowed, []string{v2}, nil))
	})
}

// BenchmarkEncodeReview encodes an admission with a patch and two audit
// annotations, directly and with encoding/json.
func BenchmarkEncodeReview(b *testing.B) {
	patch := bytes.Repeat([]byte(`{"op":"add","path":"/metadata/labels/a","value":"b"},`), 20)
	resp := response("705ab4f5-6393-11e8-b7cc-42010a800002", patch, true, []string{"p/b,q/c,r/d", "", "true"}, nil)
	for _, impl := range []struct {
		name string
		f    func(string, *admissionv1.AdmissionResponse) ([]byte, error)
	}{{"direct", encodeReview}, {"reference", encodeReviewReference}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := impl.f("admission.k8s.io/v1", resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
