package scheme

import (
	"math"
	"reflect"
	"sync"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// This file is the fast path of the typed form: walk computes, without
// building the Go object, what runtime.DefaultUnstructuredConverter.
// FromUnstructured into a kind's Go type followed by ToUnstructured gives
// (Scheme.normalizeReference, the oracle), along the kind's plan
// (plan.go), which holds the converter's own output for the zero value of
// every struct. Objects that are already in their normalized form (the
// common case: the request object as the API server sends it, the result
// of a merge of such an object) come back as they are, without
// allocating; otherwise only the maps and slices on the path to a change
// are copied, so the result may share unchanged subtrees with the input.
//
// Anything the plan does not model exactly (values of the wrong type,
// numbers that would be truncated, nulls inside lists and maps, interface,
// unsigned or float32 fields, custom marshalers on non-struct types: the
// nodes marked fallback) makes normalize answer ok=false, and the caller
// falls back to the typed round trip, with its result or error.

// memo maps the string and integer inputs of a custom type to the
// converter's output, up to maxMemo entries each. Typed maps, so that a
// lookup does not allocate.
type memo struct {
	mu      sync.RWMutex
	strings map[string]any
	ints    map[int64]any
}

func (m *memo) load(v any) (any, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	switch x := v.(type) {
	case string:
		o, ok := m.strings[x]
		return o, ok
	case int64:
		o, ok := m.ints[x]
		return o, ok
	}
	return nil, false
}

func (m *memo) store(v, o any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch x := v.(type) {
	case string:
		if m.strings == nil {
			m.strings = map[string]any{}
		}
		if len(m.strings) < maxMemo {
			m.strings[x] = o
		}
	case int64:
		if m.ints == nil {
			m.ints = map[int64]any{}
		}
		if len(m.ints) < maxMemo {
			m.ints[x] = o
		}
	}
}

// maxMemo bounds the memo of one custom type.
const maxMemo = 4096

// normalize returns obj as the typed round trip presents it, or ok=false
// when the plan cannot tell. base, when not nil, is an object of the same
// kind in normalized form (a result of normalize): the maps and slices obj
// shares with it at the same place are in normalized form too and are not
// walked again. A merge result shares all but the patched paths with the
// object it was merged into.
func (pl *planner) normalize(types *runtime.Scheme, obj, base map[string]any, gvk schema.GroupVersionKind) (map[string]any, bool) {
	p := pl.kind(types, gvk)
	if p == nil || p.root.fallback || p.root.kind != nodeStruct || obj == nil || p.setsKind == setsOther {
		return nil, false
	}
	var b any
	if base != nil {
		b = base
	}
	out, _, _, ok := walk(obj, b, p.root, walkNormalize)
	if !ok {
		return nil, false
	}
	m := out.(map[string]any)
	// SetGroupVersionKind on the typed object: apiVersion and kind are those
	// of gvk whatever the input said (both fields are omitempty); on a type
	// without them (WatchEvent) it does nothing, and the walk dropped them.
	if av, _ := m["apiVersion"].(string); p.setsKind == setsGVK && (av != p.apiVersion || m["kind"] != any(p.kind)) {
		if jsonvalue.SameMap(m, obj) {
			m = cloneMap(obj)
		}
		setOmitEmpty(m, "apiVersion", p.apiVersion)
		setOmitEmpty(m, "kind", p.kind)
	}
	return m, true
}

func setOmitEmpty(m map[string]any, k, v string) {
	if v == "" {
		delete(m, k)
		return
	}
	m[k] = v
}

// sameRef reports whether a and b are the very same map or slice (the
// same map, or slices with the same first element and length).
func sameRef(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && jsonvalue.SameMap(x, y)
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
	}
	return false
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// decode returns what decodeReference gives for obj, a JSON patch result
// of kind gvk (a strict JSON decoding into the Go type, then
// ToUnstructured), or ok=false when the plan cannot tell. For an object
// with nothing the decoder could refuse or read differently from
// FromUnstructured — no unknown fields (including fields that differ only in
// case), no nulls but in fields of plain types (where both read the zero
// value), no strings that are not valid UTF-8 (which encoding to JSON would
// replace), no NaN or infinite numbers, apiVersion and kind those of gvk —
// both give the same typed object, so decoding is normalizing.
func (pl *planner) decode(types *runtime.Scheme, obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, bool) {
	return pl.decodeMode(types, obj, nil, gvk, walkStrict)
}

// decodeFixed is decode that also answers ok=false unless obj is a fixed
// point of jsonpatch.Apply's normalization of its input
// (jsonpatch.IsNormalized): its floats pass jsonpatch.IsNormalizedFloat (no
// zeros, no whole numbers that JSON decoding reads as int64), on top of what
// strict decoding refuses already (unknown fields, strings and keys that are
// not valid UTF-8, NaN and infinities, nulls but in fields of plain types,
// nil maps and slices, values of other Go types). obj is then a result of
// jsonpatch.ApplyUnnormalized that is Apply's result.
func (pl *planner) decodeFixed(types *runtime.Scheme, obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, bool) {
	return pl.decodeMode(types, obj, nil, gvk, walkFixed)
}

// decodeFixedFrom is decodeFixed of obj, given base, an object of kind
// gvk that decodeFixed (or decodeFixedFrom) returned as it is: the maps
// and slices of obj that are base's own at the same place are fixed points
// already, and are not walked again (walk's base in walkFixed). A nil base
// is decodeFixed.
func (pl *planner) decodeFixedFrom(types *runtime.Scheme, obj, base map[string]any, gvk schema.GroupVersionKind) (map[string]any, bool) {
	return pl.decodeMode(types, obj, base, gvk, walkFixed)
}

func (pl *planner) decodeMode(types *runtime.Scheme, obj, base map[string]any, gvk schema.GroupVersionKind, mode walkMode) (map[string]any, bool) {
	p := pl.strictKind(types, obj, gvk)
	if p == nil {
		return nil, false
	}
	var b any
	if base != nil {
		b = base
	}
	out, _, _, ok := walk(obj, b, p.root, mode)
	if !ok {
		return nil, false
	}
	return out.(map[string]any), true
}

// strictKind is the plan of gvk (as types resolves it) that the strict
// walks of obj start from, or nil where they cannot tell: a kind walk
// models, obj not nil, with gvk's apiVersion and kind (which the strict
// decoder would otherwise refuse or set).
func (pl *planner) strictKind(types *runtime.Scheme, obj map[string]any, gvk schema.GroupVersionKind) *kindPlan {
	p := pl.kind(types, gvk)
	if p == nil || p.root.fallback || p.root.kind != nodeStruct || obj == nil || p.apiVersion == "" || p.kind == "" {
		return nil
	}
	if av, _ := obj["apiVersion"].(string); av != p.apiVersion {
		return nil
	}
	if k, _ := obj["kind"].(string); k != p.kind {
		return nil
	}
	return p
}

// walkMode tells what walk computes.
type walkMode uint8

const (
	// walkNormalize is normalize: FromUnstructured and ToUnstructured.
	walkNormalize walkMode = iota
	// walkStrict is decode: a strict JSON decoding and ToUnstructured.
	walkStrict
	// walkFixed is decodeFixed: walkStrict, for values that are fixed
	// points of jsonpatch.Apply's input normalization only.
	walkFixed
)

// walk normalizes the non-nil value v of type n. It returns the result
// (v itself when changed is false), whether the Go value would be empty for
// omitempty, and ok=false when the plan cannot tell. In strict modes
// (decode) it also answers ok=false for unknown fields, nulls in fields of
// custom types, strings that are not valid UTF-8 and NaN or infinite
// numbers; in walkFixed, for floats that fail jsonpatch.IsNormalizedFloat
// as well.
//
// base is nil or the value at the same place in an object in normalized
// form (see normalize); a struct, map or slice that is base itself is
// returned as it is. Not in walkStrict, where normalized form is not
// enough: base is nil there. In walkFixed, base is nil or the value at the
// same place in an object that walk returned unchanged in walkFixed
// (decodeFixedFrom): each of its structs, maps and slices was walked at the
// same node and returned unchanged, and walk's answer depends on nothing
// but the value and the node.
func walk(v, base any, n *node, mode walkMode) (out any, empty, changed, ok bool) {
	strict := mode != walkNormalize
	switch {
	case n.fallback:
		return nil, false, false, false
	case n.wrapper != nil:
		if strict && !jsonSafe(v, 0, mode == walkFixed) {
			return nil, false, false, false
		}
		return custom(v, n)
	}
	if base != nil && mode != walkStrict {
		switch n.kind {
		case nodeStruct:
			if m, isMap := v.(map[string]any); isMap && m != nil && sameRef(v, base) {
				return v, false, false, true
			}
		case nodeMap:
			if m, isMap := v.(map[string]any); isMap && m != nil && sameRef(v, base) {
				return v, len(m) == 0, false, true
			}
		case nodeSlice:
			if l, isList := v.([]any); isList && l != nil && sameRef(v, base) {
				return v, len(l) == 0, false, true
			}
		}
	}
	switch n.kind {
	case nodeString:
		s, ok := v.(string)
		if ok && strict && !utf8.ValidString(s) {
			return nil, false, false, false
		}
		return v, ok && s == "", false, ok
	case nodeBool:
		b, ok := v.(bool)
		return v, ok && !b, false, ok
	case nodeInt:
		switch x := v.(type) {
		case int64:
			if n.bits < 64 && (x < -1<<(n.bits-1) || x > 1<<(n.bits-1)-1) {
				return nil, false, false, false // would be truncated
			}
			return v, x == 0, false, true
		case float64:
			if mode == walkFixed {
				// Any float accepted here is whole (or -0), which Apply's
				// normalization turns into an int64: not a fixed point.
				return nil, false, false, false
			}
			// A whole float converts (reflect.Value.Convert); anything out of
			// range is left to the oracle.
			limit := math.Ldexp(1, n.bits-1)
			if strict {
				// The JSON route writes the float with its shortest digits
				// (json.Marshal), which the decoder reads back as a different
				// integer beyond 2^53: left to the decoder.
				limit = math.Min(limit, 1<<53)
			}
			if x != math.Trunc(x) || x < -limit || x >= limit {
				return nil, false, false, false
			}
			return int64(x), x == 0, true, true
		}
		return nil, false, false, false
	case nodeFloat:
		switch x := v.(type) {
		case float64:
			if strict && (math.IsNaN(x) || math.IsInf(x, 0)) || mode == walkFixed && !jsonpatch.IsNormalizedFloat(x) {
				return nil, false, false, false
			}
			return v, x == 0, false, true
		case int64:
			return float64(x), x == 0, true, true
		}
		return nil, false, false, false
	case nodeBytes:
		// A []byte field holds base64 text; canonical text survives the
		// decode and re-encode unchanged, anything else is left to the oracle.
		s, ok := v.(string)
		if !ok || !canonicalBase64(s) {
			return nil, false, false, false
		}
		return v, s == "", false, true
	case nodeMap:
		m, ok := v.(map[string]any)
		if !ok || m == nil {
			return nil, false, false, false
		}
		var copied map[string]any
		if n.elem.kind == nodeString {
			// map[string]string (labels, annotations, selectors, data):
			// nothing to change, only to check.
			for k, item := range m {
				str, isString := item.(string)
				if !isString || strict && (!utf8.ValidString(k) || !utf8.ValidString(str)) {
					return nil, false, false, false
				}
			}
			return v, len(m) == 0, false, true
		}
		bm, _ := base.(map[string]any)
		for k, item := range m {
			if item == nil || strict && !utf8.ValidString(k) {
				return nil, false, false, false
			}
			o, _, ch, ok := walk(item, bm[k], n.elem, mode)
			if !ok {
				return nil, false, false, false
			}
			if ch {
				if copied == nil {
					copied = cloneMap(m)
				}
				copied[k] = o
			}
		}
		if copied != nil {
			return copied, len(m) == 0, true, true
		}
		return v, len(m) == 0, false, true
	case nodeSlice:
		s, ok := v.([]any)
		if !ok || s == nil {
			return nil, false, false, false
		}
		var copied []any
		bl, _ := base.([]any)
		for i, item := range s {
			if item == nil {
				return nil, false, false, false
			}
			var bi any
			if i < len(bl) {
				bi = bl[i]
			}
			o, _, ch, ok := walk(item, bi, n.elem, mode)
			if !ok {
				return nil, false, false, false
			}
			if ch {
				if copied == nil {
					copied = append([]any(nil), s...)
				}
				copied[i] = o
			}
		}
		if copied != nil {
			return copied, len(s) == 0, true, true
		}
		return v, len(s) == 0, false, true
	case nodePointer:
		// A non-nil pointer is never empty.
		o, _, ch, ok := walk(v, base, n.elem, mode)
		return o, false, ch, ok
	case nodeStruct:
		m, ok := v.(map[string]any)
		if !ok || m == nil {
			return nil, false, false, false
		}
		var copied map[string]any
		bm, _ := base.(map[string]any)
		change := func() {
			if copied == nil {
				copied = cloneMap(m)
			}
		}
		nPresent := 0 // keys of m that are fields in n.unsetPresent
		for k, item := range m {
			f, _ := n.table.Get(k)
			if strict && (f == nil || item == nil && !f.node.nullIsZero) {
				// An unknown field is an error of strict decoding; a null is
				// handed to a custom type's UnmarshalJSON, which may refuse it
				// (metav1.Duration does) where the converter reads zero.
				return nil, false, false, false
			}
			if f == nil {
				// Not a field of the type: the converter drops it.
				change()
				delete(copied, k)
				continue
			}
			if f.present {
				nPresent++
			}
			if item == nil {
				// null reads as the zero value.
				if !f.present {
					change()
					delete(copied, k)
				} else if f.unset != nil {
					change()
					copied[k] = runtime.DeepCopyJSONValue(f.unset)
				}
				continue
			}
			if f.node.kind == nodeString && !f.node.fallback {
				// The most common leaf, without the call (walk's nodeString).
				str, isString := item.(string)
				if !isString || strict && !utf8.ValidString(str) {
					return nil, false, false, false
				}
				if f.omitempty && str == "" {
					change()
					delete(copied, k)
				}
				continue
			}
			o, empty, ch, ok := walk(item, bm[k], f.node, mode)
			if !ok {
				return nil, false, false, false
			}
			if (f.omitempty || f.omitzero != nil) && empty {
				// (A custom type under omitzero reports empty when the
				// converter omits it.)
				change()
				delete(copied, k)
			} else if ch {
				change()
				copied[k] = o
			}
		}
		for _, f := range n.unsetPresent {
			if nPresent == len(n.unsetPresent) {
				break // all there
			}
			if _, ok := m[f.name]; !ok {
				change()
				copied[f.name] = runtime.DeepCopyJSONValue(f.unset)
			}
		}
		if copied != nil {
			return copied, false, true, true
		}
		return v, false, false, true
	}
	return nil, false, false, false
}

// absent is what the memo of a custom type holds for a value the
// converter does not write (omitzero).
type absent struct{}

// custom converts v with the converter itself, through n's wrapper type.
// Custom types are structs (others are fallback nodes), so never empty for
// omitempty; empty reports instead that the converter omits the value
// (omitzero, when the wrapper carries it).
func custom(v any, n *node) (out any, empty, changed, ok bool) {
	if n.objectTree && isObjectTree(v, 0) {
		return v, false, false, true
	}
	if o, hit := n.memo.load(v); hit {
		if o == (absent{}) {
			return nil, true, true, true
		}
		return o, false, o != v, true
	}
	w := reflect.New(n.wrapper)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"v": v}, w.Interface()); err != nil {
		return nil, false, false, false
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w.Interface())
	if err != nil {
		return nil, false, false, false
	}
	o, present := u["v"]
	scalar := !present
	switch o.(type) {
	case nil, string, int64, float64, bool:
		scalar = true
	}
	if scalar {
		if present {
			n.memo.store(v, o)
		} else {
			n.memo.store(v, absent{})
		}
	}
	switch {
	case !present:
		return nil, true, true, true
	case scalar && o == v, !scalar && reflect.DeepEqual(o, v):
		return v, false, false, true
	}
	return o, false, true, true
}

