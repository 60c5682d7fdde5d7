package applyconfig

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Merge applies an ApplyConfiguration (as returned by FromCEL) to the live
// object the way kube-apiserver's ApplyConfiguration patcher does: the patch
// takes the live object's apiVersion and kind, is converted strictly with tc
// (fields not in the schema and null values are errors), may not set any atomic
// list, map or struct, and is then merged into the live object with server-side
// apply semantics (scalars replaced, structs and granular maps merged by key,
// listType=map merged by key with new items appended, listType=set united,
// atomic lists replaced). Duplicate keys in the live object's lists are tolerated.
//
// Results and error texts are those of upstream patch.ApplyStructuredMergeDiff,
// prefixed "error applying patch: " as the patcher does. When several atomic
// fields are set, upstream lists them in Go map order; Merge lists them in the
// same depth-first order with the keys of each map sorted.
//
// Neither live nor patch is modified, but the result may share nested maps and
// slices with both: treat all three as read-only, or deep-copy the result before
// changing it in place.
func Merge(tc managedfields.TypeConverter, live *unstructured.Unstructured, patch map[string]any) (*unstructured.Unstructured, error) {
	m, err := MergeTyped(tc, live, patch, nil)
	if err != nil {
		return nil, err
	}
	return m.Object, nil
}

// Merged is the result of MergeTyped: the merged object, known to be valid
// (with its typed value when structured-merge-diff made it), so that the
// next merge into the same object (the next mutation of one admission)
// need not validate it again.
type Merged struct {
	// Object is the merged object; treat it as read-only, as Merge's result.
	Object *unstructured.Unstructured

	tc managedfields.TypeConverter
	// typed is Object's typed value, when the merge made one.
	typed *typed.TypedValue
	// valid is true when Object is known to validate against tc's schema
	// (with duplicate keys allowed): it is the merge of a validated live
	// object and a validated patch.
	valid bool
}

// KnownValid tells whether m.Object is known to validate against its type
// converter's schema (duplicate keys allowed) without a walk: the merge
// validated both sides, or made the object's typed value. A known valid
// result given as the next merge's prev serves, when that merge's live
// object is not m.Object itself but an object of the same kind, as the
// object it is validated beside: only what differs from m.Object is
// walked (validBeside).
func (m *Merged) KnownValid() bool {
	return m != nil && m.Object != nil && m.tc != nil && (m.valid || m.typed != nil)
}

// MergeTyped is Merge for a chain of merges. When prev is the result of the
// previous MergeTyped with the same type converter and live is prev.Object
// itself (the same map, unchanged), live is known to be valid (and its
// typed value, when prev has one, is taken from prev) instead of being
// validated again: validation walks the whole object against the schema,
// and the merge of a validated live object with a validated patch always
// validates (TestChainedMergesAreMerges and
// FuzzMerge check both claims against upstream). Otherwise, and when prev is
// nil, it is Merge. Results and errors are those of Merge in every case.
func MergeTyped(tc managedfields.TypeConverter, live *unstructured.Unstructured, patch map[string]any, prev *Merged) (*Merged, error) {
	if live == nil {
		return nil, errors.New("error applying patch: live object must not be nil")
	}
	var root *rootType
	if tc != nil {
		root = probeRoot(tc, live.GroupVersionKind())
	}
	return mergeChained(tc, root, live, patch, prev, ownedNone)
}

// Merger merges ApplyConfigurations into objects of one kind: it is
// MergeTyped with the kind's schema looked up once, and compiled (as the
// merges need it) for the walks over unstructured values, which
// MergeTyped does anew at every call.
// A Merger is safe for concurrent use.
type Merger struct {
	tc   managedfields.TypeConverter
	gvk  schema.GroupVersionKind
	root *rootType
}

// rootType is the schema and type of one kind's objects, and their plan
// (plan.go), compiled lazily as merges walk it.
type rootType struct {
	s    *smdschema.Schema
	tr   smdschema.TypeRef
	plan *ptype
	// gvk is the kind probed; apiVersion and kind are its values as
	// SetGroupVersionKind writes them, held as interfaces so that setting
	// them on a patch does not allocate.
	gvk              schema.GroupVersionKind
	apiVersion, kind any
	// defaults remembers defaultsKeepValid's last answer (defaulted.go).
	defaults atomic.Pointer[defaultsProof]
}

