package scheme

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

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
	s := New()
	kb, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(26, 29))
	rounds := 3
	if os.Getenv("MUTATIS_LONG") != "" {
		rounds = 12
	}
	real := realByKind(t)
	lists, objects, skipped := 0, 0, 0
	for i, gvk := range sortedGVKs(s.units()) {
		root := s.plans.typedKind(kb.scheme, gvk)
		if root == nil {
			continue
		}
		var bases []map[string]any
		for _, o := range append(randomObjects(t, gvk, int64(26_000+i), 6), real[gvk]...) {
			if d, err := s.defaultReference(valuetest.DeepCopy(o).(map[string]any), gvk); err == nil {
				bases = append(bases, d)
			}
		}
		for _, u := range s.units()[gvk] {
			pn := unitParentNode(root, u.path)
			if pn == nil {
				continue
			}
			for _, list := range sortedKeys(boolKeys(u.lists)) {
				lf := pn.byName[list]
				if lf == nil || lf.node.kind != nodeSlice || lf.node.elem.kind != nodeStruct {
					continue
				}
				var rows []entryInert
				for _, e := range entryInertTable {
					if f := lf.node.elem.byName[e.field]; f != nil && f.node.kind == nodeSlice && f.node.elem.kind == nodeStruct {
						rows = append(rows, e)
					}
				}
				if len(rows) == 0 {
					continue
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
				for _, base := range bases {
					elems := listAt(base, c)
					if len(elems) == 0 {
						continue
					}
					for range rounds {
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
						obj, ok := withList(base, c, l, true)
						if !ok {
							continue
						}
						norm, err := s.Normalize(obj, gvk)
						if err != nil {
							continue
						}
						objects++
						err = inOneSecond(func() error {
							want, wantErr := s.defaultReference(valuetest.DeepCopy(norm).(map[string]any), gvk)
							if wantErr != nil || !valuetest.BitsEqual(want, norm) {
								return fmt.Errorf("%v %s: defaulting changes the object (%v)\nobj:  %s\nwant: %s", gvk, list, wantErr, mustJSONText(norm), mustJSONText(want))
							}
							got, err := s.DefaultFrom(norm, base, gvk)
							if err != nil || !valuetest.BitsEqual(got, want) {
								return fmt.Errorf("%v %s: DefaultFrom (%v)\nbase: %s\n obj: %s\n got: %s\nwant: %s", gvk, list, err, mustJSONText(base), mustJSONText(norm), mustJSONText(got), mustJSONText(want))
							}
							if jsonvalue.SameMap(got, norm) {
								skipped++
							}
							return nil
						})
						if err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	}
	if lists == 0 || skipped == 0 {
		t.Fatalf("%d lists with fields of entryInertTable, %d objects taken as they are", lists, skipped)
	}
	t.Logf("%d lists, %d objects, %d taken as they are", lists, objects, skipped)
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
