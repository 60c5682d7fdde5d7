package scheme

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Incremental defaulting of a unit parent's own fields: a mutation that
// changes a field of the object holding a kind's unit lists (a Pod's
// spec.terminationGracePeriodSeconds), which some defaulter reads, needs
// that defaulter, not the element defaulters nor those of the rest of the
// object, when no element's defaulting reads the field and the defaulting
// of the parent's own fields reads nothing but them. Such fields are the
// parent's context fields: which they are is not read from upstream's code
// but measured on its functions (TestContextTable: defaulted real and
// random objects with each field of the parent changed, set to other
// objects' values, zero values and removed, alone, together and with
// elements of the unit lists changed; a field is in the table when, every
// time defaulting the unit object without elements leaves it as it is,
// defaulting the whole object leaves the object as it is), and written
// down in contextTable (incremental_context_table.go, generated). After
// such a change, DefaultFrom defaults the unit object without elements
// (the path and the parent's fields but its lists of objects): when the
// defaulters leave it as it is, the changed fields need nothing and the
// object is its own defaulted form but for the changed elements; when they
// change it, the whole object is defaulted (the reference).

// contextEntry is one row of contextTable: in objects of the kind, the
// context fields (space-separated JSON names) of the object at parent (a
// unitTable parent).
type contextEntry struct {
	group, version, kind string
	parent               string
	fields               string
}

// contextFields are the context fields of parent in kind gvk, by name (nil
// when there are none).
func contextFields(gvk schema.GroupVersionKind, parent string) map[string]bool {
	var out map[string]bool
	for _, e := range contextTable {
		if e.group != gvk.Group || e.version != gvk.Version || e.kind != gvk.Kind || e.parent != parent {
			continue
		}
		for _, f := range strings.Fields(e.fields) {
			if out == nil {
				out = map[string]bool{}
			}
			out[f] = true
		}
	}
	return out
}

// contextUnchanged tells whether upstream's defaulting of kind gvk, run
// on the unit object of u without elements (unitTyped with no list: the
// path, parent's fields but its lists of objects), leaves the parent's
// fields as they are (what it writes elsewhere, such as a Deployment's
// replicas on the path, which the small object lacks, is not looked at);
// false when it changes them or the plan cannot tell.
func (s *Scheme) contextUnchanged(k *kube, gvk schema.GroupVersionKind, u *unitParent, parent map[string]any) bool {
	root := s.plans.typedKind(k.scheme, gvk)
	if root == nil {
		return false
	}
	pn := unitParentNode(root, u.path)
	if pn == nil {
		return false
	}
	w := s.plans.getWatch()
	defer s.plans.putWatch(w)
	sp := unitSpare(root, w)
	defer sp.release(w)
	typed, ok := unitTyped(root, pn, gvk, u.path, parent, "", nil, w)
	if !ok {
		return false
	}
	w.take()
	k.scheme.Default(typed)
	if s.plans.unchanged(w) {
		return true
	}
	at, n := unitParentAt(typed, root, u.path)
	if at == nil || n != pn {
		return false
	}
	e, _ := s.plans.emitters.Get().(*emitter)
	if e == nil {
		e = &emitter{}
	}
	same, ok := e.fields(at, pn, parent, true)
	emitted := len(e.scratch)
	e.scratch = e.scratch[:0]
	s.plans.emitters.Put(e)
	if !same || !ok {
		return false
	}
	// Every field of the context emitted: none dropped by the defaulters.
	held := 0
	for f := range parent {
		if x := pn.byName[f]; x == nil || x.node.kind != nodeSlice || x.node.elem.kind != nodeStruct {
			held++
		}
	}
	return emitted == held
}