// NewMerger returns the Merger of objects of kind gvk with tc.
func NewMerger(tc managedfields.TypeConverter, gvk schema.GroupVersionKind) *Merger {
	return &Merger{tc: tc, gvk: gvk, root: probeRoot(tc, gvk)}
}

// kindOf tells that obj's apiVersion and kind are root's, as the very
// strings SetGroupVersionKind writes (what an object of root's kind
// holds): then obj's GroupVersionKind() is root.gvk, without parsing
// them. false means "not known".
func (root *rootType) kindOf(obj map[string]any) bool {
	return obj["apiVersion"] == root.apiVersion && obj["kind"] == root.kind
}

// probeRoot finds the schema and type tc gives objects of kind gvk, or nil.
func probeRoot(tc managedfields.TypeConverter, gvk schema.GroupVersionKind) *rootType {
	stub := &unstructured.Unstructured{Object: map[string]any{}}
	stub.SetGroupVersionKind(gvk)
	tv, err := tc.ObjectToTyped(stub)
	if err != nil {
		return nil
	}
	s, tr := tv.Schema(), tv.TypeRef()
	return &rootType{s: s, tr: tr, plan: newPlan(s, tr), gvk: gvk, apiVersion: gvk.GroupVersion().String(), kind: gvk.Kind}
}

// TypeConverter is the converter the Merger merges with.
func (m *Merger) TypeConverter() managedfields.TypeConverter { return m.tc }

// Merge is MergeTyped(m.TypeConverter(), live, patch, prev).
func (m *Merger) Merge(live *unstructured.Unstructured, patch map[string]any, prev *Merged) (*Merged, error) {
	return m.merge(live, patch, prev, ownedNone)
}

// MergeOwned is Merge for a patch the caller hands over (a map it built,
// as FromCEL's, and no longer uses): its top-level map may be modified
// (the merge sets its apiVersion and kind there, where Merge sets them in
// a copy) and shared by the result. Results and errors are Merge's.
func (m *Merger) MergeOwned(live *unstructured.Unstructured, patch map[string]any, prev *Merged) (*Merged, error) {
	return m.merge(live, patch, prev, ownedTop)
}

// MergeFresh is MergeOwned for a patch every map and slice of which (not
// only the top-level map) is new and handed over by the caller, as the
// patches FromCELFresh reports fresh: the merge may build its result in
// them (adding the live object's other entries to the patch's maps where
// the two meet) instead of in copies of the live object's maps. Results
// and errors are Merge's.
func (m *Merger) MergeFresh(live *unstructured.Unstructured, patch map[string]any, prev *Merged) (*Merged, error) {
	return m.merge(live, patch, prev, ownedAll)
}

// ownership is how much of a patch the merge may take over.
type ownership uint8

const (
	ownedNone ownership = iota // Merge: nothing
	ownedTop                   // MergeOwned: the top-level map
	ownedAll                   // MergeFresh: every map and slice
)

// merge is Merge, MergeOwned or MergeFresh as owned says.
func (m *Merger) merge(live *unstructured.Unstructured, patch map[string]any, prev *Merged, owned ownership) (*Merged, error) {
	if live == nil {
		return nil, errors.New("error applying patch: live object must not be nil")
	}
	root := m.root
	if root == nil || !root.kindOf(live.Object) {
		if gvk := live.GroupVersionKind(); gvk != m.gvk {
			root = probeRoot(m.tc, gvk)
		}
	}
	return mergeChained(m.tc, root, live, patch, prev, owned)
}

func mergeChained(tc managedfields.TypeConverter, root *rootType, live *unstructured.Unstructured, patch map[string]any, prev *Merged, owned ownership) (*Merged, error) {
	liveTyped, liveValid, ref := chainedLive(tc, live, prev)
	out, err := merge(tc, root, live, liveTyped, liveValid, ref, patch, owned)
	if err != nil {
		return nil, fmt.Errorf("error applying patch: %w", err)
	}
	return out, nil
}

