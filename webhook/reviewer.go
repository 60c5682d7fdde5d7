package webhook

import (
	"context"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
)

// Reviewer is the admission handler: an AdmissionReview in, the
// AdmissionReview that answers it out, with the engine's decision and JSON
// patch. It knows nothing of HTTP; Handler is its transport.
type Reviewer struct {
	// Admitter evaluates the requests. Admit must not modify the request's
	// objects: the patch is diffed from the object as the Reviewer decoded
	// it (chain.Result.Object shares its unchanged maps).
	Admitter chain.Admitter
	// ExplainDryRun puts a summary of the trace into the warnings of
	// dry-run requests.
	ExplainDryRun bool
	// Log receives evaluator failures; nil discards.
	Log *slog.Logger
}

func (rv *Reviewer) log() *slog.Logger {
	if rv.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return rv.Log
}

// Review answers body, the JSON of an AdmissionReview (admission.k8s.io/v1
// or v1beta1), with the JSON of the AdmissionReview in the same version.
// A review it cannot answer gets an *apierrors.StatusError whose code is
// the HTTP status to answer with: 400 for a malformed review, 503 when
// ctx ended before the evaluation began, 500 when no correct patch or
// response could be made.
func (rv *Reviewer) Review(ctx context.Context, body []byte) ([]byte, error) {
	out, _, err := rv.review(ctx, body, nil)
	return out, err
}

// review is Review. s, when not nil, is the review's scratch, and body
// its own (a Handler's read of it, decoded in place): the answer and
// its patch are written into s's buffers, and returned (patch nil
// without one) for the caller to give back once the answer is written.
func (rv *Reviewer) review(ctx context.Context, body []byte, s *reviewScratch) (out, patch []byte, err error) {
	review, b, decoded, err := decode(body, s)
	if err != nil {
		return nil, nil, reviewError(400, metav1.StatusReasonBadRequest, err.Error())
	}
	var objects *bodies
	if decoded {
		objects = &b
	}
	attrs, original, err := attributes(review.Request, objects)
	if err != nil {
		return nil, nil, reviewError(400, metav1.StatusReasonBadRequest, err.Error())
	}
	if err := ctx.Err(); err != nil {
		// The caller gave up (its timeout passed while the review waited):
		// evaluating it would only take time from the reviews still wanted.
		return nil, nil, reviewError(503, metav1.StatusReasonTimeout, "the review's deadline passed before it was evaluated: "+err.Error())
	}
	res, admitErr := rv.admit(ctx, attrs, s)
	if admitErr != nil {
		rv.log().Error("evaluating admission request", "uid", review.Request.UID, "kind", attrs.Kind.String(), "namespace", attrs.Namespace, "name", attrs.Name, "error", admitErr)
	}
	// original is b.object when the envelope's decoding made it.
	normalized := objects != nil && original != nil && b.objectNormalized
	var outRoom []byte
	if s != nil {
		outRoom = s.out
	}
	resp, err := respondIn(s, review.Request, original, normalized, res, admitErr, RespondOptions{Explain: rv.ExplainDryRun && attrs.DryRun})
	if err != nil {
		// Never send a patch that would not give the engine's object.
		rv.log().Error("building the patch", "uid", review.Request.UID, "error", err)
		return nil, nil, reviewError(500, metav1.StatusReasonInternalError, err.Error())
	}
	out, err = appendEncodedReview(outRoom, review.APIVersion, resp)
	if err != nil {
		return nil, nil, reviewError(500, metav1.StatusReasonInternalError, "encoding the response: "+err.Error())
	}
	return out, resp.Patch, nil
}

// admit runs attrs through the Admitter, its records written in s's room
// when there is a scratch and the Admitter takes one (chain.RoomAdmitter):
// the Result is read only until the answer is encoded, before s is put
// back.
func (rv *Reviewer) admit(ctx context.Context, attrs *matching.Attributes, s *reviewScratch) (chain.Result, error) {
	if ra, ok := rv.Admitter.(chain.RoomAdmitter); ok && s != nil {
		return ra.AdmitIn(ctx, attrs, &s.records)
	}
	return rv.Admitter.Admit(ctx, attrs)
}

// reviewError is the refusal of a review, answered as a metav1.Status.
func reviewError(code int32, reason metav1.StatusReason, message string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message}}
}
