package webhookclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	evanphx "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/jsonpatch"
	"github.com/mutatis-dev/mutatis/scheme"
)

// ApplyPatch applies a webhook's decoded JSON patch to obj, of kind, as
// kube-apiserver's mutating webhook dispatcher does: the object encoded
// as JSON, the patch applied to the bytes by evanphx/json-patch v4 (the
// library kube-apiserver uses, and whose semantics package jsonpatch
// reproduces for CEL patches), and the result decoded back without
// strictness into the kind's Go type (scheme.DecodeWebhookPatchResult).
// It returns the patched object, not yet defaulted, and its kind. The
// errors are the ones kube-apiserver wraps into its 500.
//
// A webhook's patch is bytes a peer sent, not values a CEL program made:
// applying it to the encoded object with the library itself keeps every
// quirk of the bytes (numbers, duplicate keys, unknown operations) as
// kube-apiserver meets them.
//
// ctx bounds the time of the application, which kube-apiserver does not
// bound (a 150,000-operation patch of inserts into a list takes minutes
// in the library): a patch longer than patchChunk operations is applied
// in consecutive slices of operations, each on the bytes the one before
// produced, ctx checked between them, with the same result and the same
// first error as the whole patch at once (copy operations are accounted
// against the copy limit over the whole patch, as the library does; see
// applyChunked). When ctx ends first, the error is a *PatchInterrupted.
//
// evanphx/json-patch panics on some patches (a write below a null an
// earlier operation set, for one); kube-apiserver's handler recovers the
// panic of the whole request as a 500. ApplyPatch recovers it as an error
// wrapping ErrPatchPanicked, which the dispatcher turns into a 500 of the
// request: the outcome is the same refusal, in other words.
func ApplyPatch(ctx context.Context, s *scheme.Scheme, obj map[string]any, kind schema.GroupVersionKind, patch evanphx.Patch) (out map[string]any, outKind schema.GroupVersionKind, err error) {
	limitCopies()
	defer func() {
		if r := recover(); r != nil {
			out, outKind, err = nil, schema.GroupVersionKind{}, fmt.Errorf("%w: %v", ErrPatchPanicked, r)
		}
	}()
	js, err := jsonvalue.Marshal(obj)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	patched, err := applyChunked(ctx, js, patch, patchChunk)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	return s.DecodeWebhookPatchResult(patched, kind)
}

// ErrPatchPanicked is wrapped by the error of ApplyPatch for a patch on
// which evanphx/json-patch panicked.
var ErrPatchPanicked = errors.New("applying the webhook's JSON patch panicked")

// PatchInterrupted is the error of ApplyPatch when its context ended
// before the whole patch was applied: Applied of Total operations were,
// and Err is the context's error.
type PatchInterrupted struct {
	Applied, Total int
	Err            error
}

func (e *PatchInterrupted) Error() string {
	bound := "the request was cancelled"
	if errors.Is(e.Err, context.DeadlineExceeded) {
		bound = "the request's deadline passed"
	}
	return fmt.Sprintf("applying the webhook's JSON patch stopped after %d of %d operations: %s (%v)", e.Applied, e.Total, bound, e.Err)
}

func (e *PatchInterrupted) Unwrap() error { return e.Err }

// patchChunk is the number of operations ApplyPatch applies between two
// looks at its context. A patch of at most patchChunk operations is
// applied whole, as kube-apiserver applies it.
const patchChunk = 512

