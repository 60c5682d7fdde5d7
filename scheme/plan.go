package scheme

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/mutatis-dev/mutatis/internal/fieldtable"
)

// planner is the one planner of the fast paths. For every Go type it
// builds once a plan (node) from the field metadata that
// runtime.DefaultUnstructuredConverter reads (JSON names, omitempty,
// omitzero, inlined structs, custom marshalers), and every fast path is a
// walk over those plans:
//
//   - normalization (normalize.go: walk), the typed form
//     (FromUnstructured then ToUnstructured) and a patch result's strict
//     decoding, computed on the unstructured object along the plan;
//   - the typed conversions (defaultfast.go: build, FromUnstructured into
//     the Go object, and emit, ToUnstructured of it), around the
//     defaulters and on the admission paths (convertfast.go).
//
// A node records what each walk needs: the Go type's shape and offsets,
// its conversion methods, and for normalization the converter's output for
// unset fields. Where a walk does not model a type it says so on the node
// (unsupported for build and emit, fallback for normalization), and the
// walk answers ok=false there: the reference runs.
//
// Each Scheme owns one planner, so nothing is shared between schemes
// beyond the Go types themselves. A planner is safe for concurrent use;
// the zero value is ready.
type planner struct {
	mu sync.Mutex // serializes building
	// kinds maps a kind, as a runtime.Scheme resolves it, to its plan;
	// roots maps a struct type to the root build and emit walk (nil: not
	// modelled). Both are read without locking (cow).
	kinds cow[kindKey, *kindPlan]
	roots cow[reflect.Type, *node]
	// types holds the node of every Go type planned so far, by type and
	// tag options (guarded by mu).
	types map[typeKey]*node
	// zeros holds the converter's output for the zero value of every
	// struct type planned so far (guarded by mu; zeroStruct).
	zeros map[reflect.Type]map[string]any
	// emitters recycles emit's scratch space (emitObject).
	emitters sync.Pool
	// watches recycles the watches of defaultFast.
	watches sync.Pool
	// pulls remembers the image pull policies of containers as written
	// (pullpolicy.go).
	pulls pullPolicies
}

// cow is a map that lookups read without locking or allocating, and that
// a writer (holding the planner's lock) replaces by a copy.
type cow[K comparable, V any] struct {
	m atomic.Pointer[map[K]V]
}

