package manifest

import (
	v1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mutatis-dev/mutatis/scheme"
)

// convertToV1 converts a v1alpha1 or v1beta1 MutatingAdmissionPolicy or
// binding (in) into its admissionregistration.k8s.io/v1 form (out) with
// kube-apiserver's own conversion functions (scheme.ConvertTyped, through
// the internal version), as the API server converts an object it stores
// and serves in another version. out shares nothing with in; its
// TypeMeta is admissionregistration.k8s.io/v1's.
func convertToV1(in, out runtime.Object, kind string) error {
	if err := scheme.ConvertTyped(in, out); err != nil {
		return err
	}
	out.GetObjectKind().SetGroupVersionKind(v1.SchemeGroupVersion.WithKind(kind))
	return nil
}
