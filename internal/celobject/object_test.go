package celobject

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"google.golang.org/protobuf/types/known/structpb"

	"k8s.io/apiserver/pkg/cel/mutation/dynamic"
)

// asObject is v, and every ObjectVal in its fields and in the lists and
// maps of CEL values there, as Objects, with an absent field added after
// the others (as an optional field left out leaves it).
func asObject(v *dynamic.ObjectVal) *Object { return asObjectLists(v, false) }

// asObjectLists is asObject, its lists ItemLists when items is set (as
// the compiler's list literals for a reader are).
func asObjectLists(v *dynamic.ObjectVal, items bool) *Object {
	fields := Fields(v)
	names := make([]string, 0, len(fields)+1)
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	names = append(names, "absent")
	o := NewObject(TypeOf(v), names)
	for i, k := range names[:len(names)-1] {
		o.Set(i, asObjectsLists(fields[k], items))
	}
	return o
}

func asObjects(v ref.Val) ref.Val { return asObjectsLists(v, false) }

func asObjectsLists(v ref.Val, itemLists bool) ref.Val {
	if ov, ok := v.(*dynamic.ObjectVal); ok {
		return asObjectLists(ov, itemLists)
	}
	switch raw := v.Value().(type) {
	case []ref.Val:
		items := make([]ref.Val, len(raw))
		for i, item := range raw {
			items[i] = asObjectsLists(item, itemLists)
		}
		l := types.NewRefValList(types.DefaultTypeAdapter, items)
		if itemLists {
			return itemList{l.(traits.Lister), items}
		}
		return l
	case map[ref.Val]ref.Val:
		m := make(map[ref.Val]ref.Val, len(raw))
		for k, item := range raw {
			m[k] = asObjectsLists(item, itemLists)
		}
		return types.NewRefValMap(types.DefaultTypeAdapter, m)
	}
	return v
}

// itemList is an ItemList: cel-go's list of its items.
type itemList struct {
	traits.Lister
	items []ref.Val
}

// Items implements ItemList.
func (l itemList) Items() []ref.Val { return l.items }

// TestItemListsConvertAsLists holds the conversions of Objects whose
// lists are ItemLists (read by Items) to those of the ObjectVals they
// stand for, whose lists are cel-go's (read by Value), on the type-name
// cases.
func TestItemListsConvertAsLists(t *testing.T) {
	lists := 0
	for name, v := range typeNameCases() {
		o := asObjectLists(v, true)
		got, ok := NativeCheckedObject(o)
		want, wantOK := NativeChecked(v)
		if ok != wantOK || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: NativeCheckedObject %v %v, NativeChecked %v %v", name, got, ok, want, wantOK)
		}
		got, ok = NativeObject(o)
		want, wantOK = Native(v)
		if ok != wantOK || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: NativeObject %v %v, Native %v %v", name, got, ok, want, wantOK)
		}
		if strings.Contains(fmt.Sprint(v), "[") {
			lists++
		}
	}
	if lists == 0 {
		t.Error("no case holds a list")
	}
}

// sortedLines are the lines of err's text, sorted (upstream joins its
// errors in map order); nil for no error.
func sortedLines(err error) []string {
	if err == nil {
		return nil
	}
	l := strings.Split(err.Error(), "\n")
	slices.Sort(l)
	return l
}

// TestObjectIsUpstreams holds an Object to the dynamic.ObjectVal it stands
// for, on the type-name cases (right and wrong names in fields, list items
// and map values): the readers (CheckTypeNames, Native, NativeChecked) and
// every method of ref.Val.
func TestObjectIsUpstreams(t *testing.T) {
	lines := sortedLines
	same := func(a, b any) bool { return fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b) || reflect.DeepEqual(a, b) }
	cases := typeNameCases()
	cases["a map key not a string"] = dynamic.NewObjectVal(types.NewObjectType("Object"), map[string]ref.Val{
		"m": types.NewRefValMap(types.DefaultTypeAdapter, map[ref.Val]ref.Val{types.Int(1): types.String("x")})})
	cases["bytes"] = dynamic.NewObjectVal(types.NewObjectType("Object"), map[string]ref.Val{"b": types.Bytes("x")})
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			o := asObject(v)
			if got, want := lines(CheckTypeNames(o.Upstream())), lines(v.CheckTypeNamesMatchFieldPathNames()); !slices.Equal(got, want) {
				t.Errorf("CheckTypeNames %q, upstream %q", got, want)
			}
			got, ok := NativeCheckedObject(o)
			want, wantOK := NativeChecked(v)
			if ok != wantOK || !reflect.DeepEqual(got, want) {
				t.Errorf("NativeCheckedObject %v %v, NativeChecked %v %v", got, ok, want, wantOK)
			}
			got, ok = Native(o.Upstream())
			want, wantOK = Native(v)
			if ok != wantOK || !reflect.DeepEqual(got, want) {
				t.Errorf("Native %v %v, of the ObjectVal %v %v", got, ok, want, wantOK)
			}
			if got, ok = NativeObject(o); ok != wantOK || !reflect.DeepEqual(got, want) {
				t.Errorf("NativeObject %v %v, Native of the ObjectVal %v %v", got, ok, want, wantOK)
			}
			if !same(o.Value(), v.Value()) {
				t.Errorf("Value %#v, upstream %#v", o.Value(), v.Value())
			}
			for _, typ := range []reflect.Type{reflect.TypeFor[map[string]any](), reflect.TypeFor[*structpb.Value](), reflect.TypeFor[*structpb.Struct](), reflect.TypeFor[string]()} {
				g, gerr := o.ConvertToNative(typ)
				w, werr := v.ConvertToNative(typ)
				if fmt.Sprint(gerr) != fmt.Sprint(werr) || !same(g, w) {
					t.Errorf("ConvertToNative(%v) %v %v, upstream %v %v", typ, g, gerr, w, werr)
				}
			}
			for _, typ := range []ref.Type{v.Type(), types.TypeType, types.StringType, types.NewObjectType("Other")} {
				g, w := o.ConvertToType(typ), v.ConvertToType(typ)
				if w == v {
					if g != o {
						t.Errorf("ConvertToType(%v) %v, upstream itself", typ, g)
					}
				} else if fmt.Sprint(g) != fmt.Sprint(w) {
					t.Errorf("ConvertToType(%v) %v, upstream %v", typ, g, w)
				}
			}
			if o.Type().TypeName() != v.Type().TypeName() || o.IsZeroValue() != v.IsZeroValue() {
				t.Errorf("Type %v, IsZeroValue %v; upstream %v, %v", o.Type(), o.IsZeroValue(), v.Type(), v.IsZeroValue())
			}
			for _, other := range []ref.Val{asObject(v), asObject(v).Upstream(), v, types.String("x"), asObject(typeNameCases()["empty"])} {
				wantOther := other
				if oo, ok := other.(*Object); ok {
					wantOther = oo.Upstream()
				}
				if g, w := o.Equal(other), o.Upstream().Equal(wantOther); g != w {
					t.Errorf("Equal(%v) %v, upstream %v", other, g, w)
				}
			}
		})
	}
	// Equal of Objects whose fields are Objects is upstream's of the
	// ObjectVals built as cel-go builds them.
	a := asObject(cases["right names"])
	if g, w := a.Equal(asObject(cases["right names"])), cases["right names"].Equal(typeNameCases()["right names"]); g != w {
		t.Errorf("Equal of two Objects %v, of two ObjectVals %v", g, w)
	}
}
