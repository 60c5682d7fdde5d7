package applyconfig

// This file holds the merge of an ApplyConfiguration's value in the
// compiler's form (celobject.Object) straight into the live object,
// without the map FromCELFresh makes of it: the merge keeps few of that
// map's maps (none where the mutation sets what the object holds, as
// reinvoked ones do; elsewhere the live object's map, copied, takes the
// patch's entries), so building them is mostly lost work. It is
// MergeFresh of FromCELFresh's map where it answers, and answers only
// where every step of that reference is the fast path's (the names
// checked, the value converted, the patch valid without atomics, the
// live object valid, mergeValues modelled); the caller runs the
// reference otherwise, which gives every other result and every error.
// TestMergeObjectIsMergeFresh and FuzzMergeObject hold it to the
// reference.

import (
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/internal/celobject"
)

// MergeObject is MergeFresh(live, patch, prev) where patch, fresh, is
// FromCELFresh(v) — for a v in the compiler's form (*celobject.Object)
// whose merge the fast path models: the same result, in the same maps of
// live where the merge left them as they were, without building the
// patch's maps that the merge does not keep. ok is false otherwise (v
// not in that form, its names or values not the ones FromCELFresh
// converts itself, an invalid patch or one that sets an atomic, a live
// object not known valid, a merge structured-merge-diff must make);
// nothing is changed then, and the caller runs FromCELFresh and
// MergeFresh, which give the result or the error.
func (m *Merger) MergeObject(live *unstructured.Unstructured, v ref.Val, prev *Merged) (merged *Merged, ok bool) {
	o, isObject := v.(*celobject.Object)
	if !isObject || !celobject.Mirrored || live == nil || m.tc == nil {
		return nil, false
	}
	root := m.root
	if root == nil || live.Object == nil || !root.kindOf(live.Object) {
		return nil, false
	}
	liveTyped, liveValid, ref := chainedLive(m.tc, live, prev)
	if !liveKnownValid(root, live.Object, liveTyped, liveValid, ref) {
		return nil, false
	}
	out, ok := mergeObject(root, root.plan, live.Object, o, o.TypeName(), true)
	if !ok {
		return nil, false
	}
	return validMerged(m.tc, out), true
}

// mergeObject is mergeFresh(t, lhs, native) where native is the map
// NativeCheckedObject makes of o, an Object named name (at the top, the
// patch, when top: its apiVersion and kind root's, as merge sets them),
// and the checks before it: that every name checks and every value
// converts, that native validates for t without an atomic
// (validAtomics), ok false otherwise. The result is lhs itself when
// every field of o merges as lhs's very value (mergeMaps), else a copy of
// lhs with the merged values: the same entries as mergeFresh's, which
// builds them in native's maps instead.
func mergeObject(root *rootType, t *ptype, lhs map[string]any, o *celobject.Object, name string, top bool) (map[string]any, bool) {
	t = t.get()
	if !t.ok || t.m == nil || t.m.atomic {
		// Not a map, or one validAtomics notes as atomic: the reference
		// refuses it.
		return nil, false
	}
	// The fields whose merged value is not lhs's very value; the result
	// is lhs itself without any.
	var buf [smallMap]field
	changed := buf[:0]
	present := 0
	for i := range o.NumFields() {
		k, fv := o.Field(i)
		if fv == nil {
			continue // absent
		}
		present++
		if top && (k == "apiVersion" || k == "kind") {
			// Converted by FromCELFresh, then overwritten with root's
			// (below).
			if _, ok := celobject.NativeField(fv, name, k); !ok {
				return nil, false
			}
			continue
		}
		ft, declared := t.m.fields.Get(k)
		if !declared {
			if t.m.elemZero {
				return nil, false
			}
			ft = t.m.elem
		}
		lv, both := lhs[k]
		var mv any
		if co, isObject := fv.(*celobject.Object); isObject && declared && both {
			// A struct both sides have: merged field by field.
			lm, isMap := lv.(map[string]any)
			if !isMap || !celobject.IsFieldPath(co.TypeName(), name, k) {
				return nil, false
			}
			merged, ok := mergeObject(root, ft, lm, co, co.TypeName(), false)
			if !ok {
				return nil, false
			}
			mv = merged
		} else if items, isList := objectItems(ft, fv); isList && declared && both {
			// A keyed list of Objects both sides have: merged item by
			// item.
			ll, isList := lv.([]any)
			if !isList {
				return nil, false
			}
			merged, ok := mergeObjectList(root, ft, ll, items, name, k)
			if !ok {
				return nil, false
			}
			mv = merged
		} else {
			// Converted as FromCELFresh converts it, validated as
			// validAtomics validates it, merged as mergeFresh merges it.
			cv, ok := celobject.NativeField(fv, name, k)
			if !ok {
				return nil, false
			}
			if declared {
				var w atomicSeen
				if !w.valid(ft, cv) || w.seen {
					return nil, false
				}
			} else if !validValue(ft, cv, false) {
				return nil, false
			}
			mv = cv
			if both {
				if mv, ok = mergeFresh(ft, lv, cv); !ok {
					return nil, false
				}
			}
		}
		if both && sameMerged(lv, mv) {
			continue
		}
		changed = append(changed, field{k, mv})
	}
	if top {
		// The patch's apiVersion and kind, as merge sets them: strings
		// that validate as validAtomics' most common leaf, and merge as
		// live's very values (root.kindOf(lhs)).
		for _, k := range [...]string{"apiVersion", "kind"} {
			ft, ok := t.m.fields.Get(k)
			if !ok {
				if t.m.elemZero {
					return nil, false
				}
				ft = t.m.elem
			}
			if ft = ft.get(); !ft.ok || ft.scalar&acceptsString == 0 {
				return nil, false
			}
		}
	} else if present == 0 && len(lhs) == 0 {
		// mergeWalk's two empty maps: the patch's own.
		return map[string]any{}, true
	}
	if len(changed) == 0 {
		return lhs, true
	}
	return withFields(lhs, changed, newFields(lhs, o)), true
}

