package scheme

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// TestEntryInertTable is the probe behind entryInertTable: on every kind
// of unitTable whose lists' elements have a field of the table (a list of
// objects), defaulted real and random objects get, in one element alone
// or in several at once, the field's entries kept, replaced by equal
// copies or by entries of the table's fields alone (random non-empty
// strings), and such entries appended; at times an inert field of the
// element (unitTable) set from another element too. Upstream's defaulting
// of the whole object must leave each such object as it is (what the
// table claims), and DefaultFrom must return it, bit for bit, as
// defaultReference does. It fails if no object took the skip
// (elementInertDiff) or no kind has such a field.
func TestEntryInertTable(t *testing.T) {
	p := newLeftAsIsProbe(t, 26)
	lists := 0
	p.eachUnitList(t, 26_000, func(gvk schema.GroupVersionKind, u *unitParent, pn *node, list string, bases []map[string]any) {
		lf := pn.byName[list]
		if lf == nil || lf.node.kind != nodeSlice || lf.node.elem.kind != nodeStruct {
			return
		}
		var rows []entryInert
		for _, e := range entryInertTable {
			if f := lf.node.elem.byName[e.field]; f != nil && f.node.kind == nodeSlice && f.node.elem.kind == nodeStruct {
				rows = append(rows, e)
			}
		}
		if len(rows) == 0 {
			return
		}
		lists++
		c := unitCandidate{u.path, list}
		var pool []map[string]any
		for _, b := range bases {
			for _, e := range listAt(b, c) {
				if m, ok := e.(map[string]any); ok && m != nil {
					pool = append(pool, m)
				}
			}
		}
		inert := sortedKeys(boolKeys(inertFieldsOf(u.inert[list])))
		r := p.r
		for _, base := range bases {
			elems := listAt(base, c)
			if len(elems) == 0 {
				continue
			}
			for range p.rounds {
				l := append([]any(nil), elems...)
				first := r.IntN(len(l))
				for k, e := range l {
					el, ok := e.(map[string]any)
					if !ok || el == nil || k != first && r.IntN(2) == 0 {
						continue
					}
					next := make(map[string]any, len(el)+1)
					for f, v := range el {
						next[f] = v
					}
					for _, row := range rows {
						next[row.field] = inertEntriesFor(r, el[row.field], row.fields)
					}
					if len(inert) > 0 && len(pool) > 0 && r.IntN(3) == 0 {
						f := inert[r.IntN(len(inert))]
						if v, ok := pool[r.IntN(len(pool))][f]; ok && !unsetLike(v) {
							next[f] = v
						}
					}
					l[k] = next
				}
				p.check(t, gvk, c, base, l)
			}
		}
	})
	if lists == 0 || p.skipped == 0 {
		t.Fatalf("%d lists with fields of entryInertTable, %d objects taken as they are", lists, p.skipped)
	}
	t.Logf("%d lists, %d objects, %d taken as they are", lists, p.objects, p.skipped)
}

// leftAsIsProbe is what the probes of tables of changes that defaulting
// leaves as they are (entryInertTable, elementInertTable) share: the
// scheme, the random source, how many rounds, and the objects checked and
// taken as they are by DefaultFrom.
type leftAsIsProbe struct {
	s                *Scheme
	kb               *kube
	r                *rand.Rand
	rounds           int
	real             map[schema.GroupVersionKind][]map[string]any
	objects, skipped int
}

// newLeftAsIsProbe is a probe with its random source seeded by seed (three
// rounds, twelve with MUTATIS_LONG set).
func newLeftAsIsProbe(t *testing.T, seed uint64) *leftAsIsProbe {
	s := New()
	kb, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	p := &leftAsIsProbe{s: s, kb: kb, r: rand.New(rand.NewPCG(seed, 29)), rounds: 3, real: realByKind(t)}
	if os.Getenv("MUTATIS_LONG") != "" {
		p.rounds = 12
	}
	return p
}

