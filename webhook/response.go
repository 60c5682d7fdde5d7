package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	gomodulesjsonpatch "gomodules.xyz/jsonpatch/v2"
	evanphxjsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/mutatis-dev/mutatis/engine"
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
	// reinvocation of the admission chain (engine.Result.Reinvoke). See
	// docs/webhook.md.
	AnnotationReinvoke = "reinvoke"
)

// RespondOptions adjust Respond.
type RespondOptions struct {
	// Explain puts a summary of the evaluation trace into the warnings.
	Explain bool

	// original, when not nil, is the request object's JSON decoded with
	// sigsjson.UnmarshalCaseSensitivePreserveInts and never modified since
	// (the Handler's decoding, which the engine only reads): Respond diffs
	// it instead of decoding the JSON again, and shares its unchanged maps
	// with the engine's object, so the diff need not walk them.
	original map[string]any
}

// Respond builds the AdmissionResponse for req from the engine's answer:
// a denial carries the engine's Status (code, reason, message, causes);
// an admission carries the JSON patch (RFC 6902) that turns the request's
// object into res.Object. The patch is checked by applying it to the
// request's object with evanphx/json-patch v4's semantics, as kube-apiserver
// does (see Patch); an error means no correct patch could be made.
func Respond(req *admissionv1.AdmissionRequest, res engine.Result, admitErr error, o RespondOptions) (*admissionv1.AdmissionResponse, error) {
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
	patch, err := patchFrom(req.Object.Raw, o.original, res.Object)
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
func ranMutations(res engine.Result) bool {
	for _, inv := range res.Invocations {
		if inv.Skipped == "" && len(inv.Mutations) > 0 {
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

// Patch returns the JSON patch that turns the JSON document original into
// want, or nil when there is nothing to change. The patch is checked: applied
// to original as kube-apiserver applies webhook patches (evanphx/json-patch
// v4, which jsonpatch.Apply reproduces), it must give want, as JSON can
// carry it (an integral float64 is the int64 it is written as).
//
// The patch is computed natively on the decoded values (nativeDiff). Should
// it not check, the diff of gomodules.xyz/jsonpatch is tried, then a coarser
// patch replacing top-level fields, each checked with evanphx/json-patch v4
// itself.
func Patch(original []byte, want map[string]any) ([]byte, error) {
	return patchFrom(original, nil, want)
}

// patchFrom is Patch, with orig the decoding of original when the caller
// has it (nil: decode original).
func patchFrom(original []byte, orig, want map[string]any) ([]byte, error) {
	if orig == nil {
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(original, &orig); err != nil {
			orig = nil
		}
	}
	if orig != nil && want != nil {
		if patch, ok := nativePatch(orig, want); ok {
			return patch, nil
		}
	}
	return documentPatch(original, want)
}

// nativePatch is the patch of nativeDiff from orig, the decoding of the
// request's object, to want, checked by applying it to orig with
// jsonpatch.Apply (evanphx/json-patch v4's semantics on orig's JSON). ok is
// false when the check fails or the patch has no JSON encoding.
func nativePatch(orig, want map[string]any) (patch []byte, ok bool) {
	ops := nativeDiff(orig, want)
	if len(ops) == 0 {
		// The diff found every value equal, as the check would.
		return nil, true
	}
	got, err := jsonpatch.Apply(orig, ops)
	if err != nil || got == nil || !valueEqual(got, want) {
		return nil, false
	}
	// Most operations of a mutating policy add a field or a small object.
	patch, err = appendOps(make([]byte, 0, 256+128*len(ops)), ops)
	if err != nil {
		return nil, false
	}
	return patch, true
}

// documentPatch is Patch by diffing JSON documents: the diff of
// gomodules.xyz/jsonpatch is applied to original with evanphx/json-patch v4
// (what kube-apiserver applies webhook patches with) and must give want;
// if it does not, a coarser patch replacing top-level fields is tried and
// checked the same way.
func documentPatch(original []byte, want map[string]any) ([]byte, error) {
	wantJSON, err := jsonMarshal(want)
	if err != nil {
		return nil, fmt.Errorf("encoding the mutated object: %w", err)
	}
	wantValue, err := decodeValue(wantJSON)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, diff := range []func([]byte, map[string]any, []byte) ([]gomodulesjsonpatch.Operation, error){fineDiff, topLevelDiff} {
		ops, err := diff(original, want, wantJSON)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(ops) == 0 {
			if err := check(original, nil, wantValue); err != nil {
				errs = append(errs, err)
				continue
			}
			return nil, nil
		}
		patch, err := jsonMarshal(ops)
		if err != nil {
			return nil, err
		}
		if err := check(original, patch, wantValue); err != nil {
			errs = append(errs, err)
			continue
		}
		return patch, nil
	}
	return nil, fmt.Errorf("no JSON patch reproduces the mutated object: %w", errors.Join(errs...))
}

func fineDiff(original []byte, _ map[string]any, wantJSON []byte) ([]gomodulesjsonpatch.Operation, error) {
	return gomodulesjsonpatch.CreatePatch(original, wantJSON)
}

// topLevelDiff adds, replaces and removes whole top-level fields.
func topLevelDiff(original []byte, want map[string]any, _ []byte) ([]gomodulesjsonpatch.Operation, error) {
	var orig map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(original, &orig); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ops []gomodulesjsonpatch.Operation
	for _, k := range keys {
		path := "/" + escapePointer(k)
		old, ok := orig[k]
		switch {
		case !ok:
			ops = append(ops, gomodulesjsonpatch.NewOperation("add", path, want[k]))
		case !jsonEqual(old, want[k]):
			ops = append(ops, gomodulesjsonpatch.NewOperation("replace", path, want[k]))
		}
	}
	var gone []string
	for k := range orig {
		if _, ok := want[k]; !ok {
			gone = append(gone, k)
		}
	}
	sort.Strings(gone)
	for _, k := range gone {
		ops = append(ops, gomodulesjsonpatch.NewOperation("remove", "/"+escapePointer(k), nil))
	}
	return ops, nil
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func jsonEqual(a, b any) bool {
	ja, errA := jsonMarshal(a)
	jb, errB := jsonMarshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// check applies patch to original as kube-apiserver does and compares the
// result with want.
func check(original, patch []byte, want any) error {
	out := original
	if patch != nil {
		p, err := evanphxjsonpatch.DecodePatch(patch)
		if err != nil {
			return err
		}
		if out, err = p.Apply(original); err != nil {
			return err
		}
	}
	got, err := decodeValue(out)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(got, want) {
		return errors.New("the patched object differs from the mutated object")
	}
	return nil
}

func decodeValue(data []byte) (any, error) {
	var v any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// jsonMarshal is json.Marshal without HTML escaping (the API server's
// encoder does not escape either).
func jsonMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// auditAnnotations names the invocations that ran, those whose errors
// were ignored, and whether the chain would be reinvoked.
func auditAnnotations(res engine.Result) map[string]string {
	type seenKey struct {
		ignored                bool
		policy, binding, param string
	}
	var applied, ignored strings.Builder
	var seen map[seenKey]struct{}
	add := func(b *strings.Builder, inv *engine.Invocation, isIgnored bool) {
		k := seenKey{isIgnored, inv.Policy, inv.Binding, inv.Param}
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
		b.WriteString(inv.Policy)
		b.WriteByte('/')
		b.WriteString(inv.Binding)
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
		case inv.Err == nil && inv.Skipped == "" && inv.Binding != "":
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
func Explain(res engine.Result) []string {
	var out []string
	if len(res.Invocations) == 0 {
		return []string{"mutatis: no policy binding matched the request"}
	}
	for _, inv := range res.Invocations {
		who := inv.Policy
		if inv.Binding != "" {
			who += "/" + inv.Binding
		}
		if inv.Param != "" {
			who += "[" + inv.Param + "]"
		}
		var what string
		switch {
		case inv.Err != nil:
			what = "error: " + inv.Err.Error()
		case inv.Skipped != "":
			what = "skipped: " + inv.Skipped
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
		out = append(out, truncate(fmt.Sprintf("mutatis: pass %d: %s: %s", inv.Pass, who, what), maxWarningLength))
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
