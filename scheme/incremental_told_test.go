package scheme

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/mutatis-dev/mutatis/internal/valuetest"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// elementOp is an operation on a list element of obj's pod spec (of a Pod
// or a workload's template), like the policies of test/load: a
// container's resources, env var, image or pull policy set, an init
// container or a volume added; a label when obj has no pod spec.
func elementOp(r *rand.Rand, obj map[string]any) jsonpatch.Operation {
	set := func(kind, path string, v any) jsonpatch.Operation {
		return jsonpatch.Operation{Op: kind, Path: path, Value: v, HasValue: true}
	}
	prefix := "/spec"
	spec, _ := obj["spec"].(map[string]any)
	if tmpl, ok := spec["template"].(map[string]any); ok {
		spec, _ = tmpl["spec"].(map[string]any)
		prefix = "/spec/template/spec"
	}
	cs, _ := spec["containers"].([]any)
	if len(cs) == 0 {
		return set("add", "/metadata/labels/team", "shop")
	}
	c := fmt.Sprintf("%s/containers/%d", prefix, r.IntN(len(cs)))
	switch r.IntN(7) {
	case 0:
		return set("add", c+"/resources/limits", map[string]any{"cpu": "500m", "memory": "128Mi"})
	case 1:
		return set("add", c+"/env/-", map[string]any{"name": "REGION", "value": "eu"})
	case 2:
		return set("replace", c+"/image", "nginx:1.27")
	case 3:
		return jsonpatch.Operation{Op: "remove", Path: c + "/imagePullPolicy"}
	case 4:
		return set("add", prefix+"/initContainers", []any{map[string]any{"name": "proxy-init", "image": "busybox"}})
	case 5:
		return set("add", prefix+"/volumes", []any{map[string]any{"name": "cache", "emptyDir": map[string]any{}}})
	}
	return set("replace", prefix+"/terminationGracePeriodSeconds", int64(r.IntN(60)))
}

// checkTold holds DefaultPatched of patched, the result of ops applied to
// base (a defaulted object), to DefaultFrom of it, which diffs the two
// objects, and to the whole object's defaulting, bit for bit; and the
// fields the paths tell to what they stand for: patched differs from base
// in those fields alone, and changesTold finds the changes changes finds.
// It returns DefaultPatched's result and whether the paths were told.
func checkTold(t testing.TB, d *Scheme, patched, base map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind) (map[string]any, bool) {
	t.Helper()
	describe := func() string {
		return fmt.Sprintf("base: %s\nobj: %s\nops: %+v", mustJSONText(base), mustJSONText(patched), ops)
	}
	want, wantErr := d.defaultReference(valuetest.DeepCopy(patched).(map[string]any), gvk)
	diffed, diffedErr := d.DefaultFrom(patched, base, gvk)
	got, err := d.DefaultPatched(patched, base, ops, gvk)
	if (err == nil) != (wantErr == nil) || (diffedErr == nil) != (wantErr == nil) {
		t.Fatalf("%v: DefaultPatched error %v, DefaultFrom %v, the whole object's %v\n%s", gvk, err, diffedErr, wantErr, describe())
	}
	if !valuetest.BitsEqual(got, want) || !valuetest.BitsEqual(diffed, want) {
		t.Fatalf("%v: DefaultPatched\n%s\nDefaultFrom\n%s\nthe whole object's\n%s\n%s", gvk, mustJSONText(got), mustJSONText(diffed), mustJSONText(want), describe())
	}
	told, ok := toldFields(ops, nil)
	if !ok {
		return got, false
	}
	// The premise: every field outside told is base's (its own, or an
	// equal copy where the patch went through the reference's Apply).
	for f, v := range patched {
		if !toldBefore(told, f) && !valuetest.BitsEqual(v, base[f]) {
			t.Fatalf("%v: field %s changed, told %v\n%s", gvk, f, told, describe())
		}
		if toldWhole(told, f) {
			continue
		}
		vm, _ := v.(map[string]any)
		bm, _ := base[f].(map[string]any)
		for sub, sv := range vm {
			if !addsNothing(told, fieldChange{f, sub}) && bm != nil && !valuetest.BitsEqual(sv, bm[sub]) {
				t.Fatalf("%v: field %s.%s changed, told %v\n%s", gvk, f, sub, told, describe())
			}
		}
	}
	for f, b := range base {
		vm, _ := patched[f].(map[string]any)
		bm, _ := b.(map[string]any)
		for sub := range bm {
			if _, ok := vm[sub]; !ok && vm != nil && !toldWhole(told, f) && !addsNothing(told, fieldChange{f, sub}) {
				t.Fatalf("%v: field %s.%s removed, told %v\n%s", gvk, f, sub, told, describe())
			}
		}
		if _, ok := patched[f]; !ok && !toldBefore(told, f) {
			t.Fatalf("%v: field %s removed, told %v\n%s", gvk, f, told, describe())
		}
	}
	if k := d.inert()[gvk]; k != nil {
		found, all := k.changes(patched, base, nil)
		toldChanges, toldAll := k.changesTold(patched, base, told, nil)
		if all != toldAll || all && !sameChanges(found, toldChanges) {
			t.Fatalf("%v: changesTold %v (all %v), changes %v (all %v)\n%s", gvk, toldChanges, toldAll, found, all, describe())
		}
	}
	return got, true
}

