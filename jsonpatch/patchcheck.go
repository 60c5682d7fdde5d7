package jsonpatch

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// The check of a webhook's patch without building its result.
//
// createPatchNative checks the patch Diff made by applying it to the
// request's object (ApplyUnnormalized, copying every map and list along
// every operation's path) and comparing the result with the object the
// engine gave (jsonvalue.JSONEqual). For the patches Diff makes of most
// mutations (keys added, replaced or removed in maps, list items replaced,
// inserted or removed, on paths no other operation's path starts with),
// the result is known without being built: the request's object with each
// operation's key set or removed where its path leads. patchGives compares
// that result with the engine's object in one walk of the two beside the
// operations, and allocates only the table of the operations' paths.

// Operation kinds of a checkedOp.
const (
	checkAdd = iota
	checkReplace
	checkRemove
)

// checkedOp is an operation of patchGives: its path's segments, decoded
// as Apply's find decodes them, its kind, its value and its place in the
// patch.
type checkedOp struct {
	segs  []string
	kind  uint8
	order int
	value any
}

// patchGives reports whether ApplyUnnormalized(orig, ops) succeeds and
// gives a result that jsonvalue.JSONEqual holds equal to want: true only
// when both are certain. false means "not known" (the caller then applies
// the patch): operations other than add, replace and remove, values that
// are null, absent or not normalized (IsNormalized), a path that another
// operation's path starts with (or repeats), a path through anything but
// maps and the items a list has in orig, list operations other than
// those listGives follows (items replaced or led into, then items
// inserted in the order of their indices or removed in the reverse
// order), and whatever would make Apply fail. orig is the request's object, normalized
// (IsNormalized): ApplyUnnormalized's and patchGives' walks assume it.
// TestPatchGivesIsTheCheck holds it to ApplyUnnormalized and JSONEqual.
func patchGives(orig, want map[string]any, ops []Operation) bool {
	return patchGivesNormalized(orig, want, ops, false)
}

// patchGivesNormalized is patchGives for a caller that may know that
// IsNormalized holds of the value of every operation that has one
// (valuesNormalized: appendOpsNormalized's walk told it); false asks
// patchGives to find out.
func patchGivesNormalized(orig, want map[string]any, ops []Operation, valuesNormalized bool) bool {
	return (*Scratch)(nil).patchGives(orig, want, ops, valuesNormalized)
}

// patchGives is patchGivesNormalized with its tables in w's memory (nil:
// its own).
func (w *Scratch) patchGives(orig, want map[string]any, ops []Operation, valuesNormalized bool) bool {
	if orig == nil || want == nil || len(ops) == 0 {
		return false
	}
	n, escaped := 0, 0
	for i := range ops {
		n += strings.Count(ops[i].Path, "/")
		if strings.IndexByte(ops[i].Path, '~') >= 0 {
			escaped += len(ops[i].Path)
		}
	}
	// The decoded segments with escapes go in keys, one after the other:
	// never written again once a segment is made of them.
	segs, keys, run := w.checkTables(n, escaped, len(ops))
	for i := range ops {
		op := &ops[i]
		c := &run[i]
		*c = checkedOp{order: i}
		switch op.Op {
		case "add":
			c.kind = checkAdd
		case "replace":
			c.kind = checkReplace
		case "remove":
			c.kind = checkRemove
		default:
			return false
		}
		if c.kind != checkRemove {
			if !op.HasValue || op.Value == nil || !valuesNormalized && !IsNormalized(op.Value) {
				return false
			}
			c.value = op.Value
		}
		path, err := op.path()
		if err != nil || len(path) == 0 || path[0] != '/' {
			return false
		}
		start := len(segs)
		for rest := path[1:]; ; {
			slash := strings.IndexByte(rest, '/')
			seg := rest
			if slash >= 0 {
				seg = rest[:slash]
			}
			var ok bool
			if seg, keys, ok = decodeSegment(seg, keys); !ok {
				return false
			}
			segs = append(segs, seg)
			if slash < 0 {
				break
			}
			rest = rest[slash+1:]
		}
		c.segs = segs[start:len(segs):len(segs)]
	}
	// Diff's operations come in this order (but for removes of list items,
	// last first): sorted without a move.
	byPath := func(a, b checkedOp) int { return compareSegs(a.segs, b.segs) }
	if !slices.IsSortedFunc(run, byPath) {
		slices.SortFunc(run, byPath)
	}
	for i := 1; i < len(run); i++ {
		if isPrefix(run[i-1].segs, run[i].segs) {
			return false
		}
	}
	return mapGives(orig, want, run, 0)
}

