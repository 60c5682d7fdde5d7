package scheme

import (
	"reflect"
	"unicode/utf8"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// One walk for a patch's strict decode and the typed object defaulting
// builds (PatchDefault).
//
// The MutatingAdmissionPolicy dispatcher decodes a JSON patch's result
// strictly (Patch) and defaults it (DefaultNormalized), and each fast path
// walks the whole object: decodeFixed to prove the patch result is what
// the strict decode gives back, build to make the typed object the
// defaulters run on. When decodeFixed returns the patch result as it is
// (the common case: a patch of an object in normalized form), build reads
// that very map, so decodeBuild makes both in one traversal: it answers
// ok only where walk(v, nil, n, walkFixed) would return v unchanged, and
// writes what buildWatched(v, p, n, w) writes. Anything else (an unknown
// field, a null, a value the strict decode would change) makes it answer
// ok=false, and the two walks run as before. TestPatchDefaultIsPatchThenDefault
// holds the result to Patch followed by DefaultNormalized.

// DefaultError is the error of the defaulting step of PatchDefault.
type DefaultError struct{ Err error }

func (e *DefaultError) Error() string { return e.Err.Error() }

// Unwrap returns the defaulting error.
func (e *DefaultError) Unwrap() error { return e.Err }

// PatchDefault is Patch of ops to obj (of kind gvk) followed by the
// defaulting of its result, as the MutatingAdmissionPolicy dispatcher
// applies it after a JSON patch: DefaultNormalized of the patched object,
// or Default of obj itself when a failed "test" skipped the patch. The
// result and errors are those two calls', a defaulting error wrapped in a
// *DefaultError; for a built-in kind, the strict decode of the patch result
// and the building of the typed object the defaulters run on are one walk
// of the object where the plan can tell (decodeBuild).
func (s *Scheme) PatchDefault(obj map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind) (out map[string]any, skipped bool, err error) {
	return s.PatchDefaultFrom(nil, obj, ops, gvk)
}

// PatchDefaultFrom is PatchDefault, with f as PatchFrom takes it: the patch
// result, when the strict decode is proven to return it as it is, is
// recorded in f (before defaulting: the defaulted object is not proven).
func (s *Scheme) PatchDefaultFrom(f *Fixed, obj map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind) (out map[string]any, skipped bool, err error) {
	if s != nil {
		if patched, defaulted, ok := s.patchDefaultFast(f, obj, ops, gvk); ok {
			if defaulted != nil {
				return defaulted, false, nil
			}
			return s.defaultPatched(patched, false, gvk)
		}
	}
	out, skipped, err = s.PatchFrom(f, obj, ops, gvk)
	if err != nil {
		return nil, skipped, err
	}
	return s.defaultPatched(out, skipped, gvk)
}

// NormalizeDefault is Normalize of obj (of kind gvk) followed by
// DefaultNormalized of its result, as the MutatingAdmissionPolicy
// dispatcher presents an ApplyConfiguration merge result: in typed form,
// defaulted. The result and errors are those two calls', a defaulting
// error wrapped in a *DefaultError. For a built-in kind, when obj is in
// normalized form already (Normalize would return it as it is: a merge
// of a patch in typed form into an object in typed form), proving it and
// building the typed object the defaulters run on are one walk of the
// object (decodeBuild in walkNormalize) instead of two;
// TestNormalizeDefaultIsNormalizeThenDefault holds the result to the two
// calls.
func (s *Scheme) NormalizeDefault(obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	return s.normalizeDefault(obj, gvk, false)
}

// NormalizeDefaultOwn is NormalizeDefault of an obj whose top-level map is
// the caller's own: nothing else holds it, and the caller reads it no more
// but as the result (a merge result's root that the merge made, or the
// patch's own that it took over). The defaulted object's top-level
// entries may then be written into obj itself instead of a new map, as
// PatchDefault does with a JSON patch's own root; the maps and lists below
// them are never written. The result is NormalizeDefault's, bit for bit.
func (s *Scheme) NormalizeDefaultOwn(obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	return s.normalizeDefault(obj, gvk, true)
}

// normalizeDefault is NormalizeDefault, or NormalizeDefaultOwn with own.
func (s *Scheme) normalizeDefault(obj map[string]any, gvk schema.GroupVersionKind, own bool) (map[string]any, error) {
	if out, ok := s.normalizeDefaultFast(obj, gvk, own); ok {
		return out, nil
	}
	n, err := s.Normalize(obj, gvk)
	if err != nil {
		return nil, err
	}
	out, err := s.DefaultNormalized(n, gvk)
	if err != nil {
		return nil, &DefaultError{Err: err}
	}
	return out, nil
}

// normalizeDefaultFast is NormalizeDefault of an obj that Normalize returns
// as it is, or ok=false when the plan cannot tell (obj untouched). With
// own, obj's top-level map is the caller's (NormalizeDefaultOwn): the
// output's entries are written into it (defaultBuilt's own).
func (s *Scheme) normalizeDefaultFast(obj map[string]any, gvk schema.GroupVersionKind, own bool) (map[string]any, bool) {
	if s == nil || obj == nil || !s.Recognizes(gvk) || s.crs.Recognizes(gvk) {
		return nil, false
	}
	k, err := s.kube()
	if err != nil {
		return nil, false // DefaultNormalized reports it
	}
	w := s.plans.getWatch()
	defer s.plans.putWatch(w)
	var missing bool
	typed, sp, ok := s.plans.decodeTyped(k, s.types, obj, gvk, w, walkNormalize, &missing)
	if !ok {
		return nil, false
	}
	if missing {
		// typed is what build makes of Normalize's result, which is not
		// obj (fields the converter writes when unset are missing): obj
		// defaulted as defaultFast defaults an object not in normalized
		// form, without the watch, whose output is ToUnstructured of the
		// defaulted typed object, obj itself only when that equals obj
		// (here never: it has the missing fields).
		out, ok := s.plans.defaultBuilt(k, typed, obj, gvk, nil, own)
		sp.release(w)
		return out, ok
	}
	// obj is Normalize's result, which typed is built from.
	out, ok := s.plans.defaultBuilt(k, typed, obj, gvk, w, own)
	sp.release(w)
	return out, ok
}

// defaultPatched is PatchDefault's defaulting of out, Patch's result
// (obj itself when skipped).
func (s *Scheme) defaultPatched(out map[string]any, skipped bool, gvk schema.GroupVersionKind) (map[string]any, bool, error) {
	defaults := s.DefaultNormalized
	if skipped {
		defaults = s.Default
	}
	out, err := defaults(out, gvk)
	if err != nil {
		return nil, skipped, &DefaultError{Err: err}
	}
	return out, skipped, nil
}

// patchDefaultFast is the fast path of PatchDefault for a patch that
// applies: patched is Patch's result (ok=false: it cannot tell) and
// defaulted the defaulted object, or nil when defaulting it is left to
// DefaultNormalized.
func (s *Scheme) patchDefaultFast(f *Fixed, obj map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind) (patched, defaulted map[string]any, ok bool) {
	if !s.Recognizes(gvk) || s.crs.Recognizes(gvk) {
		return nil, nil, false
	}
	patched, own, ok := jsonpatch.ApplyUnnormalizedOwn(obj, ops)
	if !ok {
		return nil, nil, false
	}
	k, err := s.kube()
	if err != nil {
		// DefaultNormalized reports it.
		out, ok := s.decodeFixedFrom(f, patched, gvk)
		return out, nil, ok
	}
	w := s.plans.getWatch()
	defer s.plans.putWatch(w)
	typed, sp, ok := s.plans.decodeTyped(k, s.types, patched, gvk, w, walkFixed, nil)
	if !ok {
		w.reset()
		out, ok := s.decodeFixedFrom(f, patched, gvk)
		return out, nil, ok
	}
	// decodeBuild proved patched a fixed point of the strict decode.
	f.set(s, patched, gvk)
	// decodeFixed's result is patched itself, which typed is built from.
	// When its root is the patch's own copy and f records nothing, the
	// root the defaulting writes is that very map, written in place: it
	// is returned as the defaulted object, where patched goes unused.
	defaulted, ok = s.plans.defaultBuilt(k, typed, patched, gvk, w, own && f == nil)
	sp.release(w)
	if !ok {
		defaulted = nil
	}
	return patched, defaulted, true
}

// decodeTyped is decodeFixed of obj (mode walkFixed; normalize in
// walkNormalize), for an obj it returns as it is, and the typed object
// typedWatched builds from it (recording in w), in one walk; ok=false when
// obj is not such an object or the plan cannot tell. With missing, as
// decodeBuild takes it, obj may also lack fields walk adds (told in
// *missing): typed is then what typedWatched builds from walk's result.
//
// typed lies in sp, with everything decodeBuild allocated for it; once
// nothing reads it any more, the caller gives sp back (release), which
// resets w.
func (p *planner) decodeTyped(k *kube, types *runtime.Scheme, obj map[string]any, gvk schema.GroupVersionKind, w *watch, mode walkMode, missing *bool) (typed runtime.Object, sp *spareObject, ok bool) {
	kp := p.strictKind(types, obj, gvk)
	if kp == nil || mode == walkNormalize && kp.setsKind != setsGVK {
		// (normalize sets gvk's apiVersion and kind, which strictKind
		// found in obj, only for setsGVK.)
		return nil, nil, false
	}
	n := p.typedKind(k.scheme, gvk)
	if n == nil || n != kp.root {
		return nil, nil, false
	}
	// newTyped, with the object and what decodeBuild allocates from sp.
	sp = spareOf(n)
	if sp.obj == nil {
		return nil, nil, false
	}
	w.block(sp.at, n.size, n)
	w.spare = sp
	if _, ok := decodeBuild(obj, sp.at, n, w, mode, missing); !ok {
		sp.release(w)
		return nil, nil, false
	}
	sp.obj.GetObjectKind().SetGroupVersionKind(gvk)
	return sp.obj, sp, true
}

// A typed object used again.
//
// decodeTyped's object (and defaultFast's, of an object in normalized
// form) is the defaulters' input and emit's: what the defaulting returns
// is the input map or what emit writes, maps, lists and scalars of its own
// (strings: the input's, or the defaulters', never memory of the object),
// so nothing holds the object once the defaulting returns. Its struct, and
// the arrays of its slices, the values its pointers point to and its
// string maps that decodeBuild (buildWatched) made, are then zeroed and
// used again for the next object of the kind, instead of collected: most
// of what a defaulting allocates.
// TestSpareTypedSharesNothing holds every result to the reference and
// unchanged by the defaultings that follow.

// spareObject is a typed object of a kind (a zero one, or one in use)
// and the memory decodeBuild and buildWatched may use for it.
type spareObject struct {
	n   *node
	obj runtime.Object // a pointer to a value of n's type
	at  unsafe.Pointer // obj's value
	// used are the blocks handed out for obj, free the zeroed ones to
	// hand out next.
	used, free []spareBlock
	// maps are the string maps made for obj, freeMaps the empty ones.
	maps, freeMaps []map[string]string
	// typedMaps are the maps of other types made for obj (a container's
	// ResourceList), freeTyped the empty ones.
	typedMaps, freeTyped []reflect.Value
}

// spareBlock is memory for cap values of type t one after the other: v is
// a slice of them (slices' arrays), or a pointer to one (pointees).
type spareBlock struct {
	t   reflect.Type
	v   reflect.Value
	p   unsafe.Pointer
	cap int
}

// spareLimit bounds what a spare object keeps: blocks of more values
// and maps of more entries are left to the collector (a large list or
// map once met is not zeroed again for every object after it).
const spareLimit = 64

// spareOf is a zero object of n's type from n's spares, or a new one
// (obj nil when the type is no runtime.Object).
func spareOf(n *node) *spareObject {
	if sp, ok := n.spares.Get().(*spareObject); ok {
		return sp
	}
	rv := reflect.New(n.t)
	obj, _ := rv.Interface().(runtime.Object)
	return &spareObject{n: n, obj: obj, at: rv.UnsafePointer()}
}

// values is zeroed memory for count (> 0) values of type t, for sp's
// object: a free block of at least count and not much more, or new.
func (sp *spareObject) values(t reflect.Type, count int, pointee bool) (unsafe.Pointer, int) {
	if sp == nil {
		if pointee {
			return reflect.New(t).UnsafePointer(), 1
		}
		v := reflect.MakeSlice(reflect.SliceOf(t), count, count)
		return v.UnsafePointer(), count
	}
	// From the end: release puts the blocks last handed out there, the
	// first of them last, so that an object of the shape of the last one
	// finds each block it asks for at the end, in one probe.
	for i := len(sp.free) - 1; i >= 0; i-- {
		if b := sp.free[i]; b.t == t && b.cap >= count && b.cap <= 2*count+4 {
			last := len(sp.free) - 1
			sp.free[i] = sp.free[last]
			sp.free[last] = spareBlock{}
			sp.free = sp.free[:last]
			sp.used = append(sp.used, b)
			return b.p, b.cap
		}
	}
	var b spareBlock
	if pointee {
		b = spareBlock{t: t, v: reflect.New(t), cap: 1}
	} else {
		b = spareBlock{t: t, v: reflect.MakeSlice(reflect.SliceOf(t), count, count), cap: count}
	}
	b.p = b.v.UnsafePointer()
	if count <= spareLimit {
		sp.used = append(sp.used, b)
	}
	return b.p, b.cap
}

// stringMap is an empty map[string]string for sp's object.
func (sp *spareObject) stringMap(size int) map[string]string {
	if sp == nil {
		return make(map[string]string, size)
	}
	var m map[string]string
	if l := len(sp.freeMaps); l > 0 && size <= 8 {
		m = sp.freeMaps[l-1]
		sp.freeMaps = sp.freeMaps[:l-1]
	} else {
		m = make(map[string]string, size)
	}
	if size <= spareLimit {
		sp.maps = append(sp.maps, m)
	}
	return m
}

// typedMap is an empty map of type t (map kind, not map[string]string)
// for sp's object.
func (sp *spareObject) typedMap(t reflect.Type, size int) reflect.Value {
	if sp == nil {
		return reflect.MakeMapWithSize(t, size)
	}
	var m reflect.Value
	if size <= 8 {
		for i := len(sp.freeTyped) - 1; i >= 0; i-- {
			if sp.freeTyped[i].Type() == t {
				m = sp.freeTyped[i]
				last := len(sp.freeTyped) - 1
				sp.freeTyped[i] = sp.freeTyped[last]
				sp.freeTyped[last] = reflect.Value{}
				sp.freeTyped = sp.freeTyped[:last]
				break
			}
		}
	}
	if !m.IsValid() {
		m = reflect.MakeMapWithSize(t, size)
	}
	if size <= spareLimit {
		sp.typedMaps = append(sp.typedMaps, m)
	}
	return m
}

// release gives sp back to its node's spares once nothing reads its
// object any more, zeroed (holding on to nothing), and resets w (when
// not nil).
func (sp *spareObject) release(w *watch) {
	if w != nil {
		w.reset() // (its blocks lie in the object)
	}
	reflect.NewAt(sp.n.t, sp.at).Elem().SetZero()
	for _, b := range sp.used {
		if b.v.Kind() == reflect.Pointer {
			b.v.Elem().SetZero()
		} else {
			b.v.Clear()
		}
	}
	for i := len(sp.used) - 1; i >= 0; i-- {
		sp.free = append(sp.free, sp.used[i]) // (the first handed out last: values)
	}
	sp.free = keepLast(sp.free, 2*spareLimit)
	clear(sp.used)
	sp.used = sp.used[:0]
	for _, m := range sp.maps {
		if len(m) <= 8 {
			clear(m)
			sp.freeMaps = append(sp.freeMaps, m)
		}
	}
	sp.freeMaps = keepLast(sp.freeMaps, spareLimit)
	clear(sp.maps)
	sp.maps = sp.maps[:0]
	for _, m := range sp.typedMaps {
		if m.Len() <= 8 {
			m.Clear()
			sp.freeTyped = append(sp.freeTyped, m)
		}
	}
	sp.freeTyped = keepLast(sp.freeTyped, spareLimit)
	clear(sp.typedMaps)
	sp.typedMaps = sp.typedMaps[:0]
	sp.n.spares.Put(sp)
}

// keepLast is l without its first elements beyond the last limit (objects of
// one kind in turn of many shapes leave a spare object no longer lists).
func keepLast[T any](l []T, limit int) []T {
	if len(l) <= limit {
		return l
	}
	n := copy(l, l[len(l)-limit:])
	clear(l[n:])
	return l[:n]
}

// decodeBuild is walk(v, nil, n, mode), answering ok only when that
// returns v unchanged, and buildWatched(v, p, n, w), in one traversal of
// structs, slices, pointers and string maps; other values are handed to
// both (decodeBuildApart). empty is walk's. mode is walkFixed or
// walkNormalize: what the traversal accepts itself is what walk returns
// unchanged in walkFixed, which walkNormalize (checking less, and changing
// only what walkFixed refuses or changes too) returns unchanged as well.
// When missing is not nil, a struct without some of the fields walk adds
// (n.unsetPresent: the converter writes them when unset) sets *missing
// instead of answering ok=false: v is then not walk's fixed point, but
// what buildWatched writes is what it writes from walk's result.
func decodeBuild(v any, p unsafe.Pointer, n *node, w *watch, mode walkMode, missing *bool) (empty, ok bool) {
	if n.fallback || n.wrapper != nil {
		return decodeBuildApart(v, p, n, w, mode)
	}
	switch n.kind {
	case nodeStruct:
		m, isMap := v.(map[string]any)
		if !isMap || m == nil {
			return false, false
		}
		nPresent := 0 // keys of m that are fields in n.unsetPresent
		for k, item := range m {
			f, _ := n.table.Get(k)
			if f == nil {
				return false, false // strict decoding fails
			}
			if f.present {
				nPresent++
			}
			if item == nil {
				// Reads as the zero value, which p holds; walk keeps only
				// the null the converter writes for it (a zero time), and
				// refuses a null that a custom UnmarshalJSON may refuse.
				if !f.node.nullIsZero || !f.present || f.unset != nil {
					return false, false
				}
				continue
			}
			fp := unsafe.Add(p, f.offset)
			if f.node.kind == nodeString && !f.node.fallback {
				str, isString := item.(string)
				if !isString || !utf8.ValidString(str) || f.omitempty && str == "" {
					return false, false
				}
				*(*string)(fp) = str
				continue
			}
			empty, ok := decodeBuild(item, fp, f.node, w, mode, missing)
			if !ok || empty && (f.omitempty || f.omitzero != nil) {
				// (An empty value under omitempty is one walk drops.)
				return false, false
			}
		}
		// A field the converter writes even when unset, missing: walk
		// adds it. What build reads is the same (the zero value the field
		// holds is what it reads from the value walk adds, an empty
		// object or null): where missing is given, it is told instead.
		if nPresent != len(n.unsetPresent) {
			if missing == nil || !zeroWhenMissing(m, n) {
				return false, false
			}
			*missing = true
		}
		return false, true
	case nodeBool:
		// walk returns a bool as it is; build stores it.
		b, isBool := v.(bool)
		if !isBool {
			return false, false
		}
		*(*bool)(p) = b
		return !b, true
	case nodeInt:
		// walk returns an int64 that fits as it is (a float it refuses in
		// walkFixed, changes in walkNormalize); build stores it.
		x, isInt := v.(int64)
		if !isInt || n.bits < 64 && (x < -1<<(n.bits-1) || x > 1<<(n.bits-1)-1) {
			return false, false
		}
		putBits(p, n.bits, uint64(x))
		return x == 0, true
	case nodeSlice:
		l, isList := v.([]any)
		if !isList || l == nil {
			return false, false
		}
		if len(l) == 0 {
			reflect.NewAt(n.t, p).Elem().Set(reflect.MakeSlice(n.t, 0, 0)) // empty, not nil
			return true, true
		}
		// (A zeroed array of len(l) values, or more: the slice's len is
		// what the converter and the defaulters read, its cap only where
		// an append is written.)
		data, c := w.spareOf().values(n.elem.t, len(l), false)
		*(*sliceHeader)(p) = sliceHeader{data, len(l), c}
		size := n.elem.size
		w.block(data, uintptr(len(l))*size, n.elem)
		for i, item := range l {
			if item == nil {
				return false, false
			}
			if _, ok := decodeBuild(item, unsafe.Add(data, uintptr(i)*size), n.elem, w, mode, missing); !ok {
				return false, false
			}
		}
		return false, true
	case nodePointer:
		q, _ := w.spareOf().values(n.elem.t, 1, true)
		w.block(q, n.elem.size, n.elem)
		if _, ok := decodeBuild(v, q, n.elem, w, mode, missing); !ok {
			return false, false
		}
		*(*unsafe.Pointer)(p) = q
		return false, true // a non-nil pointer is never empty
	case nodeMap:
		if n.t != stringMapType {
			return decodeBuildApart(v, p, n, w, mode)
		}
		m, isMap := v.(map[string]any)
		if !isMap || m == nil {
			return false, false
		}
		w.value(p, n, v)
		out := w.spareOf().stringMap(len(m))
		for k, item := range m {
			x, isString := item.(string)
			if !isString || !utf8.ValidString(k) || !utf8.ValidString(x) {
				return false, false
			}
			out[k] = x
		}
		*(*map[string]string)(p) = out
		return len(m) == 0, true
	}
	return decodeBuildApart(v, p, n, w, mode)
}

// zeroWhenMissing tells whether every field of n.unsetPresent that m
// lacks is one whose output when unset (which walk adds) build reads as
// the zero value the field holds without it: null, or an empty object
// (a struct whose fields are all omitted when unset). Others (a quantity
// written "0", which reads back as another Quantity than the zero one)
// are not told apart.
func zeroWhenMissing(m map[string]any, n *node) bool {
	for _, f := range n.unsetPresent {
		if _, ok := m[f.name]; ok {
			continue
		}
		if f.unset == nil {
			continue
		}
		if u, isMap := f.unset.(map[string]any); isMap && len(u) == 0 && f.node.kind == nodeStruct && !f.node.fallback && f.node.wrapper == nil && !f.node.toCustom && !f.node.fromCustom {
			continue
		}
		return false
	}
	return true
}

// decodeBuildApart is decodeBuild through walk, then buildWatched.
func decodeBuildApart(v any, p unsafe.Pointer, n *node, w *watch, mode walkMode) (empty, ok bool) {
	_, empty, changed, ok := walk(v, nil, n, mode)
	if !ok || changed || !buildWatched(v, p, n, w) {
		return false, false
	}
	return empty, true
}
