package scheme

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/randfill"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// inertProbe is what the probe of one kind works on: its defaulted
// objects (real ones and randomly filled ones, each a fixed point of
// defaulting), and the randomly filled objects whose fields are set into
// them.
type inertProbe struct {
	s     *Scheme
	gvk   schema.GroupVersionKind
	bases []map[string]any
	fills []map[string]any
	// deep are the deep fills (also in fills).
	deep []map[string]any
}

// kindGVKs are the external built-in kinds of kube-apiserver's scheme,
// sorted.
func kindGVKs(t testing.TB, s *Scheme) []schema.GroupVersionKind {
	ks, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	var gvks []schema.GroupVersionKind
	for gvk := range ks.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || !s.Recognizes(gvk) {
			continue
		}
		gvks = append(gvks, gvk)
	}
	sort.Slice(gvks, func(i, j int) bool { return gvks[i].String() < gvks[j].String() })
	return gvks
}

// randomObjects are n randomly filled objects of kind gvk (seeded by
// seed), in typed form.
func randomObjects(t testing.TB, gvk schema.GroupVersionKind, seed int64, n int) []map[string]any {
	ks, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for i := range n {
		nilChance := 0.3
		if i%2 == 1 {
			nilChance = 0.8 // sparse objects, which the defaulters fill
		}
		f := randfill.NewWithSeed(seed*1000+int64(i)).NilChance(nilChance).NumElements(0, 2).MaxDepth(8).Funcs(fillFuncs...).Funcs(inertFillFuncs...)
		obj, err := ks.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		f.Fill(obj)
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			continue // random bytes where JSON goes
		}
		u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
		out = append(out, u)
	}
	return out
}

// deepFillFuncs give the deep fills quantities that encode (their random
// internals do not) and valid raw JSON always.
var deepFillFuncs = []any{
	func(q *resource.Quantity, c randfill.Continue) {
		*q = resource.MustParse([]string{"0.0001", "1.0005"}[c.Intn(2)]) // sub-milli: what the defaulters round
	},
	func(r *runtime.RawExtension, c randfill.Continue) { r.Raw = []byte(`{"a":1}`) },
	func(r *metav1.FieldsV1, c randfill.Continue) { r.Raw = []byte(`{"f:a":{}}`) },
}