// applyChunked applies patch to doc as patch.Apply(doc) does, in slices
// of at most chunk operations, checking ctx before each.
//
// Why the result is the same: evanphx's Apply decodes the document
// lazily, applies the operations in order, stops at the first error and
// encodes the result (encoding/json: compact, keys sorted, each value as
// it stands). Encoding a value and decoding it again gives a value that
// encodes to the same bytes and that every later operation sees alike
// (a path resolves the same, a test compares the same, a copy has the
// same size) but for two states wholeSlice keeps in one slice, so
// applying ops[:k] then ops[k:] to the bytes between gives the bytes
// and the first error of ops at once. The one other state
// Apply keeps across operations is the accumulated size of the copies,
// checked against evanphx.AccumulatedCopySizeLimit: a copy operation is
// therefore applied alone, its size measured (copySize) and added to
// the whole patch's account, and the library's own error given when the
// account passes the limit — the error the whole patch gives there.
func applyChunked(ctx context.Context, doc []byte, patch evanphx.Patch, chunk int) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, &PatchInterrupted{Total: len(patch), Err: err}
	}
	if len(patch) <= chunk || len(doc) == 0 {
		return patch.Apply(doc)
	}
	limit := atomic.LoadInt64(&evanphx.AccumulatedCopySizeLimit)
	var copied int64
	i := 0
	if n := wholeSlice(doc, patch); n > 0 {
		// The operations up to the last one that could observe what
		// encoding a slice loses are applied as one slice.
		out, err := applyAbandoning(ctx, doc, patch[:n], len(patch))
		if err != nil {
			return nil, err
		}
		doc, i = out, n
	}
	for i < len(patch) {
		if err := ctx.Err(); err != nil {
			return nil, &PatchInterrupted{Applied: i, Total: len(patch), Err: err}
		}
		if patch[i].Kind() == "copy" {
			out, err := applyCopy(doc, patch[i], &copied, limit)
			if err != nil {
				return nil, err
			}
			doc, i = out, i+1
			continue
		}
		end := i
		for end < len(patch) && end-i < chunk && patch[end].Kind() != "copy" {
			end++
		}
		out, err := patch[i:end].Apply(doc)
		if err != nil {
			return nil, err
		}
		doc, i = out, end
	}
	return doc, nil
}

// wholeSlice is the number of leading operations of patch, on doc, that
// must be applied as one slice: 0, or up to and including the last
// operation that could observe a state the slices' encoding does not
// carry. There are two such states, both set before the operation that
// observes them:
//
//   - a null an add or replace wrote: the library holds it as a node
//     without bytes, a decoded null is no node at all; a test compares
//     them differently (or panics), a copy counts 4 bytes for the one, 0
//     for the other;
//   - a string with a literal <, >, & (or U+2028, U+2029), in the object
//     (jsonvalue.Marshal writes them as they are) or in a value the patch
//     wrote: encoding/json escapes them when a slice is encoded, and a
//     test compares a string's bytes as written.
//
// Every other operation treats both forms alike; a patch without such a
// state, or without a test (or, after a null, a copy) after it, slices
// freely.
func wholeSlice(doc []byte, patch evanphx.Patch) int {
	text, null := -1, -1
	if bytes.ContainsAny(doc, "<>&\u2028\u2029") {
		text = 0
	}
	for i, op := range patch {
		if k := op.Kind(); k != "add" && k != "replace" {
			continue
		}
		v, ok := op["value"]
		switch {
		case ok && v == nil && null < 0:
			null = i
		case v != nil && text < 0 && bytes.ContainsAny(*v, "<>&\u2028\u2029"):
			text = i
		}
	}
	n := 0
	for i := len(patch) - 1; i >= 0 && n == 0; i-- {
		switch patch[i].Kind() {
		case "test":
			if (text >= 0 && i > text) || (null >= 0 && i > null) {
				n = i + 1
			}
		case "copy":
			if null >= 0 && i > null {
				n = i + 1
			}
		}
	}
	if n == 0 {
		return 0
	}
	// A copy in the slice counts in the library's account of the slice
	// alone: the slice goes on to the last copy of the patch.
	last, within := -1, false
	for i, op := range patch {
		if op.Kind() == "copy" {
			last, within = i, within || i < n
		}
	}
	if within && last >= n {
		n = last + 1
	}
	return n
}

// applyAbandoning applies patch to doc as one slice, and returns when
// ctx ends if that comes first (a *PatchInterrupted of total operations,
// none counted as applied), leaving the application to finish on its own
// and its result unread: the request is answered at its deadline, the
// CPU of that slice is spent all the same. A panic of the library is
// raised again in the caller's goroutine.
func applyAbandoning(ctx context.Context, doc []byte, patch evanphx.Patch, total int) ([]byte, error) {
	type outcome struct {
		out      []byte
		err      error
		panicked any
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if r := recover(); r != nil {
				o.panicked = r
			}
			done <- o
		}()
		o.out, o.err = patch.Apply(doc)
	}()
	select {
	case o := <-done:
		if o.panicked != nil {
			panic(o.panicked)
		}
		return o.out, o.err
	case <-ctx.Done():
		return nil, &PatchInterrupted{Total: total, Err: ctx.Err()}
	}
}

