package scheme

import (
	"reflect"
	"strings"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// Incremental defaulting below the whole object: when a mutation changes
// elements of a list whose elements the kind's defaulters default one by
// one (a Pod's containers, init containers, volumes; a Deployment's
// template's), only the changed elements are defaulted, each on the
// smallest object of the kind that holds it: the path down to the list's
// parent, the parent's own fields but its lists of objects (the context
// the element's defaulters may read, such as hostNetwork), and the list
// holding the one element. Upstream's defaulting of the kind
// (SetObjectDefaults_<Kind>) runs on that small typed object, and the
// element is read back from it (emit, against the element as it was).
//
// Which lists those are is not read from upstream's code but measured on
// its functions, as the inert fields are (TestUnitTable probes every kind
// of inertTable: defaulted real and random objects with elements of each
// candidate list replaced, added, removed, the list set and dropped, and
// holds defaulting the elements one by one to defaulting the whole
// object), and written down in unitTable (incremental_units_table.go,
// generated). Everything else about the object must be as it was, or
// differ only in inert fields: then the rest of the object is its own
// defaulted form, and the changed elements are the only ones the
// defaulters change.

// unitEntry is one row of unitTable: in objects of the kind, the lists
// (space-separated JSON names) of the object at parent (a dotted path of
// objects from the top) whose elements are defaulted one by one.
//
// any and set are, as list.field, the fields of the lists' elements that
// no element's defaulter can see (inertAny) or that only their removal
// makes defaulted (inertSet): an element that differs from the one at its
// index before only in those is its own defaulted form.
type unitEntry struct {
	group, version, kind string
	parent               string
	lists                string
	any, set             string
}

// unitParent is one parent of a kind's unitTable rows.
type unitParent struct {
	path  []string
	lists map[string]bool
	// inert are the inert fields of the lists' elements, by list.
	inert map[string]map[string]inertness
	// context are the fields of the parent (contextTable) a change of
	// which only the defaulting of the context can see: when the unit
	// object without elements (contextUnchanged) is its own defaulted
	// form, so is the object.
	context map[string]bool
}

// unitKinds is unitTable by kind (a Scheme builds it on first use:
// Scheme.units).
func unitKinds() map[schema.GroupVersionKind][]*unitParent {
	out := map[schema.GroupVersionKind][]*unitParent{}
	for _, e := range unitTable {
		u := &unitParent{path: strings.Split(e.parent, "."), lists: map[string]bool{}}
		for _, l := range strings.Fields(e.lists) {
			u.lists[l] = true
		}
		u.inert = elementInert(e.any, e.set)
		gvk := schema.GroupVersionKind{Group: e.group, Version: e.version, Kind: e.kind}
		u.context = contextFields(gvk, e.parent)
		out[gvk] = append(out[gvk], u)
	}
	return out
}

// elementInert is the classes of the list.field paths of any and set, by
// list: inertSet for both.
func elementInert(anyPaths, setPaths string) map[string]map[string]inertness {
	out := map[string]map[string]inertness{}
	add := func(paths string, class inertness) {
		for _, p := range strings.Fields(paths) {
			list, field, _ := strings.Cut(p, ".")
			if out[list] == nil {
				out[list] = map[string]inertness{}
			}
			out[list][field] = class
		}
	}
	// Removing a field of an element is never taken as inert: a
	// defaulter fills what an element lacks (a volume without a source
	// gets an emptyDir), and the probe's elements, randomly filled, rarely
	// lack just that.
	add(anyPaths, inertSet)
	add(setPaths, inertSet)
	return out
}

// unitChange is a list of a unit parent that a mutation changed: now in
// the mutated object, was in the defaulted one (nil when absent or null).
type unitChange struct {
	list     string
	now, was []any
}

// unitChanges are the lists of u that differ between obj and base, or
// ok=false unless every other difference between them lies in k's inert
// fields or in u's context fields (then context is set).
func (k *inertKind) unitChanges(obj, base map[string]any, u *unitParent) (changes []unitChange, context, ok bool) {
	return k.unitWalk(obj, base, u, 0, false, nil)
}

// unitWalk is unitChanges from depth from of u's path, m and b the
// objects there in the object and its base, the depths above taken as
// unitChanges takes them (context: with a change of a context field). The
// changes are appended to changes (the caller's room for them, or nil).
func (k *inertKind) unitWalk(m, b map[string]any, u *unitParent, from int, context bool, changes []unitChange) (_ []unitChange, _, ok bool) {
	for depth := from; ; depth++ {
		var inert map[string]inertness
		switch depth {
		case 0:
			inert = k.top
		case 1:
			inert = k.nested[u.path[0]]
		}
		last := depth == len(u.path)
		next := ""
		if !last {
			next = u.path[depth]
		}
		skip := func(f string) bool { return last && u.lists[f] || !last && f == next }
		deeper := noDeeper
		if depth == 0 {
			deeper = k.nestedInert
		}
		// Depth 1 from 1: taken by unitChangesTold.
		if depth != from || from != 1 {
			if !inertDiff(m, b, inert, deeper, skip) {
				// Only a change of context fields may be taken (and then
				// only here, where the closure costs an allocation).
				if !last || len(u.context) == 0 || !diffFields(m, b, inert, deeper, skip, func(f string) bool { return u.context[f] }) {
					return nil, false, false
				}
				context = true
			}
		}
		if last {
			for f := range u.lists {
				v, bv := m[f], b[f]
				if sameJSON(v, bv) {
					continue
				}
				now, ok1 := v.([]any)
				was, ok2 := bv.([]any)
				if !ok1 && v != nil || !ok2 && bv != nil {
					return nil, false, false
				}
				changes = append(changes, unitChange{f, now, was})
			}
			return changes, context, true
		}
		nm, ok1 := m[next].(map[string]any)
		nb, ok2 := b[next].(map[string]any)
		if !ok1 || !ok2 || nm == nil || nb == nil {
			return nil, false, false
		}
		m, b = nm, nb
	}
}

// unitChangesTold is unitChanges(obj, base, u) for told, when not nil,
// every change k.changes finds between obj and base (all of them: all was
// true) and u.covers(told): then the walks of the top level and of the
// object at u.path[0] that unitChanges makes are already made (k.changes
// made them with the same inert fields), and only what lies below (the
// rest of the path, u's lists) is walked. A change told as a whole (no
// sub) leaves it to unitChanges. checkChanges holds the two to each other
// on every DefaultFrom oracle's objects.
func (k *inertKind) unitChangesTold(obj, base map[string]any, u *unitParent, told []fieldChange) (changes []unitChange, context, ok bool) {
	return k.unitChangesIn(obj, base, u, told, nil)
}

// unitChangesIn is unitChangesTold with the changes appended to buf (the
// caller's room for them, or nil) when told is not nil.
func (k *inertKind) unitChangesIn(obj, base map[string]any, u *unitParent, told []fieldChange, buf []unitChange) (changes []unitChange, context, ok bool) {
	if told == nil {
		return k.unitChanges(obj, base, u)
	}
	for _, c := range told {
		if c.top != u.path[0] || c.sub == "" {
			return k.unitChanges(obj, base, u)
		}
		// At depth 1 unitChanges skips u's lists when u's path has one
		// step, and takes the other changes there as context changes
		// (covers held them to context fields); with more steps it skips
		// the next step, the only field covers let change.
		if len(u.path) == 1 && !u.lists[c.sub] {
			context = true
		}
	}
	m, _ := obj[u.path[0]].(map[string]any)
	b, _ := base[u.path[0]].(map[string]any)
	if m == nil || b == nil {
		return k.unitChanges(obj, base, u)
	}
	return k.unitWalk(m, b, u, 1, context, buf)
}

// nestedInert tells whether v and b, the values of top-level field f in
// an object and its base, differ only in f's inert fields (same), or in
// one of f's other fields (differs: then they are not equal), as a
// deeperFunc.
func (k *inertKind) nestedInert(f string, v, b any) (same, differs bool) {
	fields := k.nested[f]
	if fields == nil {
		return false, false
	}
	vm, ok1 := v.(map[string]any)
	bm, ok2 := b.(map[string]any)
	if !ok1 || !ok2 || vm == nil || bm == nil {
		return false, false
	}
	same = inertDiff(vm, bm, fields, noDeeper, nil)
	return same, !same
}

// defaultUnits is Default(obj, gvk) for obj derived from base (as
// DefaultFrom) when obj differs from base only in u's lists and k's inert
// fields, by defaulting the changed elements alone; ok=false otherwise, or
// when the plan cannot tell.
func (s *Scheme) defaultUnits(k *inertKind, u *unitParent, obj, base map[string]any, gvk schema.GroupVersionKind) (map[string]any, bool) {
	return s.defaultUnitsTold(k, u, obj, base, gvk, nil)
}

// defaultUnitsTold is defaultUnits with the changes between obj and base
// told (unitChangesTold: nil for none told).
func (s *Scheme) defaultUnitsTold(k *inertKind, u *unitParent, obj, base map[string]any, gvk schema.GroupVersionKind, told []fieldChange) (map[string]any, bool) {
	var room [maxUnitLists]unitChange
	changes, context, ok := k.unitChangesIn(obj, base, u, told, room[:0])
	if !ok {
		return nil, false
	}
	kb, err := s.kube()
	if err != nil {
		return nil, false
	}
	parent := obj
	for _, step := range u.path {
		parent, _ = parent[step].(map[string]any)
	}
	if context && !s.contextUnchanged(kb, gvk, u, parent) {
		return nil, false
	}
	var room2 [maxUnitLists]unitList
	set := room2[:0]
	for _, c := range changes {
		var out []any
		for i, e := range c.now {
			if i < len(c.was) && sameJSON(e, c.was[i]) || isElementOf(e, c.was) {
				continue // a defaulted element, in the same context
			}
			em, isMap := e.(map[string]any)
			if !isMap || em == nil {
				return nil, false
			}
			if isInertElement(c.list, em) {
				continue // its own defaulted form, seen by no other defaulter
			}
			if i < len(c.was) {
				if wm, ok := c.was[i].(map[string]any); ok && wm != nil && elementInertDiff(em, wm, u.inert[c.list]) {
					continue // changed only where no defaulter of the element looks
				}
			}
			d, ok := s.defaultElement(kb, gvk, u, parent, c.list, em)
			if !ok {
				return nil, false
			}
			if jsonvalue.SameMap(d, em) {
				continue
			}
			if out == nil {
				out = append([]any(nil), c.now...)
			}
			out[i] = d
		}
		if out != nil {
			set = append(set, unitList{c.list, out})
		}
	}
	if len(set) == 0 {
		return obj, true
	}
	return withUnits(obj, u.path, set), true
}

// entryInertTable are fields of unit lists' elements that are lists of
// objects (by JSON name), with the fields of their entries such that an
// entry holding only those fields, each a non-empty string, is its own
// defaulted form, and adding or replacing such entries changes nothing
// that defaulting writes elsewhere (a container's env var with a name and
// a value). Not read from upstream's code but held to it:
// TestEntryInertTable probes, on every kind of unitTable whose lists'
// elements have such a field, defaulted real and random objects with such
// entries appended to and replacing entries of the field, every element
// alone and several at once, each held to the whole object's defaulting
// (unchanged) and DefaultFrom to defaultReference.
var entryInertTable = []entryInert{{"env", map[string]bool{"name": true, "value": true}}}

// entryInert is a row of entryInertTable: the field, and its entries'
// fields.
type entryInert struct {
	field  string
	fields map[string]bool
}

// elementInertDiff tells whether em, an element of a unit list, differs
// from wm, the defaulted element at its index before, only in the
// element's inert fields (inert) and in entries of entryInertTable's
// fields: entries set, at an index they had in wm or after wm's, to
// entries of the table's fields with non-empty strings alone. A field of
// the table removed, emptied or shortened is not taken.
func elementInertDiff(em, wm map[string]any, inert map[string]inertness) bool {
	if !inertDiff(em, wm, inert, noDeeper, isEntryInert) {
		return false
	}
	for _, e := range entryInertTable {
		if !inertEntries(em[e.field], wm[e.field], e.fields) {
			return false
		}
	}
	return true
}

// isEntryInert tells whether f is a field of entryInertTable.
func isEntryInert(f string) bool {
	for _, e := range entryInertTable {
		if e.field == f {
			return true
		}
	}
	return false
}

// inertEntries tells whether v, the value of a field of entryInertTable in
// an element, is was, its value in the defaulted element before, or a list
// at least as long whose entries are was' at the same index (identical
// values: defaulted in the same element) or entries of fields alone, each
// a non-empty string.
func inertEntries(v, was any, fields map[string]bool) bool {
	if sameJSON(v, was) {
		return true
	}
	l, ok := v.([]any)
	if !ok || len(l) == 0 {
		return false
	}
	var old []any
	if was != nil {
		if old, ok = was.([]any); !ok || len(l) < len(old) {
			return false
		}
	}
	for j, e := range l {
		if j < len(old) && (sameJSON(e, old[j]) || jsonvalue.Identical(e, old[j])) {
			continue
		}
		m, ok := e.(map[string]any)
		if !ok || len(m) == 0 {
			return false
		}
		for k, x := range m {
			if str, ok := x.(string); !ok || str == "" || !fields[k] {
				return false
			}
		}
	}
	return true
}

// elementInertTable are shapes of elements of unit lists (by the list's
// JSON name): an element with exactly the fields of a row, each of the
// row's sort (a non-empty string, an empty object), is its own defaulted
// form, and adding it to the list, or putting it in place of another
// element, changes nothing that defaulting writes elsewhere (a volume of a
// name and an empty emptyDir). Not read from upstream's code but held to
// it: TestElementInertTable probes, on every kind of unitTable with a list
// of the table, defaulted real and random objects with such elements
// appended to the list and put in place of its elements, one or several at
// once, each held to the whole object's defaulting (unchanged) and
// DefaultFrom to defaultReference.
var elementInertTable = []inertShape{
	{"volumes", map[string]elementSort{"name": sortString, "emptyDir": sortEmptyObject}},
}

// inertShape is a row of elementInertTable: the list, and the fields of
// its elements of the row's shape with their sorts.
type inertShape struct {
	list   string
	fields map[string]elementSort
}

// elementSort is what a field of a row of elementInertTable holds.
type elementSort uint8

const (
	// sortString is a non-empty string.
	sortString elementSort = iota + 1
	// sortEmptyObject is an object without fields.
	sortEmptyObject
)

// isInertElement tells whether em, a new element of list (a unit list), is
// of the shape of a row of elementInertTable for list.
func isInertElement(list string, em map[string]any) bool {
	for _, row := range elementInertTable {
		if row.list != list || len(em) != len(row.fields) {
			continue
		}
		if ofSorts(em, row.fields) {
			return true
		}
	}
	return false
}

// ofSorts tells whether every field of em is a field of fields holding a
// value of its sort.
func ofSorts(em map[string]any, fields map[string]elementSort) bool {
	for f, v := range em {
		switch fields[f] {
		case sortString:
			if str, ok := v.(string); !ok || str == "" {
				return false
			}
		case sortEmptyObject:
			if m, ok := v.(map[string]any); !ok || m == nil || len(m) != 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// isElementOf tells whether e is one of the maps of list (the same map).
func isElementOf(e any, list []any) bool {
	m, ok := e.(map[string]any)
	if !ok || m == nil {
		return false
	}
	for _, x := range list {
		if y, ok := x.(map[string]any); ok && jsonvalue.SameMap(m, y) {
			return true
		}
	}
	return false
}

// maxUnitLists is the room defaultUnitsTold keeps on its stack for the
// changed lists of a unit parent (more are appended in new memory).
const maxUnitLists = 4

// unitList is a list of a unit parent and its new elements.
type unitList struct {
	list string
	now  []any
}

// withUnits is obj with the lists of set in the object at path replaced,
// sharing everything else.
func withUnits(obj map[string]any, path []string, set []unitList) map[string]any {
	out := make(map[string]any, len(obj))
	for f, v := range obj {
		out[f] = v
	}
	if len(path) == 0 {
		for _, l := range set {
			out[l.list] = l.now
		}
		return out
	}
	sub, _ := obj[path[0]].(map[string]any)
	out[path[0]] = withUnits(sub, path[1:], set)
	return out
}

// defaultElement is element elem of list of the object parent (at u's
// path in an object of kind gvk), defaulted by the kind's defaulters on
// the smallest object of the kind that holds it (unitObject), or ok=false
// when the plan cannot tell.
func (s *Scheme) defaultElement(k *kube, gvk schema.GroupVersionKind, u *unitParent, parent map[string]any, list string, elem map[string]any) (map[string]any, bool) {
	root := s.plans.typedKind(k.scheme, gvk)
	if root == nil {
		return nil, false
	}
	pn := unitParentNode(root, u.path)
	if pn == nil {
		return nil, false
	}
	// elem is an element of an object in normalized form (DefaultFrom's
	// obj), in normalized form itself: when the defaulters leave the typed
	// object as built (watch), its element is written as elem.
	w := s.plans.getWatch()
	defer s.plans.putWatch(w)
	sp := unitSpare(root, w)
	defer sp.release(w)
	typed, ok := unitTyped(root, pn, gvk, u.path, parent, list, elem, w)
	if !ok {
		return nil, false
	}
	w.take()
	// After take, as defaultBuilt does: what prefill writes (a container's
	// pull policy, remembered by image) is a change the defaulters would
	// have made, which the watch sees.
	s.plans.pulls.prefill(typed)
	k.scheme.Default(typed)
	if s.plans.unchanged(w) {
		return elem, true
	}
	at, n := unitParentAt(typed, root, u.path)
	if at == nil {
		return nil, false
	}
	f := n.byName[list]
	h := (*sliceHeader)(unsafe.Add(at, f.offset))
	if h.len != 1 {
		return nil, false
	}
	e, _ := s.plans.emitters.Get().(*emitter)
	if e == nil {
		e = &emitter{}
	}
	out, ok := e.emit(h.data, f.node.elem, elem, true)
	e.scratch = e.scratch[:0]
	s.plans.emitters.Put(e)
	m, isMap := out.(map[string]any)
	if !ok || !isMap || m == nil {
		return nil, false
	}
	return m, true
}

// unitParentAt is the address and plan of the object at path in typed, a
// typed object of struct plan root (nil when a pointer on the path is
// nil).
func unitParentAt(typed runtime.Object, root *node, path []string) (unsafe.Pointer, *node) {
	at := reflect.ValueOf(typed).UnsafePointer()
	n := root
	for _, step := range path {
		f := n.byName[step]
		if f == nil {
			return nil, nil
		}
		at, n = unsafe.Add(at, f.offset), f.node
		if n.kind == nodePointer {
			at, n = *(*unsafe.Pointer)(at), n.elem
			if at == nil {
				return nil, nil
			}
		}
	}
	return at, n
}

// unitParentNode is the struct plan at path from root (through structs
// and pointers to structs), nil when there is none or a list of path's
// last object is not a list of structs.
func unitParentNode(root *node, path []string) *node {
	n := root
	for _, step := range path {
		f := n.byName[step]
		if f == nil {
			return nil
		}
		n = f.node
		if n.kind == nodePointer {
			n = n.elem
		}
		if n.kind != nodeStruct {
			return nil
		}
	}
	return n
}

// unitTyped is the typed object typedWatched builds of unitObject(pn,
// path, parent, list, elem), of the kind of struct plan root, built without
// the map: the same fields written by the same build, in the same blocks.
// TestUnitTypedIsUnitObject holds the two to each other.
//
// With list empty (and elem nil) it is the unit object without elements:
// the path and the parent's fields but its lists of objects (the context,
// contextUnchanged).
//
// It is built in w's spare object (unitSpare) when w has one, in new
// memory otherwise.
func unitTyped(root, pn *node, gvk schema.GroupVersionKind, path []string, parent map[string]any, list string, elem map[string]any, w *watch) (runtime.Object, bool) {
	var lf *field
	if list != "" {
		if lf = pn.byName[list]; lf == nil || lf.node.kind != nodeSlice {
			return nil, false
		}
	}
	fill := func(at unsafe.Pointer) bool {
		n := root
		for _, step := range path {
			f := n.byName[step]
			at, n = unsafe.Add(at, f.offset), f.node
			if n.kind == nodePointer {
				q, _ := w.spareOf().values(n.elem.t, 1, true)
				w.block(q, n.elem.size, n.elem)
				*(*unsafe.Pointer)(at) = q
				at, n = q, n.elem
			}
		}
		for name, v := range parent {
			f, _ := n.table.Get(name)
			if f == nil || f == lf || f.node.kind == nodeSlice && f.node.elem.kind == nodeStruct {
				continue // unknown to the converter, or a list of objects
			}
			if !buildWatched(v, unsafe.Add(at, f.offset), f.node, w) {
				return false
			}
		}
		if lf == nil {
			return true
		}
		// list, holding elem alone (buildWatched of []any{elem}).
		sn := lf.node
		var data unsafe.Pointer
		if sp := w.spareOf(); sp != nil {
			// A zeroed array of the spare object, as buildWatched takes.
			var c int
			data, c = sp.values(sn.elem.t, 1, false)
			*(*sliceHeader)(unsafe.Add(at, lf.offset)) = sliceHeader{data, 1, c}
		} else {
			dv := reflect.NewAt(sn.t, unsafe.Add(at, lf.offset)).Elem()
			dv.Grow(1)
			dv.SetLen(1)
			data = dv.UnsafePointer()
		}
		w.block(data, sn.elem.size, sn.elem)
		return buildWatched(elem, data, sn.elem, w)
	}
	sp := w.spareOf()
	if sp == nil {
		return newTyped(root, gvk, w, fill)
	}
	// newTyped, in the spare object.
	if sp.obj == nil || sp.n != root {
		return nil, false
	}
	w.block(sp.at, root.size, root)
	if !fill(sp.at) {
		return nil, false
	}
	sp.obj.GetObjectKind().SetGroupVersionKind(gvk)
	return sp.obj, true
}

// unitSpare is a spare object of root's kind for w, the memory unitTyped
// builds in (w.spare): the caller releases it once nothing reads the
// typed object (sp.release(w)). Nothing a unit's defaulting returns lies
// in it: emit writes maps and lists of its own, elem comes back as it is
// (TestSpareUnitsShareNothing).
func unitSpare(root *node, w *watch) *spareObject {
	sp := spareOf(root)
	w.spare = sp
	return sp
}

// unitObject is the smallest object of the kind that holds elem as the
// element of list of parent (the object at path, of struct plan pn): the
// objects on the path, each with that one field, and parent's fields but
// its lists of objects, with list holding elem alone (list empty: none).
func unitObject(pn *node, path []string, parent map[string]any, list string, elem map[string]any) map[string]any {
	ctx := make(map[string]any, len(parent))
	for f, v := range parent {
		if x := pn.byName[f]; x != nil && x.node.kind == nodeSlice && x.node.elem.kind == nodeStruct {
			continue
		}
		ctx[f] = v
	}
	if list != "" {
		ctx[list] = []any{elem}
	}
	w := ctx
	for i := len(path) - 1; i >= 0; i-- {
		w = map[string]any{path[i]: w}
	}
	return w
}
