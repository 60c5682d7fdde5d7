package scheme

import (
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

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
	_, defaulted, _ := d.patchDefaultFast(obj, ops, gvk)
	return defaulted != nil
}
