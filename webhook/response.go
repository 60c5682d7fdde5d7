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
	return respond(req, nil, false, res, admitErr, o)
}

// respond is Respond; original, when not nil, is the request object's JSON
// decoded with sigsjson.UnmarshalCaseSensitivePreserveInts and never
// modified since (the Reviewer's decoding, which the engine only reads):
// the patch is diffed from it instead of decoding the JSON again, and it
// shares its unchanged maps with res.Object, so the diff need not walk
// them. normalized tells that original is jsonpatch.IsNormalized (the
// envelope's decoder saw to it): the patch's check then need not
// normalize it (jsonpatch.CreatePatchNormalized).
func respond(req *admissionv1.AdmissionRequest, original map[string]any, normalized bool, res chain.Result, admitErr error, o RespondOptions) (*admissionv1.AdmissionResponse, error) {
	return respondIn(nil, req, original, normalized, res, admitErr, o)
}

// respondIn is respond answering in s, a review's scratch (nil for memory
// of its own): the response is s's (valid until s is lent again), its
// patch written into s's buffer (jsonpatch.AppendPatch) and made in s's
// jsonpatch.Scratch (jsonpatch.AppendPatchIn).
func respondIn(s *reviewScratch, req *admissionv1.AdmissionRequest, original map[string]any, normalized bool, res chain.Result, admitErr error, o RespondOptions) (*admissionv1.AdmissionResponse, error) {
	var resp *admissionv1.AdmissionResponse
	var patchRoom []byte
	var work *jsonpatch.Scratch
	if s != nil {
		s.resp = admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
		resp, patchRoom, work = &s.resp, s.patch, &s.patchWork
	} else {
		resp = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	}
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
	patch, err := jsonpatch.AppendPatchIn(work, patchRoom, req.Object.Raw, original, res.Object, normalized && original != nil)
	if err != nil {
		return nil, err
	}
	if len(patch) > 0 {
		var pt *admissionv1.PatchType
		if s != nil {
			pt = &s.patchType
		} else {
			pt = new(admissionv1.PatchType)
		}
		*pt = admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, pt
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
// were ignored, and whether the chain would be reinvoked. Each list is
// built in one buffer sized beforehand; an invocation named already is
// found by a look back over the earlier ones, or in a set when there are
// more than maxLookBack.
func auditAnnotations(res chain.Result) map[string]string {
	invs := res.Invocations
	var applied, ignored strings.Builder
	var appliedLen, ignoredLen int
	for i := range invs {
		switch n := len(invs[i].Configuration) + len(invs[i].Hook) + len(invs[i].Param) + len("/[],"); annotationOf(&invs[i], res.Denied != nil) {
		case annotateApplied:
			appliedLen += n
		case annotateIgnored:
			ignoredLen += n
		}
	}
	applied.Grow(appliedLen)
	ignored.Grow(ignoredLen)
	var seen map[seenInvocation]struct{}
	for i := range invs {
		inv := &invs[i]
		which := annotationOf(inv, res.Denied != nil)
		if which == annotateNone {
			continue
		}
		k := seenInvocation{which, inv.Configuration, inv.Hook, inv.Param}
		if len(invs) <= maxLookBack {
			if namedBefore(invs[:i], k, res.Denied != nil) {
				continue
			}
		} else {
			if _, ok := seen[k]; ok {
				continue
			}
			if seen == nil {
				seen = make(map[seenInvocation]struct{}, len(invs))
			}
			seen[k] = struct{}{}
		}
		b := &applied
		if which == annotateIgnored {
			b = &ignored
		}
		writeInvocation(b, inv)
	}
	return annotationMap(applied.String(), ignored.String(), res.Reinvoke)
}

// writeInvocation appends the name of inv to a comma-separated list:
// configuration/hook, with [param] when the invocation had one.
func writeInvocation(b *strings.Builder, inv *chain.Invocation) {
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

// annotationMap is the audit annotations of a review from its lists of
// applied and ignored invocations (comma-separated, empty when none) and
// whether the chain asked for a reinvocation; nil when there is nothing
// to annotate.
func annotationMap(applied, ignored string, reinvoke bool) map[string]string {
	if applied == "" && ignored == "" && !reinvoke {
		return nil
	}
	out := make(map[string]string, 3)
	if applied != "" {
		out[AnnotationPolicies] = applied
	}
	if ignored != "" {
		out[AnnotationIgnoredErrors] = ignored
	}
	if reinvoke {
		out[AnnotationReinvoke] = "true"
	}
	return out
}

// maxLookBack is the most invocations auditAnnotations looks back over
// for a name given already, rather than keeping a set.
const maxLookBack = 64

// The list of the audit annotations an invocation is named in.
const (
	annotateNone = iota
	annotateApplied
	annotateIgnored
)

// annotationOf is the list inv is named in: ignored when it failed and
// the request was not denied, applied when it ran without error.
func annotationOf(inv *chain.Invocation, denied bool) int {
	switch {
	case inv.Err != nil && !denied:
		return annotateIgnored
	case inv.Err == nil && inv.Ran() && inv.Hook != "":
		return annotateApplied
	}
	return annotateNone
}

// seenInvocation is an invocation's name in a list.
type seenInvocation struct {
	which                  int
	policy, binding, param string
}

// namedBefore tells whether one of invs is named k.
func namedBefore(invs []chain.Invocation, k seenInvocation, denied bool) bool {
	for j := range invs {
		o := &invs[j]
		if o.Configuration == k.policy && o.Hook == k.binding && o.Param == k.param && annotationOf(o, denied) == k.which {
			return true
		}
	}
	return false
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
