package scheme

import (
	"bytes"
	"encoding/binary"
	"slices"
	"unsafe"
)

// Telling, without writing the object again, that the defaulters changed
// nothing (Scheme.DefaultNormalized).
//
// defaultReference is ToUnstructured(Default(FromUnstructured(obj))), and
// obj itself when that is equal to obj. When the defaulters leave the typed
// object as FromUnstructured built it, that is ToUnstructured of
// FromUnstructured(obj): obj normalized, which is obj again when obj is in
// normalized form already (a result of Normalize, Patch, DecodeRequest,
// Default: ToUnstructured's output, which the round trip writes as it is,
// the premise of normalize's reuse of a base too). What remains to know is
// whether the defaulters wrote anything, and build knows where the typed
// object lies: a watch records it as it builds (buildWatched).
//
//   - blocks are the memory build allocates and fills: the object's
//     struct, the structs pointers point to, the arrays of slices, the
//     bytes of []byte fields. Whatever a defaulter writes there (a
//     field, a pointer to something new, a slice header, a string) changes
//     their bytes, which a copy taken before the defaulters run tells.
//     What blocks point to and build did not allocate is immutable
//     (strings) or shared by every value (a time's *Location).
//   - values are what lies outside the blocks: maps (their entries, and
//     everything their values hold) and values of custom types whose
//     converter entry may allocate what it likes (quantities, raw
//     extensions). They are written again, as emit writes them, and must
//     come back as the input's own value (sameValue), as they do from an
//     object in normalized form that nothing changed.
//
// A string field written again with the same text (SetDefaults_PodSpec's
// `DeprecatedServiceAccount = ServiceAccountName`, on every Pod with a
// service account) changes the block's bytes, not what emit writes: the
// strings of a block's plain string fields (stringOffsets) are kept when
// the copy is taken, and a block whose bytes differ only there, in string
// fields whose text is the same, is unchanged. (Kept as strings, they
// stay alive until compared.)
//
// Any other change either way (padding bytes a defaulter copied over, a
// quantity caching its text) only sends the object through emit, as
// before: the watch may say "changed" for nothing, never "unchanged" for
// a change.
// TestDefaultNormalizedIsDefault holds the result to defaultReference over
// every built-in kind.
type watch struct {
	blocks []watchedBlock
	values []watchedValue
	// snap is the blocks' bytes, one after the other, before the
	// defaulters ran; strs their string fields' strings, in the same order.
	snap []byte
	strs []string
	// What diff found (the field ranges emit skips, defaultBuilt): own
	// covers the bytes the defaulters wrote (in blocks, and the values
	// written otherwise than their input), below the slots (pointers,
	// slice headers) whose blocks hold such bytes, further down; both
	// sorted, disjoint. marks and order are diff's scratch space.
	own, below []span
	marks      []bool
	order      []int32
}

// watchedBlock is size bytes at p: values of n's type one after the
// other (n nil: bytes). slot is where the pointer or slice header that
// reaches it lies (within another block), nil for the object's own
// struct; known tells that slot was recorded (blockAt).
type watchedBlock struct {
	p     unsafe.Pointer
	size  uintptr
	n     *node
	slot  unsafe.Pointer
	known bool
}

// span is the addresses [lo, hi).
type span struct{ lo, hi uintptr }

// watchedValue is a value of n's type at p, built from prev; blocks is
// how many blocks were recorded before it (its holder is one of them).
type watchedValue struct {
	p      unsafe.Pointer
	n      *node
	prev   any
	blocks int
}

// block records size bytes at p, values of n's type (nil: bytes), as
// part of the typed value.
func (w *watch) block(p unsafe.Pointer, size uintptr, n *node) {
	w.add(watchedBlock{p: p, size: size, n: n})
}

// blockAt is block, of a block reached through the pointer or slice
// header at slot (nil: the object's own struct, reached from nothing).
func (w *watch) blockAt(slot, p unsafe.Pointer, size uintptr, n *node) {
	w.add(watchedBlock{p: p, size: size, n: n, slot: slot, known: true})
}

func (w *watch) add(b watchedBlock) {
	if w == nil || b.size == 0 {
		return
	}
	if b.n != nil && len(b.n.strs) == 0 {
		b.n = nil // nothing but bytes to compare
	}
	w.blocks = append(w.blocks, b)
}

// value records the map or custom value of n's type at p, built from
// prev. A time holds nothing outside itself but its *Location, which is
// not the object's: its parent's block covers it.
func (w *watch) value(p unsafe.Pointer, n *node, prev any) {
	if w == nil || n.t == timeType {
		return
	}
	w.values = append(w.values, watchedValue{p, n, prev, len(w.blocks)})
}

