package scheme

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// provenBases are the real objects of built-in kinds as an admission
// presents them (normalized, defaulted) that decodeFixed returns as they
// are: the objects a Fixed records.
func provenBases(t testing.TB, d *Scheme) []testobjects.Input {
	t.Helper()
	var out []testobjects.Input
	for _, in := range defaultedJPObjects(t, d) {
		if fixed, ok := d.decodeFixed(in.Obj, in.GVK); ok && jsonvalue.SameMap(fixed, in.Obj) {
			out = append(out, in)
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d real objects are fixed points of the strict decode", len(out))
	}
	return out
}

// checkDecodeFixedFrom holds decodeFixedFrom of obj, given base (a fixed
// point of decodeFixed), to decodeFixed of obj, the whole walk: the same
// answer and the same result, bit for bit. It returns the answer.
func checkDecodeFixedFrom(t *testing.T, d *Scheme, obj, base map[string]any, gvk schema.GroupVersionKind) bool {
	t.Helper()
	want, wantOK := d.decodeFixed(obj, gvk)
	f := &Fixed{}
	f.set(d, base, gvk)
	got, ok := d.decodeFixedFrom(f, obj, gvk)
	if ok != wantOK || ok && !valuetest.BitsEqual(got, want) {
		t.Fatalf("decodeFixedFrom answered %v\n%#v\ndecodeFixed %v\n%#v\nobject: %#v", ok, got, wantOK, want, obj)
	}
	if ok && jsonvalue.SameMap(got, obj) != jsonvalue.SameMap(want, obj) {
		t.Fatalf("decodeFixedFrom returned the object as it is: %v, decodeFixed: %v", jsonvalue.SameMap(got, obj), jsonvalue.SameMap(want, obj))
	}
	recorded := f.base(d, gvk)
	switch {
	case ok && jsonvalue.SameMap(got, obj) && !jsonvalue.SameMap(recorded, obj):
		t.Fatalf("a fixed point was not recorded")
	case !(ok && jsonvalue.SameMap(got, obj)) && !jsonvalue.SameMap(recorded, base):
		t.Fatalf("what is not a fixed point was recorded: %#v", recorded)
	}
	return ok
}

// derive changes base as patches and the steps between them do: an
// operation applied (ApplyUnnormalized, sharing what it did not write) or
// odd values planted (perturbJSON, copying the maps and slices on the way
// only), one to three times.
func derive(r *rand.Rand, base map[string]any) map[string]any {
	obj := base
	for k := 1 + r.IntN(3); k > 0; k-- {
		if r.IntN(2) == 0 {
			if patched, ok := jsonpatch.ApplyUnnormalized(obj, randomPatch(r, obj)); ok {
				obj = patched
			}
			continue
		}
		if m, ok := perturbJSONShared(r, obj); ok {
			obj = m
		}
	}
	return obj
}

// perturbJSONShared is perturbJSON of obj, when the result is an object.
func perturbJSONShared(r *rand.Rand, obj map[string]any) (map[string]any, bool) {
	v, _ := perturbJSON(r, obj)
	m, ok := v.(map[string]any)
	return m, ok && m != nil
}

// TestDecodeFixedFromIsDecodeFixed is a property test of the walk that
// skips what an object shares with a proven fixed point: real objects
// (fixed points of the strict decode), patched with random operations and
// planted with odd values that the decode refuses or changes (unknown
// fields, nulls, invalid UTF-8, numbers of the wrong type, ...), give
// decodeFixed's answer and result, which walks the whole object.
func TestDecodeFixedFromIsDecodeFixed(t *testing.T) {
	d := New()
	bases := provenBases(t, d)
	r := rand.New(rand.NewPCG(20, 2026))
	n := valuetest.Sweep(3000, 1000) // make test-long: the full sweep
	fixed, refused := 0, 0
	for i := 0; i < n; i++ {
		in := bases[r.IntN(len(bases))]
		obj := derive(r, in.Obj)
		t.Run(fmt.Sprintf("%d %s", i, in.Name), func(t *testing.T) {
			if checkDecodeFixedFrom(t, d, obj, in.Obj, in.GVK) {
				fixed++
			} else {
				refused++
			}
		})
	}
	t.Logf("%d of %d derived objects decoded, %d refused", fixed, n, refused)
	if fixed < n/10 || refused < n/10 {
		t.Errorf("the derived objects do not exercise both answers: %d decoded, %d refused", fixed, refused)
	}
}

// TestPatchFromIsPatch holds PatchFrom, along chains of patches with one
// Fixed as an admission keeps it, to Patch (which walks the whole object):
// the same results bit for bit, skips and errors. Between two patches the
// object is, as in an admission, the patch result itself, its defaulting
// (DefaultFrom, Default), or the result with odd values planted (what a
// step outside JSON patches could leave); the chain restarts from a real
// object at times, with the Fixed of the chain kept.
func TestPatchFromIsPatch(t *testing.T) {
	d := New()
	bases := provenBases(t, d)
	r := rand.New(rand.NewPCG(21, 2026))
	chains := valuetest.Sweep(2000, 400) // make test-long: the full sweep
	steps, fromFixed, fastFromFixed := 0, 0, 0
	for c := 0; c < chains; c++ {
		in := bases[r.IntN(len(bases))]
		f := &Fixed{}
		obj := in.Obj
		if r.IntN(2) == 0 {
			obj = derive(r, obj)
		}
		t.Run(fmt.Sprintf("%d %s", c, in.Name), func(t *testing.T) {
			for s := 0; s < 8; s++ {
				steps++
				ops := []jsonpatch.Operation{typicalOp(r, obj)}
				switch r.IntN(4) {
				case 0:
					ops = randomPatch(r, obj)
				case 1:
					// What most policies do.
					ops = []jsonpatch.Operation{{Op: "add", Path: "/metadata/labels", Value: map[string]any{"team": "shop"}, HasValue: true}}
				}
				hadBase := f.base(d, in.GVK) != nil
				_, fast := d.patchFast(nil, obj, ops, in.GVK)
				out := checkPatchFrom(t, d, f, obj, ops, in.GVK)
				if hadBase {
					fromFixed++
					if fast {
						fastFromFixed++
					}
				}
				if out == nil {
					out = obj // the patch failed; the admission goes on with obj
				}
				switch r.IntN(6) {
				case 0:
					if m, ok := perturbJSONShared(r, out); ok {
						out = m
					}
				case 1:
					if m, err := d.DefaultFrom(out, obj, in.GVK); err == nil {
						out = m
					}
				case 2:
					if m, err := d.Default(out, in.GVK); err == nil {
						out = m
					}
				case 3:
					if r.IntN(4) == 0 {
						out = bases[r.IntN(len(bases))].Obj
					}
				}
				obj = out
			}
		})
	}
	t.Logf("%d patches, %d given a fixed point, %d of them through the fast path", steps, fromFixed, fastFromFixed)
	if fromFixed < steps/4 || fastFromFixed < steps/20 {
		t.Errorf("only %d of %d patches went through the fast path given a fixed point", fastFromFixed, steps)
	}
}

// checkPatchFrom holds PatchFrom of ops to obj, given f, to Patch, and
// that f then holds a fixed point of the strict decode (decodeFixed
// returns it as it is). It returns PatchFrom's result, nil on an error.
func checkPatchFrom(t *testing.T, d *Scheme, f *Fixed, obj map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind) map[string]any {
	t.Helper()
	before := valuetest.DeepCopy(obj)
	got, skipped, err := d.PatchFrom(f, obj, ops, gvk)
	if !valuetest.BitsEqual(obj, before) {
		t.Fatalf("PatchFrom modified the object: %#v, was %#v", obj, before)
	}
	want, wantSkipped, wantErr := d.Patch(obj, ops, gvk)
	// Apply normalizes maps in Go's random order: an object with several
	// faults can fail with one error or another.
	for i := 0; i < 50 && errText(err) != errText(wantErr); i++ {
		_, _, wantErr = d.patchReference(obj, ops, gvk)
	}
	describe := func() string { return fmt.Sprintf("object: %#v\nops: %+v", before, ops) }
	if errText(err) != errText(wantErr) {
		t.Fatalf("PatchFrom: error %v, Patch: %v\n%s", err, wantErr, describe())
	}
	if skipped != wantSkipped {
		t.Fatalf("PatchFrom: skipped %v, Patch: %v\n%s", skipped, wantSkipped, describe())
	}
	if !valuetest.BitsEqual(got, want) {
		t.Fatalf("PatchFrom:\n got: %#v\nwant: %#v\n%s", got, want, describe())
	}
	if rec := f.obj; rec != nil {
		if fixed, ok := d.decodeFixed(rec, f.gvk); !ok || !jsonvalue.SameMap(fixed, rec) {
			t.Fatalf("the Fixed holds what is not a fixed point of the strict decode: %#v", rec)
		}
	}
	if err != nil {
		return nil
	}
	return got
}

// TestPatchDefaultFromRecords holds PatchDefaultFrom to PatchDefault and
// checks that what it records is a fixed point of the strict decode, the
// patch result before defaulting.
func TestPatchDefaultFromRecords(t *testing.T) {
	d := New()
	r := rand.New(rand.NewPCG(22, 2026))
	recorded := 0
	for _, in := range provenBases(t, d) {
		t.Run(in.Name, func(t *testing.T) {
			for i := 0; i < 20; i++ {
				obj := in.Obj
				if i%2 == 1 {
					obj = derive(r, obj)
				}
				ops := []jsonpatch.Operation{typicalOp(r, obj)}
				f := &Fixed{}
				got, skipped, err := d.PatchDefaultFrom(f, obj, ops, in.GVK)
				want, wantSkipped, wantErr := d.PatchDefault(obj, ops, in.GVK)
				for j := 0; j < 50 && errText(err) != errText(wantErr); j++ {
					_, _, wantErr = d.PatchDefault(obj, ops, in.GVK)
				}
				if errText(err) != errText(wantErr) || skipped != wantSkipped || !valuetest.BitsEqual(got, want) {
					t.Fatalf("PatchDefaultFrom: %#v, %v, %v\nPatchDefault: %#v, %v, %v\nops: %+v", got, skipped, err, want, wantSkipped, wantErr, ops)
				}
				if f.obj == nil {
					continue
				}
				recorded++
				if fixed, ok := d.decodeFixed(f.obj, in.GVK); !ok || !jsonvalue.SameMap(fixed, f.obj) {
					t.Fatalf("PatchDefaultFrom recorded what is not a fixed point: %#v", f.obj)
				}
				if patched, _, _ := d.Patch(obj, ops, in.GVK); !valuetest.BitsEqual(patched, f.obj) {
					t.Fatalf("PatchDefaultFrom recorded %#v, not the patch result %#v", f.obj, patched)
				}
			}
		})
	}
	if recorded == 0 {
		t.Errorf("PatchDefaultFrom recorded nothing")
	}
}

// FuzzPatchFrom: any JSON object, as any of the real objects' kinds,
// patched twice (an "add" of any JSON value at any path, then another on
// the result) with one Fixed, gives Patch's results and errors.
func FuzzPatchFrom(f *testing.F) {
	d := New()
	var gvks []schema.GroupVersionKind
	for _, in := range provenBases(f, d) {
		data, err := json.Marshal(in.Obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(len(gvks)), data, "/metadata/labels/team", []byte(`"shop"`), "/metadata/labels/tier", []byte(`"web"`))
		f.Add(uint8(len(gvks)), data, "/metadata/labels/team", []byte(`"shop"`), "/metadata/bogus", []byte(`1`))
		f.Add(uint8(len(gvks)), data, "/metadata/annotations", []byte(`{"a":"b"}`), "/spec/replicas", []byte(`"3"`))
		f.Add(uint8(len(gvks)), data, "/spec/replicas", []byte(`3`), "/metadata/labels", []byte(`{"a":null}`))
		gvks = append(gvks, in.GVK)
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte, path1 string, value1 []byte, path2 string, value2 []byte) {
		var obj map[string]any
		var v1, v2 any
		if utiljson.Unmarshal(data, &obj) != nil || obj == nil || utiljson.Unmarshal(value1, &v1) != nil || utiljson.Unmarshal(value2, &v2) != nil {
			return
		}
		gvk := gvks[int(kind)%len(gvks)]
		fixed := &Fixed{}
		out := checkPatchFrom(t, d, fixed, obj, []jsonpatch.Operation{{Op: "add", Path: path1, Value: v1, HasValue: true}}, gvk)
		if out == nil {
			out = obj
		}
		checkPatchFrom(t, d, fixed, out, []jsonpatch.Operation{{Op: "add", Path: path2, Value: v2, HasValue: true}}, gvk)
	})
}

