package scheme

import (
	"bytes"
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
	// spare is where decodeBuild and buildWatched take the memory of the
	// typed object they build (nil: new memory).
	spare *spareObject
}

// spareOf is w's spare object (nil when w is).
func (w *watch) spareOf() *spareObject {
	if w == nil {
		return nil
	}
	return w.spare
}

// watchedBlock is size bytes at p: values of n's type one after the
// other (n nil: bytes).
type watchedBlock struct {
	p    unsafe.Pointer
	size uintptr
	n    *node
}

// watchedValue is a value of n's type at p, built from prev.
type watchedValue struct {
	p    unsafe.Pointer
	n    *node
	prev any
}

// block records size bytes at p, values of n's type (nil: bytes), as
// part of the typed value.
func (w *watch) block(p unsafe.Pointer, size uintptr, n *node) {
	if w == nil || size == 0 {
		return
	}
	if n != nil && len(n.strs) == 0 {
		n = nil // nothing but bytes to compare
	}
	w.blocks = append(w.blocks, watchedBlock{p, size, n})
}

// value records the map or custom value of n's type at p, built from
// prev. A time holds nothing outside itself but its *Location, which is
// not the object's: its parent's block covers it.
func (w *watch) value(p unsafe.Pointer, n *node, prev any) {
	if w == nil || n.t == timeType {
		return
	}
	w.values = append(w.values, watchedValue{p, n, prev})
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
	off, strs := uintptr(0), w.strs
	for _, b := range w.blocks {
		now, was := unsafe.Slice((*byte)(b.p), b.size), w.snap[off:off+b.size]
		off += b.size
		var kept []string
		if b.n != nil {
			count := int(b.size/b.n.size) * len(b.n.strs)
			kept, strs = strs[:count], strs[count:]
		}
		if !bytes.Equal(now, was) && !sameButStrings(b, now, was, kept) {
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

// stringSize is the size of a string header.
const stringSize = unsafe.Sizeof("")

// reset forgets what w recorded (holding on to none of it), keeping its
// space.
func (w *watch) reset() {
	clear(w.blocks)
	clear(w.values)
	clear(w.strs)
	w.blocks, w.values, w.snap, w.strs = w.blocks[:0], w.values[:0], w.snap[:0], w.strs[:0]
	w.spare = nil
}
