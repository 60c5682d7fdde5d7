package celobject

import (
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"k8s.io/apiserver/pkg/cel/mutation/dynamic"
)

func TestObjectValLayoutIsMirrored(t *testing.T) {
	if !Mirrored {
		t.Fatal("dynamic.ObjectVal changed: CheckTypeNames falls back to upstream's slower method; update objectValLayout")
	}
}

// TestCheckTypeNamesAsUpstream compares CheckTypeNames with
// CheckTypeNamesMatchFieldPathNames on Objects with right and wrong
// initializer names at every depth, in fields, lists, maps and nested lists.
func TestCheckTypeNamesAsUpstream(t *testing.T) {
	lines := sortedLines
	for name, v := range typeNameCases() {
		t.Run(name, func(t *testing.T) {
			got, want := lines(CheckTypeNames(v)), lines(v.CheckTypeNamesMatchFieldPathNames())
			if !slices.Equal(got, want) {
				t.Fatalf("errors\n%q\nwant (in any order)\n%q", got, want)
			}
			if strings.HasPrefix(name, "wrong") && len(got) == 0 {
				t.Fatal("no error for a wrong name")
			}
		})
	}
}

// TestNativeCheckedIsBoth holds NativeChecked, the names checked and the
// value converted in one walk, to CheckTypeNames and Native: it converts
// exactly when the names are right and Native converts, to Native's
// value. Every case with right names that Native converts is converted.
func TestNativeCheckedIsBoth(t *testing.T) {
	converted := 0
	for name, v := range typeNameCases() {
		t.Run(name, func(t *testing.T) {
			got, ok := NativeChecked(v)
			native, nativeOK := Native(v)
			want := CheckTypeNames(v) == nil && nativeOK
			if ok != want {
				t.Fatalf("NativeChecked ok=%v; names right: %v, Native converts: %v", ok, CheckTypeNames(v) == nil, nativeOK)
			}
			if ok && !reflect.DeepEqual(got, native) {
				t.Fatalf("NativeChecked %#v\nNative %#v", got, native)
			}
			if ok {
				converted++
			}
		})
	}
	if converted < 4 {
		t.Fatalf("%d cases converted: too few to tell", converted)
	}
}

// typeNameCases are Objects with right and wrong type names, in every
// place an Object can be: fields, list items, map values, nested lists.
func typeNameCases() map[string]*dynamic.ObjectVal {
	obj := func(name string, kv ...any) *dynamic.ObjectVal {
		fields := map[string]ref.Val{}
		for i := 0; i < len(kv); i += 2 {
			fields[kv[i].(string)] = kv[i+1].(ref.Val)
		}
		return dynamic.NewObjectVal(types.NewObjectType(name), fields)
	}
	list := func(items ...ref.Val) ref.Val { return types.NewRefValList(types.DefaultTypeAdapter, items) }
	mapOf := func(kv ...ref.Val) ref.Val {
		m := map[ref.Val]ref.Val{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return types.NewRefValMap(types.DefaultTypeAdapter, m)
	}
	cases := map[string]*dynamic.ObjectVal{
		"empty":              obj("Object"),
		"right names":        obj("Object", "metadata", obj("Object.metadata", "labels", mapOf(types.String("a"), types.String("b"))), "spec", obj("Object.spec", "replicas", types.Int(3))),
		"another root name":  obj("Thing", "spec", obj("Thing.spec"), "status", obj("Object.status")),
		"wrong child":        obj("Object", "spec", obj("Object.wrong")),
		"wrong grandchild":   obj("Object", "spec", obj("Object.spec", "template", obj("Object.spec.x"))),
		"two wrong children": obj("Object", "spec", obj("Object.a"), "status", obj("Object.b")),
		"list items":         obj("Object", "spec", obj("Object.spec", "containers", list(obj("Object.spec.containers"), obj("Object.spec.container")))),
		"nested lists":       obj("Object", "spec", obj("Object.spec", "x", list(list(obj("Object.spec.x"), obj("Object.spec.y"))))),
		"map values":         obj("Object", "spec", obj("Object.spec", "m", mapOf(types.String("k"), obj("Object.spec.m"), types.String("j"), obj("Object.spec")))),
		"native list":        obj("Object", "spec", obj("Object.spec", "args", types.DefaultTypeAdapter.NativeToValue([]string{"a"}))),
		"scalars":            obj("Object", "a", types.String("x"), "b", types.True, "c", types.Double(1.5), "d", types.NullValue),
		"wrong separator":    obj("Object", "spec", obj("Objectxspec")),
		"wrong prefix":       obj("Object", "spec", obj("Xbject.spec", "a", obj("Xbject.spec.a"))),
		"wrong suffix":       obj("Object", "spec", obj("Object.spek")),
		"items with fields":  obj("Object", "spec", obj("Object.spec", "containers", list(obj("Object.spec.containers", "env", list(obj("Object.spec.containers.env"), obj("Object.env"))), types.String("s")))),
		"scalar map values":  obj("Object", "m", mapOf(types.String("a"), types.Int(1), types.String("b"), list(obj("Object.m")))),
		"right items":        obj("Object", "spec", obj("Object.spec", "containers", list(obj("Object.spec.containers", "name", types.String("a")), obj("Object.spec.containers")), "m", mapOf(types.String("k"), obj("Object.spec.m")))),
		"wrong list item":    obj("Object", "spec", obj("Object.spec", "containers", list(obj("Object.spec.containers"), obj("Object.spec.containerz")))),
		"wrong map value":    obj("Object", "spec", obj("Object.spec", "m", mapOf(types.String("k"), obj("Object.spec.n")))),
		"wrong in an item":   obj("Object", "spec", obj("Object.spec", "c", list(obj("Object.spec.c", "env", list(obj("Object.spec.c.envv")))))),
		"right, other root":  obj("Thing", "spec", obj("Thing.spec", "a", types.Int(1), "l", list(obj("Thing.spec.l")))),
	}
	return cases
}

// TestStringValueIsValue holds StringValue to types.String's Value on
// strings held as CEL values the ways evaluations hold them (constants,
// results of functions, map keys and list items), and checks that the
// value stays right after the garbage collector has run.
func TestStringValueIsValue(t *testing.T) {
	strs := []string{"", "a", "é\u2028<&>", strings.Repeat("long string ", 100)}
	var vals []ref.Val
	for _, s := range strs {
		vals = append(vals, types.String(s), types.String(s+"x").Add(types.String("y")))
	}
	list := types.NewStringList(types.DefaultTypeAdapter, strs)
	for i := range strs {
		vals = append(vals, list.Get(types.Int(i)))
	}
	vals = append(vals, types.Int(1), types.True, types.Double(1.5))
	var got []any
	for _, v := range vals {
		got = append(got, StringValue(v))
	}
	runtime.GC()
	for i, v := range vals {
		if want := v.Value(); got[i] != want {
			t.Errorf("StringValue(%#v) = %#v, want %#v", v, got[i], want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = StringValue(vals[2]) }); n != 0 {
		t.Errorf("StringValue allocates %v times", n)
	}
	// Native takes the strings of an Object as they are.
	obj := dynamic.NewObjectVal(types.NewObjectType("Object"), map[string]ref.Val{
		"s": types.String("abc"),
		"l": types.NewRefValList(types.DefaultTypeAdapter, []ref.Val{types.String("def")}),
	})
	if n := testing.AllocsPerRun(100, func() { _, _ = Native(obj) }); n > 4 {
		t.Errorf("Native allocates %v times, want at most 4 (the map, its group, the list and its header): none for the strings", n)
	}
}
