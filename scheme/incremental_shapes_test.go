package scheme

import (
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestElementInertTable is the probe behind elementInertTable: on every
// kind of unitTable with a unit list of the table, defaulted real and
// random objects get elements of the row's shape (random non-empty strings
// among them the names of the list's own elements, empty objects) put in
// place of one or several of the list's elements, and one to three such
// elements appended (the list absent or empty before among them).
// Upstream's defaulting of the whole object must leave each such object as
// it is (what the table claims), and DefaultFrom must return it, bit for
// bit, as defaultReference does. It fails if no object took the skip
// (isInertElement) or no kind has such a list.
func TestElementInertTable(t *testing.T) {
	p := newLeftAsIsProbe(t, 27)
	lists := 0
	p.eachUnitList(t, 27_000, func(gvk schema.GroupVersionKind, u *unitParent, _ *node, list string, bases []map[string]any) {
		var rows []inertShape
		for _, row := range elementInertTable {
			if row.list == list {
				rows = append(rows, row)
			}
		}
		if len(rows) == 0 {
			return
		}
		lists++
		c := unitCandidate{u.path, list}
		r := p.r
		for _, base := range bases {
			if !hasPath(base, u.path) {
				continue // the list's parent made too: not a change of the list alone
			}
			elems := listAt(base, c)
			for range p.rounds {
				l := append([]any(nil), elems...)
				for k := range l {
					if r.IntN(3) == 0 {
						l[k] = shapedElement(r, rows[r.IntN(len(rows))], elems)
					}
				}
				for n := r.IntN(4); n > 0 || len(l) == len(elems) && r.IntN(2) == 0; n-- {
					l = append(l, shapedElement(r, rows[r.IntN(len(rows))], elems))
				}
				p.check(t, gvk, c, base, l)
			}
		}
	})
	if lists == 0 || p.skipped == 0 {
		t.Fatalf("%d lists of elementInertTable, %d objects taken as they are", lists, p.skipped)
	}
	t.Logf("%d lists, %d objects, %d taken as they are", lists, p.objects, p.skipped)
}

// hasPath tells whether obj has an object at path.
func hasPath(obj map[string]any, path []string) bool {
	for _, step := range path {
		next, ok := obj[step].(map[string]any)
		if !ok || next == nil {
			return false
		}
		obj = next
	}
	return true
}

// shapedElement is an element of row's shape: its strings random non-empty
// ones or the names of the elements of the list (elems), its objects
// empty.
func shapedElement(r *rand.Rand, row inertShape, elems []any) map[string]any {
	values := []string{"x", "app-logs", "cache", "a b", "0", "false", "null", "$(POD_NAME)", "日本語", " ", "kube-api-access-abcde"}
	for _, e := range elems {
		if m, ok := e.(map[string]any); ok {
			if name, ok := m["name"].(string); ok && name != "" {
				values = append(values, name)
			}
		}
	}
	out := make(map[string]any, len(row.fields))
	names := make(map[string]any, len(row.fields))
	for f := range row.fields {
		names[f] = true
	}
	for _, f := range sortedKeys(names) {
		switch row.fields[f] {
		case sortString:
			out[f] = values[r.IntN(len(values))]
		case sortEmptyObject:
			out[f] = map[string]any{}
		}
	}
	return out
}

// TestIsInertElement holds isInertElement to the shapes of
// elementInertTable: exactly the row's fields, each of its sort.
func TestIsInertElement(t *testing.T) {
	for _, c := range []struct {
		list string
		elem map[string]any
		want bool
	}{
		{"volumes", map[string]any{"name": "v", "emptyDir": map[string]any{}}, true},
		{"containers", map[string]any{"name": "v", "emptyDir": map[string]any{}}, false},
		{"volumes", map[string]any{"name": "", "emptyDir": map[string]any{}}, false},
		{"volumes", map[string]any{"name": "v"}, false},
		{"volumes", map[string]any{"emptyDir": map[string]any{}}, false},
		{"volumes", map[string]any{"name": "v", "emptyDir": map[string]any{"medium": "Memory"}}, false},
		{"volumes", map[string]any{"name": "v", "emptyDir": nil}, false},
		{"volumes", map[string]any{"name": "v", "emptyDir": map[string]any(nil)}, false},
		{"volumes", map[string]any{"name": int64(1), "emptyDir": map[string]any{}}, false},
		{"volumes", map[string]any{"name": "v", "configMap": map[string]any{}}, false},
		{"volumes", map[string]any{"name": "v", "emptyDir": map[string]any{}, "hostPath": map[string]any{}}, false},
	} {
		if got := isInertElement(c.list, c.elem); got != c.want {
			t.Errorf("isInertElement(%s, %v) = %v, want %v", c.list, c.elem, got, c.want)
		}
	}
}