// applyCopy applies one copy operation to doc, the accumulated size of
// the patch's copies in *copied, as the library applies it in a whole
// patch: the source and destination resolved first (their errors come
// first), then the size checked against limit, then the value added.
func applyCopy(doc []byte, op evanphx.Operation, copied *int64, limit int64) ([]byte, error) {
	out, err := evanphx.Patch{op}.Apply(doc)
	var sizeErr *evanphx.AccumulatedCopySizeError
	if err != nil && !errors.As(err, &sizeErr) && !strings.HasPrefix(err.Error(), "error while adding value during copy: ") {
		// Failed before the size was counted.
		return nil, err
	}
	size, serr := copySize(doc, op)
	if serr != nil {
		return nil, serr
	}
	*copied += size
	if limit > 0 && *copied > limit {
		return nil, evanphx.NewAccumulatedCopySizeError(limit, *copied)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// copySize is the number of bytes the library counts for copy op on doc
// (the encoded value at its from), measured by the library itself: the
// value copied from doc, as the field "d" of a wrapper document, to the
// end of the wrapper's list "p", and its encoding read back. op's source
// resolved in doc (applyCopy's first step succeeded past it).
func copySize(doc []byte, op evanphx.Operation) (int64, error) {
	from, err := op.From()
	if err != nil {
		return 0, err
	}
	// The library ignores the first segment of a path (the empty one
	// before its leading slash).
	slash := strings.Index(from, "/")
	if slash < 0 {
		return 0, fmt.Errorf("copy from %q resolved without a slash", from)
	}
	wrapped, err := json.Marshal("/d" + from[slash:])
	if err != nil {
		return 0, err
	}
	fromRaw, pathRaw, opRaw := json.RawMessage(wrapped), json.RawMessage(`"/p/-"`), json.RawMessage(`"copy"`)
	probe := evanphx.Patch{{"op": &opRaw, "from": &fromRaw, "path": &pathRaw}}
	wrapper := make([]byte, 0, len(doc)+16)
	wrapper = append(append(append(wrapper, `{"d":`...), doc...), `,"p":[]}`...)
	out, err := probe.Apply(wrapper)
	var sizeErr *evanphx.AccumulatedCopySizeError
	if errors.As(err, &sizeErr) {
		// Larger than the limit alone: the library's message says by
		// how much.
		var size int64
		if _, serr := fmt.Sscanf(sizeErr.Error(), "Unable to complete the copy, the accumulated size increase of copy is %d,", &size); serr != nil {
			return 0, fmt.Errorf("reading the copy's size: %w", serr)
		}
		return size, nil
	}
	if err != nil {
		return 0, fmt.Errorf("measuring the copy from %q: %w", from, err)
	}
	var measured struct {
		P []json.RawMessage `json:"p"`
	}
	if err := json.Unmarshal(out, &measured); err != nil || len(measured.P) != 1 {
		return 0, fmt.Errorf("measuring the copy from %q: %v", from, err)
	}
	return int64(len(measured.P[0])), nil
}

// limitCopies puts on evanphx/json-patch v4's copy operations the limit
// kube-apiserver puts on them (k8s.io/apiserver's server.Config,
// JSONPatchMaxCopyBytes: 3 MiB of accumulated copies per patch), as it
// does: the library's own process-wide setting, lowered to the limit
// unless something set a lower one. kube-apiserver sets it when its
// server is built; ApplyPatch sets it before the first patch it applies,
// so that a webhook's patch is refused past the limit with the library's
// error, as in kube-apiserver (package jsonpatch keeps the same limit for
// CEL patches, as a constant).
func limitCopies() {
	for {
		existing := atomic.LoadInt64(&evanphx.AccumulatedCopySizeLimit)
		if existing > 0 && existing <= jsonpatch.AccumulatedCopySizeLimit {
			return
		}
		if atomic.CompareAndSwapInt64(&evanphx.AccumulatedCopySizeLimit, existing, jsonpatch.AccumulatedCopySizeLimit) {
			return
		}
	}
}
