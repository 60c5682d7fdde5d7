package policytest

import (
	"bytes"
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"github.com/mutatis-dev/mutatis/applyconfig"
)

// canonical returns v as encoding/json would decode its JSON (numbers as
// json.Number), so that int64 and float64 forms of a number compare equal.
func canonical(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		return v
	}
	return out
}

// equal compares two JSON-like values after canonicalization.
func equal(a, b any) bool {
	return reflect.DeepEqual(canonical(a), canonical(b))
}

// listSchema finds the structured-merge-diff schema of an object's kind,
// used to compare list elements by their keys (containers by name).
type listSchema struct {
	s  *smdschema.Schema
	tr *smdschema.TypeRef
}

// schemaFor returns the schema of obj's kind, or a zero listSchema (lists
// are then compared by position) when the kind has none.
func schemaFor(schemas *applyconfig.Schemas, gvk schema.GroupVersionKind, obj map[string]any) listSchema {
	if schemas == nil || obj == nil {
		return listSchema{}
	}
	tc, err := schemas.TypeConverter(gvk)
	if err != nil {
		return listSchema{}
	}
	tv, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: obj})
	if err != nil {
		return listSchema{}
	}
	tr := tv.TypeRef()
	return listSchema{s: tv.Schema(), tr: &tr}
}

func (ls listSchema) atom(tr *smdschema.TypeRef) (smdschema.Atom, bool) {
	if ls.s == nil || tr == nil {
		return smdschema.Atom{}, false
	}
	return ls.s.Resolve(*tr)
}

// project returns the part of got that corresponds to want: the fields of
// maps that want names; the elements of keyed lists whose keys match an
// element of want (in want's order); the elements of sets that want lists;
// and element by element for other lists (extra elements of got are kept,
// so that a positional list must have want's length). got contains want
// exactly when the projection equals want.
func (ls listSchema) project(tr *smdschema.TypeRef, want, got any) any {
	a, known := ls.atom(tr)
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return got
		}
		out := make(map[string]any, len(w))
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				continue
			}
			var ftr *smdschema.TypeRef
			if known && a.Map != nil {
				if sf, ok := a.Map.FindField(k); ok {
					ftr = &sf.Type
				} else {
					et := a.Map.ElementType
					ftr = &et
				}
			}
			out[k] = ls.project(ftr, wv, gv)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			return got
		}
		var etr *smdschema.TypeRef
		var keys []string
		associative := false
		if known && a.List != nil {
			et := a.List.ElementType
			etr = &et
			associative = a.List.ElementRelationship == smdschema.Associative
			keys = a.List.Keys
		}
		out := []any{}
		switch {
		case associative && len(keys) > 0:
			used := make([]bool, len(g))
			var unmatched []any
			for _, wv := range w {
				found := false
				for i, gv := range g {
					if !used[i] && sameKeys(keys, wv, gv) {
						used[i], found = true, true
						out = append(out, ls.project(etr, wv, gv))
						break
					}
				}
				if !found {
					unmatched = append(unmatched, wv)
				}
			}
			// Show an expected element that has no match next to an
			// element that was not expected, so that the diff shows the
			// fields that differ (keys included).
			for i, gv := range g {
				if len(unmatched) == 0 {
					break
				}
				if !used[i] {
					used[i] = true
					out = append(out, ls.project(etr, unmatched[0], gv))
					unmatched = unmatched[1:]
				}
			}
		case associative:
			for _, wv := range w {
				for _, gv := range g {
					if equal(wv, gv) {
						out = append(out, gv)
						break
					}
				}
			}
		default:
			for i, gv := range g {
				if i < len(w) {
					out = append(out, ls.project(etr, w[i], gv))
				} else {
					out = append(out, gv)
				}
			}
		}
		return out
	}
	return got
}

// sameKeys tells whether list elements a and b agree on every key field
// that a sets (a must set at least one).
func sameKeys(keys []string, a, b any) bool {
	am, ok1 := a.(map[string]any)
	bm, ok2 := b.(map[string]any)
	if !ok1 || !ok2 {
		return false
	}
	n := 0
	for _, k := range keys {
		av, ok := am[k]
		if !ok {
			continue
		}
		n++
		if !equal(av, bm[k]) {
			return false
		}
	}
	return n > 0
}
