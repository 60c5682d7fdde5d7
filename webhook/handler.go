package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/matching"
)

// DefaultMaxRequestBytes is the default limit of a review's body: 3 MiB,
// kube-apiserver's limit of a request body.
const DefaultMaxRequestBytes = 3 << 20

// DefaultMaxInFlight is `mutatis serve --max-in-flight`'s default: the
// default of kube-apiserver's --max-requests-inflight.
const DefaultMaxInFlight = 400

// Admitter evaluates one admission request; *engine.Engine is one. Admit
// must not modify a (its objects in particular): the Handler diffs the
// request's object as it decoded it with the result's object.
type Admitter interface {
	Admit(ctx context.Context, a *matching.Attributes) (engine.Result, error)
}

// Handler answers AdmissionReviews on /mutate: decode, call the engine,
// encode. Malformed reviews get HTTP 400 with a Status saying why; every
// well-formed review gets HTTP 200 with an AdmissionReview in the version
// it came in.
type Handler struct {
	// Admitter evaluates the requests.
	Admitter Admitter
	// Ready, when set, must return nil before reviews are evaluated; until
	// then they get HTTP 503 (kube-apiserver applies the webhook's
	// failurePolicy).
	Ready func() error
	// MaxRequestBytes limits the body; zero means DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// ExplainDryRun puts a summary of the trace into the warnings of
	// dry-run requests.
	ExplainDryRun bool
	// RequireClientCert refuses (HTTP 401) requests whose connection did
	// not present a client certificate verified by the server's client CAs.
	RequireClientCert bool
	// Log receives evaluator failures; nil discards.
	Log *slog.Logger
	// InFlight, when set, is a semaphore shared by the handlers of a
	// server: a review holds a slot from reading its body to writing its
	// answer, and a review that finds every slot taken gets HTTP 429 at
	// once (kube-apiserver then applies the webhook's failurePolicy) rather
	// than queueing behind work it would time out on.
	InFlight chan struct{}
}

func (h *Handler) log() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Log
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "an AdmissionReview must be POSTed")
		return
	}
	if h.RequireClientCert && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "a client certificate signed by the client CA is required")
		return
	}
	if h.Ready != nil {
		if err := h.Ready(); err != nil {
			writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "not ready: "+err.Error())
			return
		}
	}
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("Content-Type must be application/json, not %q", r.Header.Get("Content-Type")))
		return
	}
	if h.InFlight != nil {
		select {
		case h.InFlight <- struct{}{}:
			defer func() { <-h.InFlight }()
		default:
			w.Header().Set("Retry-After", "1")
			writeStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, fmt.Sprintf("too many reviews in flight (%d, --max-in-flight)", cap(h.InFlight)))
			return
		}
	}
	ctx := r.Context()
	if t := r.URL.Query().Get("timeout"); t != "" {
		// kube-apiserver sends the webhook's timeoutSeconds (or what is left
		// of the request's deadline) as ?timeout=10s.
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("invalid timeout %q: want a positive duration like 10s", t))
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	limit := h.MaxRequestBytes
	if limit <= 0 {
		limit = DefaultMaxRequestBytes
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("request body larger than %d bytes (--max-request-bytes)", limit))
			return
		}
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "reading request body: "+err.Error())
		return
	}
	review, err := Decode(body)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	attrs, original, err := attributes(review.Request)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}

	if err := ctx.Err(); err != nil {
		// The caller gave up (its timeout passed while the review waited):
		// evaluating it would only take time from the reviews still wanted.
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonTimeout, "the review's deadline passed before it was evaluated: "+err.Error())
		return
	}
	res, admitErr := h.Admitter.Admit(ctx, attrs)
	if admitErr != nil {
		h.log().Error("evaluating admission request", "uid", review.Request.UID, "kind", attrs.Kind.String(), "namespace", attrs.Namespace, "name", attrs.Name, "error", admitErr)
	}
	// The patch is diffed from the decoding the engine had: the Admitter
	// only reads its attributes (engine.Result.Object shares the unchanged
	// maps of a.Object).
	resp, err := Respond(review.Request, res, admitErr, RespondOptions{Explain: h.ExplainDryRun && attrs.DryRun, original: original})
	if err != nil {
		// Never send a patch that would not give the engine's object.
		h.log().Error("building the patch", "uid", review.Request.UID, "error", err)
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return
	}
	out, err := encodeReview(review.APIVersion, resp)
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "encoding the response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// writeStatus answers with a metav1.Status, which kube-apiserver's client
// decodes into the error it reports for the webhook call.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure,
		Code:     int32(code),
		Reason:   reason,
		Message:  message,
	}
	body, err := jsonMarshal(&st)
	if err != nil {
		http.Error(w, message, code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// presizeLimit bounds the buffer readBody allocates before any byte has
// arrived: a client announcing a large body and sending nothing holds no
// more than this.
const presizeLimit = 64 << 10

// readBody is io.ReadAll of r, into a buffer sized from the request's
// Content-Length when it is known and within limit (io.ReadAll starts at
// 512 bytes and grows the buffer several times for a typical review), up
// to presizeLimit; a larger body grows it as io.ReadAll does.
func readBody(r io.Reader, contentLength, limit int64) ([]byte, error) {
	if contentLength <= 0 || contentLength > limit {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, min(contentLength, presizeLimit)+1) // room for the read that sees EOF
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // more than announced: grow as io.ReadAll does
		}
	}
}
