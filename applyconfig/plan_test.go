package applyconfig

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// planTestSchema is a schema with what the kinds of the other tests do not
// all have: recursion (a JSONSchemaProps-like type), element relationship
// overrides on named and inlined references (maps, lists, a type with both,
// a scalar, which does not resolve), a missing type, the untyped types, a
// field declared twice, keyed lists with defaulted keys, with more keys than
// listKeys models and with a scalar element.
const planTestSchema = `
types:
- name: root
  map:
    fields:
    - name: apiVersion
      type: {scalar: string}
    - name: kind
      type: {scalar: string}
    - name: schema
      type: {namedType: props}
    - name: atomicProps
      type: {namedType: props, elementRelationship: atomic}
    - name: atomicStruct
      type: {namedType: atomicStruct}
    - name: separableStruct
      type: {namedType: atomicStruct, elementRelationship: separable}
    - name: keyed
      type: {namedType: keyedList}
    - name: keyedAtomic
      type: {namedType: keyedList, elementRelationship: atomic}
    - name: setFromAtomic
      type: {namedType: atomicSet, elementRelationship: associative}
    - name: atomicSet
      type: {namedType: atomicSet}
    - name: both
      type: {namedType: mapAndList}
    - name: bothAtomic
      type: {namedType: mapAndList, elementRelationship: atomic}
    - name: scalarOverride
      type: {namedType: str, elementRelationship: atomic}
    - name: missing
      type: {namedType: nosuchtype}
    - name: untyped
      type: {namedType: __untyped_atomic_}
    - name: deduced
      type: {namedType: __untyped_deduced_}
    - name: manyKeys
      type:
        list:
          elementType: {namedType: fiveKeys}
          elementRelationship: associative
          keys: [a, b, c, d, e]
    - name: scalarKeyed
      type:
        list:
          elementType: {scalar: string}
          elementRelationship: associative
          keys: [name]
    - name: inlineAtomic
      type:
        map:
          elementType: {scalar: numeric}
        elementRelationship: atomic
    - name: inlineList
      type:
        list:
          elementType: {scalar: numeric}
          elementRelationship: atomic
        elementRelationship: associative
    - name: dup
      type: {scalar: string}
    - name: bools
      type:
        list:
          elementType: {scalar: boolean}
          elementRelationship: associative
    - name: ports
      type:
        list:
          elementType: {namedType: port}
          elementRelationship: associative
          keys: [containerPort, protocol]
    - name: granular
      type:
        map:
          elementType: {namedType: props}
- name: props
  map:
    fields:
    - name: type
      type: {scalar: string}
    - name: properties
      type:
        map:
          elementType: {namedType: props}
    - name: items
      type: {namedType: props}
    - name: allOf
      type:
        list:
          elementType: {namedType: props}
          elementRelationship: atomic
    - name: named
      type:
        list:
          elementType: {namedType: props}
          elementRelationship: associative
          keys: [type]
    - name: required
      type:
        list:
          elementType: {scalar: string}
          elementRelationship: associative
    - name: default
      type: {namedType: __untyped_atomic_}
    - name: extensions
      type: {namedType: __untyped_deduced_}
- name: atomicStruct
  map:
    fields:
    - name: a
      type: {scalar: string}
    - name: b
      type: {namedType: atomicStruct}
    elementRelationship: atomic
- name: keyedList
  list:
    elementType: {namedType: port}
    elementRelationship: associative
    keys: [name]
- name: atomicSet
  list:
    elementType: {scalar: string}
    elementRelationship: atomic
- name: mapAndList
  map:
    fields:
    - name: name
      type: {scalar: string}
    elementType: {scalar: string}
  list:
    elementType: {namedType: port}
    elementRelationship: associative
    keys: [name]
- name: str
  scalar: string
- name: port
  map:
    fields:
    - name: name
      type: {scalar: string}
    - name: containerPort
      type: {scalar: numeric}
    - name: protocol
      type: {scalar: string}
      default: TCP
    - name: tags
      type:
        list:
          elementType: {scalar: string}
          elementRelationship: associative
- name: fiveKeys
  map:
    fields:
    - {name: a, type: {scalar: string}}
    - {name: b, type: {scalar: string}}
    - {name: c, type: {scalar: string}}
    - {name: d, type: {scalar: string}}
    - {name: e, type: {scalar: string}}
- name: __untyped_atomic_
  scalar: untyped
  list:
    elementType: {namedType: __untyped_atomic_}
    elementRelationship: atomic
  map:
    elementType: {namedType: __untyped_atomic_}
    elementRelationship: atomic
- name: __untyped_deduced_
  scalar: untyped
  list:
    elementType: {namedType: __untyped_atomic_}
    elementRelationship: atomic
  map:
    elementType: {namedType: __untyped_deduced_}
    elementRelationship: separable
`