// eachUnitList calls f with every unit list of every kind of unitTable
// (the plan of its parent, pn) and the kind's real and random objects
// (seeded from seed) defaulted by defaultReference.
func (p *leftAsIsProbe) eachUnitList(t *testing.T, seed int64, f func(gvk schema.GroupVersionKind, u *unitParent, pn *node, list string, bases []map[string]any)) {
	for i, gvk := range sortedGVKs(p.s.units()) {
		root := p.s.plans.typedKind(p.kb.scheme, gvk)
		if root == nil {
			continue
		}
		var bases []map[string]any
		for _, o := range append(randomObjects(t, gvk, seed+int64(i), 6), p.real[gvk]...) {
			if d, err := p.s.defaultReference(valuetest.DeepCopy(o).(map[string]any), gvk); err == nil {
				bases = append(bases, d)
			}
		}
		for _, u := range p.s.units()[gvk] {
			pn := unitParentNode(root, u.path)
			if pn == nil {
				continue
			}
			for _, list := range sortedKeys(boolKeys(u.lists)) {
				f(gvk, u, pn, list, bases)
			}
		}
	}
}

// check holds base with list c set to l, in normalized form, to be left as
// it is by upstream's defaulting of the whole object, and DefaultFrom of
// it to return it bit for bit as defaultReference does (both in one
// second), counting it and whether DefaultFrom took it as it is.
func (p *leftAsIsProbe) check(t *testing.T, gvk schema.GroupVersionKind, c unitCandidate, base map[string]any, l []any) {
	obj, ok := withList(base, c, l, true)
	if !ok {
		return
	}
	norm, err := p.s.Normalize(obj, gvk)
	if err != nil {
		return
	}
	p.objects++
	err = inOneSecond(func() error {
		want, wantErr := p.s.defaultReference(valuetest.DeepCopy(norm).(map[string]any), gvk)
		if wantErr != nil || !valuetest.BitsEqual(want, norm) {
			return fmt.Errorf("%v %s: defaulting changes the object (%v)\nobj:  %s\nwant: %s", gvk, c.list, wantErr, mustJSONText(norm), mustJSONText(want))
		}
		got, err := p.s.DefaultFrom(norm, base, gvk)
		if err != nil || !valuetest.BitsEqual(got, want) {
			return fmt.Errorf("%v %s: DefaultFrom (%v)\nbase: %s\n obj: %s\n got: %s\nwant: %s", gvk, c.list, err, mustJSONText(base), mustJSONText(norm), mustJSONText(got), mustJSONText(want))
		}
		if jsonvalue.SameMap(got, norm) {
			p.skipped++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// inertFieldsOf is the fields of inert, by name.
func inertFieldsOf(inert map[string]inertness) map[string]bool {
	out := map[string]bool{}
	for f := range inert {
		out[f] = true
	}
	return out
}

// inertEntriesFor is was, a list of entries (or nil), with each entry kept,
// replaced by an equal copy or by an entry of fields alone, and zero to
// three such entries appended (at least one entry in all).
func inertEntriesFor(r *rand.Rand, was any, fields map[string]bool) []any {
	old, _ := was.([]any)
	names := sortedKeys(boolKeys(fields))
	values := []string{"x", "prod-eu-1", "eu-central", "a b", "0", "false", "null", "$(POD_NAME)", "日本語", " ", "LOG_LEVEL"}
	entry := func() any {
		m := map[string]any{}
		for len(m) == 0 {
			for _, f := range names {
				if r.IntN(3) != 0 {
					m[f] = values[r.IntN(len(values))]
				}
			}
		}
		return m
	}
	var out []any
	for _, e := range old {
		switch r.IntN(3) {
		case 0:
			out = append(out, e)
		case 1:
			out = append(out, valuetest.DeepCopy(e))
		default:
			out = append(out, entry())
		}
	}
	for n := r.IntN(4); n > 0 || len(out) == 0; n-- {
		out = append(out, entry())
	}
	return out
}
