package jsonpatch

import (
	"maps"
	"math/rand/v2"
	"slices"
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
	gives := patchGives(orig, want, ops)
	// createPatchNative's patchGivesNormalized, told by the patch's
	// encoding whether the values are normalized, says the same.
	if _, vn, err := appendOpsNormalized(nil, ops); err == nil {
		if fused := patchGivesNormalized(orig, want, ops, vn); fused != gives {
			t.Fatalf("patchGivesNormalized(…, %v) = %v, patchGives %v, for %+v", vn, fused, gives, ops)
		}
	}
	if !gives {
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

// checkPerturbed holds patchGives to the check (checkPatchGives) on ten
// perturbations of ops (perturbOps), for want and for each perturbed
// patch's own result when it has one (an object it gives: patchGives may
// vouch for it), and returns how many it vouched for with want.
func checkPerturbed(t *testing.T, r *rand.Rand, orig, want map[string]any, ops []Operation) int {
	t.Helper()
	vouched := 0
	for range 10 {
		p := perturbOps(r, ops, orig)
		if checkPatchGives(t, orig, want, p) {
			vouched++
		}
		if got, ok := ApplyUnnormalized(orig, p); ok && got != nil && IsNormalized(got) {
			checkPatchGives(t, orig, got, p)
		}
	}
	return vouched
}

// TestPatchGivesIsTheCheck holds patchGives to the check it spares
// (ApplyUnnormalized then JSONEqual) on real objects edited copy-on-write
// as the engine edits them, with Diff's patches and with patches perturbed
// (kinds, paths, places, values: patches Diff does not make, which the
// check must refuse unless they still give the object), and requires it
// to vouch for a good share of the patches of these random edits (list
// insertions and removals among them).
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
			perturbedVouched += checkPerturbed(t, r, orig, want, ops)
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
				"containers": []any{map[string]any{"name": "c", "env": []any{map[string]any{"name": "E"}}}, map[string]any{"name": "s"}},
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
		{"an item inserted", []Operation{add("/spec/containers/0/env/0", map[string]any{"name": "F"})}, true},
		{"items inserted in order", []Operation{add("/spec/containers/0/env/0", map[string]any{"name": "F"}), add("/spec/containers/0/env/2", map[string]any{"name": "G"})}, true},
		{"items inserted out of order", []Operation{add("/spec/containers/0/env/2", map[string]any{"name": "G"}), add("/spec/containers/0/env/0", map[string]any{"name": "F"})}, false},
		{"an item replaced, then one inserted above it", []Operation{rep("/spec/containers/0/env/0", map[string]any{"name": "F"}), add("/spec/containers/0/env/1", map[string]any{"name": "G"})}, true},
		{"an item inserted below one replaced", []Operation{add("/spec/containers/0/env/0", map[string]any{"name": "G"}), rep("/spec/containers/0/env/1", map[string]any{"name": "F"})}, false},
		{"an item removed", []Operation{rem("/spec/containers/0/env/0")}, true},
		{"items removed from the highest", []Operation{rem("/spec/containers/1"), rem("/spec/containers/0")}, true},
		{"items removed from the lowest", []Operation{rem("/spec/containers/0"), rem("/spec/containers/1")}, false},
		{"an item replaced below one removed", []Operation{rem("/spec/containers/1"), rep("/spec/containers/0/name", "d")}, true},
		{"an item replaced above one removed", []Operation{rem("/spec/containers/0"), rep("/spec/containers/1/name", "d")}, false},
		{"an item inserted and one removed", []Operation{add("/spec/containers/0", map[string]any{"name": "z"}), rem("/spec/containers/2")}, false},
		{"an item removed past the end", []Operation{rem("/spec/containers/2")}, false},
		{"an item inserted past the end", []Operation{add("/spec/containers/3", map[string]any{"name": "z"})}, false},
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

// listSlot is where a list of an object is held: a map's key or a list's
// index.
type listSlot struct {
	m map[string]any
	k string
	l []any
	i int
}

func (s listSlot) get() []any {
	if s.m != nil {
		return s.m[s.k].([]any)
	}
	return s.l[s.i].([]any)
}

func (s listSlot) set(v []any) {
	if s.m != nil {
		s.m[s.k] = v
	} else {
		s.l[s.i] = v
	}
}

// listSlots are the places of every list in v (a private copy).
func listSlots(v any, out []listSlot) []listSlot {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) { // the same slots for the same seed
			x := t[k]
			if _, ok := x.([]any); ok {
				out = append(out, listSlot{m: t, k: k})
			}
			out = listSlots(x, out)
		}
	case []any:
		for i, x := range t {
			if _, ok := x.([]any); ok {
				out = append(out, listSlot{l: t, i: i})
			}
			out = listSlots(x, out)
		}
	}
	return out
}