// take copies the blocks' bytes, as they are before the defaulters run.
func (w *watch) take() {
	w.snap, w.strs = w.snap[:0], w.strs[:0]
	for _, b := range w.blocks {
		w.snap = append(w.snap, unsafe.Slice((*byte)(b.p), b.size)...)
		if b.n == nil {
			continue
		}
		for at := uintptr(0); at < b.size; at += b.n.size {
			for _, o := range b.n.strs {
				w.strs = append(w.strs, *(*string)(unsafe.Add(b.p, at+o)))
			}
		}
	}
}

// unchanged tells whether the typed value is still the one take saw, its
// maps and custom values still written as their input (with e's scratch
// space).
func (w *watch) unchanged(e *emitter) bool {
	for i, t := range w.taken {
		if !bytes.Equal(t.now, t.was) && !sameButStrings(w.blocks[i], t.now, t.was, t.kept) {
			return false
		}
	}
	for _, v := range w.values {
		// Nothing is recorded within a map: values lie in structs, slices
		// and pointers, which the converter reaches addressable.
		o, ok := e.emit(v.p, v.n, v.prev, true)
		if !ok || !sameValue(o, v.prev) {
			return false
		}
	}
	return true
}

// takenBlock is a block's bytes now, as take copied them (was), and the
// strings of its string fields take kept.
type takenBlock struct {
	now, was []byte
	kept     []string
}

// taken yields each block, by index, as it is and as take saw it.
func (w *watch) taken(yield func(int, takenBlock) bool) {
	off, strs := uintptr(0), w.strs
	for i, b := range w.blocks {
		t := takenBlock{now: unsafe.Slice((*byte)(b.p), b.size), was: w.snap[off : off+b.size]}
		off += b.size
		if b.n != nil {
			count := int(b.size/b.n.size) * len(b.n.strs)
			t.kept, strs = strs[:count], strs[count:]
		}
		if !yield(i, t) {
			return
		}
	}
}

// sameButStrings tells whether block b, now as it was (its bytes before,
// kept its strings), differs only in string fields that hold the same text.
func sameButStrings(b watchedBlock, now, was []byte, kept []string) bool {
	if b.n == nil {
		return false
	}
	from, i := uintptr(0), 0
	for at := uintptr(0); at < b.size; at += b.n.size {
		for _, o := range b.n.strs {
			if !bytes.Equal(now[from:at+o], was[from:at+o]) || *(*string)(unsafe.Add(b.p, at+o)) != kept[i] {
				return false
			}
			from, i = at+o+stringSize, i+1
		}
	}
	return bytes.Equal(now[from:], was[from:])
}

// diff is unchanged (same), telling also where the typed value changed
// when it did: located, w.own and w.below then cover every change (a
// range they leave out lies in a block as build made it, and whatever it
// reaches through pointers and slices too). A block reached from a slot
// that was not recorded (block), or a slot outside the blocks, leaves
// the changes unlocated. The ranges may cover more than what changed
// (whole words of a block), never less.
func (w *watch) diff(e *emitter) (same, located bool) {
	w.own, w.below = w.own[:0], w.below[:0]
	w.marks = slices.Grow(w.marks[:0], len(w.blocks))[:len(w.blocks)]
	clear(w.marks)
	w.order = w.order[:0]
	for i, t := range w.taken {
		if !bytes.Equal(t.now, t.was) {
			w.marks[i] = w.changedWords(w.blocks[i], t.now, t.was, t.kept)
		}
	}
	located = true
	for _, v := range w.values {
		// As unchanged compares them (e does not skip here).
		o, ok := e.emit(v.p, v.n, v.prev, true)
		if ok && sameValue(o, v.prev) {
			continue
		}
		at := uintptr(v.p)
		w.own = append(w.own, span{at, at + max(v.n.size, 1)})
		if j := w.holder(at, v.blocks); j >= 0 {
			w.marks[j] = true
		} else {
			located = false
		}
	}
	if len(w.own) == 0 {
		return true, true
	}
	// A block holds its own changes and the slots of changed blocks
	// further down; a block is recorded after the block of its slot.
	for i := len(w.blocks) - 1; i >= 0 && located; i-- {
		b := w.blocks[i]
		if !w.marks[i] || b.known && b.slot == nil {
			continue
		}
		at := uintptr(b.slot)
		j := w.holder(at, i)
		if !b.known || j < 0 || j >= i {
			located = false
			break
		}
		w.below = append(w.below, span{at, at + 1})
		w.marks[j] = true
	}
	w.own, w.below = mergeSpans(w.own), mergeSpans(w.below)
	return false, located
}

