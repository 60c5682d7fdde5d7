package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

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

// verifiedAnswer is an answer Expect.Verify accepted for uid, cut around
// that uid: prefix and suffix are the rest of its bytes.
type verifiedAnswer struct {
	expect         Expect
	prefix, suffix []byte
}

// answers remembers the last answer Expect.Verify accepted, so that an
// answer equal to it byte for byte but for the uid is accepted without
// decoding it again: under load every answer is the same but for the uid,
// and the generator shares the cores with the server it measures. It is
// safe for concurrent use; the zero answers remembers nothing.
//
// The shortcut accepts exactly what Verify accepts (TestAnswersAcceptWhatVerifyAccepts):
// an answer is remembered only when Verify accepted it, it holds no
// backslash (so no JSON string in it has an escape) and uid occurs in it
// once. The response's uid, which Verify found equal to uid, is then that
// one occurrence, a JSON string token of its own. Another answer equal to
// it but for a uid of letters, digits and dashes in that place decodes to
// the same review but for the response's uid, which is its request's, so
// Verify would accept it too. Any other answer is verified in full.
type answers struct {
	last atomic.Pointer[verifiedAnswer]
}

// verify is e.Verify(body, uid), shortened for an answer equal but for
// the uid to the last one it accepted.
func (a *answers) verify(e Expect, body []byte, uid string) error {
	if v := a.last.Load(); v != nil && v.expect == e && v.matches(body, uid) {
		return nil
	}
	if err := e.Verify(body, uid); err != nil {
		return err
	}
	if v, ok := cutAnswer(e, body, uid); ok {
		a.last.Store(v)
	}
	return nil
}

// cutAnswer cuts body, which e.Verify accepted for uid, around uid when
// the shortcut of answers applies to it.
func cutAnswer(e Expect, body []byte, uid string) (*verifiedAnswer, bool) {
	if !plainUID(uid) || bytes.IndexByte(body, '\\') >= 0 || bytes.Count(body, []byte(uid)) != 1 {
		return nil, false
	}
	prefix, suffix, _ := bytes.Cut(body, []byte(uid))
	if !bytes.HasSuffix(prefix, []byte(`"`)) || !bytes.HasPrefix(suffix, []byte(`"`)) {
		return nil, false
	}
	return &verifiedAnswer{expect: e, prefix: bytes.Clone(prefix), suffix: bytes.Clone(suffix)}, true
}

// matches tells whether body is v's answer with uid in place of its own.
func (v *verifiedAnswer) matches(body []byte, uid string) bool {
	n := len(v.prefix)
	return plainUID(uid) && len(body) == n+len(uid)+len(v.suffix) &&
		bytes.HasPrefix(body, v.prefix) && string(body[n:n+len(uid)]) == uid && bytes.HasSuffix(body, v.suffix)
}

// plainUID tells whether uid is non-empty and only letters, digits and
// dashes (what Reviews.UID makes), which a JSON string holds as they are.
func plainUID(uid string) bool {
	if uid == "" {
		return false
	}
	for i := 0; i < len(uid); i++ {
		c := uid[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-') {
			return false
		}
	}
	return true
}
