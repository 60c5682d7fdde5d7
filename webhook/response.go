package webhook

import (
	"errors"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// Audit annotation keys of a response. kube-apiserver records them in the
// audit event prefixed with the webhook's name, e.g.
// "mutatis.mutatis.dev/policies".
const (
	// AnnotationPolicies lists the invocations that ran without error, as
	// "policy/binding" (with "[namespace/name]" of the param when there is
	// one), comma-separated, in evaluation order, each once.
	AnnotationPolicies = "policies"
	// AnnotationIgnoredErrors lists the invocations that failed under
	// failurePolicy Ignore, in the same format.
	AnnotationIgnoredErrors = "ignored-errors"
	// AnnotationReinvoke is "true" when a policy changed the object in the
	// last pass: kube-apiserver's MAP plugin would then ask for the
	// reinvocation of the admission chain (chain.Result.Reinvoke). See
	// docs/webhook.md.
	AnnotationReinvoke = "reinvoke"
)

// RespondOptions adjust Respond.
type RespondOptions struct {
	// Explain puts a summary of the evaluation trace into the warnings.
	Explain bool
}

// Respond builds the AdmissionResponse for req from the engine's answer:
// a denial carries the engine's Status (code, reason, message, causes);
// an admission carries the JSON patch (RFC 6902) that turns the request's
// object into res.Object. The patch is checked by applying it to the
// request's object with evanphx/json-patch v4's semantics, as kube-apiserver
// does (see jsonpatch.CreatePatch); an error means no correct patch could be made.
func Respond(req *admissionv1.AdmissionRequest, res chain.Result, admitErr error, o RespondOptions) (*admissionv1.AdmissionResponse, error) {
	return respond(req, nil, res, admitErr, o)
}

// respond is Respond; original, when not nil, is the request object's JSON
// decoded with sigsjson.UnmarshalCaseSensitivePreserveInts and never
// modified since (the Reviewer's decoding, which the engine only reads):
// the patch is diffed from it instead of decoding the JSON again, and it
// shares its unchanged maps with res.Object, so the diff need not walk
// them.
func respond(req *admissionv1.AdmissionRequest, original map[string]any, res chain.Result, admitErr error, o RespondOptions) (*admissionv1.AdmissionResponse, error) {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if admitErr != nil {
		// A failure of the evaluator itself: kube-apiserver would fail the
		// request with this status (an internal error unless the error
		// carries one).
		resp.Allowed = false
		resp.Result = statusOf(admitErr)
		return resp, nil
	}
	if o.Explain {
		resp.Warnings = Explain(res)
	}
	resp.AuditAnnotations = auditAnnotations(res)
	if res.Denied != nil {
		resp.Allowed = false
		st := res.Denied.ErrStatus
		resp.Result = &st
		return resp, nil
	}
	if res.Object == nil || len(req.Object.Raw) == 0 || !ranMutations(res) {
		// Without a mutation the engine's object is the request's, only
		// presented through its Go type: no patch, so that a field this
		// build's types do not know (a newer API server) is never removed.
		return resp, nil
	}
	patch, err := jsonpatch.CreatePatch(req.Object.Raw, original, res.Object)
	if err != nil {
		return nil, err
	}
	if len(patch) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &pt
	}
	return resp, nil
}

// ranMutations tells whether any invocation ran mutations.
func ranMutations(res chain.Result) bool {
	for _, inv := range res.Invocations {
		if inv.Ran() && len(inv.Mutations) > 0 {
			return true
		}
	}
	return false
}

func statusOf(err error) *metav1.Status {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return &s
	}
	s := apierrors.NewInternalError(err).ErrStatus
	return &s
}

// auditAnnotations names the invocations that ran, those whose errors
// were ignored, and whether the chain would be reinvoked.
func auditAnnotations(res chain.Result) map[string]string {
	type seenKey struct {
		ignored                bool
		policy, binding, param string
	}
	var applied, ignored strings.Builder
	var seen map[seenKey]struct{}
	add := func(b *strings.Builder, inv *chain.Invocation, isIgnored bool) {
		k := seenKey{isIgnored, inv.Configuration, inv.Hook, inv.Param}
		if _, ok := seen[k]; ok {
			return
		}
		if seen == nil {
			seen = make(map[seenKey]struct{}, len(res.Invocations))
		}
		seen[k] = struct{}{}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(inv.Configuration)
		b.WriteByte('/')
		b.WriteString(inv.Hook)
		if inv.Param != "" {
			b.WriteByte('[')
			b.WriteString(inv.Param)
			b.WriteByte(']')
		}
	}
	for i := range res.Invocations {
		inv := &res.Invocations[i]
		switch {
		case inv.Err != nil && res.Denied == nil:
			add(&ignored, inv, true)
		case inv.Err == nil && inv.Ran() && inv.Hook != "":
			add(&applied, inv, false)
		}
	}
	if applied.Len() == 0 && ignored.Len() == 0 && !res.Reinvoke {
		return nil
	}
	out := make(map[string]string, 3)
	if applied.Len() > 0 {
		out[AnnotationPolicies] = applied.String()
	}
	if ignored.Len() > 0 {
		out[AnnotationIgnoredErrors] = ignored.String()
	}
	if res.Reinvoke {
		out[AnnotationReinvoke] = "true"
	}
	return out
}

// maxWarningLength keeps each warning within what kube-apiserver passes on
// untruncated.
const maxWarningLength = 256

// Explain summarizes the trace of res as warnings, one per invocation,
// each prefixed "mutatis:" and at most 256 characters long.
func Explain(res chain.Result) []string {
	var out []string
	if len(res.Invocations) == 0 {
		return []string{"mutatis: no policy binding matched the request"}
	}
	for _, inv := range res.Invocations {
		who := inv.Configuration
		if inv.Hook != "" {
			who += "/" + inv.Hook
		}
		if inv.Param != "" {
			who += "[" + inv.Param + "]"
		}
		var what string
		switch {
		case inv.Err != nil:
			what = "error: " + inv.Err.Error()
		case !inv.Ran():
			what = "skipped: " + inv.SkipMessage()
		default:
			var cost int64
			dropped := 0
			for _, m := range inv.Mutations {
				cost += m.Cost
				if m.Skipped {
					dropped++
				}
			}
			what = fmt.Sprintf("applied %d mutation(s), runtime cost %d", len(inv.Mutations), cost)
			if dropped > 0 {
				what += fmt.Sprintf(", %d dropped by a failed JSON patch test", dropped)
			}
		}
		out = append(out, truncate(fmt.Sprintf("mutatis: pass %d: %s: %s", inv.Round+1, who, what), maxWarningLength))
	}
	if res.Reinvoke {
		out = append(out, "mutatis: the admission chain would be reinvoked")
	}
	return out
}

func truncate(s string, n int) string {
	// Warnings travel in HTTP headers: no line breaks.
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	cut := n - len("…")
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