func (c *cow[K, V]) load(k K) (V, bool) {
	if m := c.m.Load(); m != nil {
		v, ok := (*m)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

func (c *cow[K, V]) store(k K, v V) {
	m := map[K]V{}
	if old := c.m.Load(); old != nil {
		m = maps.Clone(*old)
	}
	m[k] = v
	c.m.Store(&m)
}

// kindKey is a kind as a scheme resolves it. client-go's scheme (the typed
// form) and kube-apiserver's (defaulting, conversion) give the same Go
// type for every versioned kind both know; kube-apiserver's knows a few
// more (AdmissionReview, ImageReview).
type kindKey struct {
	types *runtime.Scheme
	gvk   schema.GroupVersionKind
}

// typeKey is a Go type in a struct field with tag options: custom types
// under omitzero have their own node (normalization converts them through
// a wrapper with the same options).
type typeKey struct {
	t    reflect.Type
	opts string
}

// kindPlan is the plan of one kind: its Go type's node, the same node
// when build and emit model it (typed, nil otherwise), and the apiVersion
// and kind the typed round trip sets (SetGroupVersionKind) when setsKind
// (the type's GetObjectKind is its TypeMeta).
type kindPlan struct {
	root, typed *node
	apiVersion  string
	kind        string
	setsKind    kindSetting
}

// kindSetting is what SetGroupVersionKind does to a kind's Go type.
type kindSetting uint8

const (
	// setsGVK: it sets the type's apiVersion and kind (TypeMeta).
	setsGVK kindSetting = iota
	// setsNothing: it does nothing (schema.EmptyObjectKind: WatchEvent,
	// which metav1.AddToGroupVersion registers in every group version,
	// has no apiVersion and kind).
	setsNothing
	// setsOther: anything else, which normalize leaves to the typed round
	// trip.
	setsOther
)

// kindSettingOf tells what SetGroupVersionKind(gvk) does to obj.
func kindSettingOf(obj runtime.Object, gvk schema.GroupVersionKind) kindSetting {
	k := obj.GetObjectKind()
	k.SetGroupVersionKind(gvk)
	switch k.GroupVersionKind() {
	case gvk:
		return setsGVK
	case schema.GroupVersionKind{}:
		return setsNothing
	}
	return setsOther
}

type nodeKind uint8

const (
	nodeUnsupported nodeKind = iota
	nodeString
	nodeBool
	nodeInt
	nodeUint
	nodeFloat
	nodeBytes
	nodeMap
	nodeSlice
	nodePointer
	nodeStruct
	// nodeCustom is a type the converter converts through its
	// TypeReflectEntry both ways (custom JSON marshalers).
	nodeCustom
)

// node is the plan of one Go type.
type node struct {
	kind nodeKind
	t    reflect.Type
	// bits is the size of a numeric type.
	bits int
	// size is the size of a value of the type (t.Size()).
	size uintptr
	// rkind and rbits are t.Kind() and, for numeric kinds, t.Bits(),
	// read once (isEmptyAt).
	rkind reflect.Kind
	rbits int
	// elem is the element (maps, slices) or pointee (pointers).
	elem *node
	// fields are a struct's fields in order (emit); byName finds them by
	// JSON name with inlined structs flattened (build, walk), through
	// table.
	fields []field
	byName map[string]*field
	table  fieldtable.Table[*field]

	// entry is the type's TypeReflectEntry; fromCustom and toCustom tell
	// that the converter hands values to it (FromUnstructured for maps,
	// slices, pointers and structs; ToUnstructured for any type outside a
	// struct field of a scalar kind).
	entry      *value.TypeReflectCacheEntry
	fromCustom bool
	toCustom   bool
	// plainConverter tells that the entry's ToUnstructured is the type's
	// own value-receiver ToUnstructured() (value.UnstructuredConverter,
	// and no ToUnstructuredWithError to take precedence): emit calls it
	// through a pointer, which does not copy the value into an interface.
	plainConverter bool
	// unsupported is set on every node that reaches a type build and emit
	// do not model (markUnsupported, after building).
	unsupported bool

	// What normalization (walk) reads.
	//
	// fallback is a type whose values walk does not model: a value there
	// sends the whole object through the typed round trip.
	fallback bool
	// unsetPresent are the fields that the converter writes even when they
	// are unset (no omitempty, or a struct), with their output.
	unsetPresent []*field
	// wrapper is struct{ V T `json:"v"` } (with the field's omitzero
	// options) for a type T with custom unstructured or JSON conversions:
	// converting a map {"v": value} into it and back runs exactly the
	// converter's code for T (custom).
	wrapper reflect.Type
	// nullIsZero tells that JSON decoding reads null as the zero value, as
	// the converter does: true for plain types, pointers, and custom types
	// whose UnmarshalJSON leaves a zero value zero on null.
	nullIsZero bool
	// objectTree is set for metav1.FieldsV1, whose conversions are a JSON
	// round trip of the value: a tree of objects (managed fields' sets of
	// paths) comes back unchanged.
	objectTree bool
	// strs are the offsets, in increasing order, of the plain string
	// fields (nodeString) in a value of the type: the value itself for a
	// string, its fields' and those of the structs it holds (not through
	// pointers) for a struct, none for other kinds (markStrings, when the
	// typed root is planned). The watch of defaulting compares their text.
	strs      []uintptr
	strsKnown bool
	// memo caches the conversions of string and integer values of a custom
	// type whose result is a scalar (quantities, timestamps, int-or-strings).
	memo memo
	// lastText is, for IntOrString, the string emit last wrote anew for a
	// value of the type (lastString: "25%", the defaulted rolling update).
	lastText lastString
	// spares recycles, for the root of a kind, the typed objects that
	// decodeTyped and defaultFast build and the defaulting reads and writes
	// back, with the memory built for them, zeroed (patchdefault.go:
	// spareObject).
	spares sync.Pool
	// watchMisses counts, for the root of a kind, the defaultings in a row
	// whose objects the defaulters changed (watchWorth).
	watchMisses atomic.Uint32
}

// field is one field of a struct.
type field struct {
	// offset is the field's offset in the struct whose byName holds it
	// (inlined fields: the sum of the offsets on the way).
	offset uintptr
	// own is the field's offset in its own struct.
	own  uintptr
	name string
	// inline is an inlined struct: its fields are read from and written to
	// the same map.
	inline    bool
	omitempty bool
	omitzero  func(reflect.Value) bool
	node      *node
	// unset is the converter's output for the field's zero value, present
	// tells whether it writes the field at all then (walk).
	unset   any
	present bool
	// last is, for a field of string kind, the output emit last wrote
	// anew for it (lastString): shared by the objects that get the same
	// default, instead of a new one each.
	last *lastString
	// wordEmpty tells that the converter's isEmpty of the field is the
	// word at emptyWord in its value being 0 (a string's or a slice's
	// length, a pointer), which emit reads instead of isEmptyAt.
	wordEmpty bool
	emptyWord uintptr
}

// emptyWordOf is where the word lies that is 0 exactly when a value of
// n's type is empty (isEmptyAt), for the kinds most fields are of: ok=false
// for the others.
func emptyWordOf(n *node) (at uintptr, ok bool) {
	switch n.rkind {
	case reflect.String, reflect.Slice:
		return unsafe.Sizeof(uintptr(0)), true // the length, after the data pointer
	case reflect.Pointer:
		return 0, true
	}
	return 0, false
}

// lastString holds the first string a field's emit boxed anew, for the
// next outputs of the same text. Strings are immutable: sharing the box
// changes nothing of the output.
type lastString struct{ p atomic.Pointer[any] }

// out is scalarOut's output for the string s of the field: prev when it is
// that string, else the box of s, shared when it is the one kept.
func (b *lastString) out(s string, prev any) any {
	if p, ok := prev.(string); ok && p == s {
		return prev
	}
	if last := b.p.Load(); last != nil {
		if t, _ := (*last).(string); t == s {
			return *last
		}
		return s
	}
	o := any(s)
	b.p.CompareAndSwap(nil, &o)
	return o
}

// kind returns the plan of gvk as types resolves it, building it on first
// use, or nil when types does not know gvk.
func (p *planner) kind(types *runtime.Scheme, gvk schema.GroupVersionKind) *kindPlan {
	key := kindKey{types, gvk}
	if kp, ok := p.kinds.load(key); ok {
		return kp
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if kp, ok := p.kinds.load(key); ok {
		return kp
	}
	var kp *kindPlan
	if obj, err := types.New(gvk); err == nil {
		if t := reflect.TypeOf(obj); t.Kind() == reflect.Pointer {
			kp = &kindPlan{root: p.node(t.Elem(), ""), typed: p.typedLocked(t.Elem()), apiVersion: gvk.GroupVersion().String(), kind: gvk.Kind, setsKind: kindSettingOf(obj, gvk)}
		}
	}
	p.kinds.store(key, kp)
	return kp
}

// typedKind is the node build and emit walk for gvk as types resolves it,
// or nil.
func (p *planner) typedKind(types *runtime.Scheme, gvk schema.GroupVersionKind) *node {
	if kp := p.kind(types, gvk); kp != nil {
		return kp.typed
	}
	return nil
}

// typedType is the node build and emit walk for struct type t, or nil
// when they do not model it.
func (p *planner) typedType(t reflect.Type) *node {
	if n, ok := p.roots.load(t); ok {
		return n
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.typedLocked(t)
}

// typedLocked is typedType with p.mu held.
func (p *planner) typedLocked(t reflect.Type) *node {
	if n, ok := p.roots.load(t); ok {
		return n
	}
	var n *node
	if t.Kind() == reflect.Struct {
		n = p.node(t, "")
		markUnsupported(n, map[*node]bool{})
		markStrings(n)
		if n.unsupported || n.kind != nodeStruct {
			n = nil
		}
	}
	p.roots.store(t, n)
	return n
}

// markUnsupported propagates unsupported up from the types build and emit
// do not model; it reports whether n is unsupported.
func markUnsupported(n *node, seen map[*node]bool) bool {
	if seen[n] {
		return n.unsupported
	}
	seen[n] = true
	unsupported := n.kind == nodeUnsupported
	if n.elem != nil && markUnsupported(n.elem, seen) {
		unsupported = true
	}
	for i := range n.fields {
		if markUnsupported(n.fields[i].node, seen) {
			unsupported = true
		}
	}
	if unsupported && !n.unsupported {
		n.unsupported = true
	}
	return n.unsupported
}

// markStrings sets strs on n and every node it reaches that has none yet
// (p.mu held: a node of a root already published has them).
func markStrings(n *node) {
	if n == nil || n.strsKnown {
		return
	}
	n.strsKnown = true
	n.strs = stringOffsets(n, 0, nil)
	markStrings(n.elem)
	for i := range n.fields {
		markStrings(n.fields[i].node)
	}
}

// stringOffsets appends to out the offsets of n's plain string fields in
// a value of n's type at offset base.
func stringOffsets(n *node, base uintptr, out []uintptr) []uintptr {
	switch n.kind {
	case nodeString:
		out = append(out, base)
	case nodeStruct:
		for i := range n.fields {
			out = stringOffsets(n.fields[i].node, base+n.fields[i].own, out)
		}
	}
	return out
}

// node returns the node of t in a struct field with tag options opts
// (p.mu held).
func (p *planner) node(t reflect.Type, opts string) *node {
	key := typeKey{t, opts}
	if n, ok := p.types[key]; ok {
		return n
	}
	if p.types == nil {
		p.types = map[typeKey]*node{}
	}
	to, from := conversionMethods(t)
	n := &node{t: t, toCustom: to, size: t.Size(), nullIsZero: true, rkind: t.Kind()}
	switch n.rkind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		n.rbits = t.Bits()
	}
	if to || from {
		n.entry = value.TypeReflectEntryOf(t) // only for types with methods: the entry calls them
	}
	n.plainConverter = t.Kind() != reflect.Pointer && t.Implements(unstructuredConverterType) &&
		!t.Implements(unstructuredConverterWithErrorType) &&
		!reflect.PointerTo(t).Implements(unstructuredConverterWithErrorType)
	p.types[key] = n // before the elements and fields: types may be recursive
	switch t.Kind() {
	case reflect.String:
		n.kind = nodeString
	case reflect.Bool:
		n.kind = nodeBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n.kind, n.bits = nodeInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n.kind, n.bits = nodeUint, t.Bits()
	case reflect.Float32, reflect.Float64:
		n.kind, n.bits = nodeFloat, t.Bits()
	case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Struct:
		// The converter hands values of these kinds to the type's entry
		// when it unmarshals them itself (FromUnstructured), and values of
		// any kind when it marshals them (ToUnstructured).
		n.fromCustom = from
		switch {
		case n.fromCustom && n.toCustom:
			n.kind = nodeCustom
		case n.fromCustom:
			// Read through the type's own conversion, written by
			// reflection: not modelled.
		case t.Kind() == reflect.Map:
			if t.Key().Kind() == reflect.String {
				n.kind, n.elem = nodeMap, p.node(t.Elem(), "")
			}
		case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
			n.kind = nodeBytes
		case t.Kind() == reflect.Slice:
			n.kind, n.elem = nodeSlice, p.node(t.Elem(), "")
		case t.Kind() == reflect.Pointer:
			// A pointer to a custom type (*metav1.Time) marshals through its
			// entry (emit handles toCustom) and unmarshals its element.
			n.kind, n.elem = nodePointer, p.node(t.Elem(), "")
		case n.toCustom:
			// Written by the type's own conversion, read by reflection.
		default:
			n.kind = nodeStruct
			if !p.planStruct(n, t) {
				n.kind = nodeUnsupported
			}
		}
	}
	// Normalization's view of the same type.
	switch {
	case isCustom(t):
		p.planCustom(n, t, opts)
	case n.kind == nodeStruct: // planStruct decided
	case n.kind == nodeFloat:
		n.fallback = n.bits != 64
	case n.kind == nodePointer:
		n.fallback = t.Elem().Kind() == reflect.Pointer
	case n.kind == nodeString, n.kind == nodeBool, n.kind == nodeInt, n.kind == nodeBytes, n.kind == nodeMap, n.kind == nodeSlice:
	default: // unsigned integers, interfaces, and what build and emit do not model
		n.fallback = true
		n.nullIsZero = t.Kind() != reflect.Interface
	}
	return n
}

// planCustom sets normalization's view of custom type t in a field whose
// tag has the options opts (",omitempty", ",omitzero"): a wrapper, or a
// fallback. Only struct types whose methods do not depend on
// addressability are modelled: the converter then reaches them the same
// way as a struct field, a list item or a (non-addressable) map value.
func (p *planner) planCustom(n *node, t reflect.Type, opts string) {
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if base.Kind() != reflect.Struct || !sameMethodsOnValue(base) {
		n.fallback = true
		return
	}
	n.nullIsZero = t.Kind() == reflect.Pointer || unmarshalsNullAsZero(base)
	n.objectTree = base == reflect.TypeFor[metav1.FieldsV1]()
	n.wrapper = reflect.StructOf([]reflect.StructField{{Name: "V", Type: t, Tag: reflect.StructTag(`json:"v` + opts + `"`)}})
}

// planStruct fills the fields of struct node n, read as the converter's
// fieldInfoFromField reads them, and reports whether build and emit model
// them; it sets n.fallback where normalization does not.
func (p *planner) planStruct(n *node, t reflect.Type) bool {
	walks := true // normalization models the struct
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := readTag(sf)
		f := field{offset: sf.Offset, own: sf.Offset, name: tag.name, inline: tag.name == "", omitempty: tag.omitempty}
		if !sf.IsExported() {
			if f.name != "-" {
				return false // the converter would panic or skip: not modelled
			}
			walks = false
		}
		// A field named "-" is read (FromUnstructured looks the key "-"
		// up) but never written; "embed" is not honoured by the converter
		// nor used by the built-in types.
		walks = walks && f.name != "-" && !tag.embed
		opts := ""
		if tag.omitzero {
			f.omitzero = value.OmitZeroFunc(sf.Type)
			// The converter omits the field when its value is zero (IsZero):
			// walk models custom types only, through a wrapper with the same
			// options.
			switch {
			case !isCustom(sf.Type):
				walks = false
			case tag.omitempty:
				opts = ",omitempty,omitzero"
			default:
				opts = ",omitzero"
			}
		}
		f.node = p.node(sf.Type, opts)
		f.emptyWord, f.wordEmpty = emptyWordOf(f.node)
		if f.node.kind == nodeString {
			f.last = &lastString{}
		}
		n.fields = append(n.fields, f)
	}
	n.byName = map[string]*field{}
	for i := range n.fields {
		f := &n.fields[i]
		if f.inline {
			in := f.node
			if in.kind != nodeStruct || in.toCustom || in.fromCustom || in == n {
				return false
			}
			walks = walks && !in.fallback
			for name, sub := range in.byName {
				if _, dup := n.byName[name]; dup {
					return false
				}
				c := *sub
				c.offset = f.own + sub.offset
				n.byName[name] = &c
			}
			continue
		}
		if _, dup := n.byName[f.name]; dup {
			return false
		}
		n.byName[f.name] = f
	}
	n.table = fieldtable.New(n.byName)
	if walks {
		// What the converter writes for the zero value: the output of every
		// unset field.
		zero, err := p.zeroStruct(t)
		walks = err == nil
		for name, f := range n.byName {
			if f.unset, f.present = zero[name]; f.present {
				n.unsetPresent = append(n.unsetPresent, f)
			}
		}
	}
	n.fallback = !walks
	return true
}

// fieldTag is a struct field's json tag as the converter's
// fieldInfoFromField reads it.
type fieldTag struct {
	// name is the JSON name, "" for an inlined field.
	name                       string
	omitempty, omitzero, embed bool
}

// readTag reads sf's json tag as fieldInfoFromField does: a field without
// a tag or a name is named after the Go field unless it is anonymous (then
// inlined), and ",inline" inlines it.
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
	inline := sf.Anonymous && f.name == ""
	for _, it := range items[1:] {
		switch it {
		case "omitempty":
			f.omitempty = true
		case "omitzero":
			f.omitzero = true
		case "embed":
			f.embed = true
		case "inline":
			inline = true
		}
	}
	switch {
	case inline:
		f.name = ""
	case f.name == "":
		f.name = sf.Name
	}
	return f
}

// toUnstructuredInterfaces are the interfaces the converter looks for on a
// value, and on its address when it has one, to write it.
var toUnstructuredInterfaces = []reflect.Type{
	reflect.TypeFor[json.Marshaler](),
	reflect.TypeFor[value.UnstructuredConverter](),
	reflect.TypeFor[value.UnstructuredConverterWithError](),
}

var (
	jsonUnmarshalerType                = reflect.TypeFor[json.Unmarshaler]()
	unstructuredConverterType          = reflect.TypeFor[value.UnstructuredConverter]()
	unstructuredConverterWithErrorType = reflect.TypeFor[value.UnstructuredConverterWithError]()
)

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

// zeroStruct returns what runtime.DefaultUnstructuredConverter.ToUnstructured
// writes for the zero value of struct type t (p.mu held), computed from
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
func (p *planner) zeroStruct(t reflect.Type) (map[string]any, error) {
	if z, ok := p.zeros[t]; ok {
		return z, nil
	}
	z, ok := p.zeroFields(t, map[string]any{})
	if !ok {
		var err error
		if z, err = converterZero(t); err != nil {
			return nil, err
		}
	}
	if p.zeros == nil {
		p.zeros = map[reflect.Type]map[string]any{}
	}
	p.zeros[t] = z
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
func (p *planner) zeroFields(t reflect.Type, out map[string]any) (map[string]any, bool) {
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
			if _, ok := p.zeroFields(ft, out); !ok {
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
				z, err := p.zeroStruct(ft)
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