func parsePlanTestSchema(t testing.TB) (*smdschema.Schema, smdschema.TypeRef) {
	t.Helper()
	p, err := typed.NewParser(planTestSchema)
	if err != nil {
		t.Fatal(err)
	}
	// A second field named dup, which the parser refuses but a schema
	// built in Go may have: FindField gives the last one.
	types := slices.Clone(p.Schema.Types)
	for i := range types {
		if types[i].Name == "root" {
			m := &smdschema.Map{
				Fields:      slices.Clone(types[i].Map.Fields),
				ElementType: types[i].Map.ElementType,
			}
			numeric := smdschema.Numeric
			m.Fields = append(m.Fields, smdschema.StructField{Name: "dup", Type: smdschema.TypeRef{Inlined: smdschema.Atom{Scalar: &numeric}}})
			types[i].Map = m
		}
	}
	name := "root"
	return &smdschema.Schema{Types: types}, smdschema.TypeRef{NamedType: &name}
}

// planKind is the schema and type of one kind for the plan tests.
type planKind struct {
	name string
	s    *smdschema.Schema
	tr   smdschema.TypeRef
}

func planKinds(t testing.TB) []planKind {
	t.Helper()
	reg := sharedSchemas(t)
	var kinds []planKind
	for _, gvk := range []schema.GroupVersionKind{deploymentGVK, podGVK, configMapGVK, widgetGVK} {
		m, err := reg.Merger(gvk)
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, planKind{gvk.Kind, m.root.s, m.root.tr})
	}
	s, tr := parsePlanTestSchema(t)
	return append(kinds, planKind{"recursive", s, tr})
}

// TestPlanIsResolve compiles every type of every test schema (the whole
// built-in schema, the widgets CRD's, the recursive one) and compares each
// compiled type with what Schema.Resolve and Map.FindField give for it.
func TestPlanIsResolve(t *testing.T) {
	for _, k := range planKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			root := newPlan(k.s, k.tr)
			p := root.plan
			// Reference every named type, with and without the overrides,
			// so that the whole schema is compiled.
			p.mu.Lock()
			for _, td := range k.s.Types {
				name := td.Name
				p.ref(smdschema.TypeRef{NamedType: &name})
				for _, rel := range []smdschema.ElementRelationship{smdschema.Atomic, smdschema.Associative, smdschema.Separable} {
					p.ref(smdschema.TypeRef{NamedType: &name, ElementRelationship: &rel})
				}
			}
			queue := []*ptype{root}
			for _, pt := range p.types {
				queue = append(queue, pt)
			}
			p.mu.Unlock()
			seen := map[*ptype]bool{}
			for len(queue) > 0 {
				pt := queue[0].get()
				queue = queue[1:]
				if seen[pt] {
					continue
				}
				seen[pt] = true
				comparePlanWithResolve(t, k.s, pt)
				if pt.m != nil {
					queue = append(queue, pt.m.elem)
					for _, f := range pt.m.fields.All() {
						queue = append(queue, f)
					}
				}
				if pt.l != nil {
					queue = append(queue, pt.l.elem)
				}
			}
			p.mu.Lock()
			n := len(p.types)
			p.mu.Unlock()
			if len(seen) != n {
				for k, pt := range p.types {
					if !seen[pt] {
						t.Logf("not compiled: %+v", k)
					}
				}
				t.Errorf("%d types referenced, %d compiled", n, len(seen))
			}
			t.Logf("%d types compiled", len(seen))
		})
	}
}

