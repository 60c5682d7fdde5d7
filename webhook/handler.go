package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// DefaultMaxRequestBytes is the default limit of a review's body: 3 MiB,
// kube-apiserver's limit of a request body.
const DefaultMaxRequestBytes = 3 << 20

// DefaultMaxReviewTimeout is the deadline of a review served by a Server
// when kube-apiserver sends no ?timeout, and the largest one it may ask
// for: kube-apiserver's largest webhook timeoutSeconds.
const DefaultMaxReviewTimeout = 30 * time.Second

// DefaultMaxInFlight is `mutatis serve --max-in-flight`'s default: the
// default of kube-apiserver's --max-requests-inflight.
const DefaultMaxInFlight = 400

// Handler is the HTTP transport of a Reviewer on /mutate: method, client
// certificate, readiness and Content-Type checks, the body, the deadline,
// the in-flight bound and panics. Malformed reviews get HTTP 400 with a
// Status saying why; every well-formed review gets HTTP 200 with an
// AdmissionReview in the version it came in.
type Handler struct {
	// Admitter evaluates the requests (the Reviewer's).
	Admitter chain.Admitter
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
	// server: a review holds a slot from the end of its body read to
	// writing its answer (a slow or stalled body holds none), and a review
	// that finds every slot taken gets HTTP 429 at once (kube-apiserver
	// then applies the webhook's failurePolicy) rather than queueing behind
	// work it would time out on.
	InFlight chan struct{}
	// MaxTimeout, when positive, is the deadline of a review without
	// ?timeout and the largest one a ?timeout may ask for (a Server sets
	// DefaultMaxReviewTimeout); zero applies ?timeout as sent, and none
	// without it.
	MaxTimeout time.Duration
	// MaxVariableBytes, when positive, bounds the bytes of the variables'
	// values of each policy's evaluation, and apart the bytes of the
	// strings and bytes its calls build (compiler.WithVariableBytesLimit).
	MaxVariableBytes int64

	// metrics, when set, counts panics and evaluations in flight.
	metrics *Metrics
	// scratch lends each review the memory it works in, taken back once
	// its answer is written.
	scratch scratchPool
}

func (h *Handler) log() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Log
}

// ServeHTTP implements http.Handler: the header checks, the body read in
// full (up to MaxRequestBytes), then the review. A Server puts its
// transport layer (gate) in front instead, which bounds the body read in
// time and bytes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.admitHeaders(w, r) {
		return
	}
	limit := h.maxRequestBytes()
	body, err := readBody(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	if err != nil {
		h.bodyError(w, err)
		return
	}
	h.review(w, r, body)
}

func (h *Handler) maxRequestBytes() int64 {
	if h.MaxRequestBytes <= 0 {
		return DefaultMaxRequestBytes
	}
	return h.MaxRequestBytes
}

// admitHeaders answers the requests that fail on their method, client
// certificate, readiness or Content-Type, before a byte of the body is
// read, and tells whether the request may go on.
func (h *Handler) admitHeaders(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "an AdmissionReview must be POSTed")
		return false
	}
	if h.RequireClientCert && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "a client certificate signed by the client CA is required")
		return false
	}
	if h.Ready != nil {
		if err := h.Ready(); err != nil {
			writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "not ready: "+err.Error())
			return false
		}
	}
	if !jsonContentType(r.Header.Get("Content-Type")) {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("Content-Type must be application/json, not %q", r.Header.Get("Content-Type")))
		return false
	}
	return true
}

// jsonContentType tells whether a Content-Type header is application/json,
// as jsonContentTypeReference does: kube-apiserver's "application/json"
// without parsing it (mime.ParseMediaType builds a map of the parameters),
// any other value parsed.
func jsonContentType(v string) bool {
	return v == "application/json" || jsonContentTypeReference(v)
}

// jsonContentTypeReference tells whether v parses as a media type
// application/json (any case, any parameters).
func jsonContentTypeReference(v string) bool {
	ct, _, err := mime.ParseMediaType(v)
	return err == nil && ct == "application/json"
}