// changedWords appends to w.own the words of block b (its bytes now, was
// before, kept its strings) that differ, but for those of string fields
// that hold the same text (sameButStrings), and tells whether there were
// any.
func (w *watch) changedWords(b watchedBlock, now, was []byte, kept []string) bool {
	base, start, found := uintptr(b.p), len(w.own), false
	for i, j := 0, 0; i < len(now); i = j {
		if i%64 == 0 {
			// Eight words at once, when alike.
			if j = min(i+64, len(now)); bytes.Equal(now[i:j], was[i:j]) {
				continue
			}
		}
		j = min(i+8, len(now))
		var differs bool
		if j-i == 8 {
			differs = binary.LittleEndian.Uint64(now[i:]) != binary.LittleEndian.Uint64(was[i:]) && !sameStringWord(b, uintptr(i), kept)
		} else {
			differs = !bytes.Equal(now[i:j], was[i:j])
		}
		if !differs {
			continue
		}
		found = true
		lo, hi := base+uintptr(i), base+uintptr(j)
		if l := len(w.own); l > start && w.own[l-1].hi == lo {
			w.own[l-1].hi = hi
			continue
		}
		w.own = append(w.own, span{lo, hi})
	}
	return found
}

// sameStringWord tells whether the word at offset i of block b lies in a
// string field whose text is still the one kept.
func sameStringWord(b watchedBlock, i uintptr, kept []string) bool {
	if b.n == nil {
		return false
	}
	elem := i / b.n.size
	rel := i - elem*b.n.size
	for k, o := range b.n.strs {
		if o > rel {
			break
		}
		if rel+8 <= o+stringSize {
			s := *(*string)(unsafe.Add(b.p, elem*b.n.size+o))
			return s == kept[int(elem)*len(b.n.strs)+k]
		}
	}
	return false
}

// holder is the index of the block that holds address at, -1 when none
// does; below, when not negative, is a block recorded after it (the
// holder of a slot is recorded before the block it reaches, most often
// just before).
func (w *watch) holder(at uintptr, below int) int {
	for i := below - 1; i >= 0 && i >= below-8; i-- {
		if b := w.blocks[i]; uintptr(b.p) <= at && at < uintptr(b.p)+b.size {
			return i
		}
	}
	if len(w.order) != len(w.blocks) {
		w.order = w.order[:0]
		for i := range w.blocks {
			w.order = append(w.order, int32(i))
		}
		slices.SortFunc(w.order, func(a, b int32) int {
			pa, pb := uintptr(w.blocks[a].p), uintptr(w.blocks[b].p)
			switch {
			case pa < pb:
				return -1
			case pa > pb:
				return 1
			}
			return 0
		})
	}
	lo, hi := 0, len(w.order)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if uintptr(w.blocks[w.order[m]].p) <= at {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return -1
	}
	i := int(w.order[lo-1])
	if b := w.blocks[i]; at < uintptr(b.p)+b.size {
		return i
	}
	return -1
}

// mergeSpans sorts s and joins the spans that overlap or touch.
func mergeSpans(s []span) []span {
	if !slices.IsSortedFunc(s, compareSpans) {
		slices.SortFunc(s, compareSpans)
	}
	out := s[:0]
	for _, x := range s {
		if l := len(out); l > 0 && x.lo <= out[l-1].hi {
			out[l-1].hi = max(out[l-1].hi, x.hi)
			continue
		}
		out = append(out, x)
	}
	return out
}

// compareSpans orders spans by their start.
func compareSpans(a, b span) int {
	switch {
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

// touches tells whether some span of s (sorted, disjoint) meets
// [at, at+size).
func touches(s []span, at, size uintptr) bool {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m].hi <= at {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(s) && s[lo].lo < at+size
}

// stringSize is the size of a string header.
const stringSize = unsafe.Sizeof("")

// reset forgets what w recorded (holding on to none of it), keeping its
// space.
func (w *watch) reset() {
	clear(w.blocks)
	clear(w.values)
	clear(w.strs)
	w.blocks, w.values, w.snap, w.strs = w.blocks[:0], w.values[:0], w.snap[:0], w.strs[:0]
	w.own, w.below, w.marks, w.order = w.own[:0], w.below[:0], w.marks[:0], w.order[:0]
}
