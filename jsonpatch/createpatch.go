package jsonpatch

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	gomodulesjsonpatch "gomodules.xyz/jsonpatch/v2"
	evanphxjsonpatch "gopkg.in/evanphx/json-patch.v4"
	sigsjson "sigs.k8s.io/json"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// CreatePatch returns the JSON patch that turns the JSON document original into
// want, or nil when there is nothing to change. The patch is checked: applied
// to original as kube-apiserver applies webhook patches (evanphx/json-patch
// v4, which jsonpatch.Apply reproduces), it must give want, as JSON can
// carry it (an integral float64 is the int64 it is written as).
//
// The patch is computed natively on the decoded values (Diff). Should
// it not check, the diff of gomodules.xyz/jsonpatch is tried, then a coarser
// patch replacing top-level fields, each checked with evanphx/json-patch v4
// itself.
//
// orig, when not nil, is the decoding of original
// (sigsjson.UnmarshalCaseSensitivePreserveInts), which the caller has
// already: it is only read, and the maps want shares with it need no walk.
// nil: original is decoded here. original may be nil when orig is not: it
// is then orig's encoding (jsonvalue.Marshal), made only if the fallback
// needs it.
func CreatePatch(original []byte, orig, want map[string]any) ([]byte, error) {
	return createPatch(nil, original, orig, want, false)
}

// CreatePatchNormalized is CreatePatch for an orig the caller knows to be
// a fixed point of the normalization Apply runs on its document
// (IsNormalized(orig) holds: a JSON decoding without whole or zero
// floats is one, as a decoder can tell while it decodes): the patch's
// check skips that walk of the whole of orig (ApplyUnnormalized in place
// of Apply, which give the same result on such a document). The patch
// and the error are CreatePatch's; TestCreatePatchNormalizedIsCreatePatch
// and FuzzNativePatch hold them equal. With an orig that is not
// normalized the check would not be Apply's: a caller that cannot vouch
// for orig calls CreatePatch.
func CreatePatchNormalized(original []byte, orig, want map[string]any) ([]byte, error) {
	return createPatch(nil, original, orig, want, orig != nil)
}

// AppendPatch is CreatePatch writing the patch into dst's room: the
// patch is dst[:0] extended, and nil when there is nothing to change, as
// CreatePatch's. A caller that has consumed a patch (written it out) may
// pass it back as the dst of the next one, whose bytes then reuse its
// memory; the patch and the error are CreatePatch's whatever dst holds
// (TestAppendPatchIsCreatePatch).
func AppendPatch(dst, original []byte, orig, want map[string]any) ([]byte, error) {
	return createPatch(dst[:0], original, orig, want, false)
}

// AppendPatchNormalized is CreatePatchNormalized as AppendPatch writes it.
func AppendPatchNormalized(dst, original []byte, orig, want map[string]any) ([]byte, error) {
	return createPatch(dst[:0], original, orig, want, orig != nil)
}

// AppendPatchIn is AppendPatch, or AppendPatchNormalized when normalized
// (and orig is not nil), working in w's memory: the diff's operations and
// paths and the patch check's tables are w's, grown as needed and kept for
// the next call, instead of allocated anew. The patch and the error are
// AppendPatch's (TestAppendPatchInIsAppendPatch). w, once the call
// returns, holds nothing of orig or want. A nil w is AppendPatch's own
// memory.
func AppendPatchIn(w *Scratch, dst, original []byte, orig, want map[string]any, normalized bool) ([]byte, error) {
	if w == nil {
		return createPatch(dst[:0], original, orig, want, normalized && orig != nil)
	}
	defer w.release()
	return createPatchIn(w, dst[:0], original, orig, want, normalized && orig != nil)
}

// createPatch is CreatePatch; normalized tells that IsNormalized(orig).
// dst, when not nil, is the room (of length 0) the patch is written in.
func createPatch(dst, original []byte, orig, want map[string]any, normalized bool) ([]byte, error) {
	return createPatchIn(nil, dst, original, orig, want, normalized)
}

// createPatchIn is createPatch working in w (nil: memory of its own).
func createPatchIn(w *Scratch, dst, original []byte, orig, want map[string]any, normalized bool) ([]byte, error) {
	if orig == nil {
		orig = decodeOriginal(original)
	}
	if orig != nil && want != nil {
		if patch, ok := createPatchNativeIn(w, dst, orig, want, normalized); ok {
			return patch, nil
		}
	}
	if original == nil && orig != nil {
		var err error
		if original, err = jsonvalue.Marshal(orig); err != nil {
			return nil, err
		}
	}
	return createPatchReference(original, want)
}

// createPatchFast is the patch of Diff from orig, the decoding of the
// request's object, to want, checked by applying it to orig with
// Apply (evanphx/json-patch v4's semantics on orig's JSON). ok is
// false when the check fails or the patch has no JSON encoding.
func createPatchFast(orig, want map[string]any) (patch []byte, ok bool) {
	return createPatchNative(nil, orig, want, false)
}

