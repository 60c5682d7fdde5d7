package scheme

import (
	"math"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// Incremental defaulting: after a mutation of an object that defaulting
// already left as it is, kube-apiserver's defaulters run again over the
// whole object (dispatchOne). For the fields that no defaulter of the kind
// reads or writes, a change cannot make them do anything: the mutated
// object is its own defaulted form. Which fields those are is not read
// from upstream's code but measured on upstream's functions
// (TestInertTable probes SetObjectDefaults of every built-in kind with
// the fields of real and randomly filled objects changed, removed and
// set), and written down in inertTable (incremental_table.go, generated);
// DefaultFrom consults it, Default stays the reference and the fallback.

// inertness is how a field of a kind escapes the kind's defaulters.
type inertness uint8

const (
	// notInert: some change of the field can make defaulting change the
	// object.
	notInert inertness = iota
	// inertSet: no value the field is set to (present, not null) makes
	// defaulting change the object; removing it may (a defaulter fills it
	// when absent).
	inertSet
	// inertAny: no change of the field, removal included, makes
	// defaulting change the object.
	inertAny
	// inertPresent is inertSet for a field whose Go type is a pointer to
	// a scalar: there false, 0 and "" are values set like any other (the
	// typed field is not nil), not the unset field they are elsewhere
	// (unsetLike). Never in inertTable: Scheme.inert refines its inertSet
	// fields by their Go types (pointedInert), and TestInertPointersSet
	// probes that each such field set to its zero value is inert.
	inertPresent
)

// inertEntry is one kind's row of inertTable: the space-separated paths
// (a top-level field, or metadata.<field> or spec.<field>) of each class.
type inertEntry struct {
	group, version, kind string
	any, set             string
}

// inertKind is a kind's inert fields: top-level ones, and those of the
// objects under metadata and spec.
type inertKind struct {
	top    map[string]inertness
	nested map[string]map[string]inertness
}

// inertKinds is inertTable by kind (a Scheme builds it on first use:
// Scheme.inert).
func inertKinds() map[schema.GroupVersionKind]*inertKind {
	out := make(map[schema.GroupVersionKind]*inertKind, len(inertTable))
	for _, e := range inertTable {
		k := &inertKind{top: map[string]inertness{}, nested: map[string]map[string]inertness{}}
		add := func(paths string, class inertness) {
			for _, p := range strings.Fields(paths) {
				parent, field, nested := strings.Cut(p, ".")
				if !nested {
					k.top[p] = class
					continue
				}
				if k.nested[parent] == nil {
					k.nested[parent] = map[string]inertness{}
				}
				k.nested[parent][field] = class
			}
		}
		add(e.any, inertAny)
		add(e.set, inertSet)
		out[schema.GroupVersionKind{Group: e.group, Version: e.version, Kind: e.kind}] = k
	}
	return out
}

// inertKindsTyped is inertKinds with the inertSet fields that are
// pointers to scalars in the kinds' Go types (of kube-apiserver's scheme)
// made inertPresent (a Scheme builds it on first use: Scheme.inert).
func inertKindsTyped() map[schema.GroupVersionKind]*inertKind {
	out := inertKinds()
	ks, err := Kube()
	if err != nil {
		return out
	}
	for gvk, k := range out {
		obj, err := ks.New(gvk)
		if err != nil {
			continue
		}
		t := reflect.TypeOf(obj)
		if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			continue
		}
		for _, f := range jsonFields(t.Elem()) {
			if c, ok := k.top[f.name]; ok {
				k.top[f.name] = pointedInert(c, f.typ)
			}
			nested := k.nested[f.name]
			ft := f.typ
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if nested == nil || ft.Kind() != reflect.Struct {
				continue
			}
			for _, g := range jsonFields(ft) {
				if c, ok := nested[g.name]; ok {
					nested[g.name] = pointedInert(c, g.typ)
				}
			}
		}
	}
	return out
}

// pointedInert is class c of a field of Go type t: inertPresent for an
// inertSet pointer to a bool, a number or a string.
func pointedInert(c inertness, t reflect.Type) inertness {
	if c != inertSet || t.Kind() != reflect.Pointer {
		return c
	}
	switch t.Elem().Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return inertPresent
	}
	return c
}