// chainedLive is what prev, the previous merge's result with tc, tells
// of live, the next merge's live object: its typed value and that it is
// valid when it is prev's object itself, or the valid object of its kind
// it validates beside (ref).
func chainedLive(tc managedfields.TypeConverter, live *unstructured.Unstructured, prev *Merged) (liveTyped *typed.TypedValue, liveValid bool, ref map[string]any) {
	if prev != nil && prev.tc == tc && prev.Object != nil && prev.Object.Object != nil {
		if jsonvalue.SameMap(prev.Object.Object, live.Object) {
			liveTyped, liveValid = prev.typed, prev.valid || prev.typed != nil
		} else if (prev.valid || prev.typed != nil) && sameKind(prev.Object.Object, live.Object) {
			// A valid object of live's kind: live validates where it
			// shares prev's maps without a walk (validBeside).
			ref = prev.Object.Object
		}
	}
	return liveTyped, liveValid, ref
}

// sameKind tells whether the objects a and b have the same apiVersion and
// kind (the same strings, or both absent).
func sameKind(a, b map[string]any) bool {
	return a["apiVersion"] == b["apiVersion"] && a["kind"] == b["kind"]
}

// merge is Merge. When liveTyped is not nil it is live's typed value; when
// liveValid, live is known to validate (liveTyped may still be nil); ref,
// when not nil, is a valid object of live's kind, which live's validation
// walks beside (validBeside). root,
// when not nil, is the schema and type of live's kind and enables the fast
// path (fastmerge.go): the same validations and merge, walked directly over
// the unstructured values when they are in the subset it models.
// structured-merge-diff itself runs otherwise, and gives every error.
// What of patch is the caller's to give is owned's: its top-level map is
// then modified in place (MergeOwned), and with ownedAll its other maps
// too (MergeFresh).
func merge(tc managedfields.TypeConverter, root *rootType, live *unstructured.Unstructured, liveTyped *typed.TypedValue, liveValid bool, ref, patch map[string]any, owned ownership) (*Merged, error) {
	// The patcher overwrites the patch's apiVersion and kind in place; a shallow
	// copy of the top level gives the same object without touching the caller's
	// map, unless the caller gave it up.
	p := patch
	if owned == ownedNone || p == nil {
		p = copyWithRoom(patch, 2)
		if owned == ownedAll {
			owned = ownedTop // an empty patch: nothing to take over
		}
	}
	if root != nil && root.kindOf(live.Object) {
		// SetGroupVersionKind(gvk), without allocating; root's apiVersion and
		// kind are gvk's, so the check below would pass.
		p["apiVersion"], p["kind"] = root.apiVersion, root.kind
	} else if gvk := live.GroupVersionKind(); root != nil && root.gvk == gvk {
		p["apiVersion"], p["kind"] = root.apiVersion, root.kind
	} else {
		patchObj := unstructured.Unstructured{Object: p}
		patchObj.SetGroupVersionKind(gvk)
		if pgvk := patchObj.GroupVersionKind(); pgvk != gvk {
			return nil, fmt.Errorf("patch (%v) and original object (%v) are not of the same gvk", pgvk.String(), gvk.String())
		}
	}

	if tc == nil {
		return nil, errors.New("type converter must not be nil")
	}

	var atomics []string
	valid := false
	if root != nil {
		// validValue(root.plan, p, false) and findAtomics(root.plan, p).
		atomics, valid = validAtomics(root.plan, p)
	}
	if valid {
		if len(atomics) > 0 {
			return nil, atomicsError(atomics)
		}
		if liveKnownValid(root, live.Object, liveTyped, liveValid, ref) {
			merge := mergeValues
			if owned == ownedAll {
				merge = mergeFresh
			}
			if out, ok := merge(root.plan, live.Object, p); ok {
				if m, ok := out.(map[string]any); ok {
					return validMerged(tc, m), nil
				}
			}
		}
	}

	patchTyped, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: p})
	if err != nil {
		return nil, fmt.Errorf("failed to convert patch object to typed object: %w", err)
	}

	atomicsPlan := root.planOf(patchTyped.Schema(), patchTyped.TypeRef())
	if atomics := findAtomics(atomicsPlan, p); len(atomics) > 0 {
		return nil, atomicsError(atomics)
	}

	if liveTyped == nil {
		liveTyped, err = tc.ObjectToTyped(live, typed.AllowDuplicates)
		if err != nil {
			return nil, fmt.Errorf("failed to convert original object to typed object: %w", err)
		}
	}

	mergedTyped, err := liveTyped.Merge(patchTyped)
	if err != nil {
		return nil, fmt.Errorf("failed to merge patch: %w", err)
	}

	obj, err := tc.TypedToObject(mergedTyped)
	if err != nil {
		return nil, fmt.Errorf("failed to convert typed object to object: %w", err)
	}
	u, err := asUnstructured(obj)
	if err != nil {
		return nil, err
	}
	m := &Merged{Object: u}
	if uo, ok := obj.(*unstructured.Unstructured); ok && uo.Object != nil && jsonvalue.SameMap(uo.Object, mergedValueMap(mergedTyped)) {
		// The typed value wraps the very map of the object: it is the object's
		// typed value.
		m.tc, m.typed, m.valid = tc, mergedTyped, true
	}
	return m, nil
}