func comparePlanWithResolve(t *testing.T, s *smdschema.Schema, pt *ptype) {
	t.Helper()
	a, ok := s.Resolve(pt.tr)
	name := "inlined"
	if pt.tr.NamedType != nil {
		name = *pt.tr.NamedType
	}
	if pt.tr.ElementRelationship != nil {
		name += " as " + string(*pt.tr.ElementRelationship)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: %s", name, fmt.Sprintf(format, args...))
	}
	if pt.ok != ok {
		fail("ok = %v, Resolve says %v", pt.ok, ok)
	}
	for _, v := range []any{"s", true, int64(1), 1.5} {
		want := a.Scalar != nil && validScalar(*a.Scalar, v)
		if got := pt.scalar&acceptsFor(v) != 0; got != want {
			fail("scalar %v accepted: %v, want %v", v, got, want)
		}
	}
	if (pt.scalar != 0) != (a.Scalar != nil) {
		fail("scalar = %b, Resolve says %v", pt.scalar, a.Scalar)
	}
	if (pt.m != nil) != (a.Map != nil) {
		fail("map = %v, Resolve says %v", pt.m, a.Map)
	}
	if a.Map != nil {
		m := pt.m
		if m.atomic != (a.Map.ElementRelationship == smdschema.Atomic) {
			fail("map atomic = %v, relationship %q", m.atomic, a.Map.ElementRelationship)
		}
		if m.elemZero != (a.Map.ElementType == smdschema.TypeRef{}) || !sameResolution(m.elem.tr, a.Map.ElementType) {
			fail("map element type differs")
		}
		names := map[string]bool{}
		for _, f := range a.Map.Fields {
			names[f.Name] = true
			sf, _ := a.Map.FindField(f.Name)
			ft, ok := m.fields.Get(f.Name)
			if !ok || !sameResolution(ft.tr, sf.Type) || ft.plan != pt.plan {
				fail("field %q differs", f.Name)
			}
		}
		if len(names) != m.fields.Len() {
			fail("%d fields, want %d", m.fields.Len(), len(names))
		}
	}
	if (pt.l != nil) != (a.List != nil) {
		fail("list = %v, Resolve says %v", pt.l, a.List)
	}
	if a.List != nil {
		l := pt.l
		if l.atomic != (a.List.ElementRelationship == smdschema.Atomic) || l.associative != (a.List.ElementRelationship == smdschema.Associative) {
			fail("list relationship differs: %q", a.List.ElementRelationship)
		}
		if !sameResolution(l.elem.tr, a.List.ElementType) || l.elem.plan != pt.plan {
			fail("list element type differs")
		}
		if !reflect.DeepEqual(l.keys, a.List.Keys) {
			fail("keys %v, want %v", l.keys, a.List.Keys)
		}
		var elem *smdschema.Map
		if ea, ok := s.Resolve(a.List.ElementType); ok {
			elem = ea.Map
		}
		wantOK := len(a.List.Keys) > 0 && len(a.List.Keys) <= len(itemKey{}.vals) && elem != nil
		if l.keysOK != wantOK {
			fail("keysOK = %v, want %v", l.keysOK, wantOK)
		}
		if wantOK {
			for j, name := range a.List.Keys {
				sf, _ := elem.FindField(name)
				if !reflect.DeepEqual(l.keyDefaults[j], sf.Default) {
					fail("key %q default %v, want %v", name, l.keyDefaults[j], sf.Default)
				}
			}
		}
	}
}

func acceptsFor(v any) scalarKinds {
	switch v.(type) {
	case string:
		return acceptsString
	case bool:
		return acceptsBool
	}
	return acceptsNumber
}

