package jsonpatch

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// checkPatchGives fails when patchGives(orig, want, ops) vouches for a
// patch that ApplyUnnormalized does not apply to orig or whose result is
// not want (jsonvalue.JSONEqual): the check it stands for in
// createPatchNative. It returns what patchGives said.
func checkPatchGives(t testing.TB, orig, want map[string]any, ops []Operation) bool {
	t.Helper()
	if !patchGives(orig, want, ops) {
		return false
	}
	got, ok := ApplyUnnormalized(orig, ops)
	if !ok || got == nil || !jsonvalue.JSONEqual(got, want) {
		t.Fatalf("patchGives vouched for %+v, ApplyUnnormalized: %v (ok %v), want %v", ops, got, ok, want)
	}
	return true
}

// perturbOps changes one thing of a copy of ops: an operation's kind,
// path, place or value, or one dropped or repeated.
func perturbOps(r *rand.Rand, ops []Operation, orig map[string]any) []Operation {
	out := append([]Operation(nil), ops...)
	if len(out) == 0 {
		return out
	}
	i := r.IntN(len(out))
	switch r.IntN(9) {
	case 0:
		out[i].Op = []string{"add", "replace", "remove", "test", "move"}[r.IntN(5)]
		out[i].HasValue = out[i].Op != "remove"
		if out[i].HasValue && out[i].Value == nil {
			out[i].Value = "x"
		}
	case 1: // an index one off, or a key changed
		segs := strings.Split(out[i].Path, "/")
		k := 1 + r.IntN(len(segs)-1)
		if n, err := strconv.Atoi(segs[k]); err == nil {
			segs[k] = strconv.Itoa(n + r.IntN(3) - 1)
		} else {
			segs[k] += "x"
		}
		out[i].Path = strings.Join(segs, "/")
	case 2: // two operations swapped
		j := r.IntN(len(out))
		out[i], out[j] = out[j], out[i]
	case 3:
		out = append(out[:i], out[i+1:]...)
	case 4:
		out = append(out, out[i])
	case 5: // a value changed, or whole or zero floats, or nulls
		out[i].Value = []any{"y", int64(7), 7.0, 0.0, nil, map[string]any{}, []any{}, 1.5}[r.IntN(8)]
		out[i].HasValue = r.IntN(4) != 0
	case 6: // the path cut short: a container replaced or removed
		if k := strings.LastIndexByte(out[i].Path, '/'); k > 0 {
			out[i].Path = out[i].Path[:k]
		}
	case 7: // an operation on a path beneath another's
		out = append(out, Operation{Op: "add", Path: out[i].Path + "/z", Value: "z", HasValue: true})
	case 8: // the root, or a path without a leading slash
		out[i].Path = []string{"", "/", "a/b", "/-", out[i].Path + "/-", "/metadata/~2"}[r.IntN(6)]
	}
	return out
}

// TestPatchGivesIsTheCheck holds patchGives to the check it spares
// (ApplyUnnormalized then JSONEqual) on real objects edited copy-on-write
// as the engine edits them, with Diff's patches and with patches perturbed
// (kinds, paths, places, values: patches Diff does not make, which the
// check must refuse unless they still give the object), and requires it
// to vouch for a good share of the patches of these random edits (list
// insertions and removals among them, which it leaves to the check).
func TestPatchGivesIsTheCheck(t *testing.T) {
	objs := append(realObjects(t), []byte(pod))
	diffs, vouched, perturbedVouched := 0, 0, 0
	for oi, j := range objs {
		for seed := 0; seed < 200; seed++ {
			orig := decodeObject(t, j)
			if !IsNormalized(orig) {
				continue
			}
			r := rand.New(rand.NewPCG(uint64(oi), uint64(seed)))
			want := editedAtRandom(r, orig)
			ops := Diff(orig, want)
			if len(ops) == 0 {
				continue
			}
			diffs++
			if checkPatchGives(t, orig, want, ops) {
				vouched++
			}
			for range 10 {
				p := perturbOps(r, ops, orig)
				if checkPatchGives(t, orig, want, p) {
					perturbedVouched++
				}
				// The perturbed patch's own result, when it has one, is an
				// object it gives: patchGives may vouch for it.
				if got, ok := ApplyUnnormalized(orig, p); ok && got != nil && IsNormalized(got) {
					checkPatchGives(t, orig, got, p)
				}
			}
		}
	}
	t.Logf("%d of %d patches of Diff vouched for; %d perturbed ones", vouched, diffs, perturbedVouched)
	if diffs == 0 || vouched*4 < diffs {
		t.Fatalf("patchGives vouched for %d of %d patches of Diff: too few", vouched, diffs)
	}
}

