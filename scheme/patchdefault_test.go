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
