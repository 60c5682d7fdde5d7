package scheme

import (
	"encoding/base64"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// This file is the fast path of Scheme.Default (defaultFast), beside its
// definition (defaultReference: FromUnstructured, the scheme's defaulters,
// ToUnstructured, and the input when that changed nothing).
//
// It runs the very same defaulters on the very same typed object; only the
// two conversions around them are planned, as walks over the kind's plan
// (plan.go, the planner normalization walks too):
//
//   - build is runtime.DefaultUnstructuredConverter.FromUnstructured
//     specialized per Go type (fields found by name through a table built
//     once, and written through unsafe pointers at their offsets, instead
//     of the converter's per-field reflection and cache), for
//     JSON-shaped input of the right Go types only: anything the converter
//     would convert, truncate, refuse or read through a type's own
//     UnmarshalJSON in a way the plan does not model makes it answer
//     ok=false, and the reference runs;
//   - emit is ToUnstructured specialized per Go type, that compares the
//     typed value, field by field, with the input it was built from and
//     returns the input's own maps, slices and scalars wherever they are
//     bit for bit what ToUnstructured writes: an object the defaulters left
//     alone comes back as the input itself, without allocating, and a
//     changed one shares every untouched subtree with it. It reads the
//     typed value through unsafe pointers at the plan's offsets too.
//
// Both mirror converter.go (k8s.io/apimachinery/pkg/runtime) case by case:
// null reads as the zero value; struct fields are read by their JSON name,
// unknown keys ignored, inlined structs read from and written to the same
// map; types whose TypeReflectEntry converts them (custom JSON marshalers:
// quantities, times, int-or-strings, raw extensions) go through that entry
// in both directions, as the converter does, but for a few shortcuts that
// call what the entry would end up calling (buildKnown, customOut, each
// tested against the entry); omitempty, omitzero and "-" decide what is
// written. Types the plan does not model (interfaces, maps with non-string
// keys, inlined non-structs, unexported fields, JSON names repeated through
// inlining) make the whole kind take the reference.
//
// The offsets are reflect's (StructField.Offset), taken once per type;
// TestBuildAndEmitAreTheConverter holds what build and emit read and write
// to FromUnstructured and ToUnstructured themselves.

// build sets the zero value of n's type at p to what FromUnstructured reads
// from v, or answers false when the plan cannot tell. It writes through
// unsafe pointers at the offsets the plan took from reflect (the Go value at
// p is of type n.t, always addressable, as the converter's are when it
// reads): TestBuildIsFromUnstructured holds the typed objects it builds to
// the converter's.
func build(v any, p unsafe.Pointer, n *node) bool {
	return buildWatched(v, p, n, nil)
}

// buildWatched is build that also records in w, when not nil, the memory
// the typed value is made of (watch, defaultwatch.go).
func buildWatched(v any, p unsafe.Pointer, n *node, w *watch) bool {
	if v == nil {
		return true // null reads as the zero value, which p holds
	}
	switch n.kind {
	case nodeString:
		s, ok := v.(string)
		if ok {
			*(*string)(p) = s
		}
		return ok
	case nodeBool:
		b, ok := v.(bool)
		if ok {
			*(*bool)(p) = b
		}
		return ok
	case nodeInt:
		x, ok := wholeNumber(v, n.bits-1)
		if !ok || n.bits < 64 && (x < -1<<(n.bits-1) || x > 1<<(n.bits-1)-1) {
			return false
		}
		putBits(p, n.bits, uint64(x))
		return true
	case nodeUint:
		x, ok := wholeNumber(v, n.bits)
		if !ok || x < 0 || n.bits < 64 && x > 1<<n.bits-1 {
			return false
		}
		putBits(p, n.bits, uint64(x))
		return true
	case nodeFloat:
		x, ok := v.(float64)
		if !ok || n.bits != 64 || math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
		*(*float64)(p) = x
		return true
	}
	if n.kind == nodeCustom && n.t == intOrStringType {
		// All of an IntOrString lies in the value itself: its parent's
		// block covers it.
		// IntOrString.UnmarshalJSON of json.Marshal(v): a string (valid
		// UTF-8, which the JSON round trip keeps) or an int32.
		x := (*intstr.IntOrString)(p)
		switch y := v.(type) {
		case string:
			if utf8.ValidString(y) {
				x.Type, x.StrVal = intstr.String, y
				return true
			}
		case int64:
			if y >= math.MinInt32 && y <= math.MaxInt32 {
				x.Type, x.IntVal = intstr.Int, int32(y)
				return true
			}
		}
	}
	if n.kind == nodeCustom {
		w.value(p, n, v)
		if ok, done := buildKnown(v, p, n); done {
			return ok
		}
		// The type's own UnmarshalJSON, through its entry, as the converter
		// does; its errors are the reference's to report.
		return isJSONValue(v, 0) && n.entry.FromUnstructured(reflect.ValueOf(v), reflect.NewAt(n.t, p).Elem()) == nil
	}
	switch n.kind {
	case nodeBytes:
		s, ok := v.(string)
		if !ok || !canonicalBase64(s) {
			return false
		}
		if s == "" {
			*(*[]byte)(p) = []byte{} // empty, not nil
			return true
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return false
		}
		w.block(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)), nil)
		*(*[]byte)(p) = b
		return true
	case nodeMap:
		m, ok := v.(map[string]any)
		if !ok || m == nil {
			return false
		}
		// A map's entries lie outside the blocks: the map is watched as a
		// whole, what its values are made of included (nothing below is
		// recorded).
		w.value(p, n, v)
		if n.t == stringMapType {
			out := w.spareOf().stringMap(len(m))
			for k, item := range m {
				switch x := item.(type) {
				case string:
					out[k] = x
				case nil:
					out[k] = ""
				default:
					return false
				}
			}
			*(*map[string]string)(p) = out
			return true
		}
		// The map, its key and its element value from the spare object,
		// when there is one (zeroed when it is released).
		sp := w.spareOf()
		out := sp.typedMap(n.t, len(m))
		kp, _ := sp.values(n.t.Key(), 1, true)
		key := reflect.NewAt(n.t.Key(), kp).Elem()
		// One element value for all entries: zeroed before each, as a
		// fresh one is, and copied into the map by SetMapIndex.
		evp, _ := sp.values(n.elem.t, 1, true)
		e := reflect.NewAt(n.elem.t, evp).Elem()
		for k, item := range m {
			e.SetZero()
			if !buildWatched(item, evp, n.elem, nil) {
				return false
			}
			key.SetString(k)
			out.SetMapIndex(key, e)
		}
		reflect.NewAt(n.t, p).Elem().Set(out)
		return true
	case nodeSlice:
		l, ok := v.([]any)
		if !ok || l == nil {
			return false
		}
		dv := reflect.NewAt(n.t, p).Elem()
		if len(l) == 0 {
			dv.Set(reflect.MakeSlice(n.t, 0, 0)) // empty, not nil
			return true
		}
		if sp := w.spareOf(); sp != nil {
			// A zeroed array of the spare object (decodeBuild's).
			data, c := sp.values(n.elem.t, len(l), false)
			*(*sliceHeader)(p) = sliceHeader{data, len(l), c}
		} else {
			// A nil slice in place: growing it allocates only the array
			// (reflect.MakeSlice would also put a slice header on the heap).
			dv.Grow(len(l))
			dv.SetLen(len(l))
		}
		data, size := dv.UnsafePointer(), n.elem.size
		w.block(data, uintptr(len(l))*size, n.elem)
		for i, item := range l {
			if !buildWatched(item, unsafe.Add(data, uintptr(i)*size), n.elem, w) {
				return false
			}
		}
		return true
	case nodePointer:
		q, _ := w.spareOf().values(n.elem.t, 1, true)
		w.block(q, n.elem.size, n.elem)
		if !buildWatched(v, q, n.elem, w) {
			return false
		}
		*(*unsafe.Pointer)(p) = q
		return true
	case nodeStruct:
		m, ok := v.(map[string]any)
		if !ok || m == nil {
			return false
		}
		for k, item := range m {
			f, _ := n.table.Get(k)
			if f == nil {
				continue // the converter reads only the type's fields
			}
			if !buildWatched(item, unsafe.Add(p, f.offset), f.node, w) {
				return false
			}
		}
		return true
	}
	return false
}