// field is a field's name and its merged value.
type field struct {
	k string
	v any
}

// withFields is a copy of lhs with the fields changed set, and room for
// extra more keys (those of changed that lhs lacks). The fields are set
// first and only lhs's other entries copied: a map of eight entries is
// one full group, which an assignment grows into a table even for a key
// it holds.
func withFields(lhs map[string]any, changed []field, extra int) map[string]any {
	out := make(map[string]any, len(lhs)+extra)
	for _, f := range changed {
		out[f.k] = f.v
	}
	for k, v := range lhs {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// newFields is newKeys(lhs, native) for the map native o converts to:
// the number of o's present fields lhs lacks.
func newFields(lhs map[string]any, o *celobject.Object) int {
	n := 0
	for i := range o.NumFields() {
		if k, v := o.Field(i); v != nil {
			if _, ok := lhs[k]; !ok {
				n++
			}
		}
	}
	return n
}

// objectItems are the items of fv, the value of a field of type t, when
// t is a keyed associative list (neither atomic nor of keys the plan
// cannot read) and fv a CEL list of one or more items, all Objects:
// the lists mergeObjectList merges.
func objectItems(t *ptype, fv ref.Val) ([]ref.Val, bool) {
	if _, isObject := fv.(*celobject.Object); isObject || isScalarVal(fv) {
		return nil, false
	}
	t = t.get()
	if !t.ok || t.l == nil || t.l.atomic || !t.l.associative || len(t.l.keys) == 0 || !t.l.keysOK {
		return nil, false
	}
	var items []ref.Val
	if il, isItems := fv.(celobject.ItemList); isItems {
		items = il.Items() // its Value, without boxing it
	} else if items, _ = fv.Value().([]ref.Val); items == nil {
		return nil, false
	}
	if len(items) == 0 {
		return nil, false
	}
	for _, item := range items {
		if _, isObject := item.(*celobject.Object); !isObject {
			return nil, false
		}
	}
	return items, true
}

// isScalarVal tells that v is one of the CEL scalars the converter reads.
func isScalarVal(v ref.Val) bool {
	switch v.(type) {
	case types.String, types.Int, types.Bool, types.Double:
		return true
	}
	return false
}

// mergeObjectList is mergeFresh(t, lhs, native) where native is the list
// NativeField makes of items, the Objects of field key of the Object
// named parent (objectItems), and validAtomics' checks of it; ok false
// otherwise. It is mergeLists' walk (mergeListsBy) with the right-hand
// keys read from the Objects, each item merged by mergeObject where lhs
// has its key, and converted and validated as it is where not.
func mergeObjectList(root *rootType, t *ptype, lhs []any, items []ref.Val, parent, key string) (any, bool) {
	l := t.get().l
	var lbuf, rbuf [smallList]itemKey // short lists: keys on the stack
	lk, ok := listKeysInto(l, lhs, lbuf[:])
	if !ok || lk.hasDuplicates() {
		return nil, false
	}
	rk := listKeyIndex{keys: rbuf[:0]}
	if len(items) > len(rbuf) {
		rk.keys = make([]itemKey, len(items))
	} else {
		rk.keys = rbuf[:len(items)]
	}
	for i, item := range items {
		if !objectKey(l, item.(*celobject.Object), &rk.keys[i]) {
			return nil, false
		}
	}
	if len(items) > smallList {
		rk.index()
	}
	if rk.hasDuplicates() {
		return nil, false
	}
	return mergeListsBy(l, lhs, &lk, &rk, func(li, ri int) (any, bool) {
		o := items[ri].(*celobject.Object)
		if li < 0 {
			cv, ok := celobject.NativeField(o, parent, key)
			if !ok {
				return nil, false
			}
			var w atomicSeen
			if !w.valid(l.elem, cv) || w.seen {
				return nil, false
			}
			return cv, true
		}
		lm, isMap := lhs[li].(map[string]any)
		if !isMap || !celobject.IsFieldPath(o.TypeName(), parent, key) {
			return nil, false
		}
		return mergeObject(root, l.elem, lm, o, o.TypeName(), false)
	})
}

// objectKey is itemKeyOf(t, native, k) for the map native the Object o
// converts to: its key fields' values, converted as NativeField converts
// them; false where itemKeyOf answers false or the value is not a
// string, an int or a bool.
func objectKey(t *plist, o *celobject.Object, k *itemKey) bool {
	k.n = len(t.keys)
	present := false
	for j, name := range t.keys {
		fv := objectField(o, name)
		if fv == nil {
			set, ok := absentKey(t, j, k)
			if !ok {
				return false
			}
			present = present || set
			continue
		}
		// makeKeyVal of the converted value, without boxing it.
		switch x := fv.(type) {
		case types.String:
			k.vals[j] = keyVal{kind: 1, s: string(x)}
		case types.Int:
			k.vals[j] = keyVal{kind: 2, i: int64(x)}
		case types.Bool:
			kv := keyVal{kind: 3}
			if x {
				kv.i = 1
			}
			k.vals[j] = kv
		default:
			return false
		}
		present = true
	}
	return present
}

// objectField is the value of o's field name, nil when absent.
func objectField(o *celobject.Object, name string) ref.Val {
	for i := range o.NumFields() {
		if n, fv := o.Field(i); n == name {
			return fv
		}
	}
	return nil
}
