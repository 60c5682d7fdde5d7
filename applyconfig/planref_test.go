package applyconfig

import (
	"slices"
	"strconv"

	"sigs.k8s.io/structured-merge-diff/v6/schema"
)

// This file keeps the fast path as it was before it walked compiled plans
// (plan.go): the same functions over the schema itself, resolving every
// TypeRef with Schema.Resolve and every field with Map.FindField. The plan
// tests require both to give the same answers.

func refValidValue(s *schema.Schema, tr schema.TypeRef, v any, allowDuplicates bool) bool {
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
		return refValidMap(s, a.Map, t, allowDuplicates)
	case []any:
		// deduceAtom picks the list; without one, handleAtom's first atom
		// (map, then scalar) refuses a list.
		if a.List == nil {
			return false
		}
		return refValidList(s, a.List, t, allowDuplicates)
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

func refValidMap(s *schema.Schema, t *schema.Map, m map[string]any, allowDuplicates bool) bool {
	for k, fv := range m {
		tr := t.ElementType
		if sf, ok := t.FindField(k); ok {
			tr = sf.Type
		} else if (t.ElementType == schema.TypeRef{}) {
			return false
		}
		if !refValidValue(s, tr, fv, allowDuplicates) {
			return false
		}
	}
	return true
}

func refValidList(s *schema.Schema, t *schema.List, l []any, allowDuplicates bool) bool {
	if t.ElementRelationship == schema.Associative {
		keys, ok := refListKeys(s, t, l)
		if !ok {
			return false
		}
		if !allowDuplicates && keys.hasDuplicates() {
			return false
		}
	}
	for _, item := range l {
		if !refValidValue(s, t.ElementType, item, allowDuplicates) {
			return false
		}
	}
	return true
}

func refListKeys(s *schema.Schema, t *schema.List, l []any) (listKeyIndex, bool) {
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
		idx.index()
	}
	return idx, true
}

func refMergeValues(s *schema.Schema, tr schema.TypeRef, lhs, rhs any) (any, bool) {
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
		return refMergeMaps(s, a.Map, l, r)
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
		return refMergeLists(s, a.List, l, r)
	}
	return nil, false
}

func refMergeMaps(s *schema.Schema, t *schema.Map, lhs, rhs map[string]any) (any, bool) {
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
		mv, ok := refMergeValues(s, tr, lv, rv)
		if !ok {
			return nil, false
		}
		out[k] = mv
	}
	return out, true
}

func refMergeLists(s *schema.Schema, t *schema.List, lhs, rhs []any) (any, bool) {
	lk, ok := refListKeys(s, t, lhs)
	if !ok || lk.hasDuplicates() {
		return nil, false
	}
	rk, ok := refListKeys(s, t, rhs)
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
		mv, ok := refMergeValues(s, t.ElementType, lhs[li], rhs[ri])
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

func refFindAtomics(s *schema.Schema, tr schema.TypeRef, v any) []string {
	w := refAtomicWalker{s: s}
	w.walk(tr, v)
	if len(w.found) > 1 {
		w = refAtomicWalker{s: s, sorted: true}
		w.walk(tr, v)
	}
	return w.found
}

type refAtomicWalker struct {
	s      *schema.Schema
	sorted bool
	path   []byte
	found  []string
}

func (w *refAtomicWalker) walk(tr schema.TypeRef, v any) {
	a, ok := w.s.Resolve(tr)
	if !ok {
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if a.Map == nil {
			return
		}
		w.atomic(a.Map.ElementRelationship)
		if w.sorted {
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				w.field(a.Map, k, t[k])
			}
			return
		}
		for k, fv := range t {
			w.field(a.Map, k, fv)
		}
	case map[any]any:
		if a.Map == nil {
			return
		}
		w.atomic(a.Map.ElementRelationship)
		if w.sorted {
			keys := make([]string, 0, len(t))
			for k := range t {
				if ks, ok := k.(string); ok {
					keys = append(keys, ks)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				w.field(a.Map, k, t[k])
			}
			return
		}
		for k, fv := range t {
			if ks, ok := k.(string); ok {
				w.field(a.Map, ks, fv)
			}
		}
	case []any:
		if a.List == nil {
			return
		}
		w.atomic(a.List.ElementRelationship)
		n := len(w.path)
		for i, item := range t {
			w.path = append(w.path, '[')
			w.path = strconv.AppendInt(w.path, int64(i), 10)
			w.path = append(w.path, ']')
			w.walk(a.List.ElementType, item)
			w.path = w.path[:n]
		}
	}
}

func (w *refAtomicWalker) atomic(rel schema.ElementRelationship) {
	if rel == schema.Atomic {
		w.found = append(w.found, string(w.path))
	}
}

func (w *refAtomicWalker) field(m *schema.Map, key string, v any) {
	sf, ok := m.FindField(key)
	if !ok {
		return
	}
	n := len(w.path)
	w.path = append(w.path, '.')
	w.path = append(w.path, key...)
	w.walk(sf.Type, v)
	w.path = w.path[:n]
}