// decodeSegment is decodePatchKey(seg), decoded into the room left in
// keys when it has escapes (ok is false if there is not enough: keys is
// never grown, so that the segments already in it stay where they are).
func decodeSegment(seg string, keys []byte) (string, []byte, bool) {
	if strings.IndexByte(seg, '~') < 0 {
		return seg, keys, true
	}
	if cap(keys)-len(keys) < len(seg) {
		return "", keys, false
	}
	start := len(keys)
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c == '~' && i+1 < len(seg) && (seg[i+1] == '1' || seg[i+1] == '0') {
			if seg[i+1] == '1' {
				c = '/'
			}
			i++
		}
		keys = append(keys, c)
	}
	if len(keys) == start {
		return "", keys, true
	}
	return unsafe.String(&keys[start], len(keys)-start), keys, true
}

// nodeGives is mapGives or listGives for the container o of orig.
func nodeGives(o, w any, run []checkedOp, depth int) bool {
	switch t := o.(type) {
	case map[string]any:
		return mapGives(t, w, run, depth)
	case []any:
		return listGives(t, w, run, depth)
	}
	// Apply's find stops at anything else (a missing key is a nil).
	return false
}

// mapGives is patchGives for the map o of orig and w, at the same path,
// with run the operations under that path (depth segments long), sorted
// by compareSegs.
func mapGives(o map[string]any, w any, run []checkedOp, depth int) bool {
	wm, ok := w.(map[string]any)
	if !ok || wm == nil || o == nil {
		return false
	}
	size := len(o) // the result's
	// The keys of the operations at this depth, when they are few (most
	// patches): the walk of w's keys below looks them up in it, not in run.
	var few [8]string
	keys := few[:0]
	for i := 0; i < len(run); {
		k := run[i].segs[depth]
		j := groupEnd(run, i, depth)
		if keys != nil {
			if len(keys) < len(few) {
				keys = append(keys, k)
			} else {
				keys = nil
			}
		}
		wv, inW := wm[k]
		if op := &run[i]; len(op.segs) == depth+1 {
			// The key's own operation, the only one under it (no path
			// starts with another's). add and replace both set a key of a
			// map (evanphx v4's replace does not ask for it); each
			// drops the value it had.
			old, had := o[k]
			if had && !discardable(old, 0) {
				return false
			}
			if op.kind == checkRemove {
				if !had || inW {
					return false
				}
				size--
			} else {
				if !had {
					size++
				}
				if !inW || !jsonvalue.JSONEqual(op.value, wv) {
					return false
				}
			}
		} else if !inW || !nodeGives(o[k], wv, run[i:j], depth+1) {
			return false
		}
		i = j
	}
	if size != len(wm) {
		return false
	}
	// Every key of w is now one the operations leave with the value they
	// were checked to give, or must be o's with an equal value: the result
	// has w's keys (as many, all present) and their values.
	for k, wv := range wm {
		if keys != nil && slices.Contains(keys, k) || keys == nil && hasSeg(run, depth, k) {
			continue
		}
		ov, ok := o[k]
		if !ok || !jsonvalue.JSONEqual(ov, wv) {
			return false
		}
	}
	return true
}

