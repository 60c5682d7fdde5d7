package scheme

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// TestEmitSkipIsEmit holds emit's skipping (the field ranges the watch's
// diff leaves out are written as the input's own) to emit without it, on
// the real objects of every kind in normalized form: built with a watch,
// defaulted, then written at random as a defaulter may write — scalars
// changed, strings written again with the same text, pointers set to nil,
// to a copy or swapped, slices replaced by a copy, copies then written
// inside, maps written — the output must be the same bit for bit, with
// the same failures. TestBuildAndEmitAreTheConverter holds emit itself to
// ToUnstructured.
func TestEmitSkipIsEmit(t *testing.T) {
	s := New()
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(29, 23))
	var located, skipped int
	for _, in := range testobjects.Inputs(t) {
		if !strings.HasSuffix(in.Name, "(ToUnstructured)") || !s.Recognizes(in.GVK) || s.crs.Recognizes(in.GVK) {
			continue
		}
		obj, err := s.Normalize(in.Obj, in.GVK)
		if err != nil {
			t.Fatal(err)
		}
		n := s.plans.typedKind(k.scheme, in.GVK)
		for round := range 60 {
			w := &watch{}
			typed, ok := s.plans.typedWatched(k, obj, in.GVK, w)
			if !ok {
				t.Fatalf("%s: not built", in.Name)
			}
			w.take()
			if round%2 == 0 {
				k.scheme.Default(typed)
			}
			writes := r.IntN(4)
			for range writes {
				writeAtRandom(r, reflect.ValueOf(typed).Elem())
			}
			at := reflect.ValueOf(typed).UnsafePointer()
			e := &emitter{}
			same, loc := w.diff(e)
			want, wantOK := (&emitter{}).emitObject(at, n, obj)
			if same {
				if !wantOK || !valuetest.BitsEqual(want, obj) {
					t.Fatalf("%s round %d: diff says unchanged, emit writes %#v (%v)", in.Name, round, want, wantOK)
				}
				continue
			}
			if !loc {
				continue
			}
			located++
			e.skip, e.own, e.below = true, w.own, w.below
			got, gotOK := e.emitObject(at, n, obj)
			if gotOK != wantOK || !valuetest.BitsEqual(got, want) {
				t.Fatalf("%s round %d: skipping gives %#v (%v), want %#v (%v)", in.Name, round, got, gotOK, want, wantOK)
			}
			if len(w.own) > 0 || len(w.below) > 0 {
				skipped++
			}
		}
	}
	t.Logf("located %d, skipped %d", located, skipped)
	if located == 0 || skipped == 0 {
		t.Fatalf("the changes were never located (%d) or ranged (%d): nothing was skipped", located, skipped)
	}
}

// writeAtRandom writes one place of v (an addressable value) at random,
// as a defaulter may.
func writeAtRandom(r *rand.Rand, v reflect.Value) {
	var places []reflect.Value
	collectPlaces(v, 0, &places)
	if len(places) == 0 {
		return
	}
	p := places[r.IntN(len(places))]
	switch p.Kind() {
	case reflect.String:
		if r.IntN(2) == 0 {
			p.SetString(strings.Clone(p.String())) // the same text, anew
		} else {
			p.SetString(p.String() + "x")
		}
	case reflect.Bool:
		p.SetBool(!p.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.SetInt(p.Int() ^ 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		p.SetUint(p.Uint() ^ 1)
	case reflect.Float32, reflect.Float64:
		p.SetFloat(p.Float() + 1)
	case reflect.Pointer:
		switch {
		case p.IsNil() || r.IntN(3) == 0:
			// Swapped with another pointer of its type, or set to nil.
			for _, o := range places {
				if o.Type() == p.Type() && o != p && !o.IsNil() && r.IntN(2) == 0 {
					x := p.Interface()
					p.Set(o)
					o.Set(reflect.ValueOf(x))
					return
				}
			}
			p.SetZero()
		default:
			c := reflect.New(p.Type().Elem())
			c.Elem().Set(p.Elem())
			p.Set(c)
			if r.IntN(2) == 0 {
				writeAtRandom(r, c.Elem())
			}
		}
	case reflect.Slice:
		if p.IsNil() || r.IntN(4) == 0 {
			p.SetZero()
			return
		}
		c := reflect.MakeSlice(p.Type(), p.Len(), p.Len())
		reflect.Copy(c, p)
		p.Set(c)
		if c.Len() > 0 && r.IntN(3) > 0 {
			writeAtRandom(r, c.Index(r.IntN(c.Len())))
		}
	case reflect.Map:
		if p.Type().Key().Kind() == reflect.String && p.Type().Elem().Kind() == reflect.String {
			if p.IsNil() {
				p.Set(reflect.MakeMap(p.Type()))
			}
			p.SetMapIndex(reflect.ValueOf("written").Convert(p.Type().Key()), reflect.ValueOf("yes").Convert(p.Type().Elem()))
		}
	}
}

// collectPlaces appends the settable places of v (fields, elements,
// pointers, slices, maps, not within maps) to out.
func collectPlaces(v reflect.Value, depth int, out *[]reflect.Value) {
	if depth > 12 || !v.CanSet() {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			collectPlaces(v.Field(i), depth+1, out)
		}
		return
	case reflect.Pointer:
		*out = append(*out, v)
		if !v.IsNil() {
			collectPlaces(v.Elem(), depth+1, out)
		}
		return
	case reflect.Slice:
		*out = append(*out, v)
		if v.Type().Elem().Kind() != reflect.Uint8 {
			for i := range v.Len() {
				collectPlaces(v.Index(i), depth+1, out)
			}
		}
		return
	case reflect.Interface, reflect.Chan, reflect.Func, reflect.Array, reflect.UnsafePointer:
		return
	}
	*out = append(*out, v)
}
