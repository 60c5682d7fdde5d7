package applyconfig

import (
	"sync"
	"sync/atomic"

	"github.com/mutatis-dev/mutatis/internal/fieldtable"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
)

// This file holds the compiled form of a structured-merge-diff schema that
// the fast path (fastmerge.go) and findAtomics walk: a plan.
//
// Walking a value against a *schema.Schema resolves a schema.TypeRef at
// every node (Schema.Resolve: a lookup of the type's name, or a locked
// cache for references that override the element relationship) and then
// looks each map key up with Map.FindField, which copies the StructField
// out. A plan does that work once per type instead of once per node: each
// ptype is the Atom that Schema.Resolve gives for one TypeRef, with its
// struct fields as a map from name to the ptype of their type, the ptype of
// its map or list element type, and, for associative lists, the key fields'
// defaults. Only the lookups change: every function reads from a ptype
// exactly what it used to read from the resolved Atom.
//
// A plan is compiled lazily, one type at a time, the first time a walk
// reaches it, so that it costs what the values walked need (the built-in
// schema holds every Kubernetes type) and recursive schemas (JSONSchemaProps)
// compile to finite graphs. Types are memoized by what determines the
// result of Schema.Resolve: the type name for named references, the Atom's
// pointers for inlined ones, plus the element relationship override when
// there is one. Compiled types are never changed again, and the compilation
// of each type is published with an atomic flag, so a plan is safe for
// concurrent use; the mutex serializes compilations only.

// plan is the compilation state of one schema: the types compiled or
// referenced so far.
type plan struct {
	s     *schema.Schema
	mu    sync.Mutex // guards types and every compilation
	types map[typeKey]*ptype
}

// typeKey identifies the result of Schema.Resolve for a TypeRef: the
// resolution reads NamedType (when set) or else the Inlined Atom, and
// ElementRelationship; Nullable plays no part in it.
type typeKey struct {
	named  bool
	name   string
	inline schema.Atom
	hasRel bool
	rel    schema.ElementRelationship
}

func keyOf(tr schema.TypeRef) typeKey {
	var k typeKey
	if tr.NamedType != nil {
		k.named, k.name = true, *tr.NamedType
	} else {
		k.inline = tr.Inlined
	}
	if tr.ElementRelationship != nil {
		k.hasRel, k.rel = true, *tr.ElementRelationship
	}
	return k
}

// sameResolution reports whether a and b resolve to the same Atom in any
// schema (and so share a plan).
func sameResolution(a, b schema.TypeRef) bool {
	return keyOf(a) == keyOf(b)
}

// newPlan returns the (not yet compiled) plan of the type tr of s.
func newPlan(s *schema.Schema, tr schema.TypeRef) *ptype {
	p := &plan{s: s, types: make(map[typeKey]*ptype)}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ref(tr)
}

// ref returns the ptype of tr, creating it uncompiled if it is new. p.mu
// must be held.
func (p *plan) ref(tr schema.TypeRef) *ptype {
	k := keyOf(tr)
	if t, ok := p.types[k]; ok {
		return t
	}
	t := &ptype{plan: p, tr: tr}
	p.types[k] = t
	return t
}

// ptype is the compiled form of what Schema.Resolve(tr) returns. Its fields
// other than plan and tr are set by compile and read only after get.
type ptype struct {
	done atomic.Bool // compile has run
	plan *plan
	tr   schema.TypeRef

	// ok is Resolve's second result. When it is false the Atom is empty,
	// so scalar, m and l are unset as well.
	ok bool
	// scalar is hasScalar when the Atom has a Scalar, with the kinds of
	// scalar values the Scalar accepts (String: strings, Boolean: bools,
	// Numeric: int64 and float64, Untyped: all three); 0 otherwise.
	scalar scalarKinds
	m      *pmap  // the Atom's Map, or nil
	l      *plist // the Atom's List, or nil
}

// scalarKinds is a set of the JSON kinds of scalar values.
type scalarKinds uint8

const (
	hasScalar scalarKinds = 1 << iota // the Atom has a Scalar
	acceptsString
	acceptsBool
	acceptsNumber // int64 and float64
)

// pmap is a compiled schema.Map.
type pmap struct {
	// atomic is ElementRelationship == schema.Atomic.
	atomic bool
	// fields maps each struct field's name to its type, as FindField does
	// (the last of fields with the same name wins), through a
	// fieldtable.Table.
	fields fieldtable.Table[*ptype]
	// elem is the ptype of ElementType, the type of keys that are not
	// fields; elemZero is ElementType == schema.TypeRef{}.
	elem     *ptype
	elemZero bool
}

// plist is a compiled schema.List.
type plist struct {
	atomic      bool // ElementRelationship == schema.Atomic
	associative bool // ElementRelationship == schema.Associative
	elem        *ptype
	// keys are the List's Keys. When there are some, keysOK tells whether
	// listKeys can model them (at most len(itemKey{}.vals) keys, and an
	// element type that resolves to a map), and keyDefaults holds the
	// Default of each key's field in that map (nil when none or no field).
	keys        []string
	keysOK      bool
	keyDefaults []any
}

// get returns t, compiled.
func (t *ptype) get() *ptype {
	if !t.done.Load() {
		t.compileSlow()
	}
	return t
}

func (t *ptype) compileSlow() {
	p := t.plan
	p.mu.Lock()
	defer p.mu.Unlock()
	if !t.done.Load() {
		t.compile()
		t.done.Store(true)
	}
}

// compile fills t in from Schema.Resolve(t.tr), referencing (not compiling)
// the types it contains. p.mu must be held.
func (t *ptype) compile() {
	p := t.plan
	a, ok := p.s.Resolve(t.tr)
	if !ok {
		return
	}
	t.ok = true
	if a.Scalar != nil {
		t.scalar = hasScalar
		switch *a.Scalar {
		case schema.String:
			t.scalar |= acceptsString
		case schema.Boolean:
			t.scalar |= acceptsBool
		case schema.Numeric:
			t.scalar |= acceptsNumber
		case schema.Untyped:
			t.scalar |= acceptsString | acceptsBool | acceptsNumber
		}
	}
	if a.Map != nil {
		m := &pmap{
			atomic:   a.Map.ElementRelationship == schema.Atomic,
			elem:     p.ref(a.Map.ElementType),
			elemZero: a.Map.ElementType == schema.TypeRef{},
		}
		// The last field of a name wins, as in FindField's index.
		fields := make(map[string]*ptype, len(a.Map.Fields))
		for i := len(a.Map.Fields) - 1; i >= 0; i-- {
			f := &a.Map.Fields[i]
			if _, dup := fields[f.Name]; !dup {
				fields[f.Name] = p.ref(f.Type)
			}
		}
		m.fields = fieldtable.New(fields)
		t.m = m
	}
	if a.List != nil {
		l := &plist{
			atomic:      a.List.ElementRelationship == schema.Atomic,
			associative: a.List.ElementRelationship == schema.Associative,
			elem:        p.ref(a.List.ElementType),
			keys:        a.List.Keys,
		}
		if n := len(l.keys); n > 0 && n <= len(itemKey{}.vals) {
			// Resolved directly rather than through l.elem: compiling
			// another type here could recurse into this one.
			if ea, ok := p.s.Resolve(a.List.ElementType); ok && ea.Map != nil {
				l.keysOK = true
				l.keyDefaults = make([]any, n)
				for j, name := range l.keys {
					sf, _ := ea.Map.FindField(name)
					l.keyDefaults[j] = sf.Default
				}
			}
		}
		t.l = l
	}
}
