package load

import (
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/mutatis-dev/mutatis/webhook"
)

// Expect is what every answer must be. The zero Expect asks for an
// allowed admission.k8s.io/v1 review with the request's uid and a
// non-empty JSON patch.
type Expect struct {
	// Policies, when positive, is the number of invocations the
	// "policies" audit annotation must list (webhook.AnnotationPolicies):
	// with the fixture's 20 matching policies, 20.
	Policies int
}

// Verify checks the body of an HTTP 200 answer to the review with uid.
// The error is a *Failure whose kind says what was wrong.
func (e Expect) Verify(body []byte, uid string) error {
	var rv admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &rv); err != nil {
		return &Failure{Kind: KindBadAnswer, Detail: "not JSON", Err: err}
	}
	switch {
	case rv.APIVersion != admissionv1.SchemeGroupVersion.String() || rv.Kind != "AdmissionReview":
		return &Failure{Kind: KindBadAnswer, Detail: fmt.Sprintf("apiVersion %q kind %q", rv.APIVersion, rv.Kind)}
	case rv.Response == nil:
		return &Failure{Kind: KindBadAnswer, Detail: "no response"}
	}
	resp := rv.Response
	if string(resp.UID) != uid {
		return &Failure{Kind: KindUIDEchoed, Detail: fmt.Sprintf("uid %q, want %q", resp.UID, uid)}
	}
	if !resp.Allowed {
		msg := "no status"
		if resp.Result != nil {
			msg = fmt.Sprintf("%d %s", resp.Result.Code, resp.Result.Message)
		}
		return &Failure{Kind: KindDenied, Detail: msg}
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch || len(resp.Patch) == 0 {
		return &Failure{Kind: KindNoPatch}
	}
	var ops []struct {
		Op   string `json:"op"`
		Path string `json:"path"`
	}
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		return &Failure{Kind: KindBadPatch, Detail: "not a JSON array of operations", Err: err}
	}
	if len(ops) == 0 {
		return &Failure{Kind: KindNoPatch, Detail: "empty patch"}
	}
	for i, op := range ops {
		if op.Op == "" || (op.Path == "" && op.Op != "test") {
			return &Failure{Kind: KindBadPatch, Detail: fmt.Sprintf("operation %d has no op or path", i)}
		}
	}
	if ignored := resp.AuditAnnotations[webhook.AnnotationIgnoredErrors]; ignored != "" {
		return &Failure{Kind: KindIgnoredErr, Detail: ignored}
	}
	if e.Policies > 0 {
		if got := CountPolicies(resp.AuditAnnotations); got != e.Policies {
			return &Failure{Kind: KindPolicies, Detail: fmt.Sprintf("%d invocations applied, want %d", got, e.Policies)}
		}
	}
	return nil
}

// CountPolicies counts the invocations listed by the "policies" audit
// annotation (webhook.AnnotationPolicies).
func CountPolicies(annotations map[string]string) int {
	v := annotations[webhook.AnnotationPolicies]
	if v == "" {
		return 0
	}
	return strings.Count(v, ",") + 1
}