// jsonField is a JSON field of a Go struct type: its name and type.
type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonFields are the JSON fields of struct type t, inlined structs'
// included.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if name == "" && (strings.Contains(opts, "inline") || sf.Anonymous) {
			ft := sf.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, jsonFields(ft)...)
			}
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out = append(out, jsonField{name, sf.Type})
	}
	return out
}

// DefaultFrom is Default(obj, gvk) for obj derived from base: base is an
// object of kind gvk that Default returns as it is (a result of Default),
// and obj shares with it the maps and slices it did not change (a merge or
// JSON patch result, normalized). When every difference between them lies
// in fields no defaulter of the kind can see, obj is returned as it is,
// without running the defaulters; when they lie in those fields and in
// elements of lists whose elements are defaulted one by one
// (incremental_units.go), only the changed elements are defaulted;
// otherwise it is Default(obj, gvk), through DefaultNormalized (obj is in
// normalized form). For a custom resource, structural defaulting runs
// only on the paths to what changed and on the changed subtrees
// (customresource_incremental.go).
func (s *Scheme) DefaultFrom(obj, base map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	return s.defaultFrom(obj, base, gvk, nil, false)
}

// defaultFrom is DefaultFrom, told (when isTold) the only fields in which
// obj can differ from base (DefaultPatched): then only those are compared.
func (s *Scheme) defaultFrom(obj, base map[string]any, gvk schema.GroupVersionKind, told []fieldChange, isTold bool) (map[string]any, error) {
	if obj != nil && base != nil && s != nil && s.crs.Recognizes(gvk) {
		if out, ok := s.crs.defaultFrom(obj, base, gvk); ok {
			return out, nil
		}
		return s.Default(obj, gvk)
	}
	if obj != nil && base != nil && s.Recognizes(gvk) && !s.crs.Recognizes(gvk) {
		if k := s.inert()[gvk]; k != nil {
			var buf [maxChanges]fieldChange
			var changes []fieldChange
			var all bool
			if isTold {
				changes, all = k.changesTold(obj, base, told, buf[:0])
			} else {
				changes, all = k.changes(obj, base, buf[:0])
			}
			if all && len(changes) == 0 {
				return obj, nil // k.onlyInertChanges(obj, base)
			}
			var found []fieldChange // all the changes, when changes told them all
			if all {
				found = changes
			}
			for _, u := range s.units()[gvk] {
				if all && !u.covers(changes) {
					continue // defaultUnits would find a change outside u's lists
				}
				if out, ok := s.defaultUnitsTold(k, u, obj, base, gvk, found); ok {
					return out, nil
				}
			}
		}
	}
	return s.DefaultNormalized(obj, gvk)
}

// onlyInertChanges tells whether every difference between obj and base
// lies in k's inert fields.
func (k *inertKind) onlyInertChanges(obj, base map[string]any) bool {
	return inertDiff(obj, base, k.top, k.nestedInert, nil)
}

// fieldChange is a field that differs, other than inertly, between an
// object and its base: top, a top-level field, as a whole (sub empty) or
// in sub, one of the fields of the object it holds whose inert fields k
// knows.
type fieldChange struct {
	top, sub string
}

// maxChanges is how many fieldChanges changes tells at most.
const maxChanges = 8

// changes appends to out the fields in which obj and base differ other
// than inertly, as onlyInertChanges looks (no change: onlyInertChanges),
// at most maxChanges of them (all=false when there are more).
func (k *inertKind) changes(obj, base map[string]any, out []fieldChange) (_ []fieldChange, all bool) {
	all, deep := true, ""
	add := func(c fieldChange) bool {
		if len(out) == maxChanges {
			all = false
			return false
		}
		out = append(out, c)
		return true
	}
	// nestedInert, telling what differs.
	deeper := func(f string, v, b any) (same, differs bool) {
		fields := k.nested[f]
		vm, ok1 := v.(map[string]any)
		bm, ok2 := b.(map[string]any)
		if fields == nil || !ok1 || !ok2 || vm == nil || bm == nil {
			return false, false
		}
		n := len(out)
		diffFields(vm, bm, fields, noDeeper, nil, func(sub string) bool { return add(fieldChange{f, sub}) })
		if len(out) > n {
			deep = f
		}
		// A field told differs other than inertly: v and b are not equal.
		return len(out) == n && all, len(out) > n
	}
	diffFields(obj, base, k.top, deeper, nil, func(f string) bool {
		if !all {
			return false
		}
		if deep == f {
			return true // told field by field
		}
		return add(fieldChange{f, ""})
	})
	return out, all
}

