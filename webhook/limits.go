package webhook

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file is the transport layer in front of the review Handler: what a
// client controls — how long its body takes, how many bytes it announces
// and sends — is bounded here, before the review layer decodes anything.

// DefaultBodyReadTimeout bounds the time from a review's headers to the
// last byte of its body: kube-apiserver sends a review in one write, so
// a body that takes longer is stalled, not slow. Well under
// kube-apiserver's default webhook timeout (10s).
const DefaultBodyReadTimeout = 5 * time.Second

// DefaultBodyBudgetFactor derives the body-bytes budget from the body
// limit when none is given: 48 times --max-request-bytes (144 MiB with the
// 3 MiB default), room for the most costly review kube-apiserver sends of
// the largest size (3 MiB of env entries is charged 40 times its body, a
// Pod of 19,500 defaulted containers 15 times: ReviewCharge;
// TestTheLargestRealReviewFits). docs/webhook.md has the arithmetic.
const DefaultBodyBudgetFactor = 48

// The weights of ReviewCharge, measured (TestReviewChargeCoversItsCost):
// the peak heap of a review decoded, evaluated and answered by the engine,
// per unit of its shape, with a margin.
const (
	// EvaluationWeight is charged per byte of the body: the decoded
	// strings, the body itself and the answer (a ConfigMap of long strings
	// peaks at about three times its body).
	EvaluationWeight = 3
	// ObjectWeight is charged per JSON object or array: a decoded map and
	// its typed and normalized forms (650 bytes per object for a Pod of
	// defaulted containers, 510 for env entries).
	ObjectWeight = 800
	// ValueWeight is charged per scalar: its interface value and copies.
	ValueWeight = 64
	// UndefaultedContainerWeight is charged, on top, per container that
	// lacks the fields kube-apiserver defaults in every container it
	// sends: defaulting it adds them and a patch operation each (2,800
	// bytes per container in all, measured, 3,600 under the race
	// detector; charged 4,000).
	UndefaultedContainerWeight = 3200
	// ReviewOverhead is charged once per review, whatever its shape: the
	// request's own state, the answer's buffers and the sampling margin
	// the bytes' weight leaves too thin for a body of long strings alone
	// (three 1 MiB strings peak at their body's three times plus 20–30 KB,
	// measured in session 19, with and without the race detector).
	ReviewOverhead = 128 << 10
)

// ReviewCharge is what a review holds of the body-bytes budget from the end
// of its body read to its answer: an estimate of its peak memory from the
// shape of its JSON (objects, values, containers without defaults and
// bytes), counted in one pass before it is decoded.
func ReviewCharge(body []byte) int64 {
	return scanShape(body).charge()
}

func (s shape) charge() int64 {
	return ReviewOverhead + EvaluationWeight*s.bytes + ObjectWeight*(s.objects+s.arrays) + ValueWeight*s.values + UndefaultedContainerWeight*s.undefaulted
}

// presizeLimit bounds the buffer readBody allocates before any byte has
// arrived: a client announcing a large body and sending nothing holds no
// more than this.
const presizeLimit = 64 << 10

// errBodyBudget is returned by a body read that would take the bytes of
// bodies held at once past the budget.
var errBodyBudget = errors.New("the reviews being read and evaluated hold the body-bytes budget")

// byteBudget bounds the bytes of request bodies the server holds at once,
// counted as the capacity of their buffers, reserved before each buffer is
// allocated. A nil *byteBudget is unbounded.
type byteBudget struct {
	max  int64
	used atomic.Int64
	peak atomic.Int64 // the highest used seen (tests)
	// observe, when set, is told the bytes in use after each change.
	observe func(int64)
}

func newByteBudget(max int64, observe func(int64)) *byteBudget {
	return &byteBudget{max: max, observe: observe}
}

// tryAcquire reserves n bytes if they fit, without waiting.
func (b *byteBudget) tryAcquire(n int64) bool {
	if b == nil {
		return true
	}
	for {
		u := b.used.Load()
		if u+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			for p := b.peak.Load(); u+n > p && !b.peak.CompareAndSwap(p, u+n); p = b.peak.Load() {
			}
			b.report(u + n)
			return true
		}
	}
}

func (b *byteBudget) release(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.report(b.used.Add(-n))
}

func (b *byteBudget) report(used int64) {
	if b.observe != nil {
		b.observe(used)
	}
}

// readBody is io.ReadAll of r, into a buffer sized from the request's
// Content-Length when it is known and within limit (io.ReadAll starts at
// 512 bytes and grows the buffer several times for a typical review), up
// to presizeLimit; a larger body grows it by doubling, up to the announced
// length.
func readBody(r io.Reader, contentLength, limit int64) ([]byte, error) {
	b, _, err := readBodyWithin(r, contentLength, limit, nil)
	return b, err
}