// liveKnownValid tells whether live, an object of root's kind, validates
// (duplicates allowed): known so (liveValid, or its typed value), or
// walked beside ref (validBeside), or walked whole when there is no ref.
func liveKnownValid(root *rootType, live map[string]any, liveTyped *typed.TypedValue, liveValid bool, ref map[string]any) bool {
	return liveValid || liveTyped != nil || ref != nil && validBeside(root.plan, live, ref) || ref == nil && validValue(root.plan, live, true)
}

// validMerged is the Merged of obj, known valid for tc's schema: the
// result and its object in one allocation.
func validMerged(tc managedfields.TypeConverter, obj map[string]any) *Merged {
	r := &struct {
		m Merged
		u unstructured.Unstructured
	}{u: unstructured.Unstructured{Object: obj}}
	r.m = Merged{Object: &r.u, tc: tc, valid: true}
	return &r.m
}

// planOf returns the plan of the type tr of s: root's when it is that type
// (the patch's typed value has the schema and type root was probed with),
// else a new one. root may be nil.
func (root *rootType) planOf(s *smdschema.Schema, tr smdschema.TypeRef) *ptype {
	if root != nil && root.s == s && sameResolution(root.tr, tr) {
		return root.plan
	}
	return newPlan(s, tr)
}

func atomicsError(atomics []string) error {
	return fmt.Errorf("invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: %v", strings.Join(atomics, ", "))
}

// mergedValueMap is the map a typed value wraps, or nil.
func mergedValueMap(tv *typed.TypedValue) map[string]any {
	m, _ := tv.AsValue().Unstructured().(map[string]any)
	return m
}

func asUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("failed to convert typed object to object: %w", err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// findAtomics reproduces the unexported findAtomics of k8s.io/apiserver's
// mutating patch package: the field paths, in depth-first pre-order, of every
// value in the apply configuration whose schema is an atomic list, map or struct.
// Like upstream it descends into declared struct fields and list items only
// (never into the values of a granular map), and it reads the raw unstructured
// values the same way structured-merge-diff's value.Value does.
//
// The schema is read through the plan t of v's type (plan.go).
//
// The common case (no atomics) allocates nothing. Upstream visits map keys in Go
// map order, so with several atomics its message order varies; here the walk is
// repeated with sorted keys to give one deterministic, upstream-possible order.
func findAtomics(t *ptype, v any) []string {
	var buf [128]byte // the paths of a patch fit, most of the time
	var w atomicWalker
	w.walk(t, v, buf[:0])
	if len(w.found) > 1 {
		w = atomicWalker{sorted: true}
		w.walk(t, v, buf[:0])
	}
	return w.found
}

// atomicWalker is findAtomics' walk. The path is passed down by value (and
// each call's longer path returned to nowhere), so that the caller's
// buffer stays on its stack.
type atomicWalker struct {
	sorted bool
	found  []string
}

func (w *atomicWalker) walk(pt *ptype, v any, path []byte) {
	pt = pt.get()
	if !pt.ok {
		return
	}
	switch t := v.(type) {
	case map[string]any:
		walkMap(w, pt.m, t, path)
	case map[any]any:
		walkMap(w, pt.m, t, path)
	case []any:
		l := pt.l
		if l == nil {
			return
		}
		w.atomic(l.atomic, path)
		for i, item := range t {
			p := append(path, '[')
			p = strconv.AppendInt(p, int64(i), 10)
			p = append(p, ']')
			w.walk(l.elem, item, p)
		}
	}
}

// walkMap walks the fields of t, a map in either of the forms
// structured-merge-diff's value.Value reads (map[string]any,
// map[any]any, whose keys other than strings it passes over), whose
// schema is m: in map order, or sorted by key when w.sorted.
func walkMap[K comparable](w *atomicWalker, m *pmap, t map[K]any, path []byte) {
	if m == nil {
		return
	}
	w.atomic(m.atomic, path)
	if !w.sorted {
		for k, fv := range t {
			if ks, ok := any(k).(string); ok {
				w.field(m, ks, fv, path)
			}
		}
		return
	}
	type field struct {
		key   string
		value any
	}
	fields := make([]field, 0, len(t))
	for k, fv := range t {
		if ks, ok := any(k).(string); ok {
			fields = append(fields, field{ks, fv})
		}
	}
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.key, b.key) })
	for _, f := range fields {
		w.field(m, f.key, f.value, path)
	}
}

