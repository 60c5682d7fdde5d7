package scheme

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
)

// realByKind are the real objects of testobjects (their ToUnstructured
// forms), by kind.
func realByKind(t testing.TB) map[schema.GroupVersionKind][]map[string]any {
	real := map[schema.GroupVersionKind][]map[string]any{}
	for _, in := range testobjects.Inputs(t) {
		if strings.HasSuffix(in.Name, "(ToUnstructured)") {
			real[in.GVK] = append(real[in.GVK], in.Obj)
		}
	}
	return real
}

// zeroOf is the JSON zero value of a pointer-to-scalar Go type's element.
func zeroOf(t reflect.Type) any {
	switch t.Elem().Kind() {
	case reflect.Bool:
		return false
	case reflect.String:
		return ""
	case reflect.Float32, reflect.Float64:
		return float64(0)
	}
	return int64(0)
}

// TestInertPointersSet probes the refinement of inertKindsTyped on
// upstream's defaulters: every inertSet field it makes inertPresent (a
// pointer to a scalar), in every kind of inertTable, set to its zero value
// (false, 0, "") in defaulted real and randomly filled objects, leaves
// defaulting the whole object a no-op, and DefaultFrom returns that object
// without running the defaulters. It fails when the refinement takes a
// field whose zero value a defaulter reads as unset.
func TestInertPointersSet(t *testing.T) {
	s := New()
	ks, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	real := realByKind(t)
	plain, typed := inertKinds(), s.inert()
	gvks := sortedGVKs(typed)
	fields, tried, skipped := 0, 0, 0
	for i, gvk := range gvks {
		k, was := typed[gvk], plain[gvk]
		obj, err := ks.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		types := map[string]reflect.Type{}
		for _, f := range jsonFields(reflect.TypeOf(obj).Elem()) {
			types[f.name] = f.typ
			ft := f.typ
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for _, g := range jsonFields(ft) {
					types[f.name+"."+g.name] = g.typ
				}
			}
		}
		var paths []string
		for f, c := range k.top {
			if c == inertPresent {
				paths = append(paths, f)
			}
			if c != was.top[f] && (c != inertPresent || was.top[f] != inertSet) {
				t.Errorf("%v %s: class %d, the table's %d", gvk, f, c, was.top[f])
			}
		}
		for parent, m := range k.nested {
			for f, c := range m {
				if c == inertPresent {
					paths = append(paths, parent+"."+f)
				}
				if c != was.nested[parent][f] && (c != inertPresent || was.nested[parent][f] != inertSet) {
					t.Errorf("%v %s.%s: class %d, the table's %d", gvk, parent, f, c, was.nested[parent][f])
				}
			}
		}
		if len(paths) == 0 {
			continue
		}
		sort.Strings(paths)
		p, ok := newInertProbe(t, s, gvk, real[gvk], int64(30_000+i), 3)
		if !ok {
			continue
		}
		for _, path := range paths {
			ft := types[path]
			if ft == nil || pointedInert(inertSet, ft) != inertPresent {
				t.Fatalf("%v %s: inertPresent, but of Go type %v", gvk, path, ft)
			}
			fields++
			for _, base := range p.bases {
				obj, ok := withPath(base, path, zeroOf(ft), true)
				if !ok {
					continue
				}
				if !p.unchanged(obj) {
					t.Errorf("%v %s: set to %v, defaulting changes the object: %s", gvk, path, zeroOf(ft), mustJSONText(obj))
					continue
				}
				norm, err := s.Normalize(obj, gvk)
				if err != nil {
					continue
				}
				tried++
				if checkDefaultFrom(t, s, norm, base, gvk) == defaultedNone {
					skipped++
				}
			}
		}
	}
	t.Logf("%d pointer fields, %d objects, %d without the defaulters", fields, tried, skipped)
	if fields == 0 || skipped == 0 {
		t.Error("no pointer field set to its zero value skipped the defaulters")
	}
}