// readBodyWithin is readBody reserving the capacity of every buffer from
// budget before allocating it; it returns the bytes reserved, which the
// caller releases once it no longer holds the body, also on error. A
// buffer is at most twice the bytes received (or presizeLimit), so a
// client must send half the bytes it holds.
func readBodyWithin(r io.Reader, contentLength, limit int64, budget *byteBudget) (body []byte, reserved int64, err error) {
	size := int64(512)
	if contentLength > 0 && contentLength <= limit {
		size = min(contentLength, presizeLimit) + 1 // room for the read that sees EOF
	}
	if !budget.tryAcquire(size) {
		return nil, 0, errBodyBudget
	}
	reserved = size
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, reserved, nil
		}
		if err != nil {
			return b, reserved, err
		}
		if len(b) < cap(b) {
			continue
		}
		next := int64(2 * cap(b))
		if announced := contentLength + 1; contentLength > 0 && int64(len(b)) < announced {
			next = min(next, announced)
		}
		next = max(min(next, limit+1), int64(cap(b))+1)
		grow := next - int64(cap(b))
		if !budget.tryAcquire(grow) {
			return b, reserved, errBodyBudget
		}
		reserved += grow
		// The old buffer is garbage from here on, left to the collector:
		// the reservation covers the live buffer.
		nb := make([]byte, len(b), next)
		copy(nb, b)
		b = nb
	}
}

// gate is the transport layer of a review path: the Handler's header
// checks, then the body read bounded in time (BodyReadTimeout from the
// headers, through the connection's read deadline, HTTP/1.1 and HTTP/2
// alike) and in bytes (Content-Length over the limit: 413 before reading;
// the body-bytes budget shared by the server), then the review layer with
// the body. The review holds its ReviewCharge of the budget until the
// answer is written; one whose charge exceeds the whole budget is refused
// with 413.
type gate struct {
	h       *Handler
	limit   int64
	timeout time.Duration
	budget  *byteBudget
	metrics *Metrics
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	if g.timeout > 0 {
		// Also bounds the server's own reads of a body the handler left
		// unread (it discards up to 256 KiB before answering).
		_ = rc.SetReadDeadline(time.Now().Add(g.timeout))
	}
	if !g.h.admitHeaders(w, r) {
		return
	}
	if r.ContentLength > g.limit {
		g.metrics.bodyRejected("too_large")
		closeAfterAnswer(w, r)
		writeStatus(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is larger than %d bytes (--max-request-bytes)", r.ContentLength, g.limit))
		return
	}
	body, reserved, err := readBodyWithin(http.MaxBytesReader(w, r.Body, g.limit), r.ContentLength, g.limit, g.budget)
	defer func() { g.budget.release(reserved) }()
	if err == nil {
		// Decoded and evaluated, the review holds its charge.
		sh := scanShape(body)
		if need := sh.charge(); need > reserved {
			if g.budget != nil && need > g.budget.max {
				// It would never fit: refused for good, not "retry".
				g.metrics.bodyRejected("too_large")
				writeStatus(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, fmt.Sprintf(
					"the review would hold %d bytes while evaluated (%d objects and arrays, %d values, %d containers without kube-apiserver's defaults, %d bytes), more than the whole body-bytes budget of %d bytes (--max-body-bytes-in-flight)",
					need, sh.objects+sh.arrays, sh.values, sh.undefaulted, sh.bytes, g.budget.max))
				return
			}
			if !g.budget.tryAcquire(need - reserved) {
				err = errBodyBudget
			} else {
				reserved = need
			}
		}
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.Is(err, errBodyBudget):
			g.metrics.bodyRejected("budget")
			closeAfterAnswer(w, r)
			w.Header().Set("Retry-After", "1")
			writeStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, fmt.Sprintf("%v (%d bytes, --max-body-bytes-in-flight)", err, g.budget.max))
		case errors.Is(err, os.ErrDeadlineExceeded):
			g.metrics.bodyRejected("timeout")
			writeStatus(w, http.StatusRequestTimeout, metav1.StatusReasonTimeout, fmt.Sprintf("the request body did not arrive within %s (--body-read-timeout)", g.timeout))
		case errors.As(err, &tooLarge):
			g.metrics.bodyRejected("too_large")
			g.h.bodyError(w, err)
		default:
			g.metrics.bodyRejected("error")
			g.h.bodyError(w, err)
		}
		return
	}
	if g.timeout > 0 && r.ProtoMajor == 1 {
		// Read in full: the deadline must not cut the connection (or
		// cancel the request's context) during the evaluation. Over HTTP/2
		// the deadline is the stream's, and once its body has been read to
		// the end it does nothing: when it fires, it closes the stream's
		// body with an error, which the body, closed by its END_STREAM,
		// ignores; the stream's end stops it. Clearing it would cost one
		// more handoff to the connection's goroutine per review.
		_ = rc.SetReadDeadline(time.Time{})
	}
	g.h.review(w, r, body)
}

// closeAfterAnswer ends an HTTP/1.x connection after an answer given
// before the body was read to the end: otherwise net/http reads what is
// left of the body before it writes the answer, and a client that stalled
// would see it only at the body's deadline.
func closeAfterAnswer(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
}
