package applyconfig

import (
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/runtime"
)

// This file holds what lets the next merge of an admission take a custom
// resource's structurally defaulted object as valid without walking it.
//
// After each mutation of a custom resource, the dispatcher defaults the
// merge result with its CRD version's structural schema
// (structuraldefaulting.Default, the CRD handler's ObjectDefaulter), and
// the next mutation merges into that defaulted object, which the merge
// must validate against the kind's structured-merge-diff schema first.
// The merge result was valid (Merged); what defaulting does to it is only
// this: a property with a default that is absent (or a null its schema
// does not allow) in a map gets Default(a copy of the default), a null
// additionalProperties value or list item whose schema has a default and
// does not allow null gets Default(a copy of that default), and every
// field and item is defaulted the same way with its own schema.
// structured-merge-diff's validation (with duplicates allowed, as the
// merge validates a live object) is a walk of each value against the type
// at its place: a map's key takes its declared field's type or else the
// element type (an undeclared key without one is refused), a list's items
// the element type, and an associative list with keys asks of each item
// that it be a map with at least one key field present or defaulted. So
// inserting, at a key a map's type accepts, a value valid for that key's
// type keeps a valid map valid; replacing a null (valid for every type) by
// a valid value keeps it valid; and an item that gains a key field keeps
// at least the key fields it had. Defaulting with a schema therefore keeps
// every valid object valid when each of its defaults, defaulted, is valid
// for the structured-merge-diff type at every place where defaulting can
// put it: defaultsKeepValid checks that once per (kind, schema), walking
// the structural schema beside the plan, and answers false wherever it
// cannot tell (a type the plan does not resolve, a key whose type is not
// found), in which case the next merge validates as before.
// TestDefaultsKeepValid holds the claim to structured-merge-diff's own
// validation on defaulted objects.

// defaultsProof is the answer of defaultsKeepValid for one schema.
type defaultsProof struct {
	s  *structuralschema.Structural
	ok bool
}

// defaultsKeepValid tells whether structural defaulting with s keeps every
// object of root's kind that validates (duplicates allowed) valid; the
// last answer is remembered.
func (root *rootType) defaultsKeepValid(s *structuralschema.Structural) bool {
	if p := root.defaults.Load(); p != nil && p.s == s {
		return p.ok
	}
	ok := defaultsKeepValid(root.plan, s)
	root.defaults.Store(&defaultsProof{s: s, ok: ok})
	return ok
}

// defaultsKeepValid tells whether structuraldefaulting.Default(x, s) is
// valid for t (duplicates allowed) for every x valid for t: whether each
// default of s, defaulted with its own schema, is valid (validValue) for
// the type of every place of t where Default can set it. false means "not
// known".
func defaultsKeepValid(t *ptype, s *structuralschema.Structural) bool {
	if !hasDefaults(s) {
		return true // Default changes nothing
	}
	t = t.get()
	if !t.ok {
		return false
	}
	if len(s.Properties) > 0 || s.AdditionalProperties != nil {
		if !mapDefaultsKeepValid(t.m, s) {
			return false
		}
	}
	if s.Items != nil && hasDefaults(s.Items) {
		if t.l == nil {
			return false // not expected of a schema's list: not known
		}
		if !placeKeepsValid(t.l.elem, s.Items, false) {
			return false
		}
	}
	return true
}

// mapDefaultsKeepValid is defaultsKeepValid for the map case of Default:
// s's properties and additionalProperties in a map of type m.
func mapDefaultsKeepValid(m *pmap, s *structuralschema.Structural) bool {
	var add *structuralschema.Structural
	if s.AdditionalProperties != nil {
		add = s.AdditionalProperties.Structural
	}
	if m == nil {
		// No map is valid here, but Default would set properties in
		// one: not expected of a schema's object, not known.
		return !hasPropertyDefaults(s) && !hasDefaults(add)
	}
	for k := range s.Properties {
		p := s.Properties[k] // as Default takes it
		ft, found := m.fields.Get(k)
		if !found {
			if m.elemZero {
				// Key k is refused: no valid map has it, but Default
				// would set it.
				if p.Default.Object != nil {
					return false
				}
				continue
			}
			ft = m.elem
		}
		if !placeKeepsValid(ft, &p, true) {
			return false
		}
	}
	if !hasDefaults(add) {
		return true
	}
	// A key that is not a property takes additionalProperties' schema:
	// its type is the element type, or a declared field's that is not a
	// property.
	if !m.elemZero && !placeKeepsValid(m.elem, add, false) {
		return false
	}
	for k, ft := range m.fields.All() {
		if _, isProp := s.Properties[k]; !isProp && !placeKeepsValid(ft, add, false) {
			return false
		}
	}
	return true
}

// placeKeepsValid tells whether defaulting a place of type t with schema
// s keeps its valid values valid: the value Default may put there (when
// set is true, s's default wherever s has one — a property absent or a
// disallowed null; otherwise only in place of a null s does not allow, an
// item or additionalProperties value), defaulted, is valid for t, and so
// is defaulting beneath (defaultsKeepValid).
func placeKeepsValid(t *ptype, s *structuralschema.Structural, set bool) bool {
	if s.Default.Object != nil && (set || !s.Generic.Nullable) {
		d := runtime.DeepCopyJSONValue(s.Default.Object)
		if !defaultSafely(d, s) || !validValue(t, d, true) {
			return false
		}
	}
	return defaultsKeepValid(t, s)
}

// defaultSafely is structuraldefaulting.Default(d, s), false where it
// panics.
func defaultSafely(d any, s *structuralschema.Structural) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	structuraldefaulting.Default(d, s)
	return true
}

// hasDefaults tells whether s or anything beneath it has a default.
func hasDefaults(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if s.Default.Object != nil || hasPropertyDefaults(s) || hasDefaults(s.Items) {
		return true
	}
	return s.AdditionalProperties != nil && hasDefaults(s.AdditionalProperties.Structural)
}

// hasPropertyDefaults tells whether a property of s or anything beneath
// one has a default.
func hasPropertyDefaults(s *structuralschema.Structural) bool {
	for k := range s.Properties {
		p := s.Properties[k]
		if hasDefaults(&p) {
			return true
		}
	}
	return false
}

// Defaulted returns the Merged of obj, the result of the structural
// defaulting of m.Object (structuraldefaulting.Default with s, the
// schema of its CustomResourceDefinition version, as the CRD handler's
// ObjectDefaulter runs it after a mutation) for the next merge into obj
// (MergeTyped's prev, the Merger's methods'): obj is known to validate
// when m.Object is known to and defaulting with s keeps every valid object
// of mg's kind valid (checked once per s against mg's schema; see
// defaulted.go). ok is false when that is not known; the next merge then
// validates obj as any live object. The caller vouches that obj is that
// result, and that neither is changed afterwards; the next merge's result
// and errors are Merge's in every case.
func (mg *Merger) Defaulted(m *Merged, obj map[string]any, s *structuralschema.Structural) (_ *Merged, ok bool) {
	if mg == nil || m == nil || s == nil || obj == nil || m.Object == nil || m.Object.Object == nil ||
		m.tc != mg.tc || !(m.valid || m.typed != nil) {
		return nil, false
	}
	root := mg.root
	if root == nil || !root.kindOf(m.Object.Object) || !root.kindOf(obj) || !root.defaultsKeepValid(s) {
		return nil, false
	}
	return validMerged(mg.tc, obj), true
}