// TestPlanWalksAsSchema runs validValue, mergeValues and findAtomics over
// plans and the reference implementation over the schema (planref_test.go)
// on the merge cases' objects and patches and random perturbations of them,
// for every kind, and on random values of the recursive schema, and
// requires the same answers.
func TestPlanWalksAsSchema(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	n := valuetest.Sweep(4000, 400)         // make test-long: the full sweep
	corpus := map[string][]map[string]any{} // kind -> objects and patches
	for _, c := range mergeCases() {
		live := fromYAML(t, c.live)
		kind := (&unstructured.Unstructured{Object: live}).GetKind()
		corpus[kind] = append(corpus[kind], live, fromYAML(t, c.patch))
	}
	for _, k := range planKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			pt := newPlan(k.s, k.tr)
			values := corpus[k.name]
			if k.name == "recursive" {
				for range 50 {
					values = append(values, genObject(rng, k.s, k.tr))
				}
			}
			if len(values) == 0 {
				t.Fatalf("no values of kind %s", k.name)
			}
			checks, valid, merged := 0, 0, 0
			check := func(lhs, rhs map[string]any) {
				t.Helper()
				v, m := comparePlanWalks(t, k.s, k.tr, pt, lhs, rhs)
				checks++
				if v {
					valid++
				}
				if m {
					merged++
				}
			}
			for _, l := range values {
				for _, r := range values {
					check(l, r)
				}
			}
			for range n {
				l := values[rng.IntN(len(values))]
				r := values[rng.IntN(len(values))]
				bl, br := l, r
				switch rng.IntN(4) {
				case 0:
					l = perturb(rng, l).(map[string]any)
				case 1:
					r = perturb(rng, r).(map[string]any)
				case 2:
					l, r = perturb(rng, l).(map[string]any), perturb(rng, r).(map[string]any)
				default:
					if k.name == "recursive" {
						l, r = genObject(rng, k.s, k.tr), genObject(rng, k.s, k.tr)
					}
				}
				check(l, r)
				// Each value beside its unperturbed original, which shares
				// what perturb left, and beside the other value.
				checkBeside(t, pt, l, bl)
				checkBeside(t, pt, r, br)
				checkBeside(t, pt, l, r)
			}
			t.Logf("%d pairs: both valid in %d, merged in %d", checks, valid, merged)
			if merged*10 < checks {
				t.Errorf("only %d merges of %d pairs: the comparison is weak", merged, checks)
			}
		})
	}
}

// checkBeside holds validBeside(pt, v, ref) to validValue(pt, v, true)
// when ref validates.
func checkBeside(t *testing.T, pt *ptype, v, ref map[string]any) {
	t.Helper()
	if !validValue(pt, ref, true) {
		return
	}
	if got, want := validBeside(pt, v, ref), validValue(pt, v, true); got != want {
		t.Fatalf("validBeside = %v, validValue %v: %#v\nbeside %#v", got, want, v, ref)
	}
}

// comparePlanWalks compares the plan's and the reference's answers for the
// validation of lhs and rhs, their merge, and the atomics of rhs. It
// reports whether both validate (with duplicates allowed) and whether they
// merge.
func comparePlanWalks(t *testing.T, s *smdschema.Schema, tr smdschema.TypeRef, pt *ptype, lhs, rhs map[string]any) (valid, merged bool) {
	t.Helper()
	valid = true
	for _, v := range []map[string]any{lhs, rhs} {
		for _, dup := range []bool{false, true} {
			got := validValue(pt, v, dup)
			if want := refValidValue(s, tr, v, dup); got != want {
				t.Fatalf("validValue(allowDuplicates=%v) = %v, reference %v: %#v", dup, got, want, v)
			}
			if dup && !got {
				valid = false
			}
		}
		if got, want := findAtomics(pt, v), refFindAtomics(s, tr, v); !reflect.DeepEqual(got, want) {
			t.Fatalf("findAtomics = %q, reference %q: %#v", got, want, v)
		}
	}
	got, gotOK := mergeValues(pt, lhs, rhs)
	want, wantOK := refMergeValues(s, tr, lhs, rhs)
	if gotOK != wantOK || !reflect.DeepEqual(got, want) {
		t.Fatalf("mergeValues = %v %#v\nreference %v %#v\nlhs %#v\nrhs %#v", gotOK, got, wantOK, want, lhs, rhs)
	}
	return valid, gotOK
}

// genObject returns a random object of the type tr of s.
func genObject(rng *rand.Rand, s *smdschema.Schema, tr smdschema.TypeRef) map[string]any {
	for {
		if m, ok := genValue(rng, s, tr, 0).(map[string]any); ok {
			return m
		}
	}
}

