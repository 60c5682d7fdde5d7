package scheme

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// objectLists are the fields of struct plan n that are lists of objects
// (structs), sorted: the candidates of unitTable, which the small object
// of an element leaves out (unitObject).
func objectLists(n *node) []string {
	var out []string
	for name, f := range n.byName {
		if f.node.kind == nodeSlice && f.node.elem.kind == nodeStruct {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// unitCandidate is a list of objects the probe classifies: list of the
// object at parent.
type unitCandidate struct {
	parent []string
	list   string
}

// unitCandidates are the lists of objects of the objects reached from
// the top of kind plan root through objects (structs and pointers to
// structs, at most five deep, neither metadata nor status), but those
// inert wholly (no element needs defaulting).
func unitCandidates(root *node, inert *inertKind) []unitCandidate {
	var out []unitCandidate
	var walk func(n *node, path []string)
	walk = func(n *node, path []string) {
		if len(path) > 0 {
			for _, l := range objectLists(n) {
				if len(path) == 1 && inert.nested[path[0]][l] == inertAny {
					continue
				}
				out = append(out, unitCandidate{append([]string(nil), path...), l})
			}
		}
		if len(path) == 5 {
			return
		}
		names := make([]string, 0, len(n.byName))
		for name := range n.byName {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if len(path) == 0 && (name == "metadata" || name == "status") || len(path) == 0 && inert.top[name] == inertAny {
				continue
			}
			c := n.byName[name].node
			if c.kind == nodePointer {
				c = c.elem
			}
			if c.kind == nodeStruct && !c.unsupported {
				walk(c, append(path, name))
			}
		}
	}
	walk(root, nil)
	return out
}

// unitProbe is the probe of one kind's lists, on an inert probe's
// defaulted objects.
type unitProbe struct {
	*inertProbe
	root  *node
	inert *inertKind
	r     *rand.Rand
}

// listAt is the list at c in obj (nil when absent or not a list).
func listAt(obj map[string]any, c unitCandidate) []any {
	v, _ := pathValue(obj, strings.Join(append(append([]string(nil), c.parent...), c.list), "."))
	l, _ := v.([]any)
	return l
}

// withList is obj with the list at c set to l (removed when !present).
func withList(obj map[string]any, c unitCandidate, l []any, present bool) (map[string]any, bool) {
	return withPath(obj, strings.Join(append(append([]string(nil), c.parent...), c.list), "."), l, present)
}

// pool are the elements the probe puts into list c: those of the fills
// and of the bases, each also pruned twice (defaulters fill what is
// absent).
func (p *unitProbe) pool(c unitCandidate) []any {
	var out []any
	for _, o := range append(append([]map[string]any(nil), p.fills...), p.bases...) {
		for _, e := range listAt(o, c) {
			out = append(out, e, pruned(p.r, e), prunedLeaves(p.r, e))
		}
	}
	return out
}

// trials are base with list c changed every way the probe tries: an
// element replaced, added, removed, pruned in place; the list set to two
// elements and removed.
func (p *unitProbe) trials(base map[string]any, cs []unitCandidate, pools [][]any) []map[string]any {
	var out []map[string]any
	for op := range 6 {
		obj := base
		for i, c := range cs {
			pool := pools[i]
			l := append([]any(nil), listAt(base, c)...)
			present := true
			switch {
			case op == 0 && len(l) > 0:
				l[p.r.IntN(len(l))] = pool[p.r.IntN(len(pool))]
			case op == 1:
				l = append(l, pool[p.r.IntN(len(pool))])
			case op == 2 && len(l) > 0:
				i := p.r.IntN(len(l))
				l = append(l[:i], l[i+1:]...)
			case op == 3 && len(l) > 0:
				i := p.r.IntN(len(l))
				l[i] = pruned(p.r, l[i])
			case op == 4:
				l = []any{pool[p.r.IntN(len(pool))], pool[p.r.IntN(len(pool))]}
			case op == 5:
				l, present = nil, false
			default:
				continue
			}
			if next, ok := withList(obj, c, l, present); ok {
				obj = next
			}
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
	return out
}

// agrees tells whether defaulting the changed elements of lists cs alone
// gives what defaulting the whole object does, for each trial of each
// base; done counts the trials the elements' defaulting took.
func (p *unitProbe) agrees(cs []unitCandidate) (ok bool, done int, bad string) {
	u := &unitParent{path: cs[0].parent, lists: map[string]bool{}}
	pools := make([][]any, len(cs))
	for i, c := range cs {
		u.lists[c.list] = true
		if pools[i] = p.pool(c); len(pools[i]) == 0 {
			return true, 0, ""
		}
	}
	for _, base := range p.bases {
		for _, obj := range p.trials(base, cs, pools) {
			norm, err := p.s.normalizeReference(obj, p.gvk)
			if err != nil {
				continue
			}
			want, err := p.s.defaultReference(norm, p.gvk)
			if err != nil {
				continue
			}
			got, ok := p.s.defaultUnits(p.inert, u, norm, base, p.gvk)
			if !ok {
				continue
			}
			if !valuetest.BitsEqual(got, want) {
				return false, done, fmt.Sprintf("base: %s\n obj: %s\n got: %s\nwant: %s", mustJSONText(base), mustJSONText(norm), mustJSONText(got), mustJSONText(want))
			}
			done++
		}
	}
	return true, done, ""
}

// withElementField is obj with field of element i of list c set to v
// (removed when !present).
func withElementField(obj map[string]any, c unitCandidate, i int, field string, v any, present bool) (map[string]any, bool) {
	l := append([]any(nil), listAt(obj, c)...)
	old, ok := l[i].(map[string]any)
	if !ok {
		return nil, false
	}
	el := make(map[string]any, len(old)+1)
	for k, x := range old {
		el[k] = x
	}
	if present {
		el[field] = v
	} else {
		delete(el, field)
	}
	l[i] = el
	return withList(obj, c, l, true)
}

// elementClasses classifies the fields of list c's elements as
// inertProbe.classify does the fields of an object: in up to three bases
// holding elements, one element's field removed and set to the values
// elements of the pool hold there (and sparse variants of them). It
// returns the inert fields as list.field, by class.
func (p *unitProbe) elementClasses(c unitCandidate, en *node) (anyPaths, setPaths []string, classes map[string]inertness, err error) {
	pool := p.pool(c)
	var bases []map[string]any
	for _, b := range p.bases {
		if len(listAt(b, c)) > 0 && len(bases) < 3 {
			bases = append(bases, b)
		}
	}
	if len(bases) == 0 || len(pool) == 0 {
		return nil, nil, nil, nil
	}
	names := make([]string, 0, len(en.byName))
	for name := range en.byName {
		names = append(names, name)
	}
	sort.Strings(names)
	classes = map[string]inertness{}
	for _, f := range names {
		type value struct {
			v       any
			present bool
		}
		values := []value{{nil, false}}
		// The deep fills' elements first (every field of theirs set, at
		// every depth), in sparse variants: their scalars are what the
		// defaulters fill.
		for _, d := range p.deep {
			for _, e := range listAt(d, c) {
				if m, ok := e.(map[string]any); ok {
					if v, ok := m[f]; ok {
						values = append(values, value{v, true})
						for range 6 {
							values = append(values, value{prunedLeaves(p.r, v), true})
						}
						values = append(values, value{pruned(p.r, v), true}, value{pruned(p.r, v), true})
					}
				}
			}
		}
		for _, e := range pool {
			if m, ok := e.(map[string]any); ok && len(values) < 40 {
				if v, ok := m[f]; ok {
					values = append(values, value{v, true}, value{pruned(p.r, v), true}, value{prunedLeaves(p.r, v), true})
				}
			}
		}
		class := inertAny
	classify:
		for _, base := range bases {
			i := p.r.IntN(len(listAt(base, c)))
			for _, x := range values {
				obj, ok := withElementField(base, c, i, f, x.v, x.present)
				if !ok || p.unchanged(obj) {
					continue
				}
				if !x.present || x.v == nil {
					class = min(class, inertSet)
					continue
				}
				class = notInert
				break classify
			}
		}
		switch class {
		case inertAny:
			anyPaths = append(anyPaths, c.list+"."+f)
		case inertSet:
			setPaths = append(setPaths, c.list+"."+f)
		}
		classes[f] = class
	}
	// Jointly: every inert field of one element set from a pool element
	// (when the probe is thorough: a thinner one claims more fields inert
	// than the table, which its check then compares field by field).
	for _, base := range bases {
		if !thoroughProbe() {
			break
		}
		for range 3 {
			from, _ := pool[p.r.IntN(len(pool))].(map[string]any)
			i := p.r.IntN(len(listAt(base, c)))
			obj := base
			for _, f := range names {
				v, present := from[f]
				if classes[f] == notInert || classes[f] == inertSet && (!present || v == nil) {
					continue
				}
				if next, ok := withElementField(obj, c, i, f, v, present); ok {
					obj = next
				}
			}
			if !p.unchanged(obj) {
				return nil, nil, nil, fmt.Errorf("%v %s.%s: the inert fields of an element changed together make defaulting change the object: %s", p.gvk, strings.Join(c.parent, "."), c.list, mustJSONText(obj))
			}
		}
	}
	return anyPaths, setPaths, classes, nil
}

// probeUnitTable probes the lists of every kind of inertTable; fills is
// the number of randomly filled objects per kind. Rejected are the
// candidates found not to agree.
func probeUnitTable(t testing.TB, s *Scheme, fills int) (entries []unitEntry, rejected map[string]bool, elementInertFound map[string]inertness) {
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	real := realByKind(t)
	inert := inertKinds()
	rejected = map[string]bool{}
	elementInertFound = map[string]inertness{}
	for i, e := range inertTable {
		gvk := schema.GroupVersionKind{Group: e.group, Version: e.version, Kind: e.kind}
		root := s.plans.typedKind(k.scheme, gvk)
		if root == nil {
			continue
		}
		cands := unitCandidates(root, inert[gvk])
		if len(cands) == 0 {
			continue
		}
		ip, ok := newInertProbe(t, s, gvk, real[gvk], int64(20_000+i), fills)
		if !ok {
			continue
		}
		p := &unitProbe{inertProbe: ip, root: root, inert: inert[gvk], r: rand.New(rand.NewPCG(uint64(i), 7))}
		byParent := map[string][]unitCandidate{}
		var parents []string
		for _, c := range cands {
			ok, done, bad := p.agrees([]unitCandidate{c})
			key := strings.Join(c.parent, ".")
			if !ok {
				rejected[gvk.String()+" "+key+"."+c.list] = true
				t.Logf("%v %s.%s: not element by element:\n%s", gvk, key, c.list, bad)
				continue
			}
			if done == 0 {
				continue // nothing to learn from: no element was defaulted alone
			}
			if byParent[key] == nil {
				parents = append(parents, key)
			}
			byParent[key] = append(byParent[key], c)
		}
		for _, key := range parents {
			cs := byParent[key]
			if ok, _, bad := p.agrees(cs); !ok {
				t.Errorf("%v %s: the lists changed together are not defaulted element by element:\n%s", gvk, key, bad)
				continue
			}
			lists := make([]string, len(cs))
			var anyPaths, setPaths []string
			for i, c := range cs {
				lists[i] = c.list
				a, set, classes, err := p.elementClasses(c, unitParentNode(root, c.parent).byName[c.list].node.elem)
				if err != nil {
					t.Error(err)
					continue
				}
				anyPaths, setPaths = append(anyPaths, a...), append(setPaths, set...)
				for f, class := range classes {
					elementInertFound[gvk.String()+" "+key+"."+c.list+"."+f] = class
				}
			}
			entries = append(entries, unitEntry{group: e.group, version: e.version, kind: e.kind, parent: key, lists: strings.Join(lists, " "), any: strings.Join(anyPaths, " "), set: strings.Join(setPaths, " ")})
		}
	}
	return entries, rejected, elementInertFound
}

// renderUnitTable is incremental_units_table.go's text for entries.
func renderUnitTable(entries []unitEntry) []byte {
	rows := make([]string, len(entries))
	for i, e := range entries {
		rows[i] = fmt.Sprintf("{group: %q, version: %q, kind: %q, parent: %q,\n\t\tlists: %q,\n\t\tany: %q,\n\t\tset: %q},", e.group, e.version, e.kind, e.parent, e.lists, e.any, e.set)
	}
	return renderTable("TestUnitTable", "unitTable is, for kinds of inertTable, the lists whose elements the\n// defaulters default one by one (incremental_units.go).", "unitTable = []unitEntry", rows)
}

// TestUnitTable holds incremental_units_table.go to the probe of
// upstream's defaulters: for every kind of inertTable and every list of
// objects reached through objects from its top, real and randomly filled
// objects, defaulted, with elements of the list replaced, added, removed
// and pruned, the list set and removed; a list is in the table when
// defaulting the changed elements alone, each on the smallest object of
// the kind holding it, gives what defaulting the whole object gives every
// time (and the lists of one object changed together do too). -update
// rewrites the table; without it, a smaller probe must reject none of the
// table's lists.
func TestUnitTable(t *testing.T) {
	if testing.Short() {
		t.Skip("probes every kind")
	}
	fills := 3
	if os.Getenv("MUTATIS_LONG") != "" || *update {
		fills = 10
	}
	entries, rejected, inert := probeUnitTable(t, New(), fills)
	if *update {
		if err := os.WriteFile("incremental_units_table.go", renderUnitTable(entries), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, e := range unitTable {
		for _, l := range strings.Fields(e.lists) {
			gvk := schema.GroupVersionKind{Group: e.group, Version: e.version, Kind: e.kind}
			if key := gvk.String() + " " + e.parent + "." + l; rejected[key] {
				t.Errorf("%s: the table defaults its elements one by one, the probe finds that differs: rerun with -update", key)
			}
		}
		// The elements' inert fields may be fewer than a smaller probe
		// finds, never more.
		gvk := schema.GroupVersionKind{Group: e.group, Version: e.version, Kind: e.kind}
		for list, fields := range elementInert(e.any, e.set) {
			if rejected[gvk.String()+" "+e.parent+"."+list] {
				continue
			}
			for f, c := range fields {
				if key := gvk.String() + " " + e.parent + "." + list + "." + f; inert[key] < c && hasKey(inert, key) {
					t.Errorf("%s: the table says it is inert (%d), the probe finds %d: rerun with -update", key, c, inert[key])
				}
			}
		}
	}
}

// elementMutator changes the elements of a kind's unit lists the ways a
// mutation does: elements replaced by others (whole or pruned), added,
// removed, a field of one set from another element or removed, an
// element perturbed as a merge result is (sharing what did not change).
type elementMutator struct {
	r     *rand.Rand
	units []unitCandidate
	pool  map[string][]any // elements by list, from other objects
}

func newElementMutator(r *rand.Rand, gvk schema.GroupVersionKind, others []map[string]any) *elementMutator {
	m := &elementMutator{r: r, pool: map[string][]any{}}
	for _, e := range unitTable {
		if e.group != gvk.Group || e.version != gvk.Version || e.kind != gvk.Kind {
			continue
		}
		for _, l := range strings.Fields(e.lists) {
			c := unitCandidate{strings.Split(e.parent, "."), l}
			m.units = append(m.units, c)
			key := e.parent + "." + l
			for _, o := range others {
				for _, x := range listAt(o, c) {
					m.pool[key] = append(m.pool[key], x, pruned(r, x), prunedLeaves(r, x))
				}
			}
		}
	}
	return m
}

// mutate is obj with one to three lists' elements changed.
func (m *elementMutator) mutate(obj map[string]any) map[string]any {
	r := m.r
	for range 1 + r.IntN(3) {
		c := m.units[r.IntN(len(m.units))]
		pool := m.pool[strings.Join(c.parent, ".")+"."+c.list]
		l := append([]any(nil), listAt(obj, c)...)
		pick := func() any {
			if len(pool) == 0 {
				return map[string]any{}
			}
			return pool[r.IntN(len(pool))]
		}
		present := true
		switch op := r.IntN(7); {
		case op == 0 && len(l) > 0:
			l[r.IntN(len(l))] = pick()
		case op == 1:
			l = append(l, pick())
		case op == 2 && len(l) > 0:
			i := r.IntN(len(l))
			l = append(l[:i], l[i+1:]...)
		case op == 3 && len(l) > 0:
			i := r.IntN(len(l))
			el, _ := l[i].(map[string]any)
			from, _ := pick().(map[string]any)
			next := make(map[string]any, len(el)+1)
			for k, v := range el {
				next[k] = v
			}
			keys := sortedKeys(from)
			if len(keys) > 0 {
				k := keys[r.IntN(len(keys))]
				next[k] = from[k]
			} else if keys = sortedKeys(el); len(keys) > 0 {
				delete(next, keys[r.IntN(len(keys))])
			}
			l[i] = next
		case op == 4 && len(l) > 0:
			i := r.IntN(len(l))
			l[i] = testobjects.PerturbShared(r, l[i])
		case op == 5:
			l, present = nil, r.IntN(2) == 0
		default:
			l = []any{pick()}
		}
		if next, ok := withList(obj, c, l, present); ok {
			obj = next
		}
	}
	return obj
}

// TestDefaultFromElements is the differential test of defaulting lists'
// elements one by one, over every kind of unitTable: defaulted real and
// random objects whose lists' elements are changed (mutate), with inert
// fields changed too at times, each held to defaulting the whole object.
func TestDefaultFromElements(t *testing.T) {
	s := New()
	r := rand.New(rand.NewPCG(11, 12))
	rounds := 12
	if os.Getenv("MUTATIS_LONG") != "" {
		rounds = 80
	}
	real := map[schema.GroupVersionKind][]map[string]any{}
	for _, in := range testobjects.Inputs(t) {
		real[in.GVK] = append(real[in.GVK], in.Obj)
	}
	kinds := map[schema.GroupVersionKind]bool{}
	var gvks []schema.GroupVersionKind
	for _, e := range unitTable {
		gvk := schema.GroupVersionKind{Group: e.group, Version: e.version, Kind: e.kind}
		if !kinds[gvk] {
			kinds[gvk] = true
			gvks = append(gvks, gvk)
		}
	}
	inert := map[schema.GroupVersionKind][]string{}
	for _, e := range inertTable {
		gvk := schema.GroupVersionKind{Group: e.group, Version: e.version, Kind: e.kind}
		inert[gvk] = append(strings.Fields(e.any), strings.Fields(e.set)...)
	}
	counts := [3]int{}
	for i, gvk := range gvks {
		objs := append(randomObjects(t, gvk, int64(30_000+i), rounds), real[gvk]...)
		var bases []map[string]any
		for _, o := range objs {
			d, err := s.defaultReference(valuetest.DeepCopy(o).(map[string]any), gvk)
			if err == nil {
				bases = append(bases, d)
			}
		}
		if len(bases) == 0 {
			continue
		}
		m := newElementMutator(r, gvk, objs)
		for range rounds {
			base := bases[r.IntN(len(bases))]
			obj := m.mutate(base)
			if paths := inert[gvk]; len(paths) > 0 && r.IntN(3) == 0 {
				obj = withFillValue(r, obj, paths, objs)
			}
			norm, err := s.Normalize(obj, gvk)
			if err != nil {
				continue
			}
			counts[checkDefaultFrom(t, s, norm, base, gvk)]++
		}
	}
	t.Logf("%d kinds: %d mutated objects defaulted element by element, %d without the defaulters, %d whole", len(gvks), counts[defaultedElements], counts[defaultedNone], counts[defaultedWhole])
	if counts[defaultedElements] == 0 {
		t.Error("no mutated object was defaulted element by element")
	}
}

// FuzzDefaultFromElements sets a field of an element (by index; past the
// end, a new element) of a list of unitTable of a defaulted real object to
// a JSON value, and checks DefaultFrom against defaulting the whole
// object.
func FuzzDefaultFromElements(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(0), "image", []byte(`"nginx:2"`))
	f.Add(uint8(1), uint8(0), uint8(9), "name", []byte(`"sidecar"`))
	f.Add(uint8(2), uint8(1), uint8(0), "resources", []byte(`{"limits":{"cpu":"1"}}`))
	f.Add(uint8(3), uint8(0), uint8(0), "env", []byte(`[{"name":"A","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}]`))
	f.Add(uint8(4), uint8(0), uint8(0), "ports", []byte(`[{"containerPort":80}]`))
	f.Add(uint8(5), uint8(2), uint8(0), "livenessProbe", []byte(`{"httpGet":{"port":8080}}`))
	f.Add(uint8(6), uint8(3), uint8(7), "secret", []byte(`{"secretName":"s"}`))
	s := New()
	type base struct {
		gvk   schema.GroupVersionKind
		obj   map[string]any
		lists []unitCandidate
	}
	var bases []base
	units := unitKinds()
	for _, in := range testobjects.Inputs(f) {
		us := units[in.GVK]
		if len(us) == 0 {
			continue
		}
		d, err := s.defaultReference(in.Obj, in.GVK)
		if err != nil {
			f.Fatal(err)
		}
		b := base{gvk: in.GVK, obj: d}
		for _, u := range us {
			lists := make([]string, 0, len(u.lists))
			for l := range u.lists {
				lists = append(lists, l)
			}
			sort.Strings(lists)
			for _, l := range lists {
				b.lists = append(b.lists, unitCandidate{u.path, l})
			}
		}
		bases = append(bases, b)
	}
	if len(bases) == 0 {
		f.Fatal("no real object of a kind of unitTable")
	}
	f.Fuzz(func(t *testing.T, which, list, index uint8, field string, value []byte) {
		b := bases[int(which)%len(bases)]
		c := b.lists[int(list)%len(b.lists)]
		l := append([]any(nil), listAt(b.obj, c)...)
		el := map[string]any{}
		if int(index) < len(l) {
			old, _ := l[index].(map[string]any)
			for k, v := range old {
				el[k] = v
			}
		} else {
			l = append(l, el)
			index = uint8(len(l) - 1)
		}
		if len(value) == 0 {
			delete(el, field)
		} else {
			var v any
			if err := utiljson.Unmarshal(value, &v); err != nil {
				return
			}
			el[field] = v
		}
		l[index] = el
		obj, ok := withList(b.obj, c, l, true)
		if !ok {
			return
		}
		norm, err := s.Normalize(obj, b.gvk)
		if err != nil {
			return
		}
		checkDefaultFrom(t, s, norm, b.obj, b.gvk)
	})
}

func hasKey(m map[string]inertness, k string) bool {
	_, ok := m[k]
	return ok
}

// checkUnitTyped fails unless unitTyped builds, for every element of every
// list of u in obj (of kind gvk), the typed object typedWatched builds of
// unitObject, recording blocks of the same sizes and as many values; it
// tells how many elements it compared.
func checkUnitTyped(t testing.TB, s *Scheme, gvk schema.GroupVersionKind, u *unitParent, obj map[string]any) int {
	t.Helper()
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	root := s.plans.typedKind(k.scheme, gvk)
	pn := unitParentNode(root, u.path)
	if root == nil || pn == nil {
		return 0
	}
	parent := obj
	for _, step := range u.path {
		parent, _ = parent[step].(map[string]any)
	}
	compared := 0
	for _, list := range sortedKeys(boolKeys(u.lists)) {
		l, _ := parent[list].([]any)
		for i, e := range l {
			elem, ok := e.(map[string]any)
			if !ok || elem == nil {
				continue
			}
			var w1, w2 watch
			want, ok1 := s.plans.typedWatched(k, unitObject(pn, u.path, parent, list, elem), gvk, &w1)
			got, ok2 := unitTyped(root, pn, gvk, u.path, parent, list, elem, &w2)
			if ok1 != ok2 {
				t.Fatalf("%v %v.%s[%d]: unitTyped ok %v, typedWatched of unitObject %v", gvk, u.path, list, i, ok2, ok1)
			}
			if !ok1 {
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%v %v.%s[%d]: unitTyped built\n%#v\nwant\n%#v", gvk, u.path, list, i, got, want)
			}
			if sizes(w1.blocks) != sizes(w2.blocks) || len(w1.values) != len(w2.values) {
				t.Fatalf("%v %v.%s[%d]: unitTyped's watch has blocks %s and %d values, want %s and %d", gvk, u.path, list, i, sizes(w2.blocks), len(w2.values), sizes(w1.blocks), len(w1.values))
			}
			compared++
		}
	}
	return compared
}

// boolKeys is m as a map of the same keys (sortedKeys' argument).
func boolKeys(m map[string]bool) map[string]any {
	out := make(map[string]any, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// sizes is the sizes of blocks, sorted, as text.
func sizes(blocks []watchedBlock) string {
	var out []int
	for _, b := range blocks {
		out = append(out, int(b.size))
	}
	sort.Ints(out)
	return fmt.Sprint(out)
}

// TestUnitTypedIsUnitObject holds defaultElement's typed object, built
// straight from the parent and the element (unitTyped), to the one built
// from the small object (unitObject): on every kind of unitTable, random
// and real objects, as they are and defaulted, every element of every
// unit list.
func TestUnitTypedIsUnitObject(t *testing.T) {
	s := New()
	real := map[schema.GroupVersionKind][]map[string]any{}
	for _, in := range testobjects.Inputs(t) {
		real[in.GVK] = append(real[in.GVK], in.Obj)
	}
	compared := 0
	for i, gvk := range sortedGVKs(s.units()) {
		objs := append(randomObjects(t, gvk, int64(50_000+i), 2), real[gvk]...)
		for _, o := range objs {
			all := []map[string]any{o}
			if d, err := s.defaultReference(valuetest.DeepCopy(o).(map[string]any), gvk); err == nil {
				all = append(all, d)
			}
			for _, obj := range all {
				for _, u := range s.units()[gvk] {
					compared += checkUnitTyped(t, s, gvk, u, obj)
				}
			}
		}
	}
	t.Logf("%d elements compared", compared)
	if compared < 100 {
		t.Errorf("only %d elements compared", compared)
	}
}

// sortedGVKs is m's kinds, sorted.
func sortedGVKs[V any](m map[schema.GroupVersionKind]V) []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(m))
	for gvk := range m {
		out = append(out, gvk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// withFillValue is obj with one of paths, at random, set to its value in
// one of fills (removed where that fill lacks it), obj itself when the
// path cannot be set.
func withFillValue(r *rand.Rand, obj map[string]any, paths []string, fills []map[string]any) map[string]any {
	fill := fills[r.IntN(len(fills))]
	path := paths[r.IntN(len(paths))]
	v, present := pathValue(fill, path)
	if next, ok := withPath(obj, path, v, present); ok {
		return next
	}
	return obj
}
