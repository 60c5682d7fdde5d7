package jsonpatch

// Scratch is the memory AppendPatchIn works in: the buffers of the diff
// (its operations, their paths, its stack of keys) and the tables of the
// patch's check (its operations' decoded paths), kept from one call to
// the next so that a caller making patch after patch (a webhook's
// reviews) does not allocate them each time. The zero value is ready for
// use. A Scratch is not safe for concurrent use; between calls it holds
// none of the documents it worked on.
type Scratch struct {
	d    differ
	segs []string
	keys []byte
	run  []checkedOp
}

// Bounds of what a Scratch keeps for the next call: larger buffers (a
// patch of a large object) are left to the collector.
const (
	maxScratchOps   = 1 << 10
	maxScratchBytes = 64 << 10
)

// diff is Diff, in w's buffers when w is not nil: the operations and
// their paths are then w's, valid until w's next diff.
func (w *Scratch) diff(orig, want map[string]any) []Operation {
	if w == nil {
		return Diff(orig, want)
	}
	if w.d.ops == nil {
		w.d = *newDiffer()
	}
	return w.d.diff(orig, want)
}

// checkTables are patchGives' tables: room for n path segments, for
// escaped bytes of decoded segments (nil for none) and nOps operations,
// in w's memory when w is not nil.
func (w *Scratch) checkTables(n, escaped, nOps int) (segs []string, keys []byte, run []checkedOp) {
	if w == nil {
		segs = make([]string, 0, n)
		if escaped > 0 {
			keys = make([]byte, 0, escaped)
		}
		return segs, keys, make([]checkedOp, nOps)
	}
	if cap(w.segs) < n {
		w.segs = make([]string, 0, n)
	}
	if escaped > 0 && cap(w.keys) < escaped {
		w.keys = make([]byte, 0, escaped)
	}
	if cap(w.run) < nOps {
		w.run = make([]checkedOp, nOps)
	}
	return w.segs[:0], w.keys[:0], w.run[:nOps]
}

// release empties w after a call: nothing it holds refers to the call's
// documents any more (the operations' values, the keys and segments of
// their paths), and buffers beyond the bounds are dropped.
func (w *Scratch) release() {
	d := &w.d
	clear(d.ops[:cap(d.ops)])
	clear(d.keys[:cap(d.keys)])
	clear(w.segs[:cap(w.segs)])
	clear(w.run[:cap(w.run)])
	if cap(d.ops) > maxScratchOps || cap(d.keys) > maxScratchOps || cap(d.pathEnds) > maxScratchOps ||
		cap(d.path) > maxScratchBytes || cap(d.paths) > maxScratchBytes {
		*d = differ{}
	}
	if cap(w.segs) > maxScratchOps {
		w.segs = nil
	}
	if cap(w.keys) > maxScratchBytes {
		w.keys = nil
	}
	if cap(w.run) > maxScratchOps {
		w.run = nil
	}
}
