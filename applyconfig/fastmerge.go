package applyconfig

// This file holds the fast path of Merge: a validation and a merge that walk
// the unstructured values against the structured-merge-diff schema directly,
// instead of through typed.TypedValue. The schema is read in its compiled
// form, a plan (plan.go), where each type is resolved once rather than at
// every node. They model a subset of SMD exactly and answer "don't know"
// (false) for everything else, in which case Merge runs
// structured-merge-diff itself, which stays the definition of the result
// and the only source of error messages:
//
//   - validValue accepts only what typed.TypedValue validation accepts (it may
//     refuse more: nulls inside associative lists, numbers that are not int64
//     or float64, floats as list keys, Go types JSON does not produce).
//   - mergeValues gives what TypedValue.Merge followed by TypedToObject gives,
//     for validated inputs, or refuses (lists with duplicate keys on either
//     side, a null meeting a value, values of different kinds meeting in a
//     deduced field).
//
// TestFastPathIsStructuredMergeDiff, TestFastPathTakesTheCommonCases,
// TestFastPathOnPerturbedInputs and FuzzMerge check both claims against
// structured-merge-diff and upstream's patcher; the plan tests check that
// walking the plan gives what walking the schema with Schema.Resolve and
// Map.FindField gives.

import (
	"hash/maphash"
	"math"
	"math/bits"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// validValue reports whether v is valid for the type t (a plan) the way
// TypedValue validation (with typed.AllowDuplicates when allowDuplicates)
// sees it. false means "not known to be valid".
func validValue(t *ptype, v any, allowDuplicates bool) bool {
	t = t.get()
	if !t.ok {
		return false
	}
	switch x := v.(type) {
	case nil:
		// Null validates as any scalar, list or map.
		return t.m != nil || t.scalar != 0 || t.l != nil
	case string:
		return t.scalar&acceptsString != 0
	case bool:
		return t.scalar&acceptsBool != 0
	case int64, float64:
		return t.scalar&acceptsNumber != 0
	case map[string]any:
		if t.m == nil {
			return false
		}
		return validMap(t.m, x, allowDuplicates)
	case []any:
		// deduceAtom picks the list; without one, handleAtom's first atom
		// (map, then scalar) refuses a list.
		if t.l == nil {
			return false
		}
		return validList(t.l, x, allowDuplicates)
	}
	return false
}

// validBeside is validValue(t, v, true) for v beside ref, a value known
// to validate (with duplicates allowed) for the same type t: the value at
// the same path of a valid object of the same kind. Validation is a walk
// of each value against the type at its path, so where v holds the very
// map or slice ref holds (an object and its successor share what a
// mutation and its defaulting did not touch) that subtree validates
// without a walk; so does an entry or item that is ref's very value at
// the same key or position (sameMerged: the same map or slice, an equal
// scalar of the same type), without its type looked up.
// TestPlanWalksAsSchema and TestValidBesideOnRealObjects hold it to
// validValue.
func validBeside(t *ptype, v, ref any) bool {
	switch x := v.(type) {
	case map[string]any:
		r, ok := ref.(map[string]any)
		if !ok {
			break
		}
		if jsonvalue.SameMap(x, r) {
			return true
		}
		if t = t.get(); !t.ok || t.m == nil {
			return false
		}
		for k, fv := range x {
			rv, has := r[k]
			if has && sameMerged(fv, rv) {
				// ref's very value under the same key, of the same type:
				// valid as it is there, without looking the type up.
				continue
			}
			ft, ok := t.m.fields.Get(k)
			if !ok {
				if t.m.elemZero {
					return false
				}
				ft = t.m.elem
			}
			if !has {
				if !validValue(ft, fv, true) {
					return false
				}
				continue
			}
			if !validBeside(ft, fv, rv) {
				return false
			}
		}
		return true
	case []any:
		r, ok := ref.([]any)
		if !ok {
			break
		}
		if jsonvalue.SameSlice(x, r) {
			return true
		}
		if t = t.get(); !t.ok || t.l == nil {
			return false
		}
		if t.l.associative && !keysValid(t.l, x) {
			return false
		}
		for i, item := range x {
			if i < len(r) {
				if sameMerged(item, r[i]) {
					continue
				}
				if !validBeside(t.l.elem, item, r[i]) {
					return false
				}
			} else if !validValue(t.l.elem, item, true) {
				return false
			}
		}
		return true
	}
	return validValue(t, v, true)
}

func validMap(t *pmap, m map[string]any, allowDuplicates bool) bool {
	if len(m) == 0 {
		return true // without starting an iteration
	}
	for k, fv := range m {
		ft, ok := t.fields.Get(k)
		if !ok {
			if t.elemZero {
				return false
			}
			ft = t.elem
		}
		if _, isString := fv.(string); isString {
			// The most common leaf, without the call (validValue's string
			// case).
			ft = ft.get()
			if !ft.ok || ft.scalar&acceptsString == 0 {
				return false
			}
			continue
		}
		if !validValue(ft, fv, allowDuplicates) {
			return false
		}
	}
	return true
}

func validList(t *plist, l []any, allowDuplicates bool) bool {
	if t.associative {
		if allowDuplicates {
			if !keysValid(t, l) {
				return false
			}
		} else if !uniqueKeys(t, l) {
			return false
		}
	}
	for _, item := range l {
		if !validValue(t.elem, item, allowDuplicates) {
			return false
		}
	}
	return true
}

// itemKey identifies an item of an associative list as SMD's PathElement
// does: the values of the key fields (or the scalar itself, for a set).
// Only strings, int64 and booleans are modelled; a key field that is absent
// and has no default is recorded as absent.
type itemKey struct {
	n    int
	vals [4]keyVal
}

type keyVal struct {
	kind uint8 // 0 absent, 1 string, 2 int64, 3 bool
	s    string
	i    int64
}

func makeKeyVal(v any) (keyVal, bool) {
	switch t := v.(type) {
	case string:
		return keyVal{kind: 1, s: t}, true
	case int64:
		return keyVal{kind: 2, i: t}, true
	case bool:
		kv := keyVal{kind: 3}
		if t {
			kv.i = 1
		}
		return kv, true
	}
	return keyVal{}, false
}

// listKeyIndex holds the keys of one list's items, in order.
type listKeyIndex struct {
	keys []itemKey
	// slots index the keys of long lists (nil for short ones): an open
	// addressing table of positions+1 (0 is empty), of the first item
	// with each key. A map[itemKey]int would allocate every key (an
	// itemKey is over 128 bytes, which a Go map holds indirectly).
	slots []int32
	// dups tells, with slots, that some key is repeated.
	dups bool
}

// keySeed seeds the hashes of list keys (random per process, as Go maps'
// seeds are, so that the keys of an object cannot be chosen to collide).
var keySeed = maphash.MakeSeed()

// hash is the hash of k for listKeyIndex's table.
func (k *itemKey) hash() uint64 {
	h := uint64(k.n)
	for j := range k.n {
		v := &k.vals[j]
		h = (h^uint64(v.kind))*0x9E3779B97F4A7C15 ^ uint64(v.i)
		if v.kind == 1 {
			h ^= maphash.String(keySeed, v.s)
		}
		h *= 0xBF58476D1CE4E5B9
	}
	return h ^ h>>31
}

// smallList is the length up to which keys are compared pairwise.
const smallList = 8

// listKeys computes the keys of an associative list's items, refusing what
// SMD refuses (null or non-map items of a keyed list, items without any key
// field, maps or lists in a set) and what is not modelled.
func listKeys(t *plist, l []any) (listKeyIndex, bool) {
	return listKeysInto(t, l, nil)
}

// listKeysInto is listKeys holding the keys in buf when it has room (a
// caller's array for short lists).
func listKeysInto(t *plist, l []any, buf []itemKey) (listKeyIndex, bool) {
	if len(t.keys) > 0 && !t.keysOK {
		return listKeyIndex{}, false
	}
	keys := buf[:0]
	if cap(keys) < len(l) {
		keys = make([]itemKey, len(l))
	} else {
		keys = keys[:len(l)]
		clear(keys)
	}
	idx := listKeyIndex{keys: keys}
	for i, item := range l {
		if !itemKeyOf(t, item, &idx.keys[i]) {
			return idx, false
		}
	}
	if len(l) > smallList {
		idx.index()
	}
	return idx, true
}

// uniqueKeys reports whether listKeys(t, l) answers ok with no key
// repeated: what validation with duplicates refused asks of an
// associative list. The keys of a short list are held on its stack (its
// own frame, not that of the recursive walks that call it).
//
//go:noinline
func uniqueKeys(t *plist, l []any) bool {
	var buf [smallList]itemKey
	keys, ok := listKeysInto(t, l, buf[:])
	return ok && !keys.hasDuplicates()
}

// keysValid is listKeys' answer (ok) without the keys: what validation
// with duplicates allowed needs, without allocating.
func keysValid(t *plist, l []any) bool {
	if len(t.keys) > 0 && !t.keysOK {
		return false
	}
	var k itemKey
	for _, item := range l {
		if !itemKeyOf(t, item, &k) {
			return false
		}
	}
	return true
}

// itemKeyOf sets k to the key of item, an item of the associative list t,
// or answers false as listKeys does.
func itemKeyOf(t *plist, item any, k *itemKey) bool {
	if len(t.keys) == 0 {
		kv, ok := makeKeyVal(item)
		if !ok {
			return false
		}
		k.n, k.vals[0] = 1, kv
		return true
	}
	m, ok := item.(map[string]any)
	if !ok {
		return false
	}
	k.n = len(t.keys)
	present := false
	for j, name := range t.keys {
		v, ok := m[name]
		if !ok {
			set, ok := absentKey(t, j, k)
			if !ok {
				return false
			}
			present = present || set
			continue
		}
		kv, ok := makeKeyVal(v)
		if !ok {
			return false
		}
		k.vals[j], present = kv, true
	}
	return present
}

// absentKey sets k's value of key field j, which the item lacks: the
// field's default, or absent when it has none (set false). ok is false
// when the default is not a key value makeKeyVal reads.
func absentKey(t *plist, j int, k *itemKey) (set, ok bool) {
	v := t.keyDefaults[j]
	if v == nil {
		k.vals[j] = keyVal{}
		return false, true
	}
	kv, ok := makeKeyVal(v)
	if !ok {
		return false, false
	}
	k.vals[j] = kv
	return true, true
}

// index builds the table of a long list's keys.
func (idx *listKeyIndex) index() {
	size := 1 << bits.Len(uint(2*len(idx.keys)-1)) // a power of two, at least twice the items
	idx.slots = make([]int32, size)
	mask := uint64(size - 1)
items:
	for i := range idx.keys {
		k := &idx.keys[i]
		for j := k.hash() & mask; ; j = (j + 1) & mask {
			at := idx.slots[j]
			if at == 0 {
				idx.slots[j] = int32(i + 1)
				break
			}
			if idx.keys[at-1] == *k {
				idx.dups = true
				continue items // the first position stays
			}
		}
	}
}

// find returns the first position of k, or -1.
func (idx *listKeyIndex) find(k itemKey) int {
	if idx.slots != nil {
		mask := uint64(len(idx.slots) - 1)
		for j := k.hash() & mask; ; j = (j + 1) & mask {
			at := idx.slots[j]
			if at == 0 {
				return -1
			}
			if idx.keys[at-1] == k {
				return int(at - 1)
			}
		}
	}
	for i := range idx.keys {
		if idx.keys[i] == k {
			return i
		}
	}
	return -1
}

func (idx *listKeyIndex) hasDuplicates() bool {
	if idx.slots != nil {
		return idx.dups
	}
	for i := range idx.keys {
		for j := i + 1; j < len(idx.keys); j++ {
			if idx.keys[i] == idx.keys[j] {
				return true
			}
		}
	}
	return false
}

// mergeValues merges rhs into lhs (both present and validated against t)
// as TypedValue.Merge does. The result shares every subtree only one side
// has, and allocates new maps and slices along the paths both sides have.
// ok is false when the case is not modelled.
func mergeValues(t *ptype, lhs, rhs any) (any, bool) {
	return mergeWalk(t, lhs, rhs, nil)
}

// mergeFresh is mergeValues for a right-hand side every map and slice of
// which is new and the caller's to give (celobject.Native's conversion of
// an Object value): the result is built in rhs's own maps where the two
// sides meet (the left-hand side's other entries added to them) instead
// of in copies of lhs's. Nothing is changed until the whole merge is
// known to be modelled: when ok is false, rhs is as it was, for
// structured-merge-diff to merge. Otherwise rhs is taken over (it may be
// changed and shared by the result). TestMergeFreshIsMergeValues holds it
// to mergeValues.
func mergeFresh(t *ptype, lhs, rhs any) (any, bool) {
	var tasks mergeTasks
	out, ok := mergeWalk(t, lhs, rhs, &tasks)
	if ok {
		tasks.apply()
	}
	return out, ok
}

// mergeTasks are the deferred changes of a mergeFresh, the first ones
// held in place (so that a merge along a few paths allocates none).
type mergeTasks struct {
	n     int
	fixed [8]mergeTask
	more  []mergeTask // the tasks from len(fixed) on
}

func (ts *mergeTasks) add(t mergeTask) {
	if ts.n < len(ts.fixed) {
		ts.fixed[ts.n] = t
	} else {
		ts.more = append(ts.more[:ts.n-len(ts.fixed)], t)
	}
	ts.n++
}

func (ts *mergeTasks) at(i int) *mergeTask {
	if i < len(ts.fixed) {
		return &ts.fixed[i]
	}
	return &ts.more[i-len(ts.fixed)]
}

// truncate drops the tasks from mark on.
func (ts *mergeTasks) truncate(mark int) {
	ts.n = mark
	if mark > len(ts.fixed) {
		ts.more = ts.more[:mark-len(ts.fixed)]
	} else {
		ts.more = ts.more[:0]
	}
}

// mergeTask is a deferred change of a right-hand map m: m[key] = v, or,
// when fill is not nil, every entry of fill whose key m lacks added to m.
type mergeTask struct {
	m, fill map[string]any
	key     string
	v       any
}

// apply makes the deferred changes.
func (ts *mergeTasks) apply() {
	for i := range ts.n {
		t := ts.at(i)
		if t.fill == nil {
			t.m[t.key] = t.v
			continue
		}
		for k, v := range t.fill {
			if _, ok := t.m[k]; !ok {
				t.m[k] = v
			}
		}
	}
}

// mergeWalk is one merge: mergeValues' when tasks is nil, else
// mergeFresh's, which adds the changes to the right-hand side's maps it
// defers to tasks.
func mergeWalk(t *ptype, lhs, rhs any, tasks *mergeTasks) (any, bool) {
	t = t.get()
	if !t.ok {
		return nil, false
	}
	switch r := rhs.(type) {
	case string, bool, int64, float64:
		switch lhs.(type) {
		case string, bool, int64, float64:
		default:
			return nil, false
		}
		if t.scalar == 0 {
			return nil, false
		}
		return rhs, true
	case map[string]any:
		l, isMap := lhs.(map[string]any)
		if !isMap || t.m == nil {
			return nil, false
		}
		if t.m.atomic || (len(l) == 0 && len(r) == 0) {
			return rhs, true
		}
		if tasks != nil {
			return mapsInto(t.m, l, r, tasks)
		}
		return mergeMaps(t.m, l, r)
	case []any:
		l, isList := lhs.([]any)
		if !isList || t.l == nil {
			return nil, false
		}
		if t.l.atomic || (len(l) == 0 && len(r) == 0) {
			return rhs, true
		}
		if !t.l.associative {
			return nil, false
		}
		return mergeLists(t.l, l, r, tasks)
	}
	return nil, false
}

// mergeMaps merges the maps lhs and rhs. When every value of rhs merges
// into lhs as the very value lhs has (a mutation that sets what the object
// already holds, as most do when reinvoked), the result is lhs itself: the
// same entries a copy would have, and the object's parents, its typed
// value and its defaulting are then reused as for an unchanged object
// (jsonvalue.SameMap).
func mergeMaps(t *pmap, lhs, rhs map[string]any) (any, bool) {
	var out map[string]any // lhs until a value differs
	for k, rv := range rhs {
		lv, both := lhs[k]
		mv := rv
		if both {
			ft, ok := t.fields.Get(k)
			if !ok {
				ft = t.elem
			}
			if mv, ok = mergeValues(ft, lv, rv); !ok {
				return nil, false
			}
		}
		if out == nil {
			if both && sameMerged(lv, mv) {
				continue
			}
			out = copyWithRoom(lhs, newKeys(lhs, rhs))
		}
		out[k] = mv
	}
	if out == nil {
		return lhs, true
	}
	return out, true
}

// mapsInto is mergeMaps for a fresh rhs (mergeFresh): the result, unless it is
// lhs itself, is rhs with lhs's other entries (deferred), or, when they
// would outgrow a small map that rhs is, a copy of lhs as maps makes it.
func mapsInto(t *pmap, lhs, rhs map[string]any, tasks *mergeTasks) (any, bool) {
	same := true // every value of rhs merges as lhs's very value
	shared := 0  // the keys both have
	mark := tasks.n
	for k, rv := range rhs {
		lv, both := lhs[k]
		if !both {
			same = false
			continue
		}
		shared++
		ft, ok := t.fields.Get(k)
		if !ok {
			ft = t.elem
		}
		mv, ok := mergeWalk(ft, lv, rv, tasks)
		if !ok {
			return nil, false
		}
		if same && !sameMerged(lv, mv) {
			same = false
		}
		if !sameMerged(rv, mv) {
			tasks.add(mergeTask{m: rhs, key: k, v: mv})
		}
	}
	if same {
		// rhs is dropped: the changes deferred in it are not needed.
		tasks.truncate(mark)
		return lhs, true
	}
	if n := len(rhs) + len(lhs) - shared; n > smallMap && len(rhs) <= smallMap {
		// rhs would grow from one group to a table: copy lhs, sized.
		out := copyWithRoom(lhs, len(rhs)-shared)
		for k, rv := range rhs {
			out[k] = rv
		}
		for i := mark; i < tasks.n; i++ {
			if task := tasks.at(i); task.fill == nil && jsonvalue.SameMap(task.m, rhs) {
				out[task.key] = task.v
			}
		}
		return out, true
	}
	if len(lhs) > shared {
		tasks.add(mergeTask{m: rhs, fill: lhs})
	}
	return rhs, true
}

// smallMap is the number of entries a map holds in its one group, before
// it grows into a table.
const smallMap = 8

// sameMerged tells whether the merged value m is the very value l: the same
// map or slice, or an equal scalar of the same type.
func sameMerged(l, m any) bool {
	switch lv := l.(type) {
	case map[string]any:
		mv, ok := m.(map[string]any)
		return ok && jsonvalue.SameMap(lv, mv)
	case []any:
		mv, ok := m.([]any)
		return ok && jsonvalue.SameSlice(lv, mv)
	case string:
		mv, ok := m.(string)
		return ok && lv == mv
	case bool:
		mv, ok := m.(bool)
		return ok && lv == mv
	case int64:
		mv, ok := m.(int64)
		return ok && lv == mv
	case float64:
		mv, ok := m.(float64)
		return ok && math.Float64bits(lv) == math.Float64bits(mv) // -0 is not 0 in JSON
	case nil:
		return m == nil
	}
	return false
}

// copyWithRoom returns a copy of m (never nil) with room for extra more
// entries.
//
// Not maps.Clone: it copies m's table as it is, which is faster only when m
// is sized to its entries. The objects merged here mostly come from
// runtime.DefaultUnstructuredConverter or from decoders whose maps are made
// with the size hint of every field of their type; cloning copies all that
// room (BenchmarkMutation case=ac-sidecar: 2 KB and 2 allocations more per
// mutation), and inserting the other side's new keys can grow the copy again.
func copyWithRoom(m map[string]any, extra int) map[string]any {
	out := make(map[string]any, len(m)+extra)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// newKeys is the number of keys of rhs that lhs lacks: the room a copy
// of lhs needs for the merge (a map of up to eight entries is one group;
// a ninth makes it a table).
func newKeys(lhs, rhs map[string]any) int {
	n := 0
	for k := range rhs {
		if _, ok := lhs[k]; !ok {
			n++
		}
	}
	return n
}

// mergeLists is visitListItems of structured-merge-diff's merging walker for
// associative lists without duplicate keys on either side: items in the
// order that walk produces (shared items where the right-hand side puts
// them relative to each other, left-only items kept in place, new items
// after the shared item they follow).
func mergeLists(t *plist, lhs, rhs []any, tasks *mergeTasks) (any, bool) {
	var lbuf, rbuf [smallList]itemKey // short lists: keys on the stack
	lk, ok := listKeysInto(t, lhs, lbuf[:])
	if !ok || lk.hasDuplicates() {
		return nil, false
	}
	rk, ok := listKeysInto(t, rhs, rbuf[:])
	if !ok || rk.hasDuplicates() {
		return nil, false
	}
	return mergeListsBy(t, lhs, &lk, &rk, func(li, ri int) (any, bool) {
		if li < 0 {
			return rhs[ri], true
		}
		return mergeWalk(t.elem, lhs[li], rhs[ri], tasks)
	})
}

// mergeListsBy is mergeLists' walk over lhs and a right-hand list of
// which it knows the keys (rk; lk are lhs's, neither with a duplicate):
// item(li, ri) gives the right-hand item ri merged into lhs's item li,
// or as it is when li is -1, and is asked once for every right-hand
// item.
func mergeListsBy(t *plist, lhs []any, lk, rk *listKeyIndex, item func(li, ri int) (any, bool)) (any, bool) {
	lLen, rLen := len(lhs), len(rk.keys)

	// sharedOrder: the right-hand items the left-hand side also has, in
	// right-hand order.
	var sbuf [smallList]int
	sharedOrder := sbuf[:0]
	for ri := range rk.keys {
		if lk.find(rk.keys[ri]) >= 0 {
			sharedOrder = append(sharedOrder, ri)
		}
	}
	shared := len(sharedOrder)
	nextShared := -1
	pop := func() {
		nextShared = -1
		if len(sharedOrder) > 0 {
			nextShared, sharedOrder = sharedOrder[0], sharedOrder[1:]
		}
	}
	pop()

	// out is the result; it stays nil while every item given is the very
	// item of lhs at its position (n of them), so that a merge of what lhs
	// holds allocates no list (it is lhs, see mergeMaps). Once an item
	// differs, out is made with room for every item the result has: lhs's
	// and the right-hand items it lacks.
	var out []any
	n := 0
	size := lLen + rLen - shared
	give := func(v any) {
		if out == nil {
			if n < lLen && sameMerged(lhs[n], v) {
				n++
				return
			}
			out = make([]any, n, size)
			copy(out, lhs[:n])
		}
		out = append(out, v)
	}
	var mbuf [smallList]bool
	merged := mbuf[:0] // right-hand items already merged, by position
	if rLen > len(mbuf) {
		merged = make([]bool, rLen)
	} else {
		merged = mbuf[:rLen]
	}
	mergeItem := func(li, ri int) bool {
		mv, ok := item(li, ri)
		if !ok {
			return false
		}
		give(mv)
		return true
	}
	for lI, rI := 0, 0; lI < lLen || rI < rLen; {
		if lI < lLen && rI < rLen {
			if lk.keys[lI] == rk.keys[rI] {
				merged[rI] = true
				if !mergeItem(lI, rI) {
					return nil, false
				}
				lI++
				rI++
				pop()
				continue
			}
			if rk.find(lk.keys[lI]) >= 0 && nextShared >= 0 && rk.keys[nextShared] != lk.keys[lI] {
				// A shared item, but not the one wanted in this round.
				lI++
				continue
			}
		}
		if lI < lLen {
			ri := rk.find(lk.keys[lI])
			if ri < 0 {
				give(lhs[lI])
				lI++
				continue
			} else if merged[ri] {
				lI++
			}
		}
		if rI < rLen {
			merged[rI] = true
			if !mergeItem(lk.find(rk.keys[rI]), rI) {
				return nil, false
			}
			if nextShared >= 0 && rk.keys[nextShared] == rk.keys[rI] {
				pop()
			}
			rI++
		}
	}
	if out == nil {
		if n == lLen {
			return lhs, true // see mergeMaps
		}
		out = append([]any(nil), lhs[:n]...) // not reached: every item of lhs is given
	}
	return out, true
}