// listsEditedAtRandom is a private copy of orig in which one to three
// lists have items inserted, removed and replaced at random places, and
// items' fields set: the edits whose patches insert or remove list items.
func listsEditedAtRandom(r *rand.Rand, orig map[string]any) map[string]any {
	want := deepCopy(orig, false).(map[string]any)
	slots := listSlots(want, nil)
	if len(slots) == 0 {
		return want
	}
	for range 1 + r.IntN(3) {
		s := slots[r.IntN(len(slots))]
		l := slices.Clone(s.get())
		for range 1 + r.IntN(4) {
			var v any
			switch r.IntN(4) {
			case 0:
				v = "x" + strconv.Itoa(r.IntN(3))
			case 1:
				v = int64(r.IntN(3))
			case 2:
				v = map[string]any{"name": "z" + strconv.Itoa(r.IntN(3))}
			default:
				if len(l) > 0 {
					v = deepCopy(l[r.IntN(len(l))], false)
				} else {
					v = "x"
				}
			}
			switch op := r.IntN(4); {
			case op == 0 || len(l) == 0: // an item inserted
				l = slices.Insert(l, r.IntN(len(l)+1), v)
			case op == 1: // an item removed
				i := r.IntN(len(l))
				l = slices.Delete(l, i, i+1)
			case op == 2: // an item replaced
				l[r.IntN(len(l))] = v
			default: // a field of an item set
				i := r.IntN(len(l))
				if m, ok := l[i].(map[string]any); ok {
					m = maps.Clone(m)
					m["name"] = "y" + strconv.Itoa(r.IntN(3))
					l[i] = m
				}
			}
		}
		s.set(l)
	}
	return want
}

// TestPatchGivesListEdits holds patchGives to the check on real objects
// whose lists have items inserted, removed and replaced (Diff's patches of
// insertions and removals, and those patches perturbed: operations
// swapped, indices one off, dropped, repeated), and requires it to vouch
// for a good share of the Diff patches that add or remove items.
func TestPatchGivesListEdits(t *testing.T) {
	objs := append(realObjects(t), []byte(pod))
	n := 200
	if testing.Short() {
		n = 40
	}
	shifting, vouched, perturbedVouched := 0, 0, 0
	for oi, j := range objs {
		for seed := range n {
			orig := decodeObject(t, j)
			if !IsNormalized(orig) {
				continue
			}
			r := rand.New(rand.NewPCG(uint64(oi)+1000, uint64(seed)))
			want := listsEditedAtRandom(r, orig)
			ops := Diff(orig, want)
			if len(ops) == 0 {
				continue
			}
			shifts := false
			for _, op := range ops {
				// An item removed, inserted or added to a list (or a key
				// that reads as an index).
				_, index := listIndex(op.Path[strings.LastIndexByte(op.Path, '/')+1:])
				if index && (op.Op == "remove" || op.Op == "add") {
					shifts = true
				}
			}
			gives := checkPatchGives(t, orig, want, ops)
			if shifts {
				shifting++
				if gives {
					vouched++
				}
			}
			perturbedVouched += checkPerturbed(t, r, orig, want, ops)
		}
	}
	t.Logf("%d of %d patches of Diff that add or remove list items vouched for; %d perturbed ones", vouched, shifting, perturbedVouched)
	if shifting == 0 || vouched*2 < shifting {
		t.Fatalf("patchGives vouched for %d of %d such patches: too few", vouched, shifting)
	}
}