// genValue returns a random value of the type tr of s, with a random
// change at times and small domains for keys so that lists get duplicates.
func genValue(rng *rand.Rand, s *smdschema.Schema, tr smdschema.TypeRef, depth int) any {
	a, ok := s.Resolve(tr)
	if !ok || rng.IntN(30) == 0 {
		return leaf(rng)
	}
	var choices []func() any
	if a.Scalar != nil {
		choices = append(choices, func() any {
			switch *a.Scalar {
			case smdschema.Numeric:
				return int64(rng.IntN(3))
			case smdschema.Boolean:
				return rng.IntN(2) == 0
			}
			return []string{"a", "b", "TCP"}[rng.IntN(3)]
		})
	}
	if a.Map != nil && depth < 5 {
		choices = append(choices, func() any {
			m := map[string]any{}
			for _, f := range a.Map.Fields {
				if rng.IntN(max(3, len(a.Map.Fields)/2)) == 0 {
					m[f.Name] = genValue(rng, s, f.Type, depth+1)
				}
			}
			if (a.Map.ElementType != smdschema.TypeRef{}) || rng.IntN(30) == 0 {
				for range rng.IntN(3) {
					m[[]string{"x", "y", "type"}[rng.IntN(3)]] = genValue(rng, s, a.Map.ElementType, depth+1)
				}
			}
			return m
		})
	}
	if a.List != nil && depth < 5 {
		choices = append(choices, func() any {
			var l []any
			for range rng.IntN(4) {
				l = append(l, genValue(rng, s, a.List.ElementType, depth+1))
			}
			return l
		})
	}
	if len(choices) == 0 {
		return map[string]any{}
	}
	return choices[rng.IntN(len(choices))]()
}

// TestPlanConcurrentCompilation walks one fresh plan from several
// goroutines at once (for the race detector) and checks their answers.
func TestPlanConcurrentCompilation(t *testing.T) {
	for _, k := range planKinds(t) {
		pt := newPlan(k.s, k.tr)
		rng := rand.New(rand.NewPCG(7, 7))
		var values []map[string]any
		for _, c := range mergeCases() {
			live := fromYAML(t, c.live)
			if (&unstructured.Unstructured{Object: live}).GetKind() == k.name {
				values = append(values, live, fromYAML(t, c.patch))
			}
		}
		for range 20 {
			values = append(values, genObject(rng, k.s, k.tr))
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range values {
					l, r := values[(i+g)%len(values)], values[(i*3+g)%len(values)]
					if validValue(pt, l, true) != refValidValue(k.s, k.tr, l, true) {
						t.Errorf("%s: validValue differs", k.name)
					}
					got, gotOK := mergeValues(pt, l, r)
					want, wantOK := refMergeValues(k.s, k.tr, l, r)
					if gotOK != wantOK || !reflect.DeepEqual(got, want) {
						t.Errorf("%s: mergeValues differs", k.name)
					}
					if !reflect.DeepEqual(findAtomics(pt, r), refFindAtomics(k.s, k.tr, r)) {
						t.Errorf("%s: findAtomics differs", k.name)
					}
				}
			})
		}
		wg.Wait()
	}
}