// inertFillFuncs give resource names the defaulters know.
var inertFillFuncs = []any{
	func(n *corev1.ResourceName, c randfill.Continue) {
		*n = []corev1.ResourceName{"cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "a"}[c.Intn(5)]
	},
}

// newInertProbe defaults objs (real objects of kind gvk) and fills
// randomly filled ones; ok is false when defaulting is not idempotent on
// one of them (the kind then gets no incremental defaulting).
func newInertProbe(t testing.TB, s *Scheme, gvk schema.GroupVersionKind, objs []map[string]any, seed int64, fills int) (p *inertProbe, ok bool) {
	ks, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	p = &inertProbe{s: s, gvk: gvk, fills: randomObjects(t, gvk, seed, fills)}
	for _, obj := range append(append([]map[string]any(nil), objs...), p.fills...) {
		d, err := s.defaultReference(valuetest.DeepCopy(obj).(map[string]any), gvk)
		if err != nil {
			return p, false
		}
		again, err := s.defaultReference(d, gvk)
		if err != nil || !jsonvalue.SameMap(again, d) {
			t.Logf("%v: defaulting is not idempotent", gvk)
			return p, false
		}
		p.bases = append(p.bases, d)
	}
	// Deep fills, set into the bases only: every pointer set, every list
	// and map of one element, as deep as the filler goes (its deepest
	// objects left empty, as defaulters find them).
	for i := range 2 {
		if !thoroughProbe() {
			break
		}
		obj, err := ks.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		if recursiveType(reflect.TypeOf(obj), nil) {
			break
		}
		f := randfill.NewWithSeed(seed*1000+500+int64(i)).NilChance(0).NumElements(1, 1).MaxDepth(12).Funcs(fillFuncs...).Funcs(inertFillFuncs...).Funcs(deepFillFuncs...)
		f.Fill(obj)
		if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err == nil {
			u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
			p.fills = append(p.fills, u)
			p.deep = append(p.deep, u)
		}
	}
	return p, len(p.bases) > 0
}

// thoroughProbe tells whether the probes run with deep fills and
// leaf-pruned values: when they write the tables (-update) and under
// MUTATIS_LONG. Without them, a probe finds the same fields inert or more
// (fewer values tried), which the tables' checks allow, in a time -race
// can afford.
func thoroughProbe() bool { return *update || os.Getenv("MUTATIS_LONG") != "" }

// recursiveType tells whether type t holds a value of its own type in its
// exported fields (through pointers, lists and maps), which the deep fills
// cannot fill.
func recursiveType(t reflect.Type, seen []reflect.Type) bool {
	for _, x := range seen {
		if x == t {
			return true
		}
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return recursiveType(t.Elem(), seen)
	case reflect.Map:
		return recursiveType(t.Key(), seen) || recursiveType(t.Elem(), seen)
	case reflect.Struct:
		seen = append(seen, t)
		for i := range t.NumField() {
			if sf := t.Field(i); sf.IsExported() && recursiveType(sf.Type, seen) {
				return true
			}
		}
	}
	return false
}

// inertCandidates are the paths the probe classifies for the kind of Go
// type typ: its top-level fields, and the fields of metadata and spec.
func inertCandidates(typ reflect.Type) []string {
	var out []string
	for _, f := range jsonFields(typ) {
		if f.name == "apiVersion" || f.name == "kind" {
			continue
		}
		out = append(out, f.name)
		if f.name != "metadata" && f.name != "spec" {
			continue
		}
		ft := f.typ
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() != reflect.Struct {
			continue
		}
		for _, g := range jsonFields(ft) {
			out = append(out, f.name+"."+g.name)
		}
	}
	return out
}

// pathValue is the value at path (a top-level field, or a dotted path of
// objects) of obj, and whether it is there.
func pathValue(obj map[string]any, path string) (any, bool) {
	parent, field, nested := strings.Cut(path, ".")
	if !nested {
		v, ok := obj[path]
		return v, ok
	}
	m, _ := obj[parent].(map[string]any)
	return pathValue(m, field)
}

// withPath is obj (unchanged) with path set to v, or removed when
// !present; ok is false when the parent of a nested path is not an
// object.
func withPath(obj map[string]any, path string, v any, present bool) (map[string]any, bool) {
	out := make(map[string]any, len(obj)+1)
	for k, x := range obj {
		out[k] = x
	}
	parent, field, nested := strings.Cut(path, ".")
	if nested {
		m, ok := obj[parent].(map[string]any)
		if !ok && obj[parent] != nil {
			return nil, false
		}
		sub, ok := withPath(m, field, v, present)
		if !ok {
			return nil, false
		}
		out[parent] = sub
		return out, true
	}
	if present {
		out[path] = v
	} else {
		delete(out, path)
	}
	return out, true
}

// unchanged tells whether defaulting (the reference) returns obj, in typed
// form, as it is.
func (p *inertProbe) unchanged(obj map[string]any) bool {
	obj, err := p.s.normalizeReference(obj, p.gvk)
	if err != nil {
		return true // no object a mutation can produce
	}
	out, err := p.s.defaultReference(obj, p.gvk)
	return err == nil && jsonvalue.SameMap(out, obj)
}

// pruned is v with each field of its objects, at every depth, dropped
// with probability 1/2.
func pruned(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range sortedKeys(x) {
			if r.IntN(2) == 0 {
				out[k] = pruned(r, x[k])
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = pruned(r, e)
		}
		return out
	}
	return v
}

// prunedLeaves is v with each field of its objects that is not an object
// or a list, at every depth, dropped with probability 1/2: deep
// structures whose scalars the defaulters fill.
func prunedLeaves(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range sortedKeys(x) {
			switch x[k].(type) {
			case map[string]any, []any:
				out[k] = prunedLeaves(r, x[k])
			default:
				if r.IntN(2) == 0 {
					out[k] = x[k]
				}
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = prunedLeaves(r, e)
		}
		return out
	}
	return v
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// classify is the class of path: each base with path removed, and set to
// each value the fills and the other bases hold there.
func (p *inertProbe) classify(path string) inertness {
	type value struct {
		v       any
		present bool
	}
	values := []value{{nil, false}}
	r := rand.New(rand.NewPCG(uint64(len(path)), uint64(len(p.bases))))
	for _, o := range p.fills {
		v, ok := pathValue(o, path)
		values = append(values, value{v, ok})
		if ok && v != nil {
			// Sparse variants: defaulters fill what is absent.
			for range 2 {
				values = append(values, value{pruned(r, v), true})
				if thoroughProbe() {
					values = append(values, value{prunedLeaves(r, v), true})
				}
			}
		}
	}
	class := inertAny
	for _, base := range p.bases {
		for _, x := range values {
			obj, ok := withPath(base, path, x.v, x.present)
			if !ok || p.unchanged(obj) {
				continue
			}
			if !x.present || x.v == nil {
				class = min(class, inertSet)
				continue
			}
			return notInert
		}
	}
	return class
}

// jointly checks the classes found one path at a time together: each base
// with every inert path set (or removed, for inertAny) from each fill.
func (p *inertProbe) jointly(classes map[string]inertness) error {
	paths := make([]string, 0, len(classes))
	for path := range classes {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, base := range p.bases {
		for _, fill := range p.fills {
			obj := base
			for _, path := range paths {
				v, present := pathValue(fill, path)
				if (!present || v == nil) && classes[path] != inertAny {
					continue
				}
				next, ok := withPath(obj, path, v, present)
				if ok {
					obj = next
				}
			}
			if !p.unchanged(obj) {
				return fmt.Errorf("%v: the inert fields changed together make defaulting change the object: %s", p.gvk, mustJSONText(obj))
			}
		}
	}
	return nil
}

func mustJSONText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// probeInertTable probes every kind; fills is the number of randomly
// filled objects per kind.
func probeInertTable(t testing.TB, s *Scheme, fills int) []inertEntry {
	ks, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	real := realByKind(t)
	var out []inertEntry
	for i, gvk := range kindGVKs(t, s) {
		if strings.HasSuffix(gvk.Kind, "List") {
			continue // never the object of an admission
		}
		p, ok := newInertProbe(t, s, gvk, real[gvk], int64(i), fills)
		if !ok {
			continue
		}
		typed, err := ks.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		classes := map[string]inertness{}
		var anyPaths, setPaths []string
		for _, path := range inertCandidates(reflect.TypeOf(typed).Elem()) {
			switch c := p.classify(path); c {
			case inertAny:
				anyPaths = append(anyPaths, path)
				classes[path] = c
			case inertSet:
				setPaths = append(setPaths, path)
				classes[path] = c
			}
		}
		if len(classes) == 0 {
			continue
		}
		if err := p.jointly(classes); err != nil {
			t.Error(err)
			continue
		}
		out = append(out, inertEntry{group: gvk.Group, version: gvk.Version, kind: gvk.Kind, any: strings.Join(anyPaths, " "), set: strings.Join(setPaths, " ")})
	}
	return out
}

// renderInertTable is incremental_table.go's text for entries.
func renderInertTable(entries []inertEntry) []byte {
	rows := make([]string, len(entries))
	for i, e := range entries {
		rows[i] = fmt.Sprintf("{group: %q, version: %q, kind: %q,\n\t\tany: %q,\n\t\tset: %q},", e.group, e.version, e.kind, e.any, e.set)
	}
	return renderTable("TestInertTable", "inertTable is, for each built-in kind whose defaulting is idempotent on\n// every probed object, the fields no defaulter can see (incremental.go).", "inertTable = []inertEntry", rows)
}

// TestInertTable holds incremental_table.go to the probe of upstream's
// defaulters: for every built-in kind, real and randomly filled objects,
// defaulted, with each candidate field removed and set to the values
// other objects hold there; a field is inert when defaulting then returns
// the object as it is every time (inertSet when only its removal is
// defaulted). -update rewrites the table.
func TestInertTable(t *testing.T) {
	if testing.Short() {
		t.Skip("probes every kind")
	}
	fills := 4
	if os.Getenv("MUTATIS_LONG") != "" || *update {
		fills = 12
	}
	got := renderInertTable(probeInertTable(t, New(), fills))
	if *update {
		if err := os.WriteFile("incremental_table.go", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	// The table may be narrower than a probe with fewer objects finds (a
	// field the larger probe found not inert), never wider.
	probed := map[string]map[string]inertness{}
	for _, e := range probeInertTableEntries(got) {
		probed[e.group+"/"+e.version+"/"+e.kind] = e.classes()
	}
	for _, e := range inertTable {
		p := probed[e.group+"/"+e.version+"/"+e.kind]
		for path, c := range e.classes() {
			if p[path] < c {
				t.Errorf("%s/%s %s: the table says %s is inert (%d), the probe finds %d: rerun with -update", e.group+"/"+e.version, e.kind, e.kind, path, c, p[path])
			}
		}
	}
}

// probeInertTableEntries reads the entries back from a rendered table.
func probeInertTableEntries(text []byte) []inertEntry {
	var out []inertEntry
	lines := strings.Split(string(text), "\n")
	for i := 0; i+2 < len(lines); i++ {
		var e inertEntry
		if _, err := fmt.Sscanf(strings.TrimSpace(lines[i]), "{group: %q, version: %q, kind: %q,", &e.group, &e.version, &e.kind); err != nil {
			continue
		}
		fmt.Sscanf(strings.TrimSpace(lines[i+1]), "any: %q,", &e.any)
		fmt.Sscanf(strings.TrimSpace(lines[i+2]), "set: %q},", &e.set)
		out = append(out, e)
	}
	return out
}

// classes is e's paths by class.
func (e inertEntry) classes() map[string]inertness {
	out := map[string]inertness{}
	for _, p := range strings.Fields(e.set) {
		out[p] = inertSet
	}
	for _, p := range strings.Fields(e.any) {
		out[p] = inertAny
	}
	return out
}

// How DefaultFrom defaulted an object (checkDefaultFrom).
const (
	defaultedWhole = iota
	// defaultedNone: the defaulters did not run (inert fields).
	defaultedNone
	// defaultedElements: the changed elements of lists alone.
	defaultedElements
)

// checkDefaultFrom fails unless DefaultFrom(obj, base) is, bit for bit,
// the reference's defaulting of obj (and obj itself when that is). It
// reports how DefaultFrom defaulted it.
func checkDefaultFrom(t testing.TB, s *Scheme, obj, base map[string]any, gvk schema.GroupVersionKind) (how int) {
	t.Helper()
	want, wantErr := s.defaultReference(valuetest.DeepCopy(obj).(map[string]any), gvk)
	got, err := s.DefaultFrom(obj, base, gvk)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%v: error %v, want %v", gvk, err, wantErr)
	}
	if !valuetest.BitsEqual(got, want) {
		t.Fatalf("%v: DefaultFrom differs from defaulting the whole object\nbase: %s\n obj: %s\n got: %s\nwant: %s", gvk, mustJSONText(base), mustJSONText(obj), mustJSONText(got), mustJSONText(want))
	}
	k := s.inert()[gvk]
	if k != nil {
		checkChanges(t, s, k, obj, base, gvk)
	}
	switch {
	case err != nil || k == nil:
		return defaultedWhole
	case k.onlyInertChanges(obj, base):
		return defaultedNone
	}
	for _, u := range unitKinds()[gvk] {
		if _, ok := s.defaultUnits(k, u, obj, base, gvk); ok {
			return defaultedElements
		}
	}
	return defaultedWhole
}

// checkChanges holds DefaultFrom's pruning to what it stands for: k.changes
// tells no change exactly when onlyInertChanges does, and never leaves out
// (covers) a unit parent whose elements defaultUnits would default.
func checkChanges(t testing.TB, s *Scheme, k *inertKind, obj, base map[string]any, gvk schema.GroupVersionKind) {
	t.Helper()
	changes, all := k.changes(obj, base, nil)
	if none := all && len(changes) == 0; none != k.onlyInertChanges(obj, base) {
		t.Fatalf("%v: changes tells %v (all %v), onlyInertChanges %v", gvk, changes, all, !none)
	}
	if !all {
		return
	}
	for _, u := range unitKinds()[gvk] {
		if _, ok := s.defaultUnits(k, u, obj, base, gvk); ok && !u.covers(changes) {
			t.Fatalf("%v: unit %v defaults the changes %v, which it does not cover\nbase: %s\n obj: %s", gvk, u.path, changes, mustJSONText(base), mustJSONText(obj))
		}
		if len(changes) > 0 && u.covers(changes) {
			checkUnitChangesTold(t, k, u, obj, base, changes, gvk)
		}
	}
}

// checkUnitChangesTold fails unless unitChangesTold, told the changes
// k.changes found (all of them, covered by u), finds what unitChanges
// finds: the same lists changed (the same slices), context and ok.
func checkUnitChangesTold(t testing.TB, k *inertKind, u *unitParent, obj, base map[string]any, told []fieldChange, gvk schema.GroupVersionKind) {
	t.Helper()
	want, wantContext, wantOK := k.unitChanges(obj, base, u)
	got, context, ok := k.unitChangesTold(obj, base, u, told)
	key := func(cs []unitChange) map[string][2][]any {
		out := map[string][2][]any{}
		for _, c := range cs {
			out[c.list] = [2][]any{c.now, c.was}
		}
		return out
	}
	same := ok == wantOK && context == wantContext && len(got) == len(want)
	for l, w := range key(want) {
		g, found := key(got)[l]
		same = same && found && sameJSON(g[0], w[0]) && sameJSON(g[1], w[1])
	}
	if !same {
		t.Fatalf("%v: unit %v told %v: unitChangesTold %v, context %v, ok %v; unitChanges %v, context %v, ok %v\nbase: %s\n obj: %s",
			gvk, u.path, told, got, context, ok, want, wantContext, wantOK, mustJSONText(base), mustJSONText(obj))
	}
}

// TestDefaultFromIsDefault is the differential test of incremental
// defaulting over every kind of the table: defaulted random objects with
// random fields (inert ones and others, one to three) set from other
// random objects or removed, and with the fields set to null.
func TestDefaultFromIsDefault(t *testing.T) {
	s := New()
	ks, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	rounds := 3
	if os.Getenv("MUTATIS_LONG") != "" {
		rounds = 20
	}
	skipped, total := 0, 0
	for i, e := range inertTable {
		gvk := schema.GroupVersionKind{Group: e.group, Version: e.version, Kind: e.kind}
		typed, err := ks.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		candidates := inertCandidates(reflect.TypeOf(typed).Elem())
		inert := append(strings.Fields(e.any), strings.Fields(e.set)...)
		objs := randomObjects(t, gvk, int64(10_000+i), rounds+1)
		if len(objs) < 2 {
			continue
		}
		base, err := s.defaultReference(objs[0], gvk)
		if err != nil {
			t.Fatal(err)
		}
		for _, fill := range objs[1:] {
			obj := base
			for range 1 + r.IntN(3) {
				path := inert[r.IntN(len(inert))]
				if r.IntN(3) == 0 {
					path = candidates[r.IntN(len(candidates))]
				}
				v, present := pathValue(fill, path)
				if r.IntN(8) == 0 {
					v, present = nil, true
				}
				if next, ok := withPath(obj, path, v, present); ok {
					obj = next
				}
			}
			obj, err := s.Normalize(obj, gvk)
			if err != nil {
				continue
			}
			total++
			if checkDefaultFrom(t, s, obj, base, gvk) == defaultedNone {
				skipped++
			}
		}
	}
	t.Logf("%d kinds, %d of %d mutated objects without the defaulters", len(inertTable), skipped, total)
	if skipped == 0 {
		t.Error("no mutated object skipped the defaulters")
	}
}

// TestDefaultFromOnRealObjects is the property test on the real objects:
// defaulted, then perturbed as a merge result is (sharing what did not
// change), or with a label or an annotation set.
func TestDefaultFromOnRealObjects(t *testing.T) {
	s := New()
	r := rand.New(rand.NewPCG(5, 6))
	n := 2000
	if os.Getenv("MUTATIS_LONG") != "" {
		n = 20000
	}
	var bases []testobjects.Input
	for _, in := range testobjects.Inputs(t) {
		if in.GVK == testobjects.CRGVK {
			continue
		}
		d, err := s.defaultReference(in.Obj, in.GVK)
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, testobjects.Input{Name: in.Name, GVK: in.GVK, Obj: d})
	}
	skipped := 0
	for i := range n {
		in := bases[r.IntN(len(bases))]
		var obj any = in.Obj
		switch i % 3 {
		case 0:
			for range 1 + r.IntN(3) {
				obj = testobjects.PerturbShared(r, obj)
			}
		default:
			field := []string{"labels", "annotations"}[r.IntN(2)]
			meta, _ := in.Obj["metadata"].(map[string]any)
			set := map[string]any{}
			if old, ok := meta[field].(map[string]any); ok && r.IntN(4) != 0 {
				for k, v := range old {
					set[k] = v
				}
			}
			set[fmt.Sprint("k", r.IntN(3))] = fmt.Sprint("v", r.IntN(3))
			if r.IntN(5) == 0 {
				set = nil
			}
			obj, _ = withPath(in.Obj, "metadata."+field, set, set != nil)
		}
		norm, ok := normalizedObject(s, obj, in.GVK)
		if !ok {
			continue
		}
		if checkDefaultFrom(t, s, norm, in.Obj, in.GVK) == defaultedNone {
			skipped++
		}
	}
	t.Logf("%d of %d perturbed real objects without the defaulters", skipped, n)
	if skipped == 0 {
		t.Error("no perturbed object skipped the defaulters")
	}
}

// FuzzDefaultFrom sets a field (by path) of a defaulted real object to a
// JSON value and checks DefaultFrom against defaulting the whole object.
func FuzzDefaultFrom(f *testing.F) {
	f.Add(uint8(0), "metadata.labels", []byte(`{"a":"b"}`))
	f.Add(uint8(1), "metadata.annotations", []byte(`null`))
	f.Add(uint8(2), "spec.nodeSelector", []byte(`{"arch":"arm64"}`))
	f.Add(uint8(3), "spec.replicas", []byte(`3`))
	f.Add(uint8(4), "metadata.labels", []byte(`{}`))
	s := New()
	var bases []testobjects.Input
	for _, in := range testobjects.Inputs(f) {
		if in.GVK == testobjects.CRGVK {
			continue
		}
		d, err := s.defaultReference(in.Obj, in.GVK)
		if err != nil {
			f.Fatal(err)
		}
		bases = append(bases, testobjects.Input{Name: in.Name, GVK: in.GVK, Obj: d})
	}
	f.Fuzz(func(t *testing.T, which uint8, path string, value []byte) {
		in := bases[int(which)%len(bases)]
		var v any
		present := len(value) > 0
		if present {
			if err := utiljson.Unmarshal(value, &v); err != nil {
				return
			}
		}
		obj, ok := withPath(in.Obj, path, v, present)
		if !ok {
			return
		}
		norm, err := s.Normalize(obj, in.GVK)
		if err != nil {
			return
		}
		checkDefaultFrom(t, s, norm, in.Obj, in.GVK)
	})
}