// TestPatchGivesCases are the shapes patchGives vouches for and those it
// leaves to the check, one by one.
func TestPatchGivesCases(t *testing.T) {
	orig := func() map[string]any {
		return map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"a": "1"}, "name": "n"},
			"spec": map[string]any{
				"containers": []any{map[string]any{"name": "c", "env": []any{map[string]any{"name": "E"}}}},
				"n":          int64(1),
			},
		}
	}
	add := func(path string, v any) Operation { return Operation{Op: "add", Path: path, Value: v, HasValue: true} }
	rep := func(path string, v any) Operation {
		return Operation{Op: "replace", Path: path, Value: v, HasValue: true}
	}
	rem := func(path string) Operation { return Operation{Op: "remove", Path: path} }
	cases := []struct {
		name string
		ops  []Operation
		want bool
	}{
		{"keys added, replaced, removed", []Operation{add("/metadata/labels/b~1c", "2"), rep("/spec/n", int64(2)), rem("/metadata/name")}, true},
		{"replace of a missing key sets it", []Operation{rep("/metadata/x", "y")}, true},
		{"items added at the end in order", []Operation{add("/spec/containers/0/env/1", map[string]any{"name": "F"}), add("/spec/containers/0/env/2", map[string]any{"name": "G"})}, true},
		{"items added at the end out of order", []Operation{add("/spec/containers/0/env/2", map[string]any{"name": "G"}), add("/spec/containers/0/env/1", map[string]any{"name": "F"})}, false},
		{"an item inserted", []Operation{add("/spec/containers/0/env/0", map[string]any{"name": "F"})}, false},
		{"an item removed", []Operation{rem("/spec/containers/0/env/0")}, false},
		{"an item replaced", []Operation{rep("/spec/containers/0/env/0", map[string]any{"name": "F"})}, true},
		{"into an added item", []Operation{add("/spec/containers/1", map[string]any{}), add("/spec/containers/1/name", "d")}, false},
		{"a path beneath another", []Operation{add("/metadata/labels", map[string]any{}), add("/metadata/labels/b", "2")}, false},
		{"the same path twice", []Operation{add("/metadata/labels/b", "2"), add("/metadata/labels/b", "2")}, false},
		{"a missing key removed", []Operation{rem("/metadata/nope")}, false},
		{"through a missing key", []Operation{add("/status/phase", "x")}, false},
		{"a null value", []Operation{add("/metadata/x", nil)}, false},
		{"a whole float", []Operation{add("/metadata/x", 2.0)}, false},
		{"an index with a sign", []Operation{rep("/spec/containers/+0/name", "d")}, false},
		{"test", []Operation{{Op: "test", Path: "/spec/n", Value: int64(1), HasValue: true}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := orig()
			want, ok := ApplyUnnormalized(o, tc.ops)
			if !ok {
				want = map[string]any{"none": "x"}
			}
			if got := checkPatchGives(t, o, want, tc.ops); got != tc.want {
				t.Fatalf("patchGives = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDecodeSegmentIsDecodePatchKey holds patchGives' decoding of a path's
// segments to Apply's.
func TestDecodeSegmentIsDecodePatchKey(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("~01/a\xff")
	for range 20000 {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		seg := string(b)
		got, _, ok := decodeSegment(seg, make([]byte, 0, len(seg)))
		if !ok || got != decodePatchKey(seg) {
			t.Fatalf("decodeSegment(%q) = %q (ok %v), decodePatchKey: %q", seg, got, ok, decodePatchKey(seg))
		}
	}
}
