package scheme

import (
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"sort"
	"testing"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

var gizmoV1 = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gizmo"}

// gizmoFull is a Gizmo with a value at every place its schema defaults.
const gizmoFull = `{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"g","namespace":"default","labels":{"app":"g"}},
"spec":{"replicas":3,"paused":true,"strategy":{"type":"Recreate","maxSurge":2,"maxUnavailable":"10%"},
"ports":[{"name":"http","port":80},{"name":"https","port":443,"protocol":"UDP","options":{"retries":2}},{}],
"routes":{"a":{"weight":5},"b":{"backend":{"service":"svc"}},"c":{}},
"counters":{"x":1,"y":null},"words":["a",null,"b"],"matrix":[[{"w":"x"},{}],[]],
"nullableWithDefault":null,"nullableObject":{"b":9},
"extra":{"unknown":{"deep":[1,{"z":null}]},"inner":{"other":true}},
"template":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"t","labels":{"a":"b"}},"spec":{"tier":"gold"}},
"plain":{"note":"n"},"bogus":{"k":1}},
"status":{"conditions":[{"type":"Ready"},{"type":"Synced","status":"True"}]}}`

// crdCase is one CRD version whose defaulting TestDefaultFromCustomResource
// and FuzzCRDDefaultIncremental hold incremental == whole on.
type crdCase struct {
	file    string
	gvk     schema.GroupVersionKind
	objects []string
}

var crdCases = []crdCase{{
	file: "gizmos.yaml", gvk: gizmoV1,
	objects: []string{
		gizmoFull,
		`{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"g"}}`,
		`{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"g"},"spec":{"nullableObject":null,"routes":{},"ports":[]},"status":{}}`,
	},
}, {
	file: "widgets.yaml", gvk: widgetV1,
	objects: []string{
		validWidget,
		withSpec(`"bogus":{"a":[1,2,null]},"extra":{"x":null},"items":[{},{"weight":null},{"key":"k","weight":2}]`),
	},
}, {
	file: "clusterthings.yaml", gvk: thingV1,
	objects: []string{`{"apiVersion":"example.com/v1","kind":"ClusterThing","metadata":{"name":"t"},"spec":{}}`},
}}

// crdMutator changes objects the way a merge or a JSON patch does: copies
// along the path to what it changes, sharing the rest with the original.
// The values it puts are drawn from the schema (with nulls, wrong types,
// unknown fields, deep copies of what was there, and subtrees taken from
// elsewhere in the object, as a JSON patch's copy and move do).
type crdMutator struct {
	r    *rand.Rand
	root *structuralschema.Structural
}

// mutate returns obj with 1 to 3 changes below the top level's apiVersion
// and kind.
func (m crdMutator) mutate(obj map[string]any) map[string]any {
	n := 1 + m.r.Intn(3)
	for i := 0; i < n; i++ {
		donor := m.pick(obj, 0)
		keys := sortedKeys(obj)
		var out map[string]any
		if len(keys) == 0 || m.r.Intn(8) == 0 {
			out = m.mapChange(obj, m.root, donor)
		} else {
			k := keys[m.r.Intn(len(keys))]
			out = cloneMap(obj)
			out[k] = m.change(obj[k], m.prop(m.root, k), donor, 0)
		}
		for _, k := range []string{"apiVersion", "kind"} {
			if v, ok := obj[k]; ok {
				out[k] = v
			} else {
				delete(out, k)
			}
		}
		obj = out
	}
	return obj
}

// pick is a random subtree of v.
func (m crdMutator) pick(v any, depth int) any {
	if m.r.Intn(3) == 0 || depth > 6 {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		if keys := sortedKeys(x); len(keys) > 0 {
			return m.pick(x[keys[m.r.Intn(len(keys))]], depth+1)
		}
	case []any:
		if len(x) > 0 {
			return m.pick(x[m.r.Intn(len(x))], depth+1)
		}
	}
	return v
}

// prop is the schema of field k of an object with schema s (nil if none).
func (m crdMutator) prop(s *structuralschema.Structural, k string) *structuralschema.Structural {
	if s == nil {
		return nil
	}
	if p, ok := s.Properties[k]; ok {
		return &p
	}
	if s.AdditionalProperties != nil {
		return s.AdditionalProperties.Structural
	}
	return nil
}

// change is v (of schema s) changed once somewhere in it.
func (m crdMutator) change(v any, s *structuralschema.Structural, donor any, depth int) any {
	switch m.r.Intn(10) {
	case 0:
		return m.gen(s, depth)
	case 1:
		return nil
	case 2:
		return valuetest.DeepCopy(v)
	case 3:
		return donor
	}
	switch x := v.(type) {
	case map[string]any:
		if x != nil {
			return m.mapChange(x, s, donor)
		}
	case []any:
		if x != nil {
			return m.listChange(x, s, donor)
		}
	}
	return m.gen(s, depth)
}

func (m crdMutator) mapChange(x map[string]any, s *structuralschema.Structural, donor any) map[string]any {
	out := cloneMap(x)
	keys := sortedKeys(x)
	switch op := m.r.Intn(6); {
	case op == 0 && len(keys) > 0:
		delete(out, keys[m.r.Intn(len(keys))])
	case op <= 2 && len(keys) > 0:
		k := keys[m.r.Intn(len(keys))]
		out[k] = m.change(x[k], m.prop(s, k), donor, 1)
	default:
		k := m.newKey(s)
		out[k] = m.gen(m.prop(s, k), 1)
	}
	return out
}

func (m crdMutator) listChange(x []any, s *structuralschema.Structural, donor any) []any {
	var items *structuralschema.Structural
	if s != nil {
		items = s.Items
	}
	out := append([]any(nil), x...)
	switch op := m.r.Intn(5); {
	case op == 0 && len(x) > 0:
		i := m.r.Intn(len(x))
		out = append(out[:i], out[i+1:]...)
	case op <= 2 && len(x) > 0:
		i := m.r.Intn(len(x))
		out[i] = m.change(x[i], items, donor, 1)
	default:
		i := m.r.Intn(len(x) + 1)
		out = append(out[:i], append([]any{m.gen(items, 1)}, out[i:]...)...)
	}
	return out
}

// newKey is a field name for an object of schema s: one of its
// properties, or another.
func (m crdMutator) newKey(s *structuralschema.Structural) string {
	if s != nil && len(s.Properties) > 0 && m.r.Intn(4) > 0 {
		keys := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys[m.r.Intn(len(keys))]
	}
	return fmt.Sprintf("k%d", m.r.Intn(4))
}

// gen is a random value for schema s.
func (m crdMutator) gen(s *structuralschema.Structural, depth int) any {
	switch n := m.r.Intn(20); {
	case n == 0:
		return nil
	case n == 1:
		return "wrong"
	case n == 2:
		return map[string]any{}
	}
	if s == nil {
		switch m.r.Intn(4) {
		case 0:
			return int64(m.r.Intn(5))
		case 1:
			if depth < 4 {
				return map[string]any{fmt.Sprintf("k%d", m.r.Intn(4)): m.gen(nil, depth+1)}
			}
		case 2:
			if depth < 4 {
				return []any{m.gen(nil, depth+1)}
			}
		}
		return "s"
	}
	switch {
	case s.XIntOrString:
		if m.r.Intn(2) == 0 {
			return int64(m.r.Intn(100))
		}
		return "50%"
	case s.Type == "integer":
		return int64(m.r.Intn(10))
	case s.Type == "string":
		return fmt.Sprintf("s%d", m.r.Intn(3))
	case s.Type == "boolean":
		return m.r.Intn(2) == 0
	case s.Type == "array":
		out := []any{}
		for i := m.r.Intn(3); i > 0 && depth < 6; i-- {
			out = append(out, m.gen(s.Items, depth+1))
		}
		return out
	}
	out := map[string]any{}
	for i := m.r.Intn(4); i > 0 && depth < 6; i-- {
		k := m.newKey(s)
		out[k] = m.gen(m.prop(s, k), depth+1)
	}
	return out
}

// checkCRDefaultFrom holds, for obj derived from base (a result of
// Default), the incremental defaulting equal to the whole object's, its
// inputs unmodified, and returns the result.
func checkCRDefaultFrom(t testing.TB, c *CustomResources, obj, base map[string]any, gvk schema.GroupVersionKind) map[string]any {
	t.Helper()
	frozen, frozenBase := valuetest.Freeze(obj), valuetest.Freeze(base)
	want, err := c.defaultReference(obj, gvk)
	if err != nil {
		t.Fatalf("Default: %v", err)
	}
	checkCRDefaultShared(t, c, obj, want, gvk)
	got, ok := c.defaultFrom(obj, base, gvk)
	if !ok {
		// Only objects of another kind (whose defaulting is not the
		// CRD's) go to the whole object's defaulting.
		own := (&unstructured.Unstructured{Object: obj}).GroupVersionKind()
		if own.GroupKind() == gvk.GroupKind() {
			t.Fatalf("no incremental defaulting of\n%s\nfrom\n%s", mustJSON(obj), mustJSON(base))
		}
		return want
	}
	if !valuetest.BitsEqual(got, want) {
		t.Fatalf("incremental defaulting of\n%s\nfrom\n%s\ngot  %s\nwant %s", mustJSON(obj), mustJSON(base), mustJSON(got), mustJSON(want))
	}
	frozen.Check(t, "the mutated object")
	frozenBase.Check(t, "the base")
	return got
}

// TestDefaultFromCustomResource holds CustomResources.defaultFrom equal to
// Default (upstream's structural defaulting of the whole object) on
// chains of random mutations of real custom resources whose schemas have
// defaults at every kind of place, each step starting from the previous
// step's incremental result, as successive policies do.
func TestDefaultFromCustomResource(t *testing.T) {
	c := newTestCRs(t)
	if err := c.Add(loadCRD(t, "gizmos.yaml")); err != nil {
		t.Fatal(err)
	}
	steps := 300
	if os.Getenv("MUTATIS_LONG") != "" { // make test-long
		steps = 3000
	}
	for _, cc := range crdCases {
		root := oracleStructural(t, cc.file, cc.gvk.Version)
		for i, s := range cc.objects {
			t.Run(fmt.Sprintf("%s/%d", cc.gvk.Kind, i), func(t *testing.T) {
				m := crdMutator{r: rand.New(rand.NewSource(int64(i))), root: root}
				seed, err := c.Default(obj(t, s), cc.gvk)
				if err != nil {
					t.Fatal(err)
				}
				base := seed
				for step := 0; step < steps; step++ {
					if step%20 == 0 {
						base = seed
					}
					base = checkCRDefaultFrom(t, c, m.mutate(base), base, cc.gvk)
				}
			})
		}
	}
}

// TestDefaultFromCustomResourceCases are the cases that tell the rules of
// structural defaulting apart, each through Scheme.DefaultFrom.
func TestDefaultFromCustomResourceCases(t *testing.T) {
	s := New()
	if err := s.AddCRD(loadCRD(t, "gizmos.yaml")); err != nil {
		t.Fatal(err)
	}
	base, err := s.Default(obj(t, gizmoFull), gizmoV1)
	if err != nil {
		t.Fatal(err)
	}
	spec := func(o map[string]any) map[string]any { return o["spec"].(map[string]any) }
	// with is base with spec field k set to v, sharing the rest; without
	// with k removed.
	with := func(k string, v any) map[string]any {
		out := cloneMap(base)
		sp := cloneMap(spec(base))
		sp[k] = v
		out["spec"] = sp
		return out
	}
	without := func(k string) map[string]any {
		out := with(k, nil)
		delete(spec(out), k)
		return out
	}
	for _, tc := range []struct {
		name string
		obj  map[string]any
		// same: the result is the mutated object itself.
		same bool
	}{
		{name: "a label", same: true, obj: func() map[string]any {
			out := cloneMap(base)
			md := cloneMap(base["metadata"].(map[string]any))
			md["labels"] = map[string]any{"new": "yes"}
			out["metadata"] = md
			return out
		}()},
		{name: "a field without default", same: true, obj: with("paused", false)},
		{name: "a removed field with a default", obj: without("replicas")},
		{name: "a removed object with a default, defaulted inside", obj: without("strategy")},
		{name: "a null where the schema does not allow it", obj: with("withDefault", nil)},
		{name: "a nullable null stays", same: true, obj: with("nullableWithDefault", nil)},
		{name: "a nullable object removed gets its default", obj: without("nullableObject")},
		{name: "a new list element", obj: with("ports", append(append([]any{}, spec(base)["ports"].([]any)...), map[string]any{"name": "new"}))},
		{name: "a new map entry", obj: with("routes", func() map[string]any {
			r := cloneMap(spec(base)["routes"].(map[string]any))
			r["d"] = map[string]any{}
			return r
		}())},
		{name: "a null map value with a default", obj: with("counters", map[string]any{"z": nil})},
		{name: "a null list item with a default", obj: with("words", []any{nil})},
		{name: "unknown fields under preserve-unknown-fields", same: true, obj: with("extra", func() map[string]any {
			e := cloneMap(spec(base)["extra"].(map[string]any))
			e["more"] = map[string]any{"mode": nil}
			return e
		}())},
		{name: "known fields under preserve-unknown-fields", obj: with("extra", map[string]any{"inner": map[string]any{}})},
		{name: "an embedded resource replaced", obj: with("template", map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "x"}})},
		{name: "int-or-string", same: true, obj: with("strategy", map[string]any{"type": "Rolling", "maxSurge": int64(1)})},
		{name: "the whole spec replaced by a deep copy", same: true, obj: func() map[string]any {
			out := cloneMap(base)
			out["spec"] = valuetest.DeepCopy(base["spec"])
			return out
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.obj
			got := checkCRDefaultFrom(t, s.crs, o, base, gizmoV1)
			viaScheme, err := s.DefaultFrom(o, base, gizmoV1)
			if err != nil || !valuetest.BitsEqual(viaScheme, got) {
				t.Fatalf("Scheme.DefaultFrom: %v %s", err, mustJSON(viaScheme))
			}
			if same := reflect.ValueOf(got).UnsafePointer() == reflect.ValueOf(o).UnsafePointer(); same != tc.same {
				t.Fatalf("result is the input: %v, want %v", same, tc.same)
			}
		})
	}
	// Another version's schema, or another kind: the whole object's
	// defaulting decides.
	for _, apiVersion := range []string{"example.com/v2", "example.com/v3"} {
		o := cloneMap(base)
		o["apiVersion"] = apiVersion
		if _, ok := s.crs.defaultFrom(o, base, gizmoV1); ok {
			t.Fatalf("%s: incremental", apiVersion)
		}
		want, err := s.Default(o, gizmoV1)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.DefaultFrom(o, base, gizmoV1); err != nil || !valuetest.BitsEqual(got, want) {
			t.Fatalf("%s: %v %s", apiVersion, err, mustJSON(got))
		}
	}
}

