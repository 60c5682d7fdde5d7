package applyconfig

import (
	"sigs.k8s.io/structured-merge-diff/v6/schema"
)

// This file holds the fast path of Merge: a validation and a merge that walk
// the unstructured values against the structured-merge-diff schema directly,
// instead of through typed.TypedValue. They model a subset of SMD exactly
// and answer "don't know" (false) for everything else, in which case Merge
// runs structured-merge-diff itself, which stays the definition of the result
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
// TestFastPathIsStructuredMergeDiff, TestFastPathIsTaken and FuzzMerge check
// both claims against structured-merge-diff and upstream's patcher.

// validValue reports whether v is valid for the type tr of s the way
// TypedValue validation (with typed.AllowDuplicates when allowDuplicates)
// sees it. false means "not known to be valid".
func validValue(s *schema.Schema, tr schema.TypeRef, v any, allowDuplicates bool) bool {
	a, ok := s.Resolve(tr)
	if !ok {
		return false
	}
	switch t := v.(type) {
	case nil:
		// Null validates as any scalar, list or map.
		return a.Map != nil || a.Scalar != nil || a.List != nil
	case string, bool, int64, float64:
		if a.Scalar == nil {
			return false
		}
		return validScalar(*a.Scalar, v)
	case map[string]any:
		if a.Map == nil {
			return false
		}
		return validMap(s, a.Map, t, allowDuplicates)
	case []any:
		// deduceAtom picks the list; without one, handleAtom's first atom
		// (map, then scalar) refuses a list.
		if a.List == nil {
			return false
		}
		return validList(s, a.List, t, allowDuplicates)
	}
	return false
}

func validScalar(t schema.Scalar, v any) bool {
	switch v.(type) {
	case string:
		return t == schema.String || t == schema.Untyped
	case bool:
		return t == schema.Boolean || t == schema.Untyped
	case int64, float64:
		return t == schema.Numeric || t == schema.Untyped
	}
	return false
}

func validMap(s *schema.Schema, t *schema.Map, m map[string]any, allowDuplicates bool) bool {
	for k, fv := range m {
		tr := t.ElementType
		if sf, ok := t.FindField(k); ok {
			tr = sf.Type
		} else if (t.ElementType == schema.TypeRef{}) {
			return false
		}
		if !validValue(s, tr, fv, allowDuplicates) {
			return false
		}
	}
	return true
}

