package scheme

import (
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
)

// TestFieldTableIsTheMap checks every struct plan of the built-in kinds:
// the table finds each field by its name, and finds nothing for names that
// are not fields (case variants, prefixes, names of other structs' fields,
// the empty name), as the map of fields does.
func TestFieldTableIsTheMap(t *testing.T) {
	p := &planner{}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		p.kind(scheme.Scheme, gvk)
	}
	var all []string
	for _, n := range p.types {
		for name := range n.byName {
			all = append(all, name)
		}
	}
	structs, perfect := 0, 0
	for key, n := range p.types {
		typ := key.t
		if n.kind != nodeStruct {
			continue
		}
		structs++
		if n.table.Perfect() {
			perfect++
		} else if len(n.byName) > 0 {
			t.Errorf("%v: no perfect table for its %d fields", typ, len(n.byName))
		}
		probe := func(k string) {
			if got, _ := n.table.Get(k); got != n.byName[k] {
				t.Fatalf("%v: Get(%q) = %v, want %v", typ, k, got, n.byName[k])
			}
		}
		for name := range n.byName {
			probe(name)
			probe(strings.ToUpper(name))
			probe(name[:len(name)-1])
			probe(name + "x")
		}
		for _, k := range all {
			probe(k)
		}
		probe("")
	}
	// Every type with fields gets a perfect hash (types without fields keep
	// the empty map).
	if structs < 1000 || perfect < structs*95/100 {
		t.Errorf("%d of %d struct plans have a perfect table", perfect, structs)
	}
}
