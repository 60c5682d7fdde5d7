package scheme

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/mutatis-dev/mutatis/internal/fieldtable"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// normalizer computes, without building the Go object, what
// runtime.DefaultUnstructuredConverter.FromUnstructured into a kind's Go type
// followed by ToUnstructured gives (Patcher.normalizeTyped, the oracle).
//
// For every Go type it builds once a plan from the same field metadata the
// converter reads (JSON names, omitempty, inlined structs, custom
// marshalers) and the converter's own output for the zero value of every
// struct. It then walks the unstructured object along the plan. Objects that
// are already in their normalized form (the common case: the request object
// as the API server sends it, the result of a merge of such an object) come
// back as they are, without allocating; otherwise only the maps and slices
// on the path to a change are copied, so the result may share unchanged
// subtrees with the input.
//
// Anything the plan does not model exactly (values of the wrong type,
// numbers that would be truncated, nulls inside lists and maps, interface,
// unsigned or float32 fields, custom marshalers on non-struct types) makes
// normalize answer ok=false, and the caller falls back to the typed round
// trip, with its result or error.
//
// A normalizer is safe for concurrent use; the zero value is ready to use.
type normalizer struct {
	mu sync.Mutex // serializes plan building
	// kinds maps schema.GroupVersionKind to *kindPlan; copied on write so
	// that lookups neither lock nor allocate.
	kinds atomic.Pointer[map[schema.GroupVersionKind]*kindPlan]
	// types holds the node of every Go type planned so far (guarded by mu).
	types map[reflect.Type]*node
	// customs holds the nodes of custom types under a tag with options
	// (omitempty, omitzero), which the converter applies to them.
	customs map[customKey]*node
	// zeros holds the converter's output for the zero value of every
	// struct type planned so far (guarded by mu; zeroStruct).
	zeros map[reflect.Type]map[string]any
}

type customKey struct {
	t    reflect.Type
	opts string
}

// kindPlan is the plan of one kind: its Go type's node and the apiVersion
// and kind the typed round trip sets (SetGroupVersionKind).
type kindPlan struct {
	root       *node
	apiVersion string
	kind       string
}

type nodeKind uint8

const (
	// nodeFallback is a type whose values the plan does not model: a value
	// there sends the whole object through the typed round trip.
	nodeFallback nodeKind = iota
	nodeString
	nodeBool
	nodeInt
	nodeFloat64
	nodeBytes
	nodeMap
	nodeSlice
	nodePointer
	nodeStruct
	nodeCustom
)

// node is the plan of one Go type.
type node struct {
	kind nodeKind
	// bits is the size of an integer type (nodeInt).
	bits int
	// elem is the element (nodeMap, nodeSlice) or pointee (nodePointer).
	elem *node
	// fields are a struct's fields by JSON name, inlined structs flattened
	// (nodeStruct).
	fields map[string]*field
	// table is the lookup of fields the walk uses.
	table fieldtable.Table[*field]
	// unsetPresent are the fields that the converter writes even when they
	// are unset (no omitempty, or a struct), with their output.
	unsetPresent []*field
	// wrapper is struct{ V T `json:"v"` } for a type T with custom
	// unstructured or JSON conversions (nodeCustom): converting a map
	// {"v": value} into it and back runs exactly the converter's code for T.
	wrapper reflect.Type
	// nullIsZero tells that JSON decoding reads null as the zero value, as
	// the converter does: true for plain types, pointers, and custom types
	// whose UnmarshalJSON leaves a zero value zero on null.
	nullIsZero bool
	// objectTree is set for metav1.FieldsV1, whose conversions are a JSON
	// round trip of the value: a tree of objects (managed fields' sets of
	// paths) comes back unchanged.
	objectTree bool
	// memo caches the conversions of string and integer values of a custom
	// type whose result is a scalar (quantities, timestamps, int-or-strings).
	memo memo
}

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

// field is one JSON field of a struct.
type field struct {
	name      string
	node      *node
	omitempty bool
	// unset is the converter's output for the field's zero value, present
	// tells whether it writes the field at all then.
	unset   any
	present bool
}