// atomic records the current path when its value's element relationship
// is atomic.
func (w *atomicWalker) atomic(atomic bool, path []byte) {
	if atomic {
		w.found = append(w.found, string(path))
	}
}

func (w *atomicWalker) field(m *pmap, key string, v any, path []byte) {
	ft, ok := m.fields.Get(key)
	if !ok {
		return
	}
	p := append(path, '.')
	p = append(p, key...)
	w.walk(ft, v, p)
}

// validAtomics is validValue(t, v, false) and, when v validates,
// findAtomics(t, v): the merge asks both of every patch. ok is
// validValue's answer; atomics is findAtomics' answer when ok (nil
// otherwise). One walk validates as validValue does and only notes
// whether it met an atomic list, map or struct where findAtomics would
// record one (at a map or list before its contents, in declared struct
// fields and list items, never in the values of a granular map, which
// are only validated), without building any path; findAtomics itself
// runs only when it did (a patch the merge refuses), so its answer is
// findAtomics' by construction. TestValidAtomicsIsBoth holds it to the
// two walks, TestValidAtomicsOnRealObjects to structured-merge-diff's.
func validAtomics(t *ptype, v any) (atomics []string, ok bool) {
	var w atomicSeen
	if !w.valid(t, v) {
		return nil, false
	}
	if w.seen {
		return findAtomics(t, v), true
	}
	return nil, true
}

// atomicSeen is validAtomics' walk: seen is set once it meets a value
// findAtomics would record.
type atomicSeen struct {
	seen bool
}

// valid is validValue(t, v, false), setting w.seen where findAtomics'
// walk would record v's path.
func (w *atomicSeen) valid(t *ptype, v any) bool {
	t = t.get()
	if !t.ok {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		m := t.m
		if m == nil {
			return false
		}
		w.seen = w.seen || m.atomic
		if len(x) == 0 {
			return true // without starting an iteration
		}
		for k, fv := range x {
			ft, ok := m.fields.Get(k)
			if !ok {
				// Validated with the element type; findAtomics does not
				// enter the values of a granular map.
				if m.elemZero || !validValue(m.elem, fv, false) {
					return false
				}
				continue
			}
			if _, isString := fv.(string); isString {
				// The most common leaf, without the call (validMap's).
				ft = ft.get()
				if !ft.ok || ft.scalar&acceptsString == 0 {
					return false
				}
				continue
			}
			if !w.valid(ft, fv) {
				return false
			}
		}
		return true
	case []any:
		l := t.l
		if l == nil {
			return false
		}
		if l.associative {
			if !uniqueKeys(l, x) {
				return false
			}
		}
		w.seen = w.seen || l.atomic
		for _, item := range x {
			if !w.valid(l.elem, item) {
				return false
			}
		}
		return true
	}
	// Scalars and nulls: nothing atomic to record.
	return validValue(t, v, false)
}
