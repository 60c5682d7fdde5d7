package jsonpatch

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// TestAppendPatchInIsAppendPatch holds AppendPatchIn, one Scratch reused
// for every patch as a webhook's reviews reuse it, to CreatePatch (and to
// CreatePatchNormalized for an orig that IsNormalized) on real objects
// edited at random, copy-on-write as the engine edits them (editedAtRandom:
// keys added, replaced and removed, lists grown and cut) and with list
// items inserted, removed and replaced (listsEditedAtRandom), patches of
// every size one after the other: whatever the scratch kept of the
// patch before, the bytes and the error are the same, its check vouches
// for what patchGives vouches for, and it holds nothing of the documents
// once the call returns.
func TestAppendPatchInIsAppendPatch(t *testing.T) {
	objs := append(realObjects(t), []byte(pod))
	n := 150
	if testing.Short() {
		n = 30
	}
	var w Scratch
	var room []byte
	made, vouched := 0, 0
	for oi, j := range objs {
		for seed := range n {
			orig := decodeObject(t, j)
			r := rand.New(rand.NewPCG(uint64(oi)+2000, uint64(seed)))
			want := editedAtRandom(r, orig)
			if seed%2 == 1 {
				want = listsEditedAtRandom(r, orig)
			}
			patch, err := CreatePatch(nil, orig, want)
			if err != nil {
				t.Fatal(err)
			}
			for _, normalized := range []bool{false, true} {
				if normalized && !IsNormalized(orig) {
					continue
				}
				got, err := AppendPatchIn(&w, room, nil, orig, want, normalized)
				if err != nil || !bytes.Equal(got, patch) || (got == nil) != (patch == nil) {
					t.Fatalf("object %d seed %d: AppendPatchIn (normalized %v): %q, %v; CreatePatch: %q", oi, seed, normalized, got, err, patch)
				}
				checkScratchEmpty(t, &w)
				if len(got) > 0 {
					made++
					room = got // written out: the next patch's room, as a review's
				}
			}
			if ops := Diff(orig, want); len(ops) > 0 && IsNormalized(orig) {
				gives := w.patchGives(orig, want, w.diff(orig, want), false)
				if gives != patchGives(orig, want, ops) {
					t.Fatalf("object %d seed %d: patchGives in the scratch %v, in its own memory %v", oi, seed, gives, !gives)
				}
				if gives {
					vouched++
				}
				w.release()
			}
		}
	}
	t.Logf("%d patches made in one scratch, %d vouched for by its check", made, vouched)
	if made < 100 || vouched < made/4 {
		t.Fatalf("%d patches, %d vouched for: too few to tell", made, vouched)
	}
}

// checkScratchEmpty fails unless w holds no value, key or segment of the
// documents it worked on.
func checkScratchEmpty(t testing.TB, w *Scratch) {
	t.Helper()
	for _, op := range w.d.ops[:cap(w.d.ops)] {
		if op != (Operation{}) {
			t.Fatalf("the scratch holds an operation: %+v", op)
		}
	}
	for _, k := range w.d.keys[:cap(w.d.keys)] {
		if k != (diffKey{}) {
			t.Fatalf("the scratch holds a key: %q", k.key)
		}
	}
	for _, s := range w.segs[:cap(w.segs)] {
		if s != "" {
			t.Fatalf("the scratch holds a segment: %q", s)
		}
	}
	for _, c := range w.run[:cap(w.run)] {
		if c.value != nil || c.segs != nil {
			t.Fatalf("the scratch holds an operation of the check: %+v", c)
		}
	}
}

// TestScratchSparesAllocations holds AppendPatchIn to its purpose: a
// patch made again in a scratch that made one like it does not allocate
// the diff's buffers nor the check's tables (three allocations at least)
// that AppendPatchNormalized allocates (the load review's pod, edited,
// its patch vouched for by the check).
func TestScratchSparesAllocations(t *testing.T) {
	orig := decodeObject(t, []byte(pod))
	if !IsNormalized(orig) {
		t.Skip("the pod is not normalized")
	}
	r := rand.New(rand.NewPCG(7, 7))
	want := listsEditedAtRandom(r, orig)
	if ops := Diff(orig, want); len(ops) == 0 || !patchGives(orig, want, ops) {
		t.Fatalf("the edit's patch (%d operations) is not vouched for", len(ops))
	}
	var w Scratch
	room, err := AppendPatchIn(&w, nil, nil, orig, want, true)
	if err != nil {
		t.Fatal(err)
	}
	in := testing.AllocsPerRun(20, func() {
		if _, err := AppendPatchIn(&w, room, nil, orig, want, true); err != nil {
			t.Fatal(err)
		}
	})
	own := testing.AllocsPerRun(20, func() {
		if _, err := AppendPatchNormalized(room, nil, orig, want); err != nil {
			t.Fatal(err)
		}
	})
	if in > own-3 {
		t.Fatalf("%v allocations a patch in a used scratch, %v in its own memory", in, own)
	}
}

