package webhook

import (
	"sync"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// reviewScratch is the memory a review works in and leaves when its
// answer is written: the map decoder's stacks, the response, its JSON
// patch and the memory it is made in, the run's records, and the answer's
// bytes. A Handler lends one to each review it serves
// (scratchPool) and takes it back once the answer is written —
// http.ResponseWriter's Write, an io.Writer's, keeps none of the bytes
// it is given —, so that a stream of reviews reuses that memory instead
// of allocating, clearing and collecting it for each. Nothing that
// outlives the review sees it: the patch and the answer are written and
// dropped, and the stacks hold no value once the object they served is
// made (they are cleared before they are lent again).
type reviewScratch struct {
	members []member
	elems   []any
	patch   []byte
	out     []byte
	// patchWork is the memory the patch is made in (its diff and its
	// check), emptied by each call and bounded by jsonpatch.
	patchWork jsonpatch.Scratch
	// resp and patchType are the review's response (respondIn), which
	// lives until the answer is encoded; put empties them.
	resp      admissionv1.AdmissionResponse
	patchType admissionv1.PatchType
	// records is the room the review's run writes its records in
	// (chain.RoomAdmitter), read until the answer is encoded; the run
	// keeps it within chain.Room's bounds.
	records chain.Room
}

// Bounds of what a reviewScratch keeps for the next review: a larger
// stack or buffer (a review of a large object) is left to the collector,
// so that the memory a pool holds across reviews stays small whatever the
// reviews were.
const (
	maxScratchBytes = 64 << 10
	maxScratchElems = 1 << 10
)

// scratchPool lends reviewScratches (a Handler's). The zero value is
// ready for use.
type scratchPool struct {
	pool sync.Pool
}

// get is a scratch to review with.
func (p *scratchPool) get() *reviewScratch {
	if s, _ := p.pool.Get().(*reviewScratch); s != nil {
		return s
	}
	return new(reviewScratch)
}

// put takes s back after its review's answer was written: out is that
// answer's bytes and patch its JSON patch (either may be s's own buffers,
// grown, or others the review made), kept for the next review within the
// bounds.
func (p *scratchPool) put(s *reviewScratch, patch, out []byte) {
	s.patch = keepBuffer(patch, s.patch)
	s.out = keepBuffer(out, s.out)
	s.members = keepStack(s.members)
	s.elems = keepStack(s.elems)
	s.resp, s.patchType = admissionv1.AdmissionResponse{}, ""
	p.pool.Put(s)
}

// keepBuffer is the larger of b and old, emptied, when it is within
// maxScratchBytes; else the other one, or nil.
func keepBuffer(b, old []byte) []byte {
	if cap(b) < cap(old) {
		b, old = old, b
	}
	switch {
	case cap(b) <= maxScratchBytes:
		return b[:0]
	case cap(old) <= maxScratchBytes:
		return old[:0]
	}
	return nil
}

// keepStack is s emptied and cleared (what a decoding that failed half
// way left in it must not be kept alive), or nil beyond maxScratchElems.
func keepStack[T any](s []T) []T {
	if cap(s) > maxScratchElems {
		return nil
	}
	clear(s[:cap(s)])
	return s[:0]
}
