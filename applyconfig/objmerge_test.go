package applyconfig

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/internal/celobject"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// objectForm is v as the compiler hands an ApplyConfiguration's value
// to the merge: maps as celobject.Objects named after their field path
// from name (or, below the top and when rng says so, as CEL maps, which
// a CEL literal {…} builds), lists as CEL lists, scalars as CEL's. When
// wrong is set, now and then an Object is misnamed. Keys are taken in
// order, so that one seed gives one value.
func objectForm(rng *rand.Rand, v any, name string, top, wrong bool) ref.Val {
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		if !top && rng.IntN(8) == 0 {
			m := make(map[ref.Val]ref.Val, len(x))
			for _, k := range keys {
				m[types.String(k)] = objectForm(rng, x[k], name, false, wrong)
			}
			return types.NewRefValMap(types.DefaultTypeAdapter, m)
		}
		if wrong && rng.IntN(12) == 0 {
			name += "x"
		}
		// Now and then a field left absent (nil), as an optional one.
		names := slices.Clone(keys)
		if rng.IntN(6) == 0 {
			names = append(names, "absent")
		}
		o := celobject.NewObject(types.NewObjectType(name), names)
		for i, k := range keys {
			o.Set(i, objectForm(rng, x[k], name+"."+k, false, wrong))
		}
		return o
	case []any:
		items := make([]ref.Val, len(x))
		for i, item := range x {
			items[i] = objectForm(rng, item, name, false, wrong)
		}
		l := types.NewRefValList(types.DefaultTypeAdapter, items).(traits.Lister)
		if rng.IntN(2) == 0 {
			return itemList{l, items} // the compiler's outList's form
		}
		return l
	case string:
		return types.String(x)
	case int64:
		return types.Int(x)
	case float64:
		return types.Double(x)
	case bool:
		return types.Bool(x)
	case nil:
		return types.NullValue
	}
	panic(fmt.Sprintf("objectForm: %T", v))
}

// itemList is a celobject.ItemList: cel-go's list of its items.
type itemList struct {
	traits.Lister
	items []ref.Val
}

// Items implements celobject.ItemList.
func (l itemList) Items() []ref.Val { return l.items }

// referenceMerge is what the caller of MergeObject runs where it answers
// false: FromCELFresh's map of v merged with MergeFresh (MergeOwned when
// not fresh).
func referenceMerge(m *Merger, live *unstructured.Unstructured, v ref.Val, prev *Merged) (*Merged, error) {
	patch, fresh, err := FromCELFresh(v)
	if err != nil {
		return nil, err
	}
	if fresh {
		return m.MergeFresh(live, patch, prev)
	}
	return m.MergeOwned(live, patch, prev)
}

// checkMergeObject holds MergeObject of v into live (with prev) to the
// reference: where it answers, the reference gives no error and the same
// object, which is live's very map where the reference's is, live is
// left as it was, and the result is known valid and validates. It
// reports whether MergeObject answered.
func checkMergeObject(t *testing.T, m *Merger, live map[string]any, v ref.Val, prev *Merged) bool {
	t.Helper()
	before := runtime.DeepCopyJSONValue(live)
	got, ok := m.MergeObject(&unstructured.Unstructured{Object: live}, v, prev)
	if !reflect.DeepEqual(live, before) {
		t.Fatalf("MergeObject changed the live object")
	}
	want, err := referenceMerge(m, &unstructured.Unstructured{Object: live}, v, prev)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("MergeObject answered where the reference fails with %v\npatch %v", err, v)
	}
	if !reflect.DeepEqual(got.Object.Object, want.Object.Object) {
		t.Fatalf("MergeObject\n%v\nreference\n%v\npatch %v", got.Object.Object, want.Object.Object, v)
	}
	if jsonvalue.SameMap(got.Object.Object, live) != jsonvalue.SameMap(want.Object.Object, live) {
		t.Fatalf("MergeObject's result is live's map: %v, the reference's: %v", jsonvalue.SameMap(got.Object.Object, live), jsonvalue.SameMap(want.Object.Object, live))
	}
	if !got.KnownValid() || !validValue(m.root.plan, got.Object.Object, true) {
		t.Fatalf("MergeObject's result not known valid")
	}
	return true
}