// addsNothing tells whether c is in told already.
func addsNothing(told []fieldChange, c fieldChange) bool {
	for _, t := range told {
		if t == c {
			return true
		}
	}
	return false
}

// sameChanges tells whether a and b hold the same changes, in any order.
func sameChanges(a, b []fieldChange) bool {
	if len(a) != len(b) {
		return false
	}
	for _, c := range a {
		if !addsNothing(b, c) {
			return false
		}
	}
	return true
}

// TestDefaultPatchedIsDefaultFrom is the differential test of defaulting
// told the patch's paths: chains of random patches (typical policy
// operations, random ones, operations on list elements) over the real
// objects of every built-in kind as an admission presents them
// (normalized, defaulted), each patch applied with PatchFrom and its
// result defaulted by DefaultPatched, held to DefaultFrom's diff and the
// whole object's defaulting (checkTold).
func TestDefaultPatchedIsDefaultFrom(t *testing.T) {
	d := New()
	bases := provenBases(t, d)
	r := rand.New(rand.NewPCG(29, 2026))
	chains := valuetest.Sweep(1500, 300)
	steps, told, changed := 0, 0, 0
	for c := 0; c < chains; c++ {
		in := bases[r.IntN(len(bases))]
		f := &Fixed{}
		obj := in.Obj
		for s := 0; s < 6; s++ {
			var ops []jsonpatch.Operation
			switch r.IntN(5) {
			case 0:
				ops = randomPatch(r, obj)
			case 1:
				ops = []jsonpatch.Operation{typicalOp(r, obj)}
			case 2:
				// A move: it writes its path and removes its from.
				ops = []jsonpatch.Operation{{Op: "move", From: "/metadata/labels", Path: "/metadata/annotations"}}
				if r.IntN(2) == 0 {
					ops[0].From = "/spec/containers"
					ops[0].Path = "/spec/initContainers"
				}
			default:
				ops = []jsonpatch.Operation{elementOp(r, obj)}
				if r.IntN(3) == 0 {
					ops = append(ops, elementOp(r, obj))
				}
			}
			patched, skipped, err := d.PatchFrom(f, obj, ops, in.GVK)
			if err != nil || skipped {
				continue
			}
			steps++
			out, ok := checkTold(t, d, patched, obj, ops, in.GVK)
			if ok {
				told++
			}
			if !valuetest.BitsEqual(out, obj) {
				changed++
			}
			obj = out
		}
	}
	t.Logf("%d patches defaulted, %d told their fields, %d changed the object", steps, told, changed)
	if told < steps/2 || changed < steps/4 {
		t.Errorf("only %d of %d patches told their fields, %d changed the object", told, steps, changed)
	}
}