// TestPlanOverrides pins the element relationship overrides of
// Schema.Resolve in the recursive schema: the map of a type with both a map
// and a list takes the override and its list does not, a scalar with one
// does not resolve, and neither does a missing type.
func TestPlanOverrides(t *testing.T) {
	s, tr := parsePlanTestSchema(t)
	root := newPlan(s, tr).get()
	field := func(name string) *ptype { return fieldOf(root.m, name).get() }
	if f := field("atomicProps"); !f.m.atomic || field("schema").m.atomic {
		t.Error("atomicProps: the override is not applied, or applied to props itself")
	}
	if f := field("separableStruct"); f.m.atomic || !field("atomicStruct").m.atomic {
		t.Error("separableStruct: the override is not applied, or applied to atomicStruct itself")
	}
	if f := field("keyedAtomic"); !f.l.atomic || f.l.associative || !field("keyed").l.associative {
		t.Error("keyedAtomic: wrong relationship")
	}
	if f := field("setFromAtomic"); !f.l.associative || !field("atomicSet").l.atomic {
		t.Error("setFromAtomic: wrong relationship")
	}
	if f := field("bothAtomic"); !f.m.atomic || !f.l.associative || field("both").m.atomic {
		t.Error("bothAtomic: only the map takes the override")
	}
	if f := field("inlineAtomic"); !f.m.atomic {
		t.Error("inlineAtomic: the override is not applied")
	}
	if f := field("inlineList"); !f.l.associative {
		t.Error("inlineList: the override is not applied")
	}
	for _, name := range []string{"scalarOverride", "missing"} {
		if f := field(name); f.ok || f.scalar != 0 || f.m != nil || f.l != nil {
			t.Errorf("%s resolves", name)
		}
	}
	if f := field("dup"); f.scalar&acceptsNumber == 0 || f.scalar&acceptsString != 0 {
		t.Error("dup: the last field of a name does not win")
	}
	if f := field("manyKeys"); f.l.keysOK {
		t.Error("manyKeys: five keys modelled")
	}
	if f := field("scalarKeyed"); f.l.keysOK {
		t.Error("scalarKeyed: keys of a scalar element modelled")
	}
	if f := field("ports"); !f.l.keysOK || !reflect.DeepEqual(f.l.keyDefaults, []any{nil, "TCP"}) {
		t.Errorf("ports: keys %v %v", f.l.keysOK, f.l.keyDefaults)
	}
	// The recursion closes: props' items is props.
	props := field("schema")
	if fieldOf(props.m, "items").get() != props || fieldOf(props.m, "properties").get().m.elem.get() != props {
		t.Error("props is not memoized")
	}
}

// TestPlanOfPatchReusesRoot: the slow path's findAtomics uses the root's
// plan for the patch's typed value when it is the same type.
func TestPlanOfPatchReusesRoot(t *testing.T) {
	reg := sharedSchemas(t)
	m, err := reg.Merger(podGVK)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(fromYAML(t, livePod))}
	tv, err := m.tc.ObjectToTyped(u)
	if err != nil {
		t.Fatal(err)
	}
	if m.root.planOf(tv.Schema(), tv.TypeRef()) != m.root.plan {
		t.Error("a new plan for the root's own type")
	}
	d, err := reg.Merger(deploymentGVK)
	if err != nil {
		t.Fatal(err)
	}
	if p := d.root.planOf(tv.Schema(), tv.TypeRef()); p == d.root.plan || !sameResolution(p.tr, tv.TypeRef()) {
		t.Error("the Deployment plan for a Pod")
	}
	var nilRoot *rootType
	if p := nilRoot.planOf(tv.Schema(), tv.TypeRef()); p == nil || p.plan.s != tv.Schema() {
		t.Error("no plan without a root")
	}
}

