package webhookclient

import (
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme"
)

// ReviewBody is the AdmissionReview JSON kube-apiserver would send for a
// (`mutatis review`'s body): admission.k8s.io/version, a new uid, the
// request's own resource and kind, and objects of built-in kinds as their
// Go types encode (s.Normalize).
func ReviewBody(s *scheme.Scheme, a *matching.Attributes, version string) ([]byte, error) {
	raw := func(u map[string]any) (runtime.RawExtension, error) {
		if u == nil {
			return runtime.RawExtension{}, nil
		}
		n, err := s.Normalize(u, a.Kind)
		if err != nil {
			return runtime.RawExtension{}, err
		}
		b, err := json.Marshal(n)
		return runtime.RawExtension{Raw: b}, err
	}
	var err error
	req := a.AdmissionRequest(a.Resource, a.Kind)
	req.UID = uuid.NewUUID()
	if a.Object != nil {
		if req.Object, err = raw(a.Object.Object); err != nil {
			return nil, err
		}
	}
	if a.OldObject != nil {
		if req.OldObject, err = raw(a.OldObject.Object); err != nil {
			return nil, err
		}
	}
	return json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/" + version, Kind: "AdmissionReview"},
		Request:  req,
	})
}