// TestMergeObjectIsMergeFresh holds Merger.MergeObject, the merge of an
// ApplyConfiguration's value in the compiler's form without the map
// FromCELFresh makes of it, to that map merged by MergeFresh (the
// reference its caller falls back to): on every real built-in object of
// testobjects that the schema types, with patches made of random parts of
// the object, of another object of its kind and of perturbations of
// them (unknown fields, wrong types, nulls, duplicates, atomics), in
// Object form with CEL maps and lists among the Objects, some Objects
// misnamed; merged alone and chained (the last result as prev). Where
// MergeObject answers, the same object (see checkMergeObject); where it
// does not, its caller runs the reference, whose result or error is the
// mutation's.
func TestMergeObjectIsMergeFresh(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 6))
	n := valuetest.Sweep(3000, 200)
	reg := sharedSchemas(t)
	byKind := map[string][]map[string]any{}
	inputs := testobjects.Inputs(t)
	for _, in := range inputs {
		byKind[in.GVK.String()] = append(byKind[in.GVK.String()], in.Obj)
	}
	fast, same, total, kinds := 0, 0, 0, 0
	for _, in := range inputs {
		m, err := reg.Merger(in.GVK)
		if err != nil || m.root == nil || !m.root.kindOf(in.Obj) || !validValue(m.root.plan, in.Obj, true) {
			continue
		}
		kinds++
		t.Run(in.Name, func(t *testing.T) {
			others := byKind[in.GVK.String()]
			var prev *Merged
			live := in.Obj
			for i := range n {
				src := in.Obj
				if rng.IntN(3) == 0 {
					src = others[rng.IntN(len(others))]
				}
				p := partOf(rng, src).(map[string]any)
				if rng.IntN(2) == 0 {
					p = listPatch(rng, src)
				}
				for range rng.IntN(3) {
					p = perturb(rng, p).(map[string]any)
				}
				if rng.IntN(4) == 0 {
					p = retouch(rng, p).(map[string]any)
				}
				v := objectForm(rng, p, "Object", true, i%4 == 0)
				total++
				if !checkMergeObject(t, m, live, v, prev) {
					continue
				}
				fast++
				got, _ := m.MergeObject(&unstructured.Unstructured{Object: live}, v, prev)
				if jsonvalue.SameMap(got.Object.Object, live) {
					same++
				}
				if rng.IntN(2) == 0 {
					// The next merge chains from this one.
					prev, live = got, got.Object.Object
				}
			}
		})
	}
	t.Logf("%d kinds, %d merges, %d answered by MergeObject (%d of them live itself)", kinds, total, fast, same)
	if kinds < 16 || fast < total/5 || same == 0 || fast == total {
		t.Errorf("%d kinds, %d merges, %d answered, %d live itself: the comparison is weak", kinds, total, fast, same)
	}
}

// FuzzMergeObject holds MergeObject to the reference (checkMergeObject)
// on the fuzz lives and any JSON patch, in Object form.
func FuzzMergeObject(f *testing.F) {
	for i, c := range mergeCases() {
		j, err := yaml.YAMLToJSON([]byte(c.patch))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), uint64(i), j)
	}
	f.Add(uint8(0), uint64(7), []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"x"}]}}}}`))
	f.Add(uint8(2), uint64(3), []byte(`{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"app","env":[{"name":"A","value":"x"}]}]}}`))
	s := sharedSchemas(f)
	lives := fuzzLiveObjects(f)
	f.Fuzz(func(t *testing.T, which uint8, seed uint64, patchJSON []byte) {
		p, ok := fuzzPatch(patchJSON)
		if !ok {
			return
		}
		live := lives[int(which)%len(lives)]
		m, err := s.Merger((&unstructured.Unstructured{Object: live}).GroupVersionKind())
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		checkMergeObject(t, m, live, objectForm(rng, p, "Object", true, seed%3 == 0), nil)
	})
}

// listPatch is a patch that sets one list of maps of obj, found at
// random: some of its items (parts of them), reordered, and items made
// anew from them (a string leaf changed, so that most get a new key),
// now and then an item twice, or more than eight items.
func listPatch(rng *rand.Rand, obj map[string]any) map[string]any {
	var paths [][]string
	var lists [][]any
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], append(slices.Clip(path), k))
			}
		case []any:
			if len(x) > 0 {
				if _, ok := x[0].(map[string]any); ok {
					paths, lists = append(paths, path), append(lists, x)
				}
			}
		}
	}
	walk(obj, nil)
	if len(paths) == 0 {
		return map[string]any{}
	}
	i := rng.IntN(len(paths))
	items := lists[i]
	var out []any
	for _, j := range rng.Perm(len(items)) {
		if rng.IntN(3) > 0 {
			out = append(out, partOf(rng, items[j]))
		}
	}
	for range rng.IntN(3) {
		out = append(out, retouch(rng, items[rng.IntN(len(items))]))
	}
	if rng.IntN(5) == 0 {
		for range 9 {
			out = append(out, retouch(rng, items[rng.IntN(len(items))]))
		}
	}
	if rng.IntN(8) == 0 && len(out) > 0 {
		out = append(out, out[rng.IntN(len(out))])
	}
	var v any = out
	for j := len(paths[i]) - 1; j >= 0; j-- {
		v = map[string]any{paths[i][j]: v}
	}
	return v.(map[string]any)
}