// BenchmarkPlanWalks compares the walks over a plan with the reference
// walks over the schema: the validation of a live object, the merge of a
// patch into it, and findAtomics of the patch.
func BenchmarkPlanWalks(b *testing.B) {
	reg := sharedSchemas(b)
	for _, bc := range []struct {
		name, live, patch string
	}{
		{"deployment", liveDeployment, `{metadata: {labels: {team: a}}, spec: {template: {spec: {containers: [{name: app, env: [{name: C, value: "3"}]}]}}}}`},
		{"widget", liveWidget, `{spec: {ports: [{name: https, protocol: TCP, port: 443}], settings: {s2: v2}}}`},
		{"widget-5000", liveWidget, `{metadata: {labels: {touched: "yes"}}, spec: {items: [{name: item-00042, value: patched}]}}`},
	} {
		live, patch := fromYAML(b, bc.live), fromYAML(b, bc.patch)
		if bc.name == "widget-5000" {
			items := make([]any, 5000)
			for i := range items {
				items[i] = map[string]any{"name": fmt.Sprintf("item-%05d", i), "value": "v", "tags": []any{"x", "y"}}
			}
			live["spec"].(map[string]any)["items"] = items
		}
		m, err := reg.Merger((&unstructured.Unstructured{Object: live}).GroupVersionKind())
		if err != nil {
			b.Fatal(err)
		}
		s, tr, pt := m.root.s, m.root.tr, m.root.plan
		if !validValue(pt, live, true) || !validValue(pt, patch, false) {
			b.Fatal("not valid")
		}
		if _, ok := mergeValues(pt, live, patch); !ok {
			b.Fatal("not merged")
		}
		b.Run(bc.name+"/validate/plan", func(b *testing.B) {
			for b.Loop() {
				validValue(pt, live, true)
			}
		})
		b.Run(bc.name+"/validate/reference", func(b *testing.B) {
			for b.Loop() {
				refValidValue(s, tr, live, true)
			}
		})
		b.Run(bc.name+"/merge/plan", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mergeValues(pt, live, patch)
			}
		})
		// A fresh patch for every merge: its copy is in both figures.
		b.Run(bc.name+"/merge-copied/plan", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mergeValues(pt, live, runtime.DeepCopyJSON(patch))
			}
		})
		b.Run(bc.name+"/merge-copied/fresh", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mergeFresh(pt, live, runtime.DeepCopyJSON(patch))
			}
		})
		b.Run(bc.name+"/merge/reference", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				refMergeValues(s, tr, live, patch)
			}
		})
		b.Run(bc.name+"/atomics/plan", func(b *testing.B) {
			for b.Loop() {
				findAtomics(pt, patch)
			}
		})
		b.Run(bc.name+"/atomics/reference", func(b *testing.B) {
			for b.Loop() {
				refFindAtomics(s, tr, patch)
			}
		})
	}
}

func TestCopyWithRoom(t *testing.T) {
	for _, n := range []int{0, 1, 5, 8, 9, 40} {
		for _, extra := range []int{0, 1, 3} {
			m := map[string]any{}
			for i := range n {
				m[fmt.Sprint(i)] = i
			}
			c := copyWithRoom(m, extra)
			if !reflect.DeepEqual(c, m) {
				t.Fatalf("n=%d extra=%d: %v", n, extra, c)
			}
			c["new"] = true
			if _, ok := m["new"]; ok {
				t.Fatal("the copy shares its table")
			}
		}
	}
	if c := copyWithRoom(nil, 1); c == nil {
		t.Fatal("nil copies to nil")
	}
	// A typed nil map meeting a map merges like an empty one.
	s, tr := parsePlanTestSchema(t)
	live := map[string]any{"granular": map[string]any(nil)}
	patch := map[string]any{"granular": map[string]any{"a": map[string]any{"type": "x"}}}
	got, gotOK := mergeValues(newPlan(s, tr), live, patch)
	want, wantOK := refMergeValues(s, tr, live, patch)
	if !gotOK || !wantOK || !reflect.DeepEqual(got, want) {
		t.Fatalf("merge into a nil map: %v %#v, reference %v %#v", gotOK, got, wantOK, want)
	}
}

// fieldOf is the type of m's field name, nil when there is none.
func fieldOf(m *pmap, name string) *ptype {
	ft, _ := m.fields.Get(name)
	return ft
}