// TestPatchGivesManyKeys holds patchGives to the check on maps with
// operations on few keys and on more keys than mapGives lists on the
// stack (its lookup in run then), at the root and one level down, the
// patches Diff makes and those with an operation dropped (a key the
// result keeps from orig that want changed) or its value changed.
func TestPatchGivesManyKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	vouched, few, many := 0, 0, 0
	for range 3000 {
		orig := map[string]any{}
		for i := range 4 + r.IntN(24) {
			orig[string(rune('a'+i))+"k"] = int64(r.IntN(3))
		}
		want := map[string]any{}
		changed := 0
		for k, v := range orig {
			switch r.IntN(4) {
			case 0:
				changed++ // removed
			case 1:
				want[k] = int64(7)
				changed++
			default:
				want[k] = v
			}
		}
		for i := range r.IntN(6) {
			want["new"+string(rune('a'+i))] = "v"
			changed++
		}
		if r.IntN(2) == 0 {
			orig, want = map[string]any{"spec": orig, "kind": "X"}, map[string]any{"spec": want, "kind": "X"}
		}
		ops := Diff(orig, want)
		if len(ops) == 0 {
			continue
		}
		if changed > 8 {
			many++
		} else {
			few++
		}
		if checkPatchGives(t, orig, want, ops) {
			vouched++
		}
		for i := range ops {
			dropped := append(append([]Operation(nil), ops[:i]...), ops[i+1:]...)
			if len(dropped) > 0 && patchGives(orig, want, dropped) {
				t.Fatalf("patchGives vouched for %+v, Diff's %+v less one", dropped, ops)
			}
			if ops[i].HasValue {
				other := append([]Operation(nil), ops...)
				other[i].Value = "other"
				checkPatchGives(t, orig, want, other)
			}
		}
	}
	t.Logf("%d patches vouched for (%d of few keys, %d of more than eight)", vouched, few, many)
	if few < 100 || many < 100 || vouched < (few+many)/2 {
		t.Fatalf("too few to tell: %d vouched, %d few, %d many", vouched, few, many)
	}
}

// TestAppendFromCELIsFromCEL holds AppendFromCEL to FromCEL: one slice
// passed back from each patch to the next (as a mutation.Cache passes
// it), of patches of one to five operations, empty ones and failing ones
// among them, and with room too small, enough, or holding other
// operations: the operations and the error are FromCEL's.
func TestAppendFromCELIsFromCEL(t *testing.T) {
	exprs := []string{
		`[JSONPatch{op: "remove", path: "/a"}]`,
		`[JSONPatch{op: "move", from: "", path: "/a"}, JSONPatch{op: "copy", from: "/b", path: "/a"}]`,
		`[JSONPatch{op: "add", path: "/a", value: 1}].filter(p, false)`,
		`[JSONPatch{op: "add", path: "/a", value: "x"}, JSONPatch{op: "add", path: "/b", value: ["", "x"]}, JSONPatch{op: "test", path: "/c", value: null}]`,
		`[JSONPatch{op: "add", path: "/a", value: double("NaN")}]`,
		`[JSONPatch{op: "add", path: "/spec", value: Object.spec{replicas: 2, names: ["x"]}}, JSONPatch{op: "remove", path: "/z"}, JSONPatch{op: "replace", path: "/y", value: 1}, JSONPatch{op: "add", path: "/m/" + jsonpatch.escapeKey("a~b/c"), value: {"k": 2.5}}, JSONPatch{op: "remove", path: "/w"}]`,
		`[JSONPatch{op: "add", path: "/a", value: 1}]`,
	}
	vals := make([]ref.Val, len(exprs))
	for i, e := range exprs {
		vals[i] = evalPatch(t, e)
	}
	vals = append(vals, types.String("x"))
	r := rand.New(rand.NewPCG(5, 6))
	var dst []Operation
	for range 200 {
		v := vals[r.IntN(len(vals))]
		want, wantErr := FromCEL(v)
		got, err := AppendFromCEL(dst, v)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("error %v, FromCEL's %v", err, wantErr)
		}
		if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
			t.Fatalf("operations %+v, FromCEL's %+v", got, want)
		}
		if err == nil && len(got) > 0 && cap(dst) >= len(got) && &got[0] != &dst[:1][0] {
			t.Fatalf("%d operations not appended in the room of %d", len(got), cap(dst))
		}
		if err == nil {
			dst = got // left as they are: the next call must not read them
		}
	}
}

// TestScratchKeepsWithinBounds: after a patch of a large object (more
// operations than maxScratchOps, paths longer than maxScratchBytes in
// all) a Scratch keeps none of the buffers that grew past its bounds,
// and after a small one it keeps its buffers, emptied and cleared.
func TestScratchKeepsWithinBounds(t *testing.T) {
	labels := func(v string) map[string]any {
		m := map[string]any{}
		for i := range maxScratchOps + 1 {
			m[fmt.Sprintf("example.com/a-label-whose-key-is-long-enough-that-the-paths-weigh-%08d", i)] = v
		}
		return map[string]any{"metadata": map[string]any{"name": "a", "labels": m}}
	}
	big, want := labels("v"), labels("w")
	orig := map[string]any{"metadata": map[string]any{"name": "a"}}
	var w Scratch
	if _, err := AppendPatchIn(&w, nil, nil, big, want, true); err != nil {
		t.Fatal(err)
	}
	if c := max(cap(w.d.ops), cap(w.d.keys), cap(w.d.pathEnds), cap(w.segs), cap(w.run)); c > maxScratchOps {
		t.Errorf("a scratch keeps %d entries after a large patch, more than %d", c, maxScratchOps)
	}
	if c := max(cap(w.d.path), cap(w.d.paths), cap(w.keys)); c > maxScratchBytes {
		t.Errorf("a scratch keeps %d bytes after a large patch, more than %d", c, maxScratchBytes)
	}
	small := map[string]any{"metadata": map[string]any{"name": "b"}}
	if _, err := AppendPatchIn(&w, nil, nil, orig, small, true); err != nil {
		t.Fatal(err)
	}
	if cap(w.d.ops) == 0 {
		t.Errorf("a scratch keeps no operations' room after a small patch")
	}
	for i, op := range w.d.ops[:cap(w.d.ops)] {
		if op.Op != "" || op.Path != "" || op.From != "" || op.Value != nil {
			t.Fatalf("operation %d of the scratch is still %s %s after the call", i, op.Op, op.Path)
		}
	}
}
