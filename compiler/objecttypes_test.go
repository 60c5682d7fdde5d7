package compiler

import (
	"reflect"
	"strconv"
	"testing"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apiserver/pkg/cel/mutation"
)

// TestObjectTypesAreUpstreams holds the kept types to upstream's
// DynamicTypeResolver: the same names resolve, to types of the same name,
// fields and values, and the second resolution of a name is the first's
// type (what the cache is for: upstream builds it anew).
func TestObjectTypesAreUpstreams(t *testing.T) {
	var upstream mutation.DynamicTypeResolver
	r := &objectTypes{}
	fields := []map[string]ref.Val{
		{},
		{"a": celtypes.Int(1)},
		{"b": celtypes.String("x"), "c": celtypes.NewDynamicList(celtypes.DefaultTypeAdapter, []any{"y"})},
	}
	patches := []map[string]ref.Val{
		{},
		{"op": celtypes.String("add"), "path": celtypes.String("/a"), "value": celtypes.Int(1)},
		{"op": celtypes.String("remove"), "path": celtypes.String("/b")},
	}
	for _, name := range []string{"Object", "Object.spec", "Object.spec.containers", "Object.metadata.labels", "JSONPatch", "Objectx", "Object.", "Foo", ""} {
		t.Run(name, func(t *testing.T) {
			want, wantOK := upstream.Resolve(name)
			got, ok := r.Resolve(name)
			if ok != wantOK {
				t.Fatalf("resolved = %v, upstream %v", ok, wantOK)
			}
			if !ok {
				if got != nil {
					t.Fatalf("unresolved name gave %v", got)
				}
				return
			}
			again, _ := r.Resolve(name)
			if again != got {
				t.Fatalf("the second resolution built another type")
			}
			if got.TypeName() != want.TypeName() || got.Type().String() != want.Type().String() || !got.Type().IsExactType(want.Type()) {
				t.Fatalf("type %s (%s), upstream %s (%s)", got.TypeName(), got.Type(), want.TypeName(), want.Type())
			}
			gotNames, gotOK := got.FieldNames()
			wantNames, wantOK := want.FieldNames()
			if !reflect.DeepEqual(gotNames, wantNames) || gotOK != wantOK {
				t.Fatalf("field names %v %v, upstream %v %v", gotNames, gotOK, wantNames, wantOK)
			}
			target := map[string]any{"a": int64(1)}
			for _, f := range []string{"a", "b", "op", "value"} {
				gf, gok := got.Field(f)
				wf, wok := want.Field(f)
				if gok != wok || (gf == nil) != (wf == nil) {
					t.Fatalf("field %s: %v, upstream %v", f, gok, wok)
				}
				if gf == nil || wf == nil || gf.IsSet == nil || wf.IsSet == nil {
					if gf.Type.String() != wf.Type.String() || (gf.IsSet == nil) != (wf.IsSet == nil) {
						t.Fatalf("field %s: %v, upstream %v", f, gf, wf)
					}
					continue
				}
				if gf.IsSet(target) != wf.IsSet(target) {
					t.Fatalf("field %s: set %v, upstream %v", f, gf.IsSet(target), wf.IsSet(target))
				}
				gv, gerr := gf.GetFrom(target)
				wv, werr := wf.GetFrom(target)
				if !reflect.DeepEqual(gv, wv) || (gerr == nil) != (werr == nil) {
					t.Fatalf("field %s: %v %v, upstream %v %v", f, gv, gerr, wv, werr)
				}
			}
			// Values of one kept type with different field sets are
			// upstream's values, one after the other.
			sets := fields
			if name == mutation.JSONPatchTypeName {
				sets = patches
			}
			for i, fs := range sets {
				gv, wv := got.Val(fs), want.Val(fs)
				if gv.Type().TypeName() != wv.Type().TypeName() {
					t.Fatalf("value %d: %v of %v, upstream %v of %v", i, gv, gv.Type(), wv, wv.Type())
				}
				if name == mutation.JSONPatchTypeName {
					if !reflect.DeepEqual(gv.Value(), wv.Value()) {
						t.Fatalf("value %d: %v, upstream %v", i, gv.Value(), wv.Value())
					}
					continue
				}
				if gv.Equal(wv) != celtypes.True {
					t.Fatalf("value %d: %v, upstream %v: not equal", i, gv, wv)
				}
				gn, gerr := gv.ConvertToNative(reflect.TypeFor[map[string]any]())
				wn, werr := wv.ConvertToNative(reflect.TypeFor[map[string]any]())
				if !reflect.DeepEqual(gn, wn) || (gerr == nil) != (werr == nil) {
					t.Fatalf("value %d native: %v %v, upstream %v %v", i, gn, gerr, wn, werr)
				}
			}
		})
	}
}

// TestObjectTypesBound keeps at most maxObjectTypes names: past the
// bound, a name still resolves (upstream's type, built anew).
func TestObjectTypesBound(t *testing.T) {
	r := &objectTypes{}
	for i := range maxObjectTypes + 10 {
		if _, ok := r.Resolve("Object.f" + strconv.Itoa(i)); !ok {
			t.Fatalf("Object.f%d does not resolve", i)
		}
	}
	if len(r.types) != maxObjectTypes {
		t.Fatalf("%d types kept, want %d", len(r.types), maxObjectTypes)
	}
	last := "Object.f" + strconv.Itoa(maxObjectTypes+5)
	got, ok := r.Resolve(last)
	if !ok || got.TypeName() != last {
		t.Fatalf("past the bound: %v %v", got, ok)
	}
}
