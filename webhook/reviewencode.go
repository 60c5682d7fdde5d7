package webhook

import (
	"encoding/base64"
	"slices"
	"strconv"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// encodeReview is the JSON of the AdmissionReview answering r with resp:
// encodeReviewReference's bytes, written directly into one buffer of
// their size (appendReview) when resp carries no Status and its strings
// need no escaping, as an admission's do.
func encodeReview(apiVersion string, resp *admissionv1.AdmissionResponse) ([]byte, error) {
	return appendEncodedReview(nil, apiVersion, resp)
}

// appendEncodedReview is encodeReview written into dst's memory (from
// dst[:0]) when appendReview writes it; nil dst for a buffer of its own.
func appendEncodedReview(dst []byte, apiVersion string, resp *admissionv1.AdmissionResponse) ([]byte, error) {
	if out, ok := appendReview(dst, apiVersion, resp); ok {
		return out, nil
	}
	return encodeReviewReference(apiVersion, resp)
}

// encodeReviewReference is encodeReview as encoding/json writes it.
func encodeReviewReference(apiVersion string, resp *admissionv1.AdmissionResponse) ([]byte, error) {
	return jsonvalue.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: reviewKind},
		Response: resp,
	})
}

// maxSortedAnnotations is the most audit annotations appendReview sorts
// on the stack (there are three keys at most).
const maxSortedAnnotations = 8

// appendReview writes the AdmissionReview of resp as encoding/json
// would: the fields in their declaration order, empty ones omitted, the
// patch in base64, the annotations by key; ok=false when resp has a
// Status or a string that is not plain (plainJSON). The bytes are written
// from dst[:0], in its memory when it has room for them.
func appendReview(dst []byte, apiVersion string, resp *admissionv1.AdmissionResponse) (out []byte, ok bool) {
	if resp.Result != nil || !plainJSON(apiVersion) || !plainJSON(string(resp.UID)) ||
		resp.PatchType != nil && !plainJSON(string(*resp.PatchType)) || len(resp.AuditAnnotations) > maxSortedAnnotations {
		return nil, false
	}
	n := len(`{"kind":"AdmissionReview","apiVersion":"","response":{"uid":"","allowed":false,"patch":"","patchType":"","auditAnnotations":{},"warnings":[]}}`) +
		len(apiVersion) + len(resp.UID) + base64.StdEncoding.EncodedLen(len(resp.Patch))
	if resp.PatchType != nil {
		n += len(*resp.PatchType)
	}
	var keys [maxSortedAnnotations]string
	nk := 0
	for k, v := range resp.AuditAnnotations {
		if !plainJSON(k) || !plainJSON(v) {
			return nil, false
		}
		keys[nk] = k
		nk++
		n += len(k) + len(v) + len(`"":"",`)
	}
	for _, w := range resp.Warnings {
		if !plainJSON(w) {
			return nil, false
		}
		n += len(w) + len(`"",`)
	}
	b := dst[:0]
	if cap(b) < n {
		b = make([]byte, 0, n)
	}
	b = append(b, `{"kind":"AdmissionReview","apiVersion":"`...)
	b = append(b, apiVersion...)
	b = append(b, `","response":{"uid":"`...)
	b = append(b, resp.UID...)
	b = append(b, `","allowed":`...)
	b = strconv.AppendBool(b, resp.Allowed)
	if len(resp.Patch) > 0 {
		b = append(b, `,"patch":"`...)
		b = base64.StdEncoding.AppendEncode(b, resp.Patch)
		b = append(b, '"')
	}
	if resp.PatchType != nil {
		b = append(b, `,"patchType":"`...)
		b = append(b, *resp.PatchType...)
		b = append(b, '"')
	}
	if nk > 0 {
		sorted := keys[:nk]
		slices.Sort(sorted)
		b = append(b, `,"auditAnnotations":{`...)
		for i, k := range sorted {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, k...)
			b = append(b, `":"`...)
			b = append(b, resp.AuditAnnotations[k]...)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	if len(resp.Warnings) > 0 {
		b = append(b, `,"warnings":[`...)
		for i, w := range resp.Warnings {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, w...)
			b = append(b, '"')
		}
		b = append(b, ']')
	}
	return append(b, "}}"...), true
}

// plainJSON tells whether s is written in JSON as it is, between quotes:
// printable ASCII but '"' and '\'.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
