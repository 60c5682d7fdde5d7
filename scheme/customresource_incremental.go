package scheme

import (
	"maps"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Incremental structural defaulting of custom resources: after a mutation,
// the MutatingAdmissionPolicy dispatcher runs the CRD's ObjectDefaulter
// (unstructuredDefaulter: structuraldefaulting.Default with the schema of
// the object's version; no pruning, no dropping of nulls) over the whole
// object. Default(x, s) decides every field by itself: a property with a
// default is set when it is absent (or a null the schema does not allow)
// in an object that exists, an element of additionalProperties or items
// that is a disallowed null is set to their default, and then every field
// the schema describes is defaulted with its own schema. Nothing depends
// on a sibling, so for an object derived from one that defaulting leaves
// as it is (Default is idempotent: FuzzCustomResourceDefault), the fields
// it shares with it are left as they are, and only the nodes on the paths
// to what changed, and the changed subtrees, need Default: applyFrom, the
// rules of Default (apply, held to upstream's Default by TestApplyIsDefault)
// on those nodes, copy on write, beside the base's.

// defaultTree is a structural schema where defaulting can change
// something: a node is nil when neither it nor anything beneath it has a
// default (Default then changes nothing there: a disallowed null under
// additionalProperties or items without default is "set" to null).
type defaultTree struct {
	s     *structuralschema.Structural
	props map[string]*defaultTree // by property, only those with a tree
	add   *defaultTree            // additionalProperties'
	items *defaultTree
	// propList is props as a list; set those of its properties that
	// have a default.
	propList, set []keyedTree
	setIndex      map[string]int // the index in set of each of its properties
	// defaulted is Default(a copy of s's default, s), what Default puts
	// where it sets s's default (the default, then defaulted beneath:
	// Default is idempotent, so nothing more changes there); nil when s
	// has no default, or when working it out panicked (the default is
	// then copied and walked, as Default does).
	defaulted any
}

// keyedTree is a property's name and its defaultTree.
type keyedTree struct {
	key string
	t   *defaultTree
	// setAt is the index in its parent's set of the property (-1 for
	// none), in propList.
	setAt int
}

// newDefaultTree is s's defaultTree (nil for a nil s).
func newDefaultTree(s *structuralschema.Structural) *defaultTree {
	if s == nil {
		return nil
	}
	t := &defaultTree{s: s}
	for k := range s.Properties {
		p := s.Properties[k] // as Default takes it: a copy
		if c := newDefaultTree(&p); c != nil {
			if t.props == nil {
				t.props = map[string]*defaultTree{}
			}
			t.props[k] = c
		}
	}
	if s.AdditionalProperties != nil {
		t.add = newDefaultTree(s.AdditionalProperties.Structural)
	}
	t.items = newDefaultTree(s.Items)
	if s.Default.Object == nil && t.props == nil && t.add == nil && t.items == nil {
		return nil
	}
	for k, c := range t.props {
		at := -1
		if c.s.Default.Object != nil {
			if t.setIndex == nil {
				t.setIndex = map[string]int{}
			}
			at = len(t.set)
			t.setIndex[k] = at
			t.set = append(t.set, keyedTree{k, c, at})
		}
		t.propList = append(t.propList, keyedTree{k, c, at})
	}
	if s.Default.Object != nil {
		t.defaulted = defaultedDefault(t)
	}
	return t
}

// defaultedDefault is Default(a copy of t's default, t.s) by apply's
// rules (the tree beneath t is complete), nil where they panic.
func defaultedDefault(t *defaultTree) (d any) {
	defer func() {
		if recover() != nil {
			d = nil
		}
	}()
	d, _ = t.apply(runtime.DeepCopyJSONValue(t.s.Default.Object), true)
	return d
}

// setDefault is what Default sets where it sets t's default: a copy of
// t.defaulted, which needs no walk (done), or else a copy of the default,
// to be walked.
func (t *defaultTree) setDefault() (v any, done bool) {
	if t.defaulted != nil {
		return runtime.DeepCopyJSONValue(t.defaulted), true
	}
	return runtime.DeepCopyJSONValue(t.s.Default.Object), false
}

// nullDefault tells whether Default replaces a null under t (an item, or
// an additionalProperties value) by t's default, and by what: when t's
// schema does not allow null and has a default (without one the null is
// "replaced" by null).
func (t *defaultTree) nullDefault(v any) bool {
	return v == nil && !t.s.Generic.Nullable && t.s.Default.Object != nil
}

// apply is structuraldefaulting.Default(x, t.s) copy on write: x is never
// written into; the result is x itself when Default changes nothing
// (changed false), and otherwise shares with x every subtree Default left
// alone. The same rules as Default's, on the tree's nodes only (a node
// without a tree has no default in or beneath it): a property with a
// default that is absent or a null its schema does not allow takes a copy
// of the default; a null additionalProperties value or item whose schema
// does not allow it takes that schema's default; then every field (every
// item) is defaulted with its schema, the property's or else
// additionalProperties'. It panics where Default panics (a default set in
// a nil map). When owned, x and everything in it are the caller's (a copy
// of a default): they are written in place.
func (t *defaultTree) apply(x any, owned bool) (out any, changed bool) {
	return t.applyFrom(x, nil, owned)
}

// applyFrom is apply(x, owned) for x derived from b, the value at the same
// place of an object that Default leaves as it is (nil for none): every
// subtree of x that is b's own (sameJSON) is left as it is without a walk,
// since Default decides every node by its value and schema alone and
// leaves b's subtrees as they are. A node of x that differs from b's is
// walked with apply's rules, its fields and items beside b's.
func (t *defaultTree) applyFrom(x, b any, owned bool) (out any, changed bool) {
	if b != nil && sameJSON(x, b) {
		return x, false
	}
	switch xv := x.(type) {
	case map[string]any:
		bv, _ := b.(map[string]any) // nil: no base below
		var w map[string]any        // xv's copy, once written
		set := func(k string, v any) {
			if w == nil {
				if xv == nil {
					panic("assignment to entry in nil map")
				}
				if owned {
					w = xv
				} else {
					// A copy of the map's table (no iteration, no
					// rehashing): the same entries.
					w = maps.Clone(xv)
				}
			}
			w[k] = v
		}
		// The properties of t.set set here (the first 64), and of those
		// the ones set defaulted already (setDefault).
		var fresh, done uint64
		for i, p := range t.set {
			if v, found := xv[p.key]; !found || (v == nil && !p.t.s.Generic.Nullable) {
				d, isDone := p.t.setDefault()
				set(p.key, d)
				if i < 64 {
					fresh |= 1 << i
					if isDone {
						done |= 1 << i
					}
				}
			}
		}
		src := xv
		if w != nil {
			src = w
		}
		if t.add == nil {
			for _, p := range t.propList {
				own := owned
				if i := p.setAt; i >= 0 && i < 64 {
					if done&(1<<i) != 0 {
						continue // set defaulted
					}
					own = own || fresh&(1<<i) != 0
				}
				if v, found := src[p.key]; found {
					if d, ch := p.t.applyFrom(v, baseOf(bv, p.key), own); ch {
						set(p.key, d)
					}
				}
			}
		} else {
			for k, v := range src {
				c, own := t.add, owned
				if _, ok := t.s.Properties[k]; ok {
					if c = t.props[k]; c == nil {
						continue
					}
					if i, ok := t.setIndex[k]; ok && i < 64 {
						if done&(1<<i) != 0 {
							continue // set defaulted
						}
						own = own || fresh&(1<<i) != 0
					}
				} else if c.nullDefault(v) {
					var isDone bool
					v, isDone = c.setDefault()
					set(k, v)
					if isDone {
						continue
					}
					own = true
				}
				if d, ch := c.applyFrom(v, baseOf(bv, k), own); ch {
					set(k, d)
				}
			}
		}
		if w == nil {
			return x, false
		}
		return w, true
	case []any:
		if t.items == nil {
			return x, false
		}
		bv, _ := b.([]any) // nil: no base below
		var w []any
		for i, v := range xv {
			ch, own := false, owned
			var bi any
			if i < len(bv) {
				bi = bv[i]
			}
			done := false
			if t.items.nullDefault(v) {
				v, done = t.items.setDefault()
				ch, own = true, true
			}
			if done {
				// set defaulted
			} else if d, c := t.items.applyFrom(v, bi, own); c {
				v, ch = d, true
			}
			if ch {
				if w == nil {
					w = xv
					if !owned {
						w = append([]any(nil), xv...)
					}
				}
				w[i] = v
			}
		}
		if w == nil {
			return x, false
		}
		return w, true
	}
	return x, false
}

// baseOf is b[k], nil when b is nil or lacks k (no base).
func baseOf(b map[string]any, k string) any {
	if b == nil {
		return nil
	}
	return b[k]
}

// child is the tree Default uses for field k of an object at t: the
// property's, else additionalProperties'.
func (t *defaultTree) child(k string) *defaultTree {
	if _, ok := t.s.Properties[k]; ok {
		return t.props[k]
	}
	return t.add
}

// defaultFrom is Default(obj, gvk) for obj derived from base, a result of
// Default(_, gvk) for which the same CRD version's schema applies (the
// same apiVersion and kind), computed on what changed (applyFrom).
// The result may share subtrees with obj. ok is false when it cannot
// tell (Default then decides, errors included).
func (c *CustomResources) defaultFrom(obj, base map[string]any, gvk schema.GroupVersionKind) (out map[string]any, ok bool) {
	v := c.lookup(gvk)
	if v == nil || obj == nil || base == nil ||
		!sameJSON(obj["apiVersion"], base["apiVersion"]) || !sameJSON(obj["kind"], base["kind"]) {
		return nil, false
	}
	return v.defaultChanged(obj, base)
}

// defaultShared is Default(obj, gvk) with version v's schema, computed
// without the copy of obj (defaultChanged without a base): the result is
// obj itself when defaulting changes nothing, and otherwise shares with
// obj every subtree defaulting left alone.
func (v *customResourceVersion) defaultShared(obj map[string]any) (out map[string]any, ok bool) {
	if obj == nil {
		return nil, false
	}
	return v.defaultChanged(obj, nil)
}

// defaultChanged is the defaultTree's applyFrom of obj (not nil) from
// base (nil for none) with the schema of obj's version. ok is false for
// an object that is not of the CRD's group and kind, and where Default
// panics (Default then decides, errors included).
func (v *customResourceVersion) defaultChanged(obj, base map[string]any) (out map[string]any, ok bool) {
	own := (&unstructured.Unstructured{Object: obj}).GroupVersionKind()
	if own.GroupKind() != v.crd.gk {
		return nil, false
	}
	t := v.crd.defaults[own.Version]
	if t == nil {
		// No schema, or no default in it: Default changes nothing.
		return obj, true
	}
	defer func() {
		if recover() != nil {
			out, ok = nil, false
		}
	}()
	var b any // no base: every node is walked
	if base != nil {
		b = base
	}
	d, _ := t.applyFrom(obj, b, false)
	return d.(map[string]any), true
}

// StructuralDefaults is the structural schema with which Default,
// DefaultNormalized and DefaultFrom default obj, an object of the custom
// resource kind gvk (the request's kind): the schema of obj's own version,
// structuraldefaulting.Default with which is their result (the CRD
// handler's ObjectDefaulter). It is nil when gvk is not a custom resource
// kind, when obj is not of its CRD's group and kind, and for a version
// without a schema (defaulting changes nothing then).
func (s *Scheme) StructuralDefaults(obj map[string]any, gvk schema.GroupVersionKind) *structuralschema.Structural {
	if s == nil || s.crs == nil || obj == nil {
		return nil
	}
	v := s.crs.lookup(gvk)
	if v == nil {
		return nil
	}
	own := (&unstructured.Unstructured{Object: obj}).GroupVersionKind()
	if own.GroupKind() != v.crd.gk {
		return nil
	}
	return v.crd.structural[own.Version]
}