// bodyError answers a body that could not be read.
func (h *Handler) bodyError(w http.ResponseWriter, err error) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("request body larger than %d bytes (--max-request-bytes)", tooLarge.Limit))
		return
	}
	writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "reading request body: "+err.Error())
}

// deadline is the context a review is evaluated under: kube-apiserver's
// ?timeout, at most MaxTimeout; MaxTimeout when there is none.
func (h *Handler) deadline(r *http.Request) (context.Context, context.CancelFunc, error) {
	d := h.MaxTimeout
	if t := timeoutParam(r.URL.RawQuery); t != "" {
		// kube-apiserver sends the webhook's timeoutSeconds (or what is left
		// of the request's deadline) as ?timeout=10s.
		td, err := time.ParseDuration(t)
		if err != nil || td <= 0 {
			return nil, nil, fmt.Errorf("invalid timeout %q: want a positive duration like 10s", t)
		}
		if d <= 0 || td < d {
			d = td
		}
	}
	ctx := r.Context()
	if h.MaxVariableBytes > 0 {
		ctx = compiler.WithVariableBytesLimit(ctx, h.MaxVariableBytes)
	}
	if d <= 0 {
		return ctx, func() {}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, nil
}

// timeoutParam is url.ParseQuery(rawQuery).Get("timeout"), without
// building the map for the one parameter kube-apiserver sends
// (?timeout=10s): a query of one parameter with nothing to unescape is
// read directly, any other one parsed.
func timeoutParam(rawQuery string) string {
	if strings.ContainsAny(rawQuery, "&;%+") {
		q, _ := url.ParseQuery(rawQuery)
		return q.Get("timeout")
	}
	if k, v, _ := strings.Cut(rawQuery, "="); k == "timeout" {
		return v
	}
	return ""
}

// review is the review layer: the deadline, an in-flight slot, then the
// Reviewer (decode, evaluate, encode). A panic in any of them is answered with HTTP 500 (kube-apiserver applies
// the webhook's failurePolicy), logged with its stack and counted, rather
// than dropping the connection.
func (h *Handler) review(w http.ResponseWriter, r *http.Request, body []byte) {
	ctx, cancel, err := h.deadline(r)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	defer cancel()
	if h.InFlight != nil {
		select {
		case h.InFlight <- struct{}{}:
			h.metrics.evaluationStarted()
			defer func() {
				<-h.InFlight
				h.metrics.evaluationDone()
			}()
		default:
			w.Header().Set("Retry-After", "1")
			writeStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, fmt.Sprintf("too many reviews in flight (%d, --max-in-flight)", cap(h.InFlight)))
			return
		}
	}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.metrics.panicked()
			h.log().Error("panic answering a review", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, fmt.Sprintf("internal error answering the review: %v", p))
		}
	}()
	rv := Reviewer{Admitter: h.Admitter, ExplainDryRun: h.ExplainDryRun, Log: h.Log}
	// body is the review's own (read for it, never modified): decoded in
	// place, in the scratch's stacks, answered in its buffers.
	s := h.scratch.get()
	out, patch, err := rv.review(ctx, body, s)
	if err != nil {
		var st *apierrors.StatusError
		if !errors.As(err, &st) {
			st = reviewError(http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		}
		writeStatus(w, int(st.ErrStatus.Code), st.ErrStatus.Reason, st.ErrStatus.Message)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, werr := w.Write(out); werr != nil {
		// A Write that failed may still hold out: HTTP/2's returns on a
		// stream the client reset while its DATA frame can still be on
		// its way to the connection. The scratch is left to the collector.
		return
	}
	// A Write that succeeded keeps none of out (io.Writer's contract,
	// and HTTP/2's waits for its frame to be written): the buffers serve
	// the next review.
	h.scratch.put(s, patch, out)
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
	body, err := jsonvalue.Marshal(&st)
	if err != nil {
		http.Error(w, message, code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