// FuzzCRDDefaultIncremental holds incremental structural defaulting equal
// to the whole object's from any object the whole object's defaulting
// accepts, mutated at random (the seed).
func FuzzCRDDefaultIncremental(f *testing.F) {
	for ci, cc := range crdCases {
		for _, s := range cc.objects {
			f.Add(s, uint8(ci), int64(1))
		}
	}
	f.Add(`{"apiVersion":"example.com/v1","kind":"Gizmo","spec":{"routes":{"a":null},"ports":[null,[]],"matrix":[[null]]}}`, uint8(0), int64(7))
	f.Add(`{"apiVersion":"example.com/v1","kind":"Gizmo","spec":[]}`, uint8(0), int64(3))
	c := newTestCRs(f)
	if err := c.Add(loadCRD(f, "gizmos.yaml")); err != nil {
		f.Fatal(err)
	}
	roots := make([]*structuralschema.Structural, len(crdCases))
	for i, cc := range crdCases {
		roots[i] = oracleStructural(f, cc.file, cc.gvk.Version)
	}
	f.Fuzz(func(t *testing.T, s string, which uint8, seed int64) {
		var in map[string]any
		if err := utiljson.Unmarshal([]byte(s), &in); err != nil || in == nil {
			return
		}
		cc := crdCases[int(which)%len(crdCases)]
		base, err := c.Default(in, cc.gvk)
		if err != nil {
			return
		}
		m := crdMutator{r: rand.New(rand.NewSource(seed)), root: roots[int(which)%len(crdCases)]}
		for step := 0; step < 8; step++ {
			obj := m.mutate(base)
			if _, err := c.Default(obj, cc.gvk); err != nil {
				return // upstream's Default panics (an object in place of a nil one): not ours to tell
			}
			base = checkCRDefaultFrom(t, c, obj, base, cc.gvk)
		}
	})
}