func validList(s *schema.Schema, t *schema.List, l []any, allowDuplicates bool) bool {
	if t.ElementRelationship == schema.Associative {
		keys, ok := listKeys(s, t, l)
		if !ok {
			return false
		}
		if !allowDuplicates && keys.hasDuplicates() {
			return false
		}
	}
	for _, item := range l {
		if !validValue(s, t.ElementType, item, allowDuplicates) {
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
	keys  []itemKey
	index map[itemKey]int // key -> first position; built for long lists only
}

// smallList is the length up to which keys are compared pairwise.
const smallList = 8

// listKeys computes the keys of an associative list's items, refusing what
// SMD refuses (null or non-map items of a keyed list, items without any key
// field, maps or lists in a set) and what is not modelled.
func listKeys(s *schema.Schema, t *schema.List, l []any) (listKeyIndex, bool) {
	idx := listKeyIndex{keys: make([]itemKey, len(l))}
	var elem *schema.Map
	if len(t.Keys) > 0 {
		if len(t.Keys) > len(itemKey{}.vals) {
			return idx, false
		}
		a, ok := s.Resolve(t.ElementType)
		if !ok || a.Map == nil {
			return idx, false
		}
		elem = a.Map
	}
	for i, item := range l {
		k := &idx.keys[i]
		if elem == nil {
			kv, ok := makeKeyVal(item)
			if !ok {
				return idx, false
			}
			k.n, k.vals[0] = 1, kv
			continue
		}
		m, ok := item.(map[string]any)
		if !ok {
			return idx, false
		}
		k.n = len(t.Keys)
		present := false
		for j, name := range t.Keys {
			v, ok := m[name]
			if !ok {
				sf, _ := elem.FindField(name)
				if sf.Default == nil {
					continue // absent
				}
				v = sf.Default
			}
			kv, ok := makeKeyVal(v)
			if !ok {
				return idx, false
			}
			k.vals[j], present = kv, true
		}
		if !present {
			return idx, false
		}
	}
	if len(l) > smallList {
		idx.index = make(map[itemKey]int, len(l))
		for i := len(l) - 1; i >= 0; i-- {
			idx.index[idx.keys[i]] = i
		}
	}
	return idx, true
}

// find returns the first position of k, or -1.
func (idx *listKeyIndex) find(k itemKey) int {
	if idx.index != nil {
		if i, ok := idx.index[k]; ok {
			return i
		}
		return -1
	}
	for i := range idx.keys {
		if idx.keys[i] == k {
			return i
		}
	}
	return -1
}

func (idx *listKeyIndex) hasDuplicates() bool {
	if idx.index != nil {
		return len(idx.index) != len(idx.keys)
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

// mergeValues merges rhs into lhs (both present and validated against tr)
// as TypedValue.Merge does. The result shares every subtree only one side
// has, and allocates new maps and slices along the paths both sides have.
// ok is false when the case is not modelled.
func mergeValues(s *schema.Schema, tr schema.TypeRef, lhs, rhs any) (any, bool) {
	a, ok := s.Resolve(tr)
	if !ok {
		return nil, false
	}
	switch r := rhs.(type) {
	case string, bool, int64, float64:
		switch lhs.(type) {
		case string, bool, int64, float64:
		default:
			return nil, false
		}
		if a.Scalar == nil {
			return nil, false
		}
		return rhs, true
	case map[string]any:
		l, isMap := lhs.(map[string]any)
		if !isMap || a.Map == nil {
			return nil, false
		}
		if a.Map.ElementRelationship == schema.Atomic || (len(l) == 0 && len(r) == 0) {
			return rhs, true
		}
		return mergeMaps(s, a.Map, l, r)
	case []any:
		l, isList := lhs.([]any)
		if !isList || a.List == nil {
			return nil, false
		}
		if a.List.ElementRelationship == schema.Atomic || (len(l) == 0 && len(r) == 0) {
			return rhs, true
		}
		if a.List.ElementRelationship != schema.Associative {
			return nil, false
		}
		return mergeLists(s, a.List, l, r)
	}
	return nil, false
}

func mergeMaps(s *schema.Schema, t *schema.Map, lhs, rhs map[string]any) (any, bool) {
	out := make(map[string]any, len(lhs)+len(rhs))
	for k, v := range lhs {
		out[k] = v
	}
	for k, rv := range rhs {
		lv, both := lhs[k]
		if !both {
			out[k] = rv
			continue
		}
		tr := t.ElementType
		if sf, ok := t.FindField(k); ok {
			tr = sf.Type
		}
		mv, ok := mergeValues(s, tr, lv, rv)
		if !ok {
			return nil, false
		}
		out[k] = mv
	}
	return out, true
}

// mergeLists is visitListItems of structured-merge-diff's merging walker for
// associative lists without duplicate keys on either side: items in the
// order that walk produces (shared items where the right-hand side puts
// them relative to each other, left-only items kept in place, new items
// after the shared item they follow).
func mergeLists(s *schema.Schema, t *schema.List, lhs, rhs []any) (any, bool) {
	lk, ok := listKeys(s, t, lhs)
	if !ok || lk.hasDuplicates() {
		return nil, false
	}
	rk, ok := listKeys(s, t, rhs)
	if !ok || rk.hasDuplicates() {
		return nil, false
	}
	lLen, rLen := len(lhs), len(rhs)

	// sharedOrder: the right-hand items the left-hand side also has, in
	// right-hand order.
	var sharedOrder []int
	for ri := range rk.keys {
		if lk.find(rk.keys[ri]) >= 0 {
			sharedOrder = append(sharedOrder, ri)
		}
	}
	nextShared := -1
	pop := func() {
		nextShared = -1
		if len(sharedOrder) > 0 {
			nextShared, sharedOrder = sharedOrder[0], sharedOrder[1:]
		}
	}
	pop()

	out := make([]any, 0, max(lLen, rLen))
	merged := make([]bool, rLen) // right-hand items already merged, by position
	mergeItem := func(li, ri int) bool {
		if li < 0 {
			out = append(out, rhs[ri])
			return true
		}
		mv, ok := mergeValues(s, t.ElementType, lhs[li], rhs[ri])
		if !ok {
			return false
		}
		out = append(out, mv)
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
				out = append(out, lhs[lI])
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
	return out, true
}