// BenchmarkPatchFrom is a JSON patch of an admission (a label added to a
// real Pod as admission presents it, normalized and defaulted) through
// Patch, whose strict decode walks the whole object, and through PatchFrom
// given the object before the patch as the fixed point, which walks what
// the patch wrote and its ancestors.
func BenchmarkPatchFrom(b *testing.B) {
	d := New()
	var pod testobjects.Input
	for _, in := range provenBases(b, d) {
		if in.GVK.Kind == "Pod" && (pod.Obj == nil || len(fmt.Sprint(in.Obj)) > len(fmt.Sprint(pod.Obj))) {
			pod = in
		}
	}
	ops := []jsonpatch.Operation{{Op: "add", Path: "/metadata/labels/team", Value: "shop", HasValue: true}}
	if _, ok := d.patchFast(nil, pod.Obj, ops, pod.GVK); !ok {
		b.Fatal("the fast path declined the label")
	}
	b.Run("Patch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := d.Patch(pod.Obj, ops, pod.GVK); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PatchFrom", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f := Fixed{scheme: d, obj: pod.Obj, gvk: pod.GVK}
			if _, _, err := d.PatchFrom(&f, pod.Obj, ops, pod.GVK); err != nil {
				b.Fatal(err)
			}
		}
	})
}