// TestEncoderTellsIsNormalized holds the encoding's walk
// (appendOpsNormalized's normalized, jsonEncoder.abnormal) to IsNormalized
// on random values with whole and zero floats, strings and keys that are
// not valid UTF-8, nil maps and slices and values of other Go types, one
// operation's value or several.
func TestEncoderTellsIsNormalized(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(29, 25))}
	odd := []any{"\xff", "a\xc3", "\xed\xa0\x80", "\ufffd", map[string]any{"\xfe": int64(1)}, map[string]any(nil), []any(nil),
		int(3), float32(1.5), 0.0, 2.0, -1.5, map[string]any{"k": []any{map[string]any(nil)}}}
	var spoil func(v any) any
	spoil = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k := range x {
				if g.r.IntN(4) == 0 {
					x[k] = odd[g.r.IntN(len(odd))]
				} else {
					x[k] = spoil(x[k])
				}
			}
		case []any:
			for i := range x {
				if g.r.IntN(4) == 0 {
					x[i] = odd[g.r.IntN(len(odd))]
				} else {
					x[i] = spoil(x[i])
				}
			}
		}
		return v
	}
	told := [2]int{}
	for range 5000 {
		ops := make([]Operation, 1+g.r.IntN(3))
		want := true
		for i := range ops {
			v := g.value(4)
			if g.r.IntN(3) == 0 {
				v = spoil(v)
			}
			ops[i] = Operation{Op: "add", Path: "/a", Value: v, HasValue: g.r.IntN(8) != 0}
			if ops[i].HasValue && !IsNormalized(v) {
				want = false
			}
		}
		_, got, err := appendOpsNormalized(nil, ops)
		if err != nil {
			continue
		}
		if got != want {
			t.Fatalf("appendOpsNormalized tells normalized=%v of %#v, IsNormalized %v", got, ops, want)
		}
		if got {
			told[1]++
		} else {
			told[0]++
		}
	}
	// Containers nested about maxDiscardDepth levels deep, where
	// IsNormalized gives up.
	for _, n := range []int{maxDiscardDepth - 1, maxDiscardDepth, maxDiscardDepth + 1} {
		for _, inMap := range []bool{false, true} {
			var v any = "x"
			for range n {
				if inMap {
					v = map[string]any{"k": v}
				} else {
					v = []any{v}
				}
			}
			_, got, err := appendOpsNormalized(nil, []Operation{{Op: "add", Path: "/a", Value: v, HasValue: true}})
			if err != nil || got != IsNormalized(v) {
				t.Errorf("%d levels (maps %v): appendOpsNormalized tells %v (%v), IsNormalized %v", n, inMap, got, err, IsNormalized(v))
			}
		}
	}
	if told[0] < 500 || told[1] < 500 {
		t.Fatalf("normalized or not: %v of the random values, too few of one", told)
	}
}

// TestCompareSegIsAnOrder: compareSeg is a strict total order (patchGives
// sorts by it and searches with it), with the segments listIndex reads as
// indices in the order of their numbers, before every other segment.
func TestCompareSegIsAnOrder(t *testing.T) {
	segs := []string{"", "0", "1", "2", "9", "10", "11", "100", "123456789", "1234567890", "01", "00", "-", "-1", "1a", "a", "a1", "b", "B", "~", "é", "metadata", "labels", "10a", " 1"}
	for _, a := range segs {
		for _, b := range segs {
			ab, ba := compareSeg(a, b), compareSeg(b, a)
			if (ab == 0) != (a == b) || sign(ab) != -sign(ba) {
				t.Fatalf("compareSeg(%q, %q) = %d, compareSeg(%q, %q) = %d", a, b, ab, b, a, ba)
			}
			for _, c := range segs {
				if ab < 0 && compareSeg(b, c) < 0 && compareSeg(a, c) >= 0 {
					t.Fatalf("%q < %q < %q but compareSeg(%q, %q) = %d", a, b, c, a, c, compareSeg(a, c))
				}
			}
			na, aIdx := listIndex(a)
			nb, bIdx := listIndex(b)
			switch {
			case aIdx && bIdx && sign(ab) != sign(na-nb):
				t.Fatalf("indices %q, %q: compareSeg %d", a, b, ab)
			case aIdx && !bIdx && ab >= 0:
				t.Fatalf("index %q not before %q", a, b)
			}
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// TestDiffOpsComeSorted: the operations of Diff come in compareSegs'
// order, which patchGives then need not sort, for the load review's patch
// and most random edits of real objects (removes of list items, last
// first, are not).
func TestDiffOpsComeSorted(t *testing.T) {
	sorted := func(ops []Operation) bool {
		var prev []string
		for i := range ops {
			segs := strings.Split(ops[i].Path, "/")[1:]
			for k := range segs {
				segs[k] = decodePatchKey(segs[k])
			}
			if i > 0 && compareSegs(prev, segs) > 0 {
				return false
			}
			prev = segs
		}
		return true
	}
	_, orig, want, _ := loadReview(t)
	if d := Diff(orig, want); !sorted(d) {
		t.Errorf("the load review's patch is not sorted: %+v", d)
	}
	n, ok := 0, 0
	for oi, j := range realObjects(t) {
		for seed := range 50 {
			orig := decodeObject(t, j)
			r := rand.New(rand.NewPCG(uint64(oi), uint64(seed)))
			d := Diff(orig, editedAtRandom(r, orig))
			if len(d) < 2 {
				continue
			}
			n++
			if sorted(d) {
				ok++
			}
		}
	}
	if ok*2 < n {
		t.Errorf("%d of %d patches of random edits sorted", ok, n)
	}
	t.Logf("%d of %d patches of random edits (2 operations or more) sorted", ok, n)
}
