package scheme

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// checkPatchDefault holds PatchDefault of ops to obj to its definition:
// Patch, then defaultReference of the result (of obj when skipped), bit
// for bit, with the same errors (sameError compares Patch's, whose texts
// may vary with map order), a defaulting error wrapped in a
// *DefaultError. It reports whether the one walk answered (decodeBuild).
func checkPatchDefault(t *testing.T, d *Scheme, obj map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind, sameError func(err, want error) bool) (oneWalk bool) {
	t.Helper()
	before := valuetest.DeepCopy(obj)
	got, skipped, err := d.PatchDefault(obj, ops, gvk)
	if !valuetest.BitsEqual(obj, before) {
		t.Fatalf("PatchDefault modified the object: %#v, was %#v", obj, before)
	}
	describe := func() string { return fmt.Sprintf("object: %#v\nops: %+v", before, ops) }
	want, wantSkipped, wantErr := d.Patch(obj, ops, gvk)
	var defaultErr error
	if wantErr == nil {
		want, defaultErr = d.defaultReference(want, gvk)
	}
	var failed *DefaultError
	switch {
	case defaultErr != nil:
		if !errors.As(err, &failed) || errText(failed.Err) != errText(defaultErr) {
			t.Fatalf("PatchDefault: error %v, want the defaulting error %v\n%s", err, defaultErr, describe())
		}
	case errors.As(err, &failed):
		t.Fatalf("PatchDefault: defaulting error %v, want %v\n%s", err, wantErr, describe())
	case !sameError(err, wantErr):
		t.Fatalf("PatchDefault: error %v, want %v\n%s", err, wantErr, describe())
	}
	if skipped != wantSkipped {
		t.Fatalf("PatchDefault: skipped %v, want %v\n%s", skipped, wantSkipped, describe())
	}
	if err == nil && !valuetest.BitsEqual(got, want) {
		t.Fatalf("PatchDefault:\n got: %#v\nwant: %#v\n%s", got, want, describe())
	}
	_, defaulted, _ := d.patchDefaultFast(nil, obj, ops, gvk)
	return defaulted != nil
}

// TestPatchDefaultOnDefaultedObjects holds PatchDefault to Patch and the
// defaulting on every real object as admission presents it (normalized,
// defaulted), patched as real policies patch: a label added, then random
// typical operations. The one walk must answer for the label on every one.
func TestPatchDefaultOnDefaultedObjects(t *testing.T) {
	d := New()
	r := rand.New(rand.NewPCG(29, 2026))
	sameText := func(err, want error) bool { return errText(err) == errText(want) }
	label := []jsonpatch.Operation{{Op: "add", Path: "/metadata/labels", Value: map[string]any{"team": "shop"}, HasValue: true}}
	builtIn, oneWalk := 0, 0
	for _, in := range defaultedJPObjects(t, d) {
		obj := in.Obj
		t.Run(in.Name, func(t *testing.T) {
			builtIn++
			if checkPatchDefault(t, d, obj, label, in.GVK, sameText) {
				oneWalk++
			}
			for i := 0; i < 40; i++ {
				ops := []jsonpatch.Operation{typicalOp(r, obj)}
				if r.IntN(3) == 0 {
					ops = randomPatch(r, obj)
				}
				checkPatchDefault(t, d, obj, ops, in.GVK, sameText)
			}
		})
	}
	t.Logf("the one walk answered for a label on %d of %d built-in objects", oneWalk, builtIn)
	if oneWalk < builtIn {
		t.Errorf("the one walk answered for a label on only %d of %d built-in objects", oneWalk, builtIn)
	}
}