// listGives is mapGives for the list o of orig. Its operations, in the
// order of their indices, are first some that keep the list's length
// (replacing an item, leading into one) and then some of one kind that
// change it: adds, which insert an item each (at its index in the result:
// in the patch in the order of their indices, an add at an index never
// moves an item inserted before it at a lower one, nor an item of o below
// it), or removes (in the patch in the reverse order of their indices, so
// that each finds the item of o at its index). Every index of the first
// kind is below every index of the second, so the items they name are o's
// own, unmoved whatever the operations' order in the patch. Any other mix
// is left to the check.
func listGives(o []any, w any, run []checkedOp, depth int) bool {
	wl, ok := w.([]any)
	if !ok || wl == nil || o == nil {
		return false
	}
	next := 0   // the first item of o not compared yet
	out := 0    // its index in wl (next less the items removed, plus those inserted, so far)
	shift := -1 // the kind of the operations that insert or remove items, once one is met
	prev := -1  // the place in the patch of the last of them
	for i := 0; i < len(run); {
		j := groupEnd(run, i, depth)
		idx, ok := listIndex(run[i].segs[depth])
		if !ok {
			return false
		}
		op := &run[i]
		direct := len(op.segs) == depth+1
		switch {
		case direct && op.kind == checkAdd:
			// An item inserted at idx of the result: the items of o
			// before it come first, in order.
			if shift == checkRemove || idx < out || idx >= len(wl) || op.order < prev {
				return false
			}
			for ; out < idx; next, out = next+1, out+1 {
				if next >= len(o) || !jsonvalue.JSONEqual(o[next], wl[out]) {
					return false
				}
			}
			if !jsonvalue.JSONEqual(op.value, wl[idx]) {
				return false
			}
			out++
			shift, prev = checkAdd, op.order
		case direct && op.kind == checkRemove:
			// o's item idx dropped, after every remove of a higher index.
			if shift == checkAdd || idx < next || idx >= len(o) || shift == checkRemove && op.order > prev || !discardable(o[idx], 0) {
				return false
			}
			for ; next < idx; next, out = next+1, out+1 {
				if out >= len(wl) || !jsonvalue.JSONEqual(o[next], wl[out]) {
					return false
				}
			}
			next++
			shift, prev = checkRemove, op.order
		default:
			// An item of o replaced or led into, at its own index in the
			// result: below every item inserted or removed.
			if shift >= 0 || idx < next || idx >= len(o) || idx >= len(wl) {
				return false
			}
			// (out == next: nothing inserted or removed yet.)
			for ; next < idx; next++ {
				if !jsonvalue.JSONEqual(o[next], wl[next]) {
					return false
				}
			}
			if direct {
				if op.kind != checkReplace || !discardable(o[idx], 0) || !jsonvalue.JSONEqual(op.value, wl[idx]) {
					return false
				}
			} else if !nodeGives(o[idx], wl[idx], run[i:j], depth+1) {
				return false
			}
			next = idx + 1
			out = next
		}
		i = j
	}
	for ; next < len(o); next, out = next+1, out+1 {
		if out >= len(wl) || !jsonvalue.JSONEqual(o[next], wl[out]) {
			return false
		}
	}
	return out == len(wl)
}

// groupEnd is the end of the operations of run from i on whose segment
// depth is run[i]'s.
func groupEnd(run []checkedOp, i, depth int) int {
	k := run[i].segs[depth]
	j := i + 1
	for j < len(run) && run[j].segs[depth] == k {
		j++
	}
	return j
}

// hasSeg tells whether an operation of run (sorted, all longer than
// depth) has k as its segment depth.
func hasSeg(run []checkedOp, depth int, k string) bool {
	_, found := slices.BinarySearchFunc(run, k, func(op checkedOp, k string) int { return compareSeg(op.segs[depth], k) })
	return found
}

// listIndex is the index a segment names when it is written as strconv.Itoa
// writes a small non-negative int (what Apply's strconv.Atoi reads as
// that index); ok is false for anything else.
func listIndex(s string) (int, bool) {
	if len(s) == 0 || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// compareSeg orders segments: those listIndex reads as an index first, in
// the order of their numbers (by length, then bytes), then the others in
// byte order (strings.Compare, the order of Diff's map keys, so that the
// operations of a Diff come sorted).
func compareSeg(a, b string) int {
	ai, bi := isIndexSeg(a), isIndexSeg(b)
	switch {
	case ai && bi:
		if len(a) != len(b) {
			if len(a) < len(b) {
				return -1
			}
			return 1
		}
	case ai:
		return -1
	case bi:
		return 1
	}
	return strings.Compare(a, b)
}

// isIndexSeg tells whether listIndex reads s as an index.
func isIndexSeg(s string) bool {
	_, ok := listIndex(s)
	return ok
}

// compareSegs orders paths segment by segment (compareSeg), a path before
// the paths it starts.
func compareSegs(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareSeg(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// isPrefix tells whether the path a starts the path b (or is b).
func isPrefix(a, b []string) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