// TestToldFields holds the fields toldFields reads from operations' paths.
func TestToldFields(t *testing.T) {
	op := func(kind, path, from string) jsonpatch.Operation {
		return jsonpatch.Operation{Op: kind, Path: path, From: from}
	}
	for _, c := range []struct {
		ops  []jsonpatch.Operation
		want []fieldChange
		ok   bool
	}{
		{[]jsonpatch.Operation{op("add", "/metadata/labels/a~1b", "")}, []fieldChange{{"metadata", "labels"}}, true},
		{[]jsonpatch.Operation{op("replace", "/spec", ""), op("add", "/spec/containers/0/image", "")}, []fieldChange{{"spec", ""}, {"spec", "containers"}}, true},
		{[]jsonpatch.Operation{op("move", "/spec/a", "/status/b"), op("test", "/kind", "")}, []fieldChange{{"spec", "a"}, {"status", "b"}}, true},
		{[]jsonpatch.Operation{op("copy", "/spec/a", "/status/b")}, []fieldChange{{"spec", "a"}}, true},
		{[]jsonpatch.Operation{op("add", "/spec/", "")}, []fieldChange{{"spec", ""}}, true},
		{[]jsonpatch.Operation{op("add", "/spec/a", ""), op("remove", "/spec/a/b", "")}, []fieldChange{{"spec", "a"}}, true},
		{nil, nil, true},
		{[]jsonpatch.Operation{op("replace", "", "")}, nil, false},
		{[]jsonpatch.Operation{op("replace", "/", "")}, nil, false},
		{[]jsonpatch.Operation{op("move", "/spec/a", "")}, nil, false},
		{[]jsonpatch.Operation{op("add", "/a~0b", "")}, nil, false},
		{[]jsonpatch.Operation{op("add", "/spec/a~1b/c", "")}, nil, false},
		{[]jsonpatch.Operation{op("merge", "/spec", "")}, nil, false},
		{[]jsonpatch.Operation{op("add", "spec", "")}, nil, false},
	} {
		got, ok := toldFields(c.ops, nil)
		if ok != c.ok || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("toldFields(%+v) = %v, %v; want %v, %v", c.ops, got, ok, c.want, c.ok)
		}
	}
	var many []jsonpatch.Operation
	for i := range maxChanges + 1 {
		many = append(many, op("add", fmt.Sprintf("/spec/f%d", i), ""))
	}
	if _, ok := toldFields(many, nil); ok {
		t.Errorf("toldFields told %d fields", maxChanges+1)
	}
}

// FuzzDefaultPatched: any two operations (any kind, any path, any JSON
// value) on the real objects of every built-in kind as an admission
// presents them, applied with PatchFrom one after the other, each result
// defaulted by DefaultPatched: checkTold's equalities.
func FuzzDefaultPatched(f *testing.F) {
	d := New()
	bases := provenBases(f, d)
	for i := range bases {
		f.Add(uint8(i), "add", "/metadata/labels/team", "", []byte(`"shop"`), "replace", "/spec/containers/0/image", []byte(`"nginx"`))
		f.Add(uint8(i), "add", "/spec/template/spec/containers/0/resources/limits", "", []byte(`{"cpu":"1"}`), "remove", "/spec/replicas", []byte(`null`))
		f.Add(uint8(i), "move", "/metadata/annotations", "/metadata/labels", []byte(`null`), "add", "/spec/initContainers", []byte(`[{"name":"a","image":"b"}]`))
	}
	f.Fuzz(func(t *testing.T, base uint8, op1, path1, from1 string, value1 []byte, op2, path2 string, value2 []byte) {
		in := bases[int(base)%len(bases)]
		var v1, v2 any
		if utiljson.Unmarshal(value1, &v1) != nil || utiljson.Unmarshal(value2, &v2) != nil {
			return
		}
		obj, fixed := in.Obj, &Fixed{}
		for _, op := range []jsonpatch.Operation{
			{Op: op1, Path: path1, From: from1, Value: v1, HasValue: true},
			{Op: op2, Path: path2, Value: v2, HasValue: true},
		} {
			ops := []jsonpatch.Operation{op}
			patched, skipped, err := d.PatchFrom(fixed, obj, ops, in.GVK)
			if err != nil || skipped {
				continue
			}
			if out, _ := checkTold(t, d, patched, obj, ops, in.GVK); out != nil {
				obj = out
			}
		}
	})
}