// gizmo is a Gizmo with n ports, routes and conditions, as a request
// brings it (before defaulting).
func gizmo(n int) map[string]any {
	ports, conds := make([]any, n), make([]any, n)
	routes := map[string]any{}
	for i := 0; i < n; i++ {
		ports[i] = map[string]any{"name": fmt.Sprintf("p%d", i), "port": int64(8000 + i)}
		routes[fmt.Sprintf("r%d", i)] = map[string]any{"backend": map[string]any{"service": fmt.Sprintf("svc-%d", i)}}
		conds[i] = map[string]any{"type": fmt.Sprintf("C%d", i)}
	}
	return map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gizmo",
		"metadata": map[string]any{"name": "g", "namespace": "shop", "labels": map[string]any{"app": "g"}},
		"spec": map[string]any{"ports": ports, "routes": routes, "words": []any{"a", "b"},
			"template": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "t"}}},
		"status": map[string]any{"conditions": conds},
	}
}

// BenchmarkCRDDefaultFrom compares the structural defaulting of a whole
// custom resource after a mutation (Default) with DefaultFrom's, for a
// label set and a nested field set on a defaulted Gizmo with 20 ports,
// routes and conditions; and the whole object's for a label set on the
// Gizmo as sent (mutation=first).
func BenchmarkCRDDefaultFrom(b *testing.B) {
	s := New()
	if err := s.AddCRD(loadCRD(b, "gizmos.yaml")); err != nil {
		b.Fatal(err)
	}
	base, err := s.Default(gizmo(20), gizmoV1)
	if err != nil {
		b.Fatal(err)
	}
	label := cloneMap(base)
	md := cloneMap(base["metadata"].(map[string]any))
	md["labels"] = map[string]any{"app": "g", "touched": "yes"}
	label["metadata"] = md
	nested := cloneMap(base)
	sp := cloneMap(base["spec"].(map[string]any))
	st := cloneMap(sp["strategy"].(map[string]any))
	st["type"] = "Recreate"
	sp["strategy"] = st
	nested["spec"] = sp
	// The first mutation of an admission: a label set on the Gizmo as
	// sent, undefaulted (every port and route takes its defaults: the
	// copies of copy on write). Only Default applies.
	first := gizmo(20)
	fmd := cloneMap(first["metadata"].(map[string]any))
	fmd["labels"] = map[string]any{"app": "g", "touched": "yes"}
	first["metadata"] = fmd
	b.Run("impl=whole/mutation=first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Default(first, gizmoV1); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, m := range []struct {
		name string
		obj  map[string]any
	}{{"label", label}, {"nested", nested}} {
		for _, impl := range []struct {
			name string
			f    func() (map[string]any, error)
		}{
			{"whole", func() (map[string]any, error) { return s.Default(m.obj, gizmoV1) }},
			{"incremental", func() (map[string]any, error) { return s.DefaultFrom(m.obj, base, gizmoV1) }},
		} {
			b.Run("impl="+impl.name+"/mutation="+m.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := impl.f(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// checkCRDefaultShared holds Default of obj (defaultShared, which writes
// nothing and shares what it leaves alone) equal to want, the reference's
// result (defaultReference, on a copy): the same value, obj itself when
// defaulting changes nothing, obj not written into (neither by Default nor
// by a second Default of the result, which shares with it), and every
// object of the result that equals obj's at the same path obj's very map
// (copy on write).
func checkCRDefaultShared(t testing.TB, c *CustomResources, obj, want map[string]any, gvk schema.GroupVersionKind) {
	t.Helper()
	frozen := valuetest.Freeze(obj)
	got, err := c.Default(obj, gvk)
	if err != nil {
		t.Fatalf("Default: %v", err)
	}
	if !valuetest.BitsEqual(got, want) {
		t.Fatalf("Default of\n%s\ngot  %s\nwant %s", mustJSON(obj), mustJSON(got), mustJSON(want))
	}
	if own := (&unstructured.Unstructured{Object: obj}).GroupVersionKind(); own.GroupKind() == gvk.GroupKind() {
		// (An object of another kind is the reference's, a copy.)
		if _, ok := c.lookup(gvk).defaultShared(obj); !ok {
			t.Fatalf("Default of\n%s\nfell back to the reference", mustJSON(obj))
		}
		if valuetest.BitsEqual(obj, want) && !jsonvalue.SameMap(got, obj) {
			t.Fatalf("Default changed nothing of\n%s\nbut copied it", mustJSON(obj))
		}
		checkShared(t, got, obj, "")
	}
	frozenGot := valuetest.Freeze(got)
	if _, err := c.Default(got, gvk); err != nil {
		t.Fatalf("Default again: %v", err)
	}
	frozenGot.Check(t, "the defaulted object")
	frozen.Check(t, "the defaulted object's input")
}

// checkShared fails where got, at path, equals in but is not in itself
// (an object, or a list, both non-empty, copied for nothing).
func checkShared(t testing.TB, got, in any, path string) {
	t.Helper()
	switch g := got.(type) {
	case map[string]any:
		i, ok := in.(map[string]any)
		if !ok || len(g) == 0 || len(i) == 0 {
			return
		}
		if valuetest.BitsEqual(g, i) {
			if !jsonvalue.SameMap(g, i) {
				t.Fatalf("%s: an unchanged object copied", path)
			}
			return
		}
		for k, v := range g {
			checkShared(t, v, i[k], path+"."+k)
		}
	case []any:
		i, ok := in.([]any)
		if !ok || len(g) == 0 || len(i) == 0 {
			return
		}
		if valuetest.BitsEqual(g, i) {
			if &g[0] != &i[0] {
				t.Fatalf("%s: an unchanged list copied", path)
			}
			return
		}
		for k := range g {
			if k < len(i) {
				checkShared(t, g[k], i[k], fmt.Sprintf("%s[%d]", path, k))
			}
		}
	}
}

// TestApplyIsDefault holds defaultTree.apply (the copy-on-write
// defaulting of Default without a base) equal to upstream's Default on a
// copy, on a schema with nullable and non-nullable items, additionalProperties
// and properties with defaults, nested and of the wrong type, and objects
// with nulls, absent fields and wrong types at each: the same value, the
// input not written into, the input itself when nothing changed.
func TestApplyIsDefault(t *testing.T) {
	str := func(nullable bool, dflt any) *structuralschema.Structural {
		return &structuralschema.Structural{Generic: structuralschema.Generic{Type: "string", Nullable: nullable, Default: structuralschema.JSON{Object: dflt}}}
	}
	obj := func(nullable bool, dflt any, props map[string]structuralschema.Structural) *structuralschema.Structural {
		return &structuralschema.Structural{Generic: structuralschema.Generic{Type: "object", Nullable: nullable, Default: structuralschema.JSON{Object: dflt}}, Properties: props}
	}
	inner := obj(false, map[string]any{}, map[string]structuralschema.Structural{"d": *str(false, "x"), "n": *str(true, "y")})
	nullableInner := obj(true, map[string]any{"d": "z"}, map[string]structuralschema.Structural{"d": *str(false, "x")})
	list := func(items *structuralschema.Structural) structuralschema.Structural {
		return structuralschema.Structural{Generic: structuralschema.Generic{Type: "array"}, Items: items}
	}
	addl := func(s *structuralschema.Structural) structuralschema.Structural {
		return structuralschema.Structural{Generic: structuralschema.Generic{Type: "object"}, AdditionalProperties: &structuralschema.StructuralOrBool{Structural: s}}
	}
	root := obj(false, nil, map[string]structuralschema.Structural{
		"items":         list(inner),
		"nullableItems": list(nullableInner),
		"strings":       list(str(false, "s")),
		"nullStrings":   list(str(true, "s")),
		"noDefault":     list(str(false, nil)),
		"map":           addl(inner),
		"nullableMap":   addl(nullableInner),
		"stringMap":     addl(str(false, "m")),
		"nullStringMap": addl(str(true, "m")),
		"inner":         *inner,
		"nullable":      *nullableInner,
		"plain":         *str(false, nil),
	})
	root.AdditionalProperties = &structuralschema.StructuralOrBool{Structural: str(false, "extra")}
	tree := newDefaultTree(root)
	for i, s := range []string{
		`{}`,
		`{"items":[null,{},{"d":null,"n":null},{"d":"a","n":"b"},3,[null]],"nullableItems":[null,{},{"d":null}],"strings":[null,"a"],"nullStrings":[null,"a"],"noDefault":[null]}`,
		`{"map":{"a":null,"b":{},"c":{"n":null}},"nullableMap":{"a":null,"b":{"d":null}},"stringMap":{"a":null,"b":"c"},"nullStringMap":{"a":null}}`,
		`{"inner":null,"nullable":null,"plain":null,"other":null,"more":"x"}`,
		`{"inner":{"d":"a","n":"b"},"nullable":{"d":"a"},"plain":"p","items":[{"d":"a","n":"b"}],"map":{"a":{"d":"a","n":"b"}}}`,
		`{"items":{"a":null},"map":[null,{}],"inner":[{}],"strings":"x","nullableMap":[null]}`,
	} {
		var in map[string]any
		if err := utiljson.Unmarshal([]byte(s), &in); err != nil {
			t.Fatal(err)
		}
		want := valuetest.DeepCopy(in).(map[string]any)
		structuraldefaulting.Default(want, root)
		frozen := valuetest.Freeze(in)
		got, changed := tree.apply(in, false)
		if !valuetest.BitsEqual(got, want) {
			t.Fatalf("%d: %s\ngot  %s\nwant %s", i, s, mustJSON(got), mustJSON(want))
		}
		if same := valuetest.BitsEqual(in, want); same == changed || (same && !jsonvalue.SameMap(got.(map[string]any), in)) {
			t.Fatalf("%d: changed %v, the same value %v", i, changed, same)
		}
		checkShared(t, got, in, "")
		frozen.Check(t, "the input")
	}
}

// widen returns a copy of v with up to 12 more fields in every object in
// it (scalars, nulls, objects, lists), so that every map defaulting copies
// has many keys, past a small map's 8 places too.
func widen(r *rand.Rand, v any, depth int) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[k] = widen(r, v, depth+1)
		}
		for i, n := 0, 1+r.Intn(12); i < n; i++ {
			k := fmt.Sprintf("wide%d", i)
			if _, ok := out[k]; ok {
				continue
			}
			switch r.Intn(5) {
			case 0:
				out[k] = int64(i)
			case 1:
				out[k] = fmt.Sprintf("v%d", i)
			case 2:
				out[k] = nil
			case 3:
				if depth < 3 {
					out[k] = widen(r, map[string]any{"inner": int64(i)}, depth+1)
				} else {
					out[k] = map[string]any{}
				}
			default:
				out[k] = []any{int64(i), map[string]any{"item": "x"}}
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = widen(r, v, depth+1)
		}
		return out
	}
	return v
}

// TestDefaultFromCustomResourceWide is TestDefaultFromCustomResource on
// the objects of crdCases with many more fields in every object
// (widen, apiVersion and kind kept): the maps defaulting copies hold
// every one of them, each step's result bit-equal to upstream's Default
// of the whole object.
func TestDefaultFromCustomResourceWide(t *testing.T) {
	c := newTestCRs(t)
	if err := c.Add(loadCRD(t, "gizmos.yaml")); err != nil {
		t.Fatal(err)
	}
	steps := 100
	if os.Getenv("MUTATIS_LONG") != "" { // make test-long
		steps = 1000
	}
	for _, cc := range crdCases {
		root := oracleStructural(t, cc.file, cc.gvk.Version)
		for i, s := range cc.objects {
			t.Run(fmt.Sprintf("%s/%d", cc.gvk.Kind, i), func(t *testing.T) {
				r := rand.New(rand.NewSource(int64(100 + i)))
				m := crdMutator{r: r, root: root}
				wide := widen(r, obj(t, s), 0).(map[string]any)
				for _, k := range []string{"apiVersion", "kind"} {
					delete(wide, k)
					if v, ok := obj(t, s)[k]; ok {
						wide[k] = v
					}
				}
				seed, err := c.Default(wide, cc.gvk)
				if err != nil {
					t.Fatal(err)
				}
				want, err := c.defaultReference(wide, cc.gvk)
				if err != nil {
					t.Fatal(err)
				}
				if !valuetest.BitsEqual(seed, want) {
					t.Fatalf("Default of\n%s\ngot  %s\nwant %s", mustJSON(wide), mustJSON(seed), mustJSON(want))
				}
				base := seed
				for step := 0; step < steps; step++ {
					if step%10 == 0 {
						base = seed
					}
					next := m.mutate(base)
					if step%3 == 0 {
						// New fields where the mutation wrote, too.
						next = widen(r, next, 0).(map[string]any)
						for _, k := range []string{"apiVersion", "kind"} {
							delete(next, k)
							if v, ok := base[k]; ok {
								next[k] = v
							}
						}
					}
					base = checkCRDefaultFrom(t, c, next, base, cc.gvk)
				}
			})
		}
	}
}

// TestStructuralDefaultsIsDefaults holds StructuralDefaults to Default:
// on the objects of crdCases and chains of random mutations of them (a
// version of their CRD, or another apiVersion or kind), upstream's
// structural defaulting with the schema StructuralDefaults gives is
// Default's result, bit for bit; it gives none for built-in kinds, for
// objects not of the CRD's group and kind, and for nil objects, which
// Default changes nothing of.
func TestStructuralDefaultsIsDefaults(t *testing.T) {
	s := New()
	for _, file := range []string{"gizmos.yaml", "widgets.yaml", "clusterthings.yaml"} {
		if err := s.AddCRD(loadCRD(t, file)); err != nil {
			t.Fatal(err)
		}
	}
	steps := valuetest.Sweep(600, 60)
	for _, cc := range crdCases {
		root := oracleStructural(t, cc.file, cc.gvk.Version)
		for i, text := range cc.objects {
			t.Run(fmt.Sprintf("%s/%d", cc.gvk.Kind, i), func(t *testing.T) {
				m := crdMutator{r: rand.New(rand.NewSource(int64(i))), root: root}
				o := obj(t, text)
				for step := 0; step < steps; step++ {
					if step%3 == 1 {
						o = m.mutate(o)
					}
					want, err := s.Default(o, cc.gvk)
					if err != nil {
						t.Fatal(err)
					}
					st := s.StructuralDefaults(o, cc.gvk)
					if st == nil {
						if !reflect.DeepEqual(want, o) {
							t.Fatalf("no schema, but Default changes\n%s\nto\n%s", mustJSON(o), mustJSON(want))
						}
					} else {
						got := runtime.DeepCopyJSON(o)
						structuraldefaulting.Default(got, st)
						if !valuetest.BitsEqual(got, want) {
							t.Fatalf("structural defaulting with StructuralDefaults' schema of\n%s\ngot  %s\nwant %s", mustJSON(o), mustJSON(got), mustJSON(want))
						}
					}
					// The next step's object: of another kind, of
					// another version, or back to the CRD's kind.
					switch step % 9 {
					case 3:
						o = runtime.DeepCopyJSON(o)
						o["kind"] = "Other"
					case 6:
						o = runtime.DeepCopyJSON(o)
						o["apiVersion"] = cc.gvk.Group + "/v2"
					case 4, 7:
						o = runtime.DeepCopyJSON(o)
						o["apiVersion"], o["kind"] = cc.gvk.GroupVersion().String(), cc.gvk.Kind
					}
				}
			})
		}
	}
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	if st := s.StructuralDefaults(map[string]any{"apiVersion": "v1", "kind": "Pod"}, pod); st != nil {
		t.Error("a schema for a built-in kind")
	}
	if st := s.StructuralDefaults(nil, gizmoV1); st != nil {
		t.Error("a schema for a nil object")
	}
	if st := (*Scheme)(nil).StructuralDefaults(obj(t, gizmoFull), gizmoV1); st != nil {
		t.Error("a schema from a nil Scheme")
	}
}