// plan returns the plan of gvk, building it on first use, or nil when the
// scheme does not know gvk.
func (nz *normalizer) plan(s *runtime.Scheme, gvk schema.GroupVersionKind) *kindPlan {
	if m := nz.kinds.Load(); m != nil {
		if p, ok := (*m)[gvk]; ok {
			return p
		}
	}
	nz.mu.Lock()
	defer nz.mu.Unlock()
	old := nz.kinds.Load()
	if old != nil {
		if p, ok := (*old)[gvk]; ok {
			return p
		}
	}
	var p *kindPlan
	if obj, err := s.New(gvk); err == nil {
		t := reflect.TypeOf(obj)
		if t.Kind() == reflect.Pointer {
			if nz.types == nil {
				nz.types = map[reflect.Type]*node{}
			}
			p = &kindPlan{root: nz.build(t.Elem()), apiVersion: gvk.GroupVersion().String(), kind: gvk.Kind}
		}
	}
	m := make(map[schema.GroupVersionKind]*kindPlan, 1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[gvk] = p
	nz.kinds.Store(&m)
	return p
}

// normalize returns obj as the typed round trip presents it, or ok=false
// when the plan cannot tell. base, when not nil, is an object of the same
// kind in normalized form (a result of normalize): the maps and slices obj
// shares with it at the same place are in normalized form too and are not
// walked again. A merge result shares all but the patched paths with the
// object it was merged into.
func (nz *normalizer) normalize(s *runtime.Scheme, obj, base map[string]any, gvk schema.GroupVersionKind) (map[string]any, bool) {
	p := nz.plan(s, gvk)
	if p == nil || p.root.kind != nodeStruct || obj == nil {
		return nil, false
	}
	var b any
	if base != nil {
		b = base
	}
	out, _, _, ok := nz.walk(obj, b, p.root, walkNormalize)
	if !ok {
		return nil, false
	}
	m := out.(map[string]any)
	// SetGroupVersionKind on the typed object: apiVersion and kind are those
	// of gvk whatever the input said (both fields are omitempty).
	if av, _ := m["apiVersion"].(string); av != p.apiVersion || m["kind"] != any(p.kind) {
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
func (nz *normalizer) decode(s *runtime.Scheme, obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, bool) {
	return nz.decodeMode(s, obj, gvk, walkStrict)
}

// decodeFixed is decode that also answers ok=false unless obj is a fixed
// point of jsonpatch.Apply's normalization of its input
// (jsonpatch.IsNormalized): its floats pass jsonpatch.IsNormalizedFloat (no
// zeros, no whole numbers that JSON decoding reads as int64), on top of what
// strict decoding refuses already (unknown fields, strings and keys that are
// not valid UTF-8, NaN and infinities, nulls but in fields of plain types,
// nil maps and slices, values of other Go types). obj is then a result of
// jsonpatch.ApplyUnnormalized that is Apply's result.
func (nz *normalizer) decodeFixed(s *runtime.Scheme, obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, bool) {
	return nz.decodeMode(s, obj, gvk, walkFixed)
}

func (nz *normalizer) decodeMode(s *runtime.Scheme, obj map[string]any, gvk schema.GroupVersionKind, mode walkMode) (map[string]any, bool) {
	p := nz.plan(s, gvk)
	if p == nil || p.root.kind != nodeStruct || obj == nil || p.apiVersion == "" || p.kind == "" {
		return nil, false
	}
	if av, _ := obj["apiVersion"].(string); av != p.apiVersion {
		return nil, false
	}
	if k, _ := obj["kind"].(string); k != p.kind {
		return nil, false
	}
	out, _, _, ok := nz.walk(obj, nil, p.root, mode)
	if !ok {
		return nil, false
	}
	return out.(map[string]any), true
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
// returned as it is. Not in strict modes, where normalized form is not
// enough.
func (nz *normalizer) walk(v, base any, n *node, mode walkMode) (out any, empty, changed, ok bool) {
	strict := mode != walkNormalize
	if base != nil && !strict {
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
	case nodeFloat64:
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
			o, _, ch, ok := nz.walk(item, bm[k], n.elem, mode)
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
			o, _, ch, ok := nz.walk(item, bi, n.elem, mode)
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
		o, _, ch, ok := nz.walk(v, base, n.elem, mode)
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
			if f.node.kind == nodeString {
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
			o, empty, ch, ok := nz.walk(item, bm[k], f.node, mode)
			if !ok {
				return nil, false, false, false
			}
			if f.omitempty && empty {
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
	case nodeCustom:
		if strict && !jsonSafe(v, 0, mode == walkFixed) {
			return nil, false, false, false
		}
		return nz.custom(v, n)
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
func (nz *normalizer) custom(v any, n *node) (out any, empty, changed, ok bool) {
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

// build returns the node of t (nz.mu held).
func (nz *normalizer) build(t reflect.Type) *node {
	if n, ok := nz.types[t]; ok {
		return n
	}
	n := &node{nullIsZero: true}
	nz.types[t] = n // before the fields: types may be recursive
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if isCustom(t) {
		nz.buildCustom(n, t, "")
		return n
	}
	if t.Kind() == reflect.Interface {
		n.nullIsZero = false // not modelled
	}
	switch t.Kind() {
	case reflect.String:
		n.kind = nodeString
	case reflect.Bool:
		n.kind = nodeBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n.kind, n.bits = nodeInt, t.Bits()
	case reflect.Float64:
		n.kind = nodeFloat64
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			n.kind, n.elem = nodeMap, nz.build(t.Elem())
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			n.kind = nodeBytes
		} else {
			n.kind, n.elem = nodeSlice, nz.build(t.Elem())
		}
	case reflect.Pointer:
		if t.Elem().Kind() != reflect.Pointer {
			n.kind, n.elem = nodePointer, nz.build(t.Elem())
		}
	case reflect.Struct:
		nz.buildStruct(n, t)
	}
	return n
}

// toUnstructuredInterfaces are the interfaces the converter looks for on a
// value, and on its address when it has one, to write it.
var toUnstructuredInterfaces = []reflect.Type{
	reflect.TypeFor[json.Marshaler](),
	reflect.TypeFor[value.UnstructuredConverter](),
	reflect.TypeFor[value.UnstructuredConverterWithError](),
}

// sameMethodsOnValue reports whether t implements every interface of
// toUnstructuredInterfaces its pointer implements. (UnmarshalJSON is always
// called through a pointer.)
func sameMethodsOnValue(t reflect.Type) bool {
	for _, it := range toUnstructuredInterfaces {
		if reflect.PointerTo(t).Implements(it) != t.Implements(it) {
			return false
		}
	}
	return true
}

// isCustom tells whether the converter hands values of t (or t's pointee)
// to their own conversion methods.
func isCustom(t reflect.Type) bool {
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	return hasCustomConversion(base) || hasCustomConversion(t)
}

// buildCustom makes n the node of custom type t in a field whose tag has
// the options opts (",omitempty", ",omitzero"), or leaves it a fallback
// node. Only struct types whose methods do not depend on addressability are
// modelled: the converter then reaches them the same way as a struct field,
// a list item or a (non-addressable) map value.
func (nz *normalizer) buildCustom(n *node, t reflect.Type, opts string) {
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if base.Kind() != reflect.Struct || !sameMethodsOnValue(base) {
		return
	}
	n.kind = nodeCustom
	n.nullIsZero = t.Kind() == reflect.Pointer || unmarshalsNullAsZero(base)
	n.objectTree = base == reflect.TypeFor[metav1.FieldsV1]()
	n.wrapper = reflect.StructOf([]reflect.StructField{{Name: "V", Type: t, Tag: reflect.StructTag(`json:"v` + opts + `"`)}})
}

// unmarshalsNullAsZero tells whether UnmarshalJSON of the null literal
// leaves a zero value of t zero and succeeds.
func unmarshalsNullAsZero(t reflect.Type) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	p := reflect.New(t)
	u, isUnmarshaler := p.Interface().(json.Unmarshaler)
	if !isUnmarshaler {
		return false
	}
	return u.UnmarshalJSON([]byte("null")) == nil && p.Elem().IsZero()
}

func hasCustomConversion(t reflect.Type) bool {
	to, from := conversionMethods(t)
	return to || from
}

// conversionMethods tells whether the converter hands values of t to their
// own methods to write them (a JSON marshaler or an unstructured converter,
// on t or *t) and to read them (a JSON unmarshaler on *t):
// value.TypeReflectEntryOf(t)'s CanConvertToUnstructured and
// CanConvertFromUnstructured, without building the entry, which
// structured-merge-diff caches in a map it copies whole on every new type
// (milliseconds at the start of every process, for a kind's type tree).
// TestConversionMethodsAreTheEntrys holds it to the entry.
func conversionMethods(t reflect.Type) (to, from bool) {
	p := reflect.PointerTo(t)
	for _, it := range toUnstructuredInterfaces {
		if t.Implements(it) || p.Implements(it) {
			to = true
		}
	}
	return to, p.Implements(jsonUnmarshalerType)
}

var jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// buildStruct fills n with the fields of struct type t, or leaves it a
// fallback node when t has something the plan does not model.
func (nz *normalizer) buildStruct(n *node, t reflect.Type) {
	fields := map[string]*field{}
	if !nz.collectFields(t, fields) {
		return
	}
	// What the converter writes for the zero value: the output of every
	// unset field.
	zero, err := nz.zeroStruct(t)
	if err != nil {
		return
	}
	for name, f := range fields {
		f.unset, f.present = zero[name]
		if f.present {
			n.unsetPresent = append(n.unsetPresent, f)
		}
	}
	n.kind, n.fields, n.table = nodeStruct, fields, fieldtable.New(fields)
}

// zeroStruct returns what runtime.DefaultUnstructuredConverter.ToUnstructured
// writes for the zero value of struct type t (nz.mu held), computed from
// the field metadata as the converter's structToUnstructured reads it
// rather than by calling it: the converter caches the metadata of every
// struct field it meets in a map it copies whole on each new field, so
// planning a kind's type tree through it costs time quadratic in the
// number of fields (tens of milliseconds for a Pod, paid by every
// process). Types with something this does not model (unexported or
// omitzero fields, arrays, channels, functions) are left to the
// converter. The result is shared: callers copy what they hand out.
// TestZeroStructIsTheConverter holds it to the converter on every struct
// type of every kind.
func (nz *normalizer) zeroStruct(t reflect.Type) (map[string]any, error) {
	if z, ok := nz.zeros[t]; ok {
		return z, nil
	}
	z, ok := nz.zeroFields(t, map[string]any{})
	if !ok {
		var err error
		if z, err = converterZero(t); err != nil {
			return nil, err
		}
	}
	if nz.zeros == nil {
		nz.zeros = map[reflect.Type]map[string]any{}
	}
	nz.zeros[t] = z
	return z, nil
}

// converterZero is the converter's output for the zero value of struct
// type t, or an error where the converter fails or panics (it panics on
// some unexported fields).
func converterZero(t reflect.Type) (z map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			z, err = nil, fmt.Errorf("converting the zero %v: %v", t, r)
		}
	}()
	return runtime.DefaultUnstructuredConverter.ToUnstructured(reflect.New(t).Interface())
}

// zeroFields writes into out the converter's output for the fields of a
// zero struct of type t, or answers ok=false when a field is beyond what
// it models.
func (nz *normalizer) zeroFields(t reflect.Type, out map[string]any) (map[string]any, bool) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			return nil, false
		}
		tag := readTag(sf)
		if tag.omitzero || tag.embed {
			return nil, false
		}
		name, omitempty := tag.name, tag.omitempty
		if name == "-" {
			continue
		}
		ft := sf.Type
		switch ft.Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64,
			reflect.Map, reflect.Slice, reflect.Pointer, reflect.Interface:
			if omitempty {
				continue // isEmpty
			}
		case reflect.Struct:
		default:
			return nil, false
		}
		if name == "" {
			// Inlined: the converter writes the field's own output into
			// the same map.
			if ft.Kind() != reflect.Struct || hasCustomConversion(ft) {
				return nil, false
			}
			if _, ok := nz.zeroFields(ft, out); !ok {
				return nil, false
			}
			continue
		}
		switch ft.Kind() {
		case reflect.String:
			out[name] = ""
		case reflect.Bool:
			out[name] = false
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			out[name] = int64(0)
		case reflect.Float32, reflect.Float64:
			out[name] = float64(0)
		default:
			if to, _ := conversionMethods(ft); to {
				v, err := value.TypeReflectEntryOf(ft).ToUnstructured(reflect.New(ft).Elem())
				if err != nil {
					return nil, false
				}
				out[name] = v
				continue
			}
			switch ft.Kind() {
			case reflect.Struct:
				z, err := nz.zeroStruct(ft)
				if err != nil {
					return nil, false
				}
				out[name] = z
			default: // nil maps, slices, pointers and interfaces
				out[name] = nil
			}
		}
	}
	return out, true
}

// fieldTag is a struct field's json tag as the converter's
// fieldInfoFromField reads it.
type fieldTag struct {
	// name is the JSON name, "" for an inlined field.
	name                       string
	omitempty, omitzero, embed bool
}

// readTag reads sf's json tag as fieldInfoFromField does (Go 1.26:
// ",inline" is not honoured, anonymous fields without a name are
// inlined).
func readTag(sf reflect.StructField) fieldTag {
	var f fieldTag
	tag, hasTag := sf.Tag.Lookup("json")
	if !hasTag || tag == "" {
		if !sf.Anonymous {
			f.name = sf.Name
		}
		return f
	}
	items := strings.Split(tag, ",")
	f.name = items[0]
	if f.name == "" && !sf.Anonymous {
		f.name = sf.Name
	}
	for _, it := range items[1:] {
		switch it {
		case "omitempty":
			f.omitempty = true
		case "omitzero":
			f.omitzero = true
		case "embed":
			f.embed = true
		}
	}
	return f
}

// collectFields adds the JSON fields of struct type t to fields, reading
// the tags as the converter's fieldInfoFromField does (Go 1.26: ",inline"
// is not honoured, anonymous fields without a name are inlined).
func (nz *normalizer) collectFields(t reflect.Type, fields map[string]*field) bool {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			return false
		}
		tag := readTag(sf)
		if tag.embed {
			return false // not honoured by Go 1.26's converter, not used by the built-in types
		}
		name, omitempty, omitzero := tag.name, tag.omitempty, tag.omitzero
		if name == "-" {
			return false
		}
		if name == "" {
			// Inlined: the converter reads and writes its fields in the same map.
			if sf.Type.Kind() != reflect.Struct || isCustom(sf.Type) || hasCustomConversion(reflect.PointerTo(sf.Type)) {
				return false
			}
			if !nz.collectFields(sf.Type, fields) {
				return false
			}
			continue
		}
		if _, dup := fields[name]; dup {
			return false
		}
		f := &field{name: name, omitempty: omitempty}
		if omitzero {
			// The converter omits the field when its value is zero (IsZero).
			// Only custom types are modelled, by a node whose wrapper carries
			// the same options.
			if !isCustom(sf.Type) {
				return false
			}
			opts := ",omitzero"
			if omitempty {
				opts = ",omitempty,omitzero"
			}
			key := customKey{sf.Type, opts}
			if f.node = nz.customs[key]; f.node == nil {
				f.node = &node{}
				nz.buildCustom(f.node, sf.Type, opts)
				if nz.customs == nil {
					nz.customs = map[customKey]*node{}
				}
				nz.customs[key] = f.node
			}
			f.omitempty = true // an omitted value comes back as empty
		} else {
			f.node = nz.build(sf.Type)
		}
		fields[name] = f
	}
	return true
}