// FuzzPatchDefault: any JSON object, as any of the real objects' kinds,
// with an "add" of any JSON value at any path, patches and defaults
// through PatchDefault as through Patch and the defaulting.
func FuzzPatchDefault(f *testing.F) {
	d := New()
	gvks := fuzzObjects(f, d, func(kind uint8, data []byte) {
		f.Add(kind, data, "/metadata/labels", []byte(`{"team":"shop"}`))
		f.Add(kind, data, "/spec/replicas", []byte(`3`))
	})
	f.Fuzz(func(t *testing.T, kind uint8, data []byte, path string, value []byte) {
		var obj map[string]any
		var v any
		if utiljson.Unmarshal(data, &obj) != nil || obj == nil || utiljson.Unmarshal(value, &v) != nil {
			return
		}
		gvk := gvks[int(kind)%len(gvks)]
		ops := []jsonpatch.Operation{{Op: "add", Path: path, Value: v, HasValue: true}}
		// Apply normalizes maps in Go's random order: an object with
		// several faults can fail with one error or another.
		sameError := func(err, want error) bool {
			for i := 0; i < 50 && errText(err) != errText(want); i++ {
				_, _, want = d.patchReference(obj, ops, gvk)
			}
			return errText(err) == errText(want)
		}
		checkPatchDefault(t, d, obj, ops, gvk, sameError)
	})
}

// defaultedJPObjects is jpObjects of the kinds d knows, normalized and
// defaulted as a mutation meets them in an admission.
func defaultedJPObjects(t testing.TB, d *Scheme) []testobjects.Input {
	t.Helper()
	var out []testobjects.Input
	for _, in := range jpObjects(t) {
		if !d.types.Recognizes(in.GVK) {
			continue
		}
		obj, err := d.Normalize(in.Obj, in.GVK)
		if err == nil {
			obj, err = d.Default(obj, in.GVK)
		}
		if err != nil {
			t.Fatalf("%s: %v", in.Name, err)
		}
		out = append(out, testobjects.Input{Name: in.Name, GVK: in.GVK, Obj: obj})
	}
	return out
}

// TestSpareTypedSharesNothing: the typed objects PatchDefault,
// NormalizeDefault, DefaultNormalized and Default build, with their slices'
// arrays, pointees and string maps, are zeroed and used again once the
// defaulting returns (spareObject); nothing they return may lie in them.
// Every real object, as written, normalized and defaulted, is patched (a
// label), merged (itself), defaulted in normalized form and defaulted as it
// is, its results kept with a
// deep copy of each; then four
// goroutines do it all again, many times over, each result held to the
// reference (Patch or Normalize, then the defaulting), in random orders,
// while the objects are used again for other contents: the zero and
// randomly filled objects of every built-in kind too. Every result kept must
// still be its copy, bit for bit, and the objects must have been used
// again.
func TestSpareTypedSharesNothing(t *testing.T) {
	d := New()
	label := []jsonpatch.Operation{{Op: "add", Path: "/metadata/labels/team", Value: "shop", HasValue: true}}
	// The zero and randomly filled objects of every built-in kind: of one
	// kind, objects with different fields set, each built into an object
	// another one left.
	ins := builtInInputs(t, d, 2, false)
	// results patches and merges every object, each result held to the
	// reference, and returns them with their copies.
	results := func(r *rand.Rand) ([]keptResult, error) {
		var out []keptResult
		for _, i := range r.Perm(len(ins)) {
			in := ins[i]
			var mine []keptResult
			err := inOneSecond(func() error {
				mine = mine[:0]
				got, _, err := d.PatchDefault(in.Obj, label, in.GVK)
				if err != nil {
					return nil // (held to the reference by the other tests)
				}
				want, _, err := d.Patch(in.Obj, label, in.GVK)
				if err == nil {
					want, err = d.defaultReference(want, in.GVK)
				}
				if err != nil || !valuetest.BitsEqual(got, want) {
					return fmt.Errorf("%s: PatchDefault\n got: %#v\nwant: %#v (%v)", in.Name, got, want, err)
				}
				mine = append(mine, keptResult{in.Name + " patched", got, valuetest.DeepCopy(got)})
				got, err = d.NormalizeDefault(in.Obj, in.GVK)
				if err != nil {
					return nil
				}
				if want, err = d.Normalize(in.Obj, in.GVK); err == nil {
					want, err = d.defaultReference(want, in.GVK)
				}
				if err != nil || !valuetest.BitsEqual(got, want) {
					return fmt.Errorf("%s: NormalizeDefault\n got: %#v\nwant: %#v (%v)", in.Name, got, want, err)
				}
				mine = append(mine, keptResult{in.Name + " merged", got, valuetest.DeepCopy(got)})
				n, err := d.Normalize(in.Obj, in.GVK)
				if err != nil {
					return nil
				}
				got, err = d.DefaultNormalized(n, in.GVK)
				if err != nil {
					return nil
				}
				if want, err = d.defaultReference(n, in.GVK); err != nil || !valuetest.BitsEqual(got, want) {
					return fmt.Errorf("%s: DefaultNormalized\n got: %#v\nwant: %#v (%v)", in.Name, got, want, err)
				}
				mine = append(mine, keptResult{in.Name + " defaulted", got, valuetest.DeepCopy(got)})
				// Default of the object as it is (not in normalized form
				// but for the normalized and defaulted inputs).
				got, err = d.Default(in.Obj, in.GVK)
				if err != nil {
					return nil
				}
				if want, err = d.defaultReference(in.Obj, in.GVK); err != nil || !valuetest.BitsEqual(got, want) {
					return fmt.Errorf("%s: Default\n got: %#v\nwant: %#v (%v)", in.Name, got, want, err)
				}
				mine = append(mine, keptResult{in.Name + " defaulted as written", got, valuetest.DeepCopy(got)})
				return nil
			})
			if err != nil {
				return nil, err
			}
			out = append(out, mine...)
		}
		return out, nil
	}
	checkResultsKept(t, 24, results)
	// The objects were used again: one given back comes out next.
	k, err := d.kube()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		n := d.plans.typedKind(k.scheme, in.GVK)
		if n == nil {
			continue
		}
		seen := map[*spareObject]bool{}
		for range 50 {
			sp := spareOf(n)
			if seen[sp] {
				return
			}
			seen[sp] = true
			sp.release(nil)
		}
	}
	t.Error("no typed object given back was used again")
}

