package scheme

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// contextCandidates are the fields of the unit parent u (struct plan pn)
// of a kind a context probe classifies: all but its lists of objects and
// (directly under the top) the fields inert wholly.
func contextCandidates(pn *node, u *unitParent, k *inertKind) []string {
	var out []string
	for name, f := range pn.byName {
		if f.node.kind == nodeSlice && f.node.elem.kind == nodeStruct {
			continue
		}
		if len(u.path) == 1 && k.nested[u.path[0]][name] == inertAny {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// contextValues are the values the probe sets field path to: removed, null,
// the zero values of JSON's scalars, and the values the fills hold there
// (with sparse variants of objects).
func (p *unitProbe) contextValues(path string) []contextValue {
	values := []contextValue{{nil, false}, {nil, true}, {false, true}, {true, true}, {int64(0), true}, {int64(1), true}, {int64(-1), true}, {"", true}, {map[string]any{}, true}}
	for _, o := range p.fills {
		if v, ok := pathValue(o, path); ok {
			values = append(values, contextValue{v, true})
			if _, isMap := v.(map[string]any); isMap {
				values = append(values, contextValue{pruned(p.r, v), true}, contextValue{prunedLeaves(p.r, v), true})
			}
		}
	}
	return values
}

// contextValue is a value contextValues sets (removed when !present).
type contextValue struct {
	v       any
	present bool
}

// contextAgrees tells whether DefaultFrom's way with the unit parent u
// taking fields as its context (defaultUnits: the context defaulted alone
// when one of them changed) gives what defaulting the whole object does,
// on every base with the fields set to values (all of them at once, each
// from values[i]); done counts the trials the context's defaulting took.
func (p *unitProbe) contextAgrees(u *unitParent, fields []string, values [][]contextValue, base map[string]any, pick func(i int) int) (ok bool, done int, bad string) {
	obj := base
	for i, f := range fields {
		x := values[i][pick(i)]
		next, ok := withPath(obj, strings.Join(append(append([]string(nil), u.path...), f), "."), x.v, x.present)
		if !ok {
			return true, 0, ""
		}
		obj = next
	}
	norm, err := p.s.normalizeReference(obj, p.gvk)
	if err != nil {
		return true, 0, ""
	}
	want, err := p.s.defaultReference(valuetest.DeepCopy(norm).(map[string]any), p.gvk)
	if err != nil {
		return true, 0, ""
	}
	_, context, ok := p.inert.unitChanges(norm, base, u)
	got, took := p.s.defaultUnits(p.inert, u, norm, base, p.gvk)
	if !took {
		return true, 0, ""
	}
	if !valuetest.BitsEqual(got, want) {
		return false, 0, fmt.Sprintf("fields %v\nbase: %s\n obj: %s\n got: %s\nwant: %s", fields, mustJSONText(base), mustJSONText(norm), mustJSONText(got), mustJSONText(want))
	}
	if ok && context {
		done = 1
	}
	return true, done, ""
}

// contextBases are more defaulted objects for a context probe, in which
// the element defaulters have something to fill: each base with the
// leaves of its unit lists' elements pruned (a port without hostPort), and
// (for a kind holding a Pod template) a base with each real Pod's spec in
// its template.
func (p *unitProbe) contextBases(pods []map[string]any) []map[string]any {
	var out []map[string]any
	add := func(obj map[string]any) {
		d, err := p.s.defaultReference(valuetest.DeepCopy(obj).(map[string]any), p.gvk)
		if err != nil {
			return
		}
		if again, err := p.s.defaultReference(valuetest.DeepCopy(d).(map[string]any), p.gvk); err == nil && valuetest.BitsEqual(again, d) {
			out = append(out, d)
		}
	}
	var template string
	for _, e := range unitTable {
		if e.group != p.gvk.Group || e.version != p.gvk.Version || e.kind != p.gvk.Kind {
			continue
		}
		if strings.HasSuffix(e.parent, "template.spec") {
			template = e.parent
		}
	}
	if template != "" && len(p.bases) > 0 {
		for _, pod := range pods {
			spec, _ := pod["spec"].(map[string]any)
			if obj, ok := withPath(p.bases[0], template, spec, true); ok && spec != nil {
				add(obj)
			}
		}
	}
	for _, base := range append([]map[string]any(nil), p.bases...) {
		obj := base
		for _, e := range unitTable {
			if e.group != p.gvk.Group || e.version != p.gvk.Version || e.kind != p.gvk.Kind {
				continue
			}
			for _, l := range strings.Fields(e.lists) {
				c := unitCandidate{strings.Split(e.parent, "."), l}
				list := listAt(obj, c)
				if len(list) == 0 {
					continue
				}
				pl := make([]any, len(list))
				for i, x := range list {
					pl[i] = prunedLeaves(p.r, x)
				}
				if next, ok := withList(obj, c, pl, true); ok {
					obj = next
				}
			}
		}
		add(obj)
	}
	return out
}

// probeContextTable probes the fields of every parent of unitTable; fills
// is the number of randomly filled objects per kind. Rejected are the
// fields found not to agree.
func probeContextTable(t testing.TB, s *Scheme, fills int, only map[string]bool) (entries []contextEntry, rejected map[string]bool) {
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	real := realByKind(t)
	inert := s.inert()
	rejected = map[string]bool{}
	probes := map[schema.GroupVersionKind]*unitProbe{}
	for i, e := range unitTable {
		gvk := schema.GroupVersionKind{Group: e.group, Version: e.version, Kind: e.kind}
		if only != nil && !only[gvk.String()+" "+e.parent] {
			continue
		}
		root := s.plans.typedKind(k.scheme, gvk)
		if root == nil || inert[gvk] == nil {
			continue
		}
		pn := unitParentNode(root, strings.Split(e.parent, "."))
		if pn == nil {
			continue
		}
		p := probes[gvk]
		if p == nil {
			ip, ok := newInertProbe(t, s, gvk, real[gvk], int64(40_000+i), fills)
			if !ok {
				continue
			}
			p = &unitProbe{inertProbe: ip, root: root, inert: inert[gvk], r: rand.New(rand.NewPCG(uint64(i), 9))}
			p.bases = append(p.bases, p.contextBases(real[schema.GroupVersionKind{Version: "v1", Kind: "Pod"}])...)
			probes[gvk] = p
		}
		u := &unitParent{path: strings.Split(e.parent, "."), lists: map[string]bool{}, inert: elementInert(e.any, e.set)}
		for _, l := range strings.Fields(e.lists) {
			u.lists[l] = true
		}
		var found []string
		for _, f := range contextCandidates(pn, u, p.inert) {
			u.context = map[string]bool{f: true}
			values := [][]contextValue{p.contextValues(e.parent + "." + f)}
			good, done := true, 0
			for _, base := range p.bases {
				for j := range values[0] {
					ok, d, bad := p.contextAgrees(u, []string{f}, values, base, func(int) int { return j })
					if !ok {
						good = false
						rejected[gvk.String()+" "+e.parent+"."+f] = true
						t.Logf("%v %s.%s: not a context field:\n%s", gvk, e.parent, f, bad)
						break
					}
					done += d
				}
				if !good {
					break
				}
			}
			if good && done > 0 {
				found = append(found, f)
			}
		}
		if len(found) == 0 {
			continue
		}
		// Jointly: the fields changed together, each from a random value.
		u.context = map[string]bool{}
		values := make([][]contextValue, len(found))
		for j, f := range found {
			u.context[f] = true
			values[j] = p.contextValues(e.parent + "." + f)
		}
		for _, base := range p.bases {
			for range 20 {
				if ok, _, bad := p.contextAgrees(u, found, values, base, func(j int) int { return p.r.IntN(len(values[j])) }); !ok {
					t.Errorf("%v %s: the context fields changed together are not defaulted as the context:\n%s", gvk, e.parent, bad)
				}
			}
		}
		entries = append(entries, contextEntry{group: e.group, version: e.version, kind: e.kind, parent: e.parent, fields: strings.Join(found, " ")})
	}
	return entries, rejected
}

// renderContextTable is incremental_context_table.go's text for entries.
func renderContextTable(entries []contextEntry) []byte {
	rows := make([]string, len(entries))
	for i, e := range entries {
		rows[i] = fmt.Sprintf("{group: %q, version: %q, kind: %q, parent: %q,\n\t\tfields: %q},", e.group, e.version, e.kind, e.parent, e.fields)
	}
	return renderTable("TestContextTable", "contextTable is, for parents of unitTable, the fields whose changes\n// only the defaulting of the parent's context can see\n// (incremental_context.go).", "contextTable = []contextEntry", rows)
}

// renderTable is the text of a table generated by test: the Go file of
// package scheme declaring decl (documented by doc, without its leading
// "// ") with rows, one a line.
func renderTable(test, doc, decl string, rows []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by %s (go test ./scheme -run %s -update); DO NOT EDIT.\n\n", test, test)
	b.WriteString("package scheme\n\n")
	fmt.Fprintf(&b, "// %s\nvar %s{\n", doc, decl)
	for _, r := range rows {
		fmt.Fprintf(&b, "\t%s\n", r)
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// TestContextTable holds incremental_context_table.go to the probe of
// upstream's defaulters: for every parent of unitTable and each of its
// fields but its lists of objects, defaulted real and randomly filled
// objects with the field removed, set to null, to JSON's zero values and
// to the values of other objects; a field is in the table when, every time
// the unit object without elements is its own defaulted form, so is the
// whole object (and the table's fields of a parent changed together hold
// it too). -update rewrites the table; without it, a smaller probe must
// reject none of the table's fields.
func TestContextTable(t *testing.T) {
	if testing.Short() {
		t.Skip("probes every kind")
	}
	// Without -update, only the parents the table names are probed: a
	// rejection elsewhere could not fail the check below.
	fills, only := 2, map[string]bool{}
	for _, e := range contextTable {
		only[schema.GroupVersionKind{Group: e.group, Version: e.version, Kind: e.kind}.String()+" "+e.parent] = true
	}
	if os.Getenv("MUTATIS_LONG") != "" || *update {
		fills, only = 10, nil
	}
	entries, rejected := probeContextTable(t, New(), fills, only)
	if *update {
		if err := os.WriteFile("incremental_context_table.go", renderContextTable(entries), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, e := range contextTable {
		gvk := schema.GroupVersionKind{Group: e.group, Version: e.version, Kind: e.kind}
		for _, f := range strings.Fields(e.fields) {
			if key := gvk.String() + " " + e.parent + "." + f; rejected[key] {
				t.Errorf("%s: the table takes it as a context field, the probe finds it is not: rerun with -update", key)
			}
		}
	}
}

// contextUnchangedReference is contextUnchanged through the reference:
// the unit object without elements (unitObject, as maps) defaulted by
// defaultReference, its parent's fields compared with parent's.
func contextUnchangedReference(t testing.TB, s *Scheme, gvk schema.GroupVersionKind, u *unitParent, parent map[string]any) bool {
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	pn := unitParentNode(s.plans.typedKind(k.scheme, gvk), u.path)
	obj := unitObject(pn, u.path, parent, "", nil)
	out, err := s.defaultReference(valuetest.DeepCopy(obj).(map[string]any), gvk)
	if err != nil {
		return false
	}
	got, _ := pathValue(out, strings.Join(u.path, "."))
	want, _ := pathValue(obj, strings.Join(u.path, "."))
	gm, _ := got.(map[string]any)
	ctx := map[string]any{}
	for f, v := range gm {
		if x := pn.byName[f]; x != nil && x.node.kind == nodeSlice && x.node.elem.kind == nodeStruct {
			continue // the lists of objects, which the context leaves out (written as null)
		}
		ctx[f] = v
	}
	return valuetest.BitsEqual(ctx, want)
}

// TestDefaultFromContext is the differential test of defaulting a unit
// parent's context alone, over every kind of contextTable: defaulted real
// and random objects (contextBases' too) with one to three context fields
// set to other objects' values, zero values, null or removed, with the
// unit lists' elements changed at times (mutate) and inert fields too,
// each held to defaulting the whole object (checkDefaultFrom); and
// contextUnchanged held to its reference on every parent it saw.
func TestDefaultFromContext(t *testing.T) {
	s := New()
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(21, 22))
	rounds := 30
	if os.Getenv("MUTATIS_LONG") != "" {
		rounds = 200
	}
	real := realByKind(t)
	inertPaths := map[schema.GroupVersionKind][]string{}
	for _, e := range inertTable {
		gvk := schema.GroupVersionKind{Group: e.group, Version: e.version, Kind: e.kind}
		inertPaths[gvk] = append(strings.Fields(e.any), strings.Fields(e.set)...)
	}
	counts := [3]int{}
	contexts, refs := 0, 0
	for i, gvk := range sortedGVKs(s.units()) {
		var units []*unitParent
		for _, u := range s.units()[gvk] {
			if len(u.context) > 0 {
				units = append(units, u)
			}
		}
		if len(units) == 0 {
			continue
		}
		ip, ok := newInertProbe(t, s, gvk, real[gvk], int64(50_000+i), 3)
		if !ok {
			continue
		}
		p := &unitProbe{inertProbe: ip, root: s.plans.typedKind(k.scheme, gvk), inert: s.inert()[gvk], r: r}
		p.bases = append(p.bases, p.contextBases(real[schema.GroupVersionKind{Version: "v1", Kind: "Pod"}])...)
		m := newElementMutator(r, gvk, append(append([]map[string]any(nil), p.fills...), real[gvk]...))
		for range rounds {
			base := p.bases[r.IntN(len(p.bases))]
			u := units[r.IntN(len(units))]
			fields := sortedKeys(boolKeys(u.context))
			obj := base
			for range 1 + r.IntN(3) {
				f := fields[r.IntN(len(fields))]
				path := strings.Join(append(append([]string(nil), u.path...), f), ".")
				values := p.contextValues(path)
				x := values[r.IntN(len(values))]
				if next, ok := withPath(obj, path, x.v, x.present); ok {
					obj = next
				}
			}
			if len(m.units) > 0 && r.IntN(2) == 0 {
				obj = m.mutate(obj)
			}
			if paths := inertPaths[gvk]; len(paths) > 0 && r.IntN(3) == 0 {
				obj = withFillValue(r, obj, paths, p.fills)
			}
			norm, err := s.Normalize(obj, gvk)
			if err != nil {
				continue
			}
			counts[checkDefaultFrom(t, s, norm, base, gvk)]++
			for _, u := range s.units()[gvk] {
				_, context, ok := p.inert.unitChanges(norm, base, u)
				if !ok || !context {
					continue
				}
				parent, _ := pathValue(norm, strings.Join(u.path, "."))
				pm, _ := parent.(map[string]any)
				got := s.contextUnchanged(k, gvk, u, pm)
				if want := contextUnchangedReference(t, s, gvk, u, pm); got != want {
					t.Fatalf("%v %v: contextUnchanged %v, the reference %v: %s", gvk, u.path, got, want, mustJSONText(pm))
				}
				refs++
				if _, ok := s.defaultUnits(p.inert, u, norm, base, gvk); ok {
					contexts++
				}
			}
		}
	}
	t.Logf("%d mutated objects defaulted element by element (%d with their context), %d without the defaulters, %d whole; contextUnchanged held to its reference %d times", counts[defaultedElements], contexts, counts[defaultedNone], counts[defaultedWhole], refs)
	if contexts == 0 {
		t.Error("no mutated object was defaulted with its context")
	}
}