// jsonSafe reports whether encoding v to JSON keeps it as it is: no NaN or
// infinite numbers, no strings or keys that are not valid UTF-8, no nulls,
// at most 100 levels deep. With fixed, floats must also pass
// jsonpatch.IsNormalizedFloat (v is then jsonpatch.IsNormalized).
func jsonSafe(v any, depth int, fixed bool) bool {
	if depth > 100 {
		return false
	}
	switch x := v.(type) {
	case string:
		return utf8.ValidString(x)
	case bool, int64:
		return true
	case float64:
		if fixed {
			return jsonpatch.IsNormalizedFloat(x)
		}
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case map[string]any:
		for k, item := range x {
			if !utf8.ValidString(k) || !jsonSafe(item, depth+1, fixed) {
				return false
			}
		}
		return x != nil
	case []any:
		for _, item := range x {
			if !jsonSafe(item, depth+1, fixed) {
				return false
			}
		}
		return x != nil
	}
	return false
}

// isObjectTree reports whether v is a non-nil map[string]any whose values
// are such maps, with valid UTF-8 keys (which JSON encoding keeps as they
// are), at most 100 levels deep.
func isObjectTree(v any, depth int) bool {
	m, ok := v.(map[string]any)
	if !ok || m == nil || depth > 100 {
		return false
	}
	for k, item := range m {
		if !utf8.ValidString(k) || !isObjectTree(item, depth+1) {
			return false
		}
	}
	return true
}

// canonicalBase64 reports whether s is standard base64 with padding, with
// no line breaks and zero padding bits: what encoding it again gives back.
func canonicalBase64(s string) bool {
	if len(s)%4 != 0 {
		return false
	}
	if s == "" {
		return true
	}
	pad := 0
	if s[len(s)-1] == '=' {
		pad++
		if s[len(s)-2] == '=' {
			pad++
		}
	}
	data := s[:len(s)-pad]
	for i := 0; i < len(data); i++ {
		if b64index(data[i]) < 0 {
			return false
		}
	}
	last := b64index(data[len(data)-1])
	switch pad {
	case 1: // 3 chars carry 16 bits: the low 2 bits of the last are padding
		return last&0x3 == 0
	case 2: // 2 chars carry 8 bits: the low 4 bits of the last are padding
		return last&0xf == 0
	}
	return true
}

func b64index(c byte) int {
	switch {
	case c >= 'A' && c <= 'Z':
		return int(c - 'A')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 26
	case c >= '0' && c <= '9':
		return int(c-'0') + 52
	case c == '+':
		return 62
	case c == '/':
		return 63
	}
	return -1
}