// createPatchNative is createPatchFast, the patch written into dst's room
// (dst of length 0, or nil for a buffer of its own); normalized tells that
// IsNormalized(orig) holds, so that the check applies the patch with
// ApplyUnnormalized: its result is Apply's whenever it is normalized, and
// it is, being made of orig's values (normalized) and of the operations'
// values as Apply normalizes them (finalize turning a -0 into 0 and a
// null node into nil, as for Apply).
func createPatchNative(dst []byte, orig, want map[string]any, normalized bool) (patch []byte, ok bool) {
	return createPatchNativeIn(nil, dst, orig, want, normalized)
}

// createPatchNativeIn is createPatchNative working in w (nil: memory of
// its own): Diff's buffers and patchGives' tables are w's.
func createPatchNativeIn(w *Scratch, dst []byte, orig, want map[string]any, normalized bool) (patch []byte, ok bool) {
	ops := w.diff(orig, want)
	if len(ops) == 0 {
		// The diff found every value equal, as the check would.
		return nil, true
	}
	// Most operations of a mutating policy add a field or a small object.
	// The patch is written first: its walk of the operations' values tells
	// whether they are all normalized, which patchGives would otherwise
	// walk them again to know (a patch that fails the check below was
	// written for nothing: the fallback's case).
	if size := 256 + 128*len(ops); cap(dst) < size {
		dst = make([]byte, 0, size)
	}
	patch, valuesNormalized, err := appendOpsNormalized(dst[:0], ops)
	if err != nil {
		return nil, false
	}
	// With orig normalized, patchGives knows the check's outcome for most
	// patches without building the patched object; otherwise, or when it
	// does not know, the patch is applied.
	if !normalized || !w.patchGives(orig, want, ops, valuesNormalized) {
		var got map[string]any
		applied := false
		if normalized {
			got, applied = ApplyUnnormalized(orig, ops)
		}
		if !applied {
			var err error
			if got, err = Apply(orig, ops); err != nil {
				return nil, false
			}
		}
		if got == nil || !jsonvalue.JSONEqual(got, want) {
			return nil, false
		}
	}
	return patch, true
}

// createPatchReference is Patch by diffing JSON documents: the diff of
// gomodules.xyz/jsonpatch is applied to original with evanphx/json-patch v4
// (what kube-apiserver applies webhook patches with) and must give want;
// if it does not, a coarser patch replacing top-level fields is tried and
// checked the same way.
func createPatchReference(original []byte, want map[string]any) ([]byte, error) {
	wantJSON, err := jsonvalue.Marshal(want)
	if err != nil {
		return nil, fmt.Errorf("encoding the mutated object: %w", err)
	}
	wantValue, err := decodeValue(wantJSON)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, diff := range []func([]byte, map[string]any, []byte) ([]gomodulesjsonpatch.Operation, error){fineDiff, topLevelDiff} {
		ops, err := diff(original, want, wantJSON)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(ops) == 0 {
			if err := check(original, nil, wantValue); err != nil {
				errs = append(errs, err)
				continue
			}
			return nil, nil
		}
		patch, err := jsonvalue.Marshal(ops)
		if err != nil {
			return nil, err
		}
		if err := check(original, patch, wantValue); err != nil {
			errs = append(errs, err)
			continue
		}
		return patch, nil
	}
	return nil, fmt.Errorf("no JSON patch reproduces the mutated object: %w", errors.Join(errs...))
}

func fineDiff(original []byte, _ map[string]any, wantJSON []byte) ([]gomodulesjsonpatch.Operation, error) {
	return gomodulesjsonpatch.CreatePatch(original, wantJSON)
}

// topLevelDiff adds, replaces and removes whole top-level fields.
func topLevelDiff(original []byte, want map[string]any, _ []byte) ([]gomodulesjsonpatch.Operation, error) {
	var orig map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(original, &orig); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ops []gomodulesjsonpatch.Operation
	for _, k := range keys {
		path := "/" + escapePointer(k)
		old, ok := orig[k]
		switch {
		case !ok:
			ops = append(ops, gomodulesjsonpatch.NewOperation("add", path, want[k]))
		case !jsonEqual(old, want[k]):
			ops = append(ops, gomodulesjsonpatch.NewOperation("replace", path, want[k]))
		}
	}
	var gone []string
	for k := range orig {
		if _, ok := want[k]; !ok {
			gone = append(gone, k)
		}
	}
	sort.Strings(gone)
	for _, k := range gone {
		ops = append(ops, gomodulesjsonpatch.NewOperation("remove", "/"+escapePointer(k), nil))
	}
	return ops, nil
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func jsonEqual(a, b any) bool {
	ja, errA := jsonvalue.Marshal(a)
	jb, errB := jsonvalue.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// check applies patch to original as kube-apiserver does and compares the
// result with want.
func check(original, patch []byte, want any) error {
	out := original
	if patch != nil {
		p, err := evanphxjsonpatch.DecodePatch(patch)
		if err != nil {
			return err
		}
		if out, err = p.Apply(original); err != nil {
			return err
		}
	}
	got, err := decodeValue(out)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(got, want) {
		return errors.New("the patched object differs from the mutated object")
	}
	return nil
}

// decodeOriginal is the decoding of original, or nil when it is not a
// JSON object. (Apart, so that the map it decodes into escapes only
// when there is something to decode.)
func decodeOriginal(original []byte) map[string]any {
	var orig map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(original, &orig); err != nil {
		return nil
	}
	return orig
}

func decodeValue(data []byte) (any, error) {
	var v any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}