// covers tells whether changes (k.changes, all of them) lie in u's lists,
// its context fields and on the path to them, as defaultUnits requires (which checks again,
// to the end).
func (u *unitParent) covers(changes []fieldChange) bool {
	for _, c := range changes {
		switch {
		case c.top != u.path[0]:
			return false
		case c.sub == "":
			// Differs as a whole: defaultUnits tells.
		case len(u.path) == 1 && !u.lists[c.sub] && !u.context[c.sub], len(u.path) > 1 && c.sub != u.path[1]:
			return false
		}
	}
	return true
}

// unsetLike tells whether v may read as an unset field in the typed
// object, which a defaulter then fills: null, the zero values of scalars
// (a field without a pointer reads 0, "" and false as unset), and empty
// lists and objects (which a defaulter testing their length sees as unset).
// An inertSet field set to one of them is not inert.
func unsetLike(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case int64:
		return x == 0
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// deeperFunc tells of v and b, the values of field in an object and its
// base (neither the same value: sameJSON), that they differ only inertly
// (same), or that they differ other than inertly and so are not equal
// (differs: diffFields then leaves out its jsonvalue.Equal of the two, a
// walk down to their first difference that the deeper look found
// already); neither when it cannot tell.
type deeperFunc func(field string, v, b any) (same, differs bool)

// noDeeper is inertDiff's deeper for fields without inert fields.
func noDeeper(string, any, any) (same, differs bool) { return false, false }

// inertDiff tells whether obj and base differ only in fields that inert
// classes as inert (or, for a field present in both, that deeper says
// differ only inertly), the fields skip names (if skip is not nil) left
// out.
func inertDiff(obj, base map[string]any, inert map[string]inertness, deeper deeperFunc, skip func(field string) bool) bool {
	return diffFields(obj, base, inert, deeper, skip, nil)
}

// diffFields is inertDiff that, when report is not nil, reports each field
// in which obj and base differ other than inertly, going on while report
// returns true (and then returns true; false when report stopped it).
func diffFields(obj, base map[string]any, inert map[string]inertness, deeper deeperFunc, skip func(field string) bool, report func(field string) bool) bool {
	// found counts the fields of obj found in base, skipped or not:
	// when they are all of base's, base has no field obj lacks.
	found := 0
	for f, v := range obj {
		b, inBase := base[f]
		if inBase {
			found++
		}
		if skip != nil && skip(f) || inBase && sameJSON(v, b) {
			continue
		}
		if !fieldDiffers(f, v, true, b, inBase, inert, deeper) {
			continue
		}
		if report == nil || !report(f) {
			return false
		}
	}
	if found == len(base) {
		return true
	}
	for f := range base {
		if _, ok := obj[f]; !ok && (skip == nil || !skip(f)) && inert[f] != inertAny {
			if report == nil || !report(f) {
				return false
			}
		}
	}
	return true
}

// fieldDiffers tells whether field f differs other than inertly between
// an object (value v, when inObj) and its base (b, when inBase), as
// diffFields decides of each field: inert classes its inertness, deeper
// looks into it when both have it.
func fieldDiffers(f string, v any, inObj bool, b any, inBase bool, inert map[string]inertness, deeper deeperFunc) bool {
	if !inObj {
		return inBase && inert[f] != inertAny
	}
	if inBase && sameJSON(v, b) {
		return false
	}
	switch inert[f] {
	case inertAny:
		return false
	case inertSet:
		if !unsetLike(v) {
			return false
		}
	case inertPresent:
		if v != nil {
			return false
		}
	}
	if inBase {
		same, differs := deeper(f, v, b)
		if same || !differs && jsonvalue.Equal(v, b) {
			return false
		}
	}
	return true
}

// sameJSON tells, without looking inside maps and slices, that a and b
// are the same value: the same map, the same elements of the same array
// (nil or not alike), equal scalars.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && (x == nil) == (y == nil) && jsonvalue.SameMap(x, y)
	case []any:
		y, ok := b.([]any)
		return ok && (x == nil) == (y == nil) && jsonvalue.SameSlice(x, y)
	case nil:
		return b == nil
	case string, bool, int64:
		return a == b
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	}
	return false
}
