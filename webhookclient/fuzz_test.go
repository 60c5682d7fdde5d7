package webhookclient

import (
	"bytes"
	"context"
	"testing"

	evanphx "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/scheme"
)

const fuzzUID = "0b4c6a3e-8a8e-4f44-9a39-1d2c0f1e2a77"

// FuzzAnswer feeds arbitrary bytes to what the client does with a
// webhook's answer: decoding it as an AdmissionReview (v1 or v1beta1, as
// the REST client decodes the body), kube-apiserver's checks, then the
// patch decoded, applied to a Pod, decoded into the Pod's type and
// defaulted. Nothing may panic; the input Pod must not change; a result
// must be deterministic and default to itself.
func FuzzAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"` + fuzzUID + `","allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscyIsInZhbHVlIjp7ImEiOiJiIn19XQ=="}}`,
		`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","response":{"uid":"x","allowed":true,"patch":"W3sib3AiOiJyZW1vdmUiLCJwYXRoIjoiL3NwZWMvY29udGFpbmVycy8wIn1d"}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"other","allowed":true}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"` + fuzzUID + `","allowed":false,"status":{"code":403,"message":"no"}}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"` + fuzzUID + `","allowed":true,"patchType":"JSONMergePatch","patch":"e30="}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{`,
		`{"kind":"AdmissionReview"}`,
		`not json`,
	} {
		f.Add([]byte(seed))
	}
	codec, err := reviewCodec()
	if err != nil {
		f.Fatal(err)
	}
	decoder := codec.SupportedMediaTypes()[0].Serializer
	s := scheme.New()
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		f.Fatal(err)
	}
	before := runtime.DeepCopyJSON(obj)
	kind := corev1.SchemeGroupVersion.WithKind("Pod")
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, into := range []runtime.Object{&admissionv1.AdmissionReview{}, &admissionv1beta1.AdmissionReview{}} {
			out, _, err := decoder.Decode(bytes.Clone(body), nil, into)
			if err != nil {
				continue
			}
			resp, err := verifyResponse(types.UID(fuzzUID), out)
			if err != nil || !resp.allowed || len(resp.patch) == 0 || resp.patchType != admissionv1.PatchTypeJSONPatch {
				if err == nil && !resp.allowed {
					_ = denied("w", resp.result)
				}
				continue
			}
			patch, err := evanphx.DecodePatch(resp.patch)
			if err != nil {
				continue
			}
			patched, k, err := ApplyPatch(context.Background(), s, obj, kind, patch)
			if !jsonvalue.Equal(obj, before) {
				t.Fatal("ApplyPatch modified its input")
			}
			if err != nil {
				continue
			}
			again, k2, err2 := ApplyPatch(context.Background(), s, obj, kind, patch)
			if err2 != nil || k2 != k || !jsonvalue.Equal(again, patched) {
				t.Fatalf("not deterministic: %v %v", err2, k2)
			}
			if !s.Recognizes(k) {
				continue
			}
			defaulted, err := s.Default(patched, k)
			if err != nil {
				continue
			}
			twice, err := s.Default(defaulted, k)
			if err != nil || !jsonvalue.SemanticEqual(twice, defaulted) {
				t.Fatalf("defaulting is not idempotent: %v", err)
			}
		}
	})
}