// TestMergeOfWhatIsThereIsLive holds that a patch setting only what the
// object already holds merges to the object itself (and a list whose
// items all merge to themselves to the list itself), so that what comes
// after the merge sees an unchanged object; and that a patch changing one
// value gives a new map along that path alone, the object untouched, the
// same value as structured-merge-diff.
func TestMergeOfWhatIsThereIsLive(t *testing.T) {
	reg := sharedSchemas(t)
	for _, tc := range []struct {
		name, patch string
		same        bool
	}{
		{"a label it has", `{metadata: {labels: {app: web}}}`, true},
		{"a container's image it has", `{spec: {template: {spec: {containers: [{name: app, image: "nginx:1"}]}}}}`, true},
		{"the replicas it has", `{spec: {replicas: 1}}`, true},
		{"a new label", `{metadata: {labels: {team: a}}}`, false},
		{"a label changed", `{metadata: {labels: {app: api}}}`, false},
		{"another image", `{spec: {template: {spec: {containers: [{name: app, image: "nginx:2"}]}}}}`, false},
		{"a new container", `{spec: {template: {spec: {containers: [{name: side, image: busybox}]}}}}`, false},
		{"the replicas as another number", `{spec: {replicas: 4}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live, patch := fromYAML(t, liveDeployment), fromYAML(t, tc.patch)
			before := valuetest.Freeze(live)
			m, err := reg.Merger((&unstructured.Unstructured{Object: live}).GroupVersionKind())
			if err != nil {
				t.Fatal(err)
			}
			got, ok := mergeValues(m.root.plan, live, patch)
			if !ok {
				t.Fatal("not merged by the fast path")
			}
			before.Check(t, "the object merged into")
			want, wantOK := refMergeValues(m.root.s, m.root.tr, live, patch)
			if !wantOK || !reflect.DeepEqual(got, want) {
				t.Fatalf("merged %#v, structured-merge-diff %v %#v", got, wantOK, want)
			}
			gm, _ := got.(map[string]any)
			if same := jsonvalue.SameMap(gm, live); same != tc.same {
				t.Errorf("the merge is the object itself: %v, want %v", same, tc.same)
			}
			for k, v := range live {
				if lm, isMap := v.(map[string]any); isMap && patch[k] == nil && !jsonvalue.SameMap(gm[k].(map[string]any), lm) {
					t.Errorf("%s, which the patch does not touch, is not shared", k)
				}
			}
		})
	}
	// A float merged as -0 over 0 is a change: JSON writes them apart.
	if !sameMerged(0.0, 0.0) || sameMerged(0.0, math.Copysign(0, -1)) || sameMerged(int64(1), 1.0) || !sameMerged(nil, nil) {
		t.Error("sameMerged: 0 and -0, or 1 and 1.0, taken as the same value")
	}
}

// TestValidAtomicsIsBoth holds validAtomics, the merge's one walk of a
// patch, to validValue (duplicates refused) and findAtomics, its two
// walks: the same validity and, for a valid value, the same atomics in the
// same order, on the merge cases' objects and patches of every kind,
// random perturbations of them (which put values of every JSON kind at
// every place, atomic ones included) and random values of the recursive
// schema.
func TestValidAtomicsIsBoth(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 29))
	n := valuetest.Sweep(6000, 600) // make test-long: the full sweep
	corpus := map[string][]map[string]any{}
	for _, c := range mergeCases() {
		live := fromYAML(t, c.live)
		kind := (&unstructured.Unstructured{Object: live}).GetKind()
		corpus[kind] = append(corpus[kind], live, fromYAML(t, c.patch))
	}
	valid, withAtomics, several := 0, 0, 0
	for _, k := range planKinds(t) {
		pt := newPlan(k.s, k.tr)
		values := corpus[k.name]
		if k.name == "recursive" {
			for range 50 {
				values = append(values, genObject(rng, k.s, k.tr))
			}
		}
		check := func(v map[string]any) {
			t.Helper()
			got, gotOK := validAtomics(pt, v)
			wantOK := validValue(pt, v, false)
			if gotOK != wantOK {
				t.Fatalf("%s: validAtomics valid = %v, validValue %v: %#v", k.name, gotOK, wantOK, v)
			}
			if !gotOK {
				if got != nil {
					t.Fatalf("%s: atomics %q of an invalid value", k.name, got)
				}
				return
			}
			valid++
			if want := findAtomics(pt, v); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: validAtomics = %q, findAtomics %q: %#v", k.name, got, want, v)
			}
			if len(got) > 0 {
				withAtomics++
			}
			if len(got) > 1 {
				several++
			}
		}
		for _, v := range values {
			check(v)
		}
		for range n / len(planKinds(t)) {
			v := values[rng.IntN(len(values))]
			for range 1 + rng.IntN(3) {
				v = perturb(rng, v).(map[string]any)
			}
			check(v)
		}
	}
	t.Logf("%d valid values, %d with atomics, %d with several", valid, withAtomics, several)
	if withAtomics == 0 || several == 0 {
		t.Errorf("no value with atomics (%d) or with several (%d): the comparison is weak", withAtomics, several)
	}
}