// wholeNumber is the int64 an integer field reads from v: an int64 as it
// is, or a whole float64 (as a YAML document's numbers decode) of
// magnitude below 2^bits and at most 2^53, which the converter converts
// exactly (reflect.Value.Convert) and JSON decoding reads from the digits
// json.Marshal writes for it (exact up to 2^53: beyond, json.Marshal
// writes the shortest digits that read back as the float,
// 4611686018427388000 for 2^62, and the two part); ok=false otherwise (a
// fraction, a float out of range, another type).
func wholeNumber(v any, bits int) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		limit := math.Ldexp(1, min(bits, 53))
		if x != math.Trunc(x) || x < -limit || x > limit || bits < 53 && x == limit {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

// putBits stores the low bits of x at p, an integer of that many bits.
func putBits(p unsafe.Pointer, bits int, x uint64) {
	switch bits {
	case 8:
		*(*uint8)(p) = uint8(x)
	case 16:
		*(*uint16)(p) = uint16(x)
	case 32:
		*(*uint32)(p) = uint32(x)
	default:
		*(*uint64)(p) = x
	}
}

// buildKnown is the entry's FromUnstructured (UnmarshalJSON of
// json.Marshal(v)) for Quantity and Time values whose JSON text is known
// without encoding it; done=false leaves v to the entry.
func buildKnown(v any, p unsafe.Pointer, n *node) (ok, done bool) {
	switch n.t {
	case quantityType:
		// UnmarshalJSON strips the quotes and parses the text, which
		// json.Marshal leaves as it is for printable ASCII other than
		// the characters it escapes (" \ < > &); an int64 is its digits.
		var text string
		switch x := v.(type) {
		case string:
			if !plainJSONText(x) {
				return false, false
			}
			text = x
		case int64:
			text = strconv.FormatInt(x, 10)
		default:
			return false, false
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(text))
		if err != nil {
			return false, true // the reference reports the error
		}
		*(*resource.Quantity)(p) = q
		return true, true
	case timeType:
		// UnmarshalJSON decodes the JSON string (a valid UTF-8 string comes
		// back as it is) and parses it as RFC 3339, in local time.
		x, isString := v.(string)
		if !isString || !utf8.ValidString(x) {
			return false, false
		}
		pt, err := time.Parse(time.RFC3339, x)
		if err != nil {
			return false, true
		}
		(*metav1.Time)(p).Time = pt.Local()
		return true, true
	}
	return false, false
}

// plainJSONText reports whether json.Marshal writes s between quotes as it
// is: printable ASCII without the characters it escapes.
func plainJSONText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

var (
	quantityType = reflect.TypeFor[resource.Quantity]()
	timeType     = reflect.TypeFor[metav1.Time]()
)

var stringMapType = reflect.TypeOf(map[string]string{})

// isJSONValue reports whether v holds only the Go types of JSON values,
// which json.Marshal encodes without surprises (no NaN, no infinities).
func isJSONValue(v any, depth int) bool {
	if depth > 64 {
		return false
	}
	switch x := v.(type) {
	case nil, string, bool, int64:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case map[string]any:
		for _, item := range x {
			if !isJSONValue(item, depth+1) {
				return false
			}
		}
		return x != nil
	case []any:
		for _, item := range x {
			if !isJSONValue(item, depth+1) {
				return false
			}
		}
		return x != nil
	}
	return false
}

// emitter writes typed values back as ToUnstructured does.
type emitter struct {
	// scratch holds the entries of the structs being written.
	scratch []entry
	// text is where quantities are formatted to compare (isQuantityText).
	text []byte
	// quantities are quantities without an inf.Dec that isQuantityText
	// formatted, with their canonical text (at most maxQuantityTexts).
	quantities []quantityText
	// spare are zero addressable values that emit copies a map's keys and
	// values into, by type (spareValue), instead of a new one per map and
	// per key.
	spare map[reflect.Type][]reflect.Value
	// everyLookup makes fields look every field up in the previous map,
	// as it did before counting the entries found (fieldsLeft): the
	// reference TestFieldsLeftIsEveryLookup holds the count to.
	everyLookup bool
}

// spareValue is a zero addressable value of type t, e's own until
// released: one of e.spare, or a new one.
func (e *emitter) spareValue(t reflect.Type) reflect.Value {
	if l := e.spare[t]; len(l) > 0 {
		e.spare[t] = l[:len(l)-1]
		return l[len(l)-1]
	}
	return reflect.New(t).Elem()
}

// release zeroes v (holding on to nothing) and keeps it in e.spare.
func (e *emitter) release(v reflect.Value) {
	v.SetZero()
	if e.spare == nil {
		e.spare = map[reflect.Type][]reflect.Value{}
	}
	e.spare[v.Type()] = append(e.spare[v.Type()], v)
}

type entry struct {
	name string
	v    any
}

// emit returns ToUnstructured's output for the value of n's type at p (a
// value outside a struct field of scalar kind: toUnstructured), prev itself
// when that is bit for bit prev; nil is ToUnstructured writing nothing
// (null), and ok=false a conversion the plan leaves to the reference
// (errors). addr tells whether the converter reaches the value as an
// addressable reflect.Value (everything but what lies in a map's values),
// which decides the methods a type's entry may call.
func (e *emitter) emit(p unsafe.Pointer, n *node, prev any, addr bool) (out any, ok bool) {
	if n.kind == nodePointer && n.toCustom && n.elem.toCustom {
		// The entry of *T writes nothing for nil and otherwise calls the
		// same method as the entry of T on the (addressable) element, in
		// the same order of precedence (ToUnstructuredWithError,
		// ToUnstructured, MarshalJSON, whichever receiver).
		q := *(*unsafe.Pointer)(p)
		if q == nil {
			return nil, true
		}
		return e.emit(q, n.elem, prev, true)
	}
	if n.toCustom {
		if n.t == intOrStringType {
			if x := (*intstr.IntOrString)(p); x.Type == intstr.String && utf8.ValidString(x.StrVal) {
				// customOut's string, boxed once for the text first
				// written anew.
				return n.lastText.out(x.StrVal, prev), true
			}
		}
		if prevString, isString := prev.(string); isString && n.t == quantityType && e.isQuantityText((*resource.Quantity)(p), prevString) {
			// What customOut gives (q.String()) is prev's text: prev, as
			// below, without formatting a string to compare.
			return prev, true
		}
		v, ok := customOut(p, n, addr)
		if !ok {
			return nil, false
		}
		if jsonvalue.Identical(v, prev) {
			return prev, true
		}
		return v, true
	}
	switch n.kind {
	case nodeString, nodeBool, nodeInt, nodeUint, nodeFloat:
		return scalarOut(p, n, prev)
	case nodeBytes:
		b := *(*[]byte)(p)
		if b == nil {
			return nil, true
		}
		s := base64.StdEncoding.EncodeToString(b)
		if p, isString := prev.(string); isString && p == s {
			return prev, true
		}
		return s, true
	case nodeMap:
		if n.t == stringMapType {
			ss := *(*map[string]string)(p)
			if ss == nil {
				return nil, true
			}
			return stringMapOut(ss, prev), true
		}
		return e.emitMap(p, n, prev)
	case nodeSlice:
		h := (*sliceHeader)(p)
		if h.data == nil {
			return nil, true
		}
		pl, _ := prev.([]any)
		same := pl != nil && len(pl) == h.len
		var out []any
		if !same {
			out = make([]any, h.len)
		}
		for i := 0; i < h.len; i++ {
			var pv any
			if i < len(pl) {
				pv = pl[i]
			}
			// Slice elements are addressable, whatever the slice.
			o, ok := e.emit(unsafe.Add(h.data, uintptr(i)*n.elem.size), n.elem, pv, true)
			if !ok {
				return nil, false
			}
			if same && !sameValue(o, pv) {
				same = false
				out = make([]any, h.len)
				copy(out, pl[:i])
			}
			if !same {
				out[i] = o
			}
		}
		if same {
			return prev, true
		}
		return out, true
	case nodePointer:
		q := *(*unsafe.Pointer)(p)
		if q == nil {
			return nil, true
		}
		return e.emit(q, n.elem, prev, true)
	case nodeStruct:
		pm, _ := prev.(map[string]any)
		start := len(e.scratch)
		same, ok := e.fields(p, n, pm, addr)
		if !ok {
			e.scratch = e.scratch[:start]
			return nil, false
		}
		if same && pm != nil && len(pm) == len(e.scratch)-start {
			e.scratch = e.scratch[:start]
			return prev, true
		}
		out := make(map[string]any, len(e.scratch)-start)
		for _, en := range e.scratch[start:] {
			out[en.name] = en.v
		}
		e.scratch = e.scratch[:start]
		return out, true
	}
	return nil, false
}

// emitMap is emit of a map of n's type (not map[string]string) at p: apart
// from emit, whose every call would otherwise pay for its defers.
func (e *emitter) emitMap(p unsafe.Pointer, n *node, prev any) (any, bool) {
	sv := reflect.NewAt(n.t, p).Elem()
	if sv.IsNil() {
		return nil, true
	}
	pm, _ := prev.(map[string]any)
	same := pm != nil && len(pm) == sv.Len()
	// Each value is copied out of the map (as MapIter.Value does) into
	// one variable; the converter reaches it unaddressable. The keys
	// likewise, into another.
	ev, kv := e.spareValue(n.elem.t), e.spareValue(n.t.Key())
	defer e.release(kv)
	defer e.release(ev)
	evp := ev.Addr().UnsafePointer()
	var it reflect.MapIter
	it.Reset(sv)
	for same && it.Next() {
		kv.SetIterKey(&it)
		pv, had := pm[kv.String()]
		ev.SetIterValue(&it)
		o, ok := e.emit(evp, n.elem, pv, false)
		if !ok {
			return nil, false
		}
		same = had && sameValue(o, pv)
	}
	if same {
		return prev, true
	}
	// Something differs: the whole map, sharing what emit shares.
	out := make(map[string]any, sv.Len())
	it.Reset(sv)
	for it.Next() {
		kv.SetIterKey(&it)
		k := kv.String()
		var pv any
		if pm != nil {
			pv = pm[k]
		}
		ev.SetIterValue(&it)
		o, ok := e.emit(evp, n.elem, pv, false)
		if !ok {
			return nil, false
		}
		out[k] = o
	}
	return out, true
}

// sliceHeader is the layout of a Go slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// customOut is the entry's ToUnstructured of the value of custom type at
// p, reached addressable or not (addr).
func customOut(p unsafe.Pointer, n *node, addr bool) (any, bool) {
	switch {
	case n.plainConverter:
		// What the entry does (getUnstructuredConverter, case
		// isUnstructuredConverter: a value receiver, so addressability does
		// not matter), the method called through *T.
		return reflect.NewAt(n.t, p).Interface().(value.UnstructuredConverter).ToUnstructured(), true
	case n.t == intOrStringType:
		// IntOrString.MarshalJSON (a value receiver) is json.Marshal of
		// IntVal or StrVal, which the entry decodes back: the int64, or the
		// string when valid UTF-8 (json.Marshal would replace invalid
		// bytes).
		x := (*intstr.IntOrString)(p)
		switch {
		case x.Type == intstr.Int:
			return int64(x.IntVal), true
		case x.Type == intstr.String && utf8.ValidString(x.StrVal):
			return x.StrVal, true
		}
	}
	sv := reflect.NewAt(n.t, p).Elem()
	if !addr {
		// A copy in an interface: the value the converter hands the entry,
		// whose pointer-receiver methods it then cannot call.
		sv = reflect.ValueOf(sv.Interface())
	}
	v, err := n.entry.ToUnstructured(sv)
	return v, err == nil
}

var intOrStringType = reflect.TypeFor[intstr.IntOrString]()

// isQuantityText tells whether s is q.String(), Quantity's ToUnstructured,
// without making that string: the text String caches when q has one (the
// text ParseQuantity was given, kept when it deems it canonical: "1E3"
// stays "1E3"), else q's canonical form, formatted into the emitter's
// buffer.
func (e *emitter) isQuantityText(q *resource.Quantity, s string) bool {
	if quantityCache < 0 {
		return false
	}
	if cached := reflect.ValueOf(q).Elem().Field(quantityCache).String(); cached != "" {
		return cached == s
	}
	// A Quantity without an inf.Dec is all in its comparable value (its
	// int64Amount and Format; s is empty here): one formatted before has
	// the same canonical text.
	plain := quantityDec >= 0 && reflect.ValueOf(q).Elem().Field(quantityDec).Field(0).IsNil()
	if plain {
		for _, m := range e.quantities {
			if m.q == *q {
				return m.text == s
			}
		}
	}
	if e.text == nil {
		e.text = make([]byte, 0, 48)
	}
	num, suf := q.CanonicalizeBytes(e.text[:0])
	if plain && len(e.quantities) < maxQuantityTexts {
		e.quantities = append(e.quantities, quantityText{*q, string(num) + string(suf)})
	}
	return len(num)+len(suf) == len(s) && string(num) == s[:len(num)] && string(suf) == s[len(num):]
}

// quantityText is a quantity and its canonical text (CanonicalizeBytes').
type quantityText struct {
	q    resource.Quantity
	text string
}

// maxQuantityTexts bounds the quantities an emitter keeps the text of.
const maxQuantityTexts = 16

// quantityDec is the index of a Quantity's field that holds its *inf.Dec
// (the first field of a struct), -1 when this apimachinery's Quantity has
// none such (isQuantityText then formats every quantity).
var quantityDec = func() int {
	f, ok := quantityType.FieldByName("d")
	if !ok || len(f.Index) != 1 || f.Type.Kind() != reflect.Struct || f.Type.NumField() != 1 ||
		f.Type.Field(0).Type.Kind() != reflect.Pointer || !quantityType.Comparable() {
		return -1
	}
	return f.Index[0]
}()

// quantityCache is the index of the field where a Quantity caches its
// String, -1 when this apimachinery's Quantity has none (isQuantityText
// then always says no).
var quantityCache = func() int {
	f, ok := quantityType.FieldByName("s")
	if !ok || f.Type.Kind() != reflect.String || len(f.Index) != 1 {
		return -1
	}
	return f.Index[0]
}()

// fields appends the entries structToUnstructured writes for the struct at
// p to e.scratch; same tells that each is bit for bit prev's entry.
func (e *emitter) fields(p unsafe.Pointer, n *node, pm map[string]any, addr bool) (same, ok bool) {
	left := len(pm)
	if e.everyLookup && pm != nil {
		left = math.MaxInt // never found out: every lookup made
	}
	return e.fieldsLeft(p, n, pm, addr, &left)
}

// fieldsLeft is fields, *left counting the entries of pm its lookups
// have not found yet (shared with the inlined structs, which read the
// same map). A struct's fields have distinct names (planStruct), so each
// lookup that finds one finds another entry of pm: once all len(pm) are
// found, every other field's lookup would find nothing, and is not made
// (an object as written lacks what the defaulters add, often the fields
// after the last one it has).
func (e *emitter) fieldsLeft(p unsafe.Pointer, n *node, pm map[string]any, addr bool, left *int) (same, ok bool) {
	same = true
	for i := range n.fields {
		f := &n.fields[i]
		if f.name == "-" {
			continue
		}
		fp := unsafe.Add(p, f.own)
		if f.omitempty && f.isEmpty(fp) {
			continue
		}
		if f.omitzero != nil && f.omitzero(reflect.NewAt(f.node.t, fp).Elem()) {
			continue
		}
		if f.inline {
			s, ok := e.fieldsLeft(fp, f.node, pm, addr, left)
			if !ok {
				return false, false
			}
			same = same && s
			continue
		}
		var pv any
		var had bool
		if *left > 0 {
			if pv, had = pm[f.name]; had {
				*left--
			}
		}
		var o any
		switch f.node.kind {
		case nodeString:
			if f.last != nil {
				o, ok = f.last.out(*(*string)(fp), pv), true
				break
			}
			o, ok = scalarOut(fp, f.node, pv)
		case nodeBool, nodeInt, nodeUint, nodeFloat:
			// structToUnstructured writes scalar kinds directly, whatever
			// their type's own conversions.
			o, ok = scalarOut(fp, f.node, pv)
		default:
			o, ok = e.emit(fp, f.node, pv, addr)
		}
		if !ok {
			return false, false
		}
		if !had || !sameValue(o, pv) {
			same = false
		}
		e.scratch = append(e.scratch, entry{f.name, o})
	}
	return same, true
}

// scalarOut is ToUnstructured of the value of scalar kind at p: prev when
// it is that very value (same Go type, floats bit for bit).
func scalarOut(p unsafe.Pointer, n *node, prev any) (any, bool) {
	switch n.kind {
	case nodeString:
		s := *(*string)(p)
		if p, ok := prev.(string); ok && p == s {
			return prev, true
		}
		return s, true
	case nodeBool:
		b := *(*bool)(p)
		if p, ok := prev.(bool); ok && p == b {
			return prev, true
		}
		return b, true
	case nodeInt:
		x := intAt(p, n.bits)
		if p, ok := prev.(int64); ok && p == x {
			return prev, true
		}
		return x, true
	case nodeUint:
		u := uintAt(p, n.bits)
		if u > math.MaxInt64 {
			return nil, false
		}
		if p, ok := prev.(int64); ok && p == int64(u) {
			return prev, true
		}
		return int64(u), true
	case nodeFloat:
		x := floatAt(p, n.bits)
		if p, ok := prev.(float64); ok && math.Float64bits(p) == math.Float64bits(x) {
			return prev, true
		}
		return x, true
	}
	return nil, false
}

// intAt is reflect.Value.Int of the signed integer of that many bits at p.
func intAt(p unsafe.Pointer, bits int) int64 {
	switch bits {
	case 8:
		return int64(*(*int8)(p))
	case 16:
		return int64(*(*int16)(p))
	case 32:
		return int64(*(*int32)(p))
	}
	return *(*int64)(p)
}

// uintAt is reflect.Value.Uint of the unsigned integer at p.
func uintAt(p unsafe.Pointer, bits int) uint64 {
	switch bits {
	case 8:
		return uint64(*(*uint8)(p))
	case 16:
		return uint64(*(*uint16)(p))
	case 32:
		return uint64(*(*uint32)(p))
	}
	return *(*uint64)(p)
}

// floatAt is reflect.Value.Float of the float at p.
func floatAt(p unsafe.Pointer, bits int) float64 {
	if bits == 32 {
		return float64(*(*float32)(p))
	}
	return *(*float64)(p)
}

// stringMapOut is ToUnstructured of a map[string]string: prev when it
// holds exactly those strings.
func stringMapOut(m map[string]string, prev any) any {
	if pm, ok := prev.(map[string]any); ok && pm != nil && len(pm) == len(m) {
		same := true
		for k, v := range m {
			if p, ok := pm[k].(string); !ok || p != v {
				same = false
				break
			}
		}
		if same {
			return prev
		}
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// isEmpty is isEmptyAt of f's value at fp (through its word when
// f.wordEmpty).
func (f *field) isEmpty(fp unsafe.Pointer) bool {
	if f.wordEmpty {
		return *(*uintptr)(unsafe.Add(fp, f.emptyWord)) == 0
	}
	return isEmptyAt(fp, f.node)
}

// isEmptyAt is the converter's isEmpty of the value of n's type at p.
func isEmptyAt(p unsafe.Pointer, n *node) bool {
	switch n.rkind {
	case reflect.String:
		return len(*(*string)(p)) == 0
	case reflect.Bool:
		return !*(*bool)(p)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intAt(p, n.rbits) == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return uintAt(p, n.rbits) == 0
	case reflect.Float32, reflect.Float64:
		return floatAt(p, n.rbits) == 0
	case reflect.Slice:
		return (*sliceHeader)(p).len == 0
	case reflect.Pointer:
		return *(*unsafe.Pointer)(p) == nil
	case reflect.Map, reflect.Array, reflect.Interface:
		if n.t == stringMapType {
			return len(*(*map[string]string)(p)) == 0
		}
		return isEmptyValue(reflect.NewAt(n.t, p).Elem())
	}
	return false
}

// isEmptyValue is the converter's isEmpty.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Map, reflect.Slice:
		return v.IsNil() || v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// sameValue reports whether emit returned prev itself (or an equal
// scalar of the same type, which emit returns as prev).
func sameValue(o, prev any) bool {
	switch x := o.(type) {
	case map[string]any:
		y, ok := prev.(map[string]any)
		return ok && (x == nil) == (y == nil) && (x == nil || jsonvalue.SameMap(x, y))
	case []any:
		y, ok := prev.([]any)
		return ok && (x == nil) == (y == nil) && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
	case nil:
		return prev == nil
	case string, bool, int64:
		return o == prev
	case float64:
		y, ok := prev.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	}
	return false
}

// defaultFast is defaultReference for built-in kind gvk (already checked by
// the caller: recognized, not a custom resource, obj not nil), or ok=false
// when the plan cannot tell. When obj is in normalized form (normalized),
// an object the defaulters leave alone comes back as obj without being
// written again (watch, defaultwatch.go).
func (p *planner) defaultFast(k *kube, obj map[string]any, gvk schema.GroupVersionKind, normalized bool) (map[string]any, bool) {
	watched := false
	if av, _ := obj["apiVersion"].(string); normalized && obj["kind"] == any(gvk.Kind) && sameGroupVersion(av, gvk.GroupVersion()) {
		// (Normalized form has the apiVersion and kind of gvk, which
		// typedWatched sets whatever obj says: checked all the same.)
		watched = true
	}
	// typedWatched, in a spare object (nothing holds it once defaultBuilt
	// returns). Of an object not in normalized form, w only carries the
	// spare object: what it records is not read.
	w := p.getWatch()
	defer p.putWatch(w)
	n := p.typedKind(k.scheme, gvk)
	if n == nil {
		return nil, false
	}
	sp := spareOf(n)
	if sp.obj == nil {
		return nil, false
	}
	w.block(sp.at, n.size, n)
	w.spare = sp
	if !buildWatched(obj, sp.at, n, w) {
		sp.release(w)
		return nil, false
	}
	sp.obj.GetObjectKind().SetGroupVersionKind(gvk)
	var dw *watch
	if watched {
		dw = w
	}
	out, ok := p.defaultBuilt(k, sp.obj, obj, gvk, dw, false)
	sp.release(w)
	return out, ok
}

// defaultBuilt is defaultFast of obj once typed, the typed object build
// makes of it, is built (recording in w, when not nil: obj is then in
// normalized form, of kind gvk). With own, obj is the caller's own map,
// which nothing else holds and the caller no longer reads but as the
// result: the output's root is written into it (emitOwn), and obj is
// returned as the defaulted object. (Unchanged or not, the result is then
// obj, as the reference's is when it equals obj.)
func (p *planner) defaultBuilt(k *kube, typed runtime.Object, obj map[string]any, gvk schema.GroupVersionKind, w *watch, own bool) (map[string]any, bool) {
	n := p.typedKind(k.scheme, gvk)
	if n == nil {
		return nil, false
	}
	if w != nil && typed.GetObjectKind().GroupVersionKind() != gvk {
		// A type without apiVersion and kind (WatchEvent): ToUnstructured
		// writes none, whatever obj holds.
		w = nil
	}
	// Whether the watch is taken or not, the result is the same (emit
	// returns obj itself for an object the defaulters left alone): it
	// is left out while it has not paid for itself lately (watchWorth).
	watched := w != nil
	if w != nil && !watchWorth(n) {
		w = nil
	}
	if w != nil {
		w.take()
	}
	// After take: what prefill writes is a change the defaulters would
	// have made.
	p.pulls.prefill(typed)
	k.scheme.Default(typed)
	if typed.GetObjectKind().GroupVersionKind() != gvk {
		// typedWatched set it: only a defaulter that changed it makes it
		// differ (setting it again would write new strings, a change to
		// the watch).
		typed.GetObjectKind().SetGroupVersionKind(gvk)
	}
	if w != nil && p.unchanged(w) {
		watchPaid(n, true)
		return obj, true
	}
	if own && n.kind == nodeStruct && !n.toCustom && obj != nil {
		m, wrote, ok := p.emitOwn(reflect.ValueOf(typed).UnsafePointer(), n, obj)
		if !ok {
			return nil, false
		}
		if watched {
			watchPaid(n, !wrote)
		}
		return m, true
	}
	m, ok := p.emitObject(reflect.ValueOf(typed).UnsafePointer(), n, obj)
	if !ok {
		return nil, false
	}
	same := jsonvalue.SameMap(m, obj)
	if watched {
		// (Unwatched, an object the defaulters left alone comes back
		// from emit as obj itself: the watch would have paid.)
		watchPaid(n, same)
	}
	if !same && jsonvalue.Equal(m, obj) {
		// defaultReference's last step: an output equal to the input is the
		// input.
		return obj, true
	}
	return m, true
}

// The watch taken only when it pays.
//
// The watch (defaultwatch.go) saves the emit of an object in normalized
// form that the defaulters leave alone (a stored object, defaulted
// already), at the price of a copy of the typed object's blocks before
// they run and a comparison after: wasted on every object they change
// (an object as written, the first mutation of a request's object), which
// emit writes anew all the same. Leaving it out changes no result: emit
// returns obj itself when the defaulters changed nothing, and
// defaultBuilt returns it. So, per kind, it is taken until watchMisses
// objects in a row were changed, then left out until an object comes back
// from emit as obj, which shows it would have paid again. The counter
// only chooses which of two equal ways is run: TestWatchWorthIsTheSame
// holds every result to the reference with the watch taken and left out.

// watchMisses is how many changed objects in a row of a kind make
// defaultBuilt leave the watch out.
const watchMisses = 4

// watchWorth tells whether defaultBuilt takes the watch for an object of
// the kind of root n.
func watchWorth(n *node) bool {
	return n.watchMisses.Load() < watchMisses
}

// watchPaid records whether the defaulters left the object of the kind
// of root n alone (unchanged: the watch pays), writing the counter only
// when it changes.
func watchPaid(n *node, unchanged bool) {
	m := n.watchMisses.Load()
	switch {
	case unchanged && m != 0:
		n.watchMisses.Store(0)
	case !unchanged && m < watchMisses:
		n.watchMisses.Store(m + 1)
	}
}

// sameGroupVersion tells whether apiVersion is gv's.
func sameGroupVersion(apiVersion string, gv schema.GroupVersion) bool {
	parsed, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && apiVersion != "" && parsed == gv
}

// getWatch is an empty watch from the planner's pool.
func (p *planner) getWatch() *watch {
	w, _ := p.watches.Get().(*watch)
	if w == nil {
		w = &watch{}
	}
	return w
}

// putWatch returns w, emptied, to the planner's pool.
func (p *planner) putWatch(w *watch) {
	w.reset()
	p.watches.Put(w)
}

// unchanged is w.unchanged with an emitter of the planner's pool.
func (p *planner) unchanged(w *watch) bool {
	e, _ := p.emitters.Get().(*emitter)
	if e == nil {
		e = &emitter{}
	}
	same := w.unchanged(e)
	e.scratch = e.scratch[:0]
	p.emitters.Put(e)
	return same
}

// emitOwn is emitObject of the object of struct plan n at p against prev,
// a map the caller owns (nothing else holds it), whose own entries are
// written into prev itself rather than a new map: prev holds the output
// once it returns (wrote tells whether anything was written), the maps
// and lists below its entries as emit returns them. ok=false (prev
// untouched) is emit's.
func (p *planner) emitOwn(at unsafe.Pointer, n *node, prev map[string]any) (out map[string]any, wrote, ok bool) {
	e, _ := p.emitters.Get().(*emitter)
	if e == nil {
		e = &emitter{}
	}
	defer func() {
		e.scratch = e.scratch[:0]
		p.emitters.Put(e)
	}()
	same, ok := e.fields(at, n, prev, true)
	if !ok {
		return nil, false, false
	}
	if same && len(prev) == len(e.scratch) {
		return prev, false, true
	}
	for _, en := range e.scratch {
		prev[en.name] = en.v
	}
	if len(prev) != len(e.scratch) {
		// (Entries' names are unique: prev holds every one, and more.)
		for k := range prev {
			if !slices.ContainsFunc(e.scratch, func(en entry) bool { return en.name == k }) {
				delete(prev, k)
			}
		}
	}
	return prev, true, true
}

// emitObject is emit of the object of struct plan n at p as a map (the
// converter's ToUnstructured of a pointer to it), against prev, with
// scratch space from the planner's pool.
func (p *planner) emitObject(at unsafe.Pointer, n *node, prev map[string]any) (map[string]any, bool) {
	e, _ := p.emitters.Get().(*emitter)
	if e == nil {
		e = &emitter{}
	}
	var pv any
	if prev != nil {
		pv = prev
	}
	out, ok := e.emit(at, n, pv, true)
	e.scratch = e.scratch[:0]
	p.emitters.Put(e)
	m, isMap := out.(map[string]any)
	if !ok || !isMap || m == nil {
		return nil, false
	}
	return m, true
}
