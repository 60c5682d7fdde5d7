package matching

import (
	"fmt"
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// TestLabelsOfMatchesGetLabels holds labelsOf, the labels matchObject reads
// in place, to the reference: labels.Set of Unstructured.GetLabels, on
// every label and selector, over objects whose metadata and labels take
// every shape (absent, null, not an object, values of every JSON type).
func TestLabelsOfMatchesGetLabels(t *testing.T) {
	keys := []string{"app", "tier", "env", "x/y", ""}
	values := []any{"web", "", "db", nil, int64(1), 2.5, true, map[string]any{}, []any{"a"}}
	selectors := []string{"", "app", "!app", "app=web", "app!=web", "app in (web,db)", "app notin (web)",
		"tier=", "tier!=", "env,app=web", "!env,tier in (,db)", "x/y=db", "app=web,tier notin (db)"}
	var parsed []labels.Selector
	for _, s := range selectors {
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		parsed = append(parsed, sel)
	}
	objects := []map[string]any{
		nil, {}, {"metadata": nil}, {"metadata": "x"}, {"metadata": []any{}}, {"metadata": map[string]any{}},
		{"metadata": map[string]any{"labels": nil}}, {"metadata": map[string]any{"labels": "a=b"}},
		{"metadata": map[string]any{"labels": map[string]any{}}},
	}
	r := rand.New(rand.NewSource(29))
	for range 2000 {
		m := map[string]any{}
		for _, k := range keys {
			if r.Intn(2) == 0 {
				// Mostly strings and nulls, sometimes another type.
				v := values[r.Intn(4)]
				if r.Intn(10) == 0 {
					v = values[r.Intn(len(values))]
				}
				m[k] = v
			}
		}
		objects = append(objects, map[string]any{"metadata": map[string]any{"name": "o", "labels": m}})
	}
	for i, obj := range objects {
		u := &unstructured.Unstructured{Object: obj}
		want := labels.Set(u.GetLabels())
		got := labelsOf(obj)
		for _, k := range append(keys, "absent") {
			gv, gok := got.Lookup(k)
			wv, wok := want.Lookup(k)
			if got.Has(k) != want.Has(k) || got.Get(k) != want.Get(k) || gv != wv || gok != wok {
				t.Fatalf("object %d %s: label %q: got %q %v, want %q %v", i, fmt.Sprint(obj), k, gv, gok, wv, wok)
			}
		}
		for j, sel := range parsed {
			if sel.Matches(got) != sel.Matches(want) {
				t.Fatalf("object %d %v: selector %q: got %v, want %v", i, obj, selectors[j], sel.Matches(got), sel.Matches(want))
			}
			if matchObject(u, sel) != sel.Matches(want) {
				t.Fatalf("object %d: matchObject(%q) differs from the reference", i, selectors[j])
			}
		}
	}
}