// keptResult is a defaulting's result, kept, and the deep copy taken of it
// when it was returned.
type keptResult struct {
	name string
	out  map[string]any
	copy any
}

// checkResultsKept runs results (which holds each result it returns to its
// reference) once, then from four goroutines three times over each, with
// random sources of seed, and fails on any error and on any result kept
// that is no longer its copy after the runs that followed.
func checkResultsKept(t *testing.T, seed uint64, results func(*rand.Rand) ([]keptResult, error)) {
	t.Helper()
	first, err := results(rand.New(rand.NewPCG(seed, 0)))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			r := rand.New(rand.NewPCG(seed, uint64(g)+1))
			for range 3 {
				again, err := results(r)
				if err == nil {
					for _, k := range again {
						if !valuetest.BitsEqual(k.out, k.copy) {
							err = fmt.Errorf("%s: a later defaulting changed the result", k.name)
							break
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for _, k := range first {
		if !valuetest.BitsEqual(k.out, k.copy) {
			t.Errorf("%s: a later defaulting changed the result\n got: %#v\nwant: %#v", k.name, k.out, k.copy)
		}
	}
}

// builtInInputs are the real objects of built-in kinds as written,
// normalized and defaulted, then the zero object and fills randomly
// filled objects of every built-in kind (each also defaulted, with
// defaulted), with their apiVersion and kind.
func builtInInputs(t testing.TB, d *Scheme, fills int, defaulted bool) []testobjects.Input {
	var ins []testobjects.Input
	for _, in := range testobjects.Inputs(t) {
		if !d.types.Recognizes(in.GVK) || d.crs.Recognizes(in.GVK) {
			continue
		}
		ins = append(ins, in)
		if n, err := d.Normalize(in.Obj, in.GVK); err == nil {
			ins = append(ins, testobjects.Input{Name: in.Name + " normalized", GVK: in.GVK, Obj: n})
			if dflt, err := d.Default(n, in.GVK); err == nil {
				ins = append(ins, testobjects.Input{Name: in.Name + " defaulted", GVK: in.GVK, Obj: dflt})
			}
		}
	}
	ks, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	for _, gvk := range kindGVKs(t, d) {
		i := 0
		for u := range filledObjects(t, ks, gvk, fills) {
			u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
			ins = append(ins, testobjects.Input{Name: fmt.Sprintf("%s %d", gvk.Kind, i), GVK: gvk, Obj: u})
			if defaulted {
				if dflt, err := d.Default(u, gvk); err == nil {
					ins = append(ins, testobjects.Input{Name: fmt.Sprintf("%s %d defaulted", gvk.Kind, i), GVK: gvk, Obj: dflt})
				}
			}
			i++
		}
	}
	return ins
}
