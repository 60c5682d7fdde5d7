package jsonpatch

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The patch bytes createPatchFast writes are held to a reference made the
// slow, obvious way: the diff's algorithm with paths as concatenated
// strings (no shared path buffer, no identity shortcut, no string view of
// a buffer) and each operation encoded with jsonvalue.Marshal. Any change
// of order, path, escaping or value in the fast diff or its encoding
// (its buffers, its path strings, the encoder's key stack) makes them
// differ.

// referenceOps is Diff(orig, want) computed naively.
func referenceOps(orig, want map[string]any) []Operation {
	var ops []Operation
	refObject(&ops, "", orig, want)
	return ops
}

func refValue(ops *[]Operation, path string, a, b any) {
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok && x != nil && y != nil {
			refObject(ops, path, x, y)
			return
		}
	case []any:
		if y, ok := b.([]any); ok && x != nil && y != nil {
			refList(ops, path, x, y)
			return
		}
	}
	if !jsonvalue.JSONEqual(a, b) {
		*ops = append(*ops, Operation{Op: "replace", Path: path, Value: b, HasValue: true})
	}
}

func refObject(ops *[]Operation, path string, a, b map[string]any) {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for _, k := range sortedKeys(toSet(keys)) {
		p := path + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
		av, inA := a[k]
		bv, inB := b[k]
		switch {
		case inA && inB:
			refValue(ops, p, av, bv)
		case inB:
			*ops = append(*ops, Operation{Op: "add", Path: p, Value: bv, HasValue: true})
		default:
			*ops = append(*ops, Operation{Op: "remove", Path: p})
		}
	}
}

func toSet(keys map[string]bool) map[string]any {
	m := make(map[string]any, len(keys))
	for k := range keys {
		m[k] = nil
	}
	return m
}

func refList(ops *[]Operation, path string, a, b []any) {
	at := func(i int) string { return path + "/" + strconv.Itoa(i) }
	if len(a) == len(b) {
		for i := range a {
			refValue(ops, at(i), a[i], b[i])
		}
		return
	}
	p, s := commonEnds(a, b)
	am, bm := a[p:len(a)-s], b[p:len(b)-s]
	if len(am) < len(bm) && isSubsequence(am, bm) {
		i := 0
		for j, v := range bm {
			if i < len(am) && jsonvalue.JSONEqual(am[i], v) {
				i++
				continue
			}
			*ops = append(*ops, Operation{Op: "add", Path: at(p + j), Value: v, HasValue: true})
		}
		return
	}
	if len(am) > len(bm) && isSubsequence(bm, am) {
		var keep []bool
		j := 0
		for _, v := range am {
			m := j < len(bm) && jsonvalue.JSONEqual(v, bm[j])
			if m {
				j++
			}
			keep = append(keep, m)
		}
		for i := len(am) - 1; i >= 0; i-- {
			if !keep[i] {
				*ops = append(*ops, Operation{Op: "remove", Path: at(p + i)})
			}
		}
		return
	}
	n := min(len(am), len(bm))
	for i := 0; i < n; i++ {
		refValue(ops, at(p+i), am[i], bm[i])
	}
	for j := n; j < len(bm); j++ {
		*ops = append(*ops, Operation{Op: "add", Path: at(p + j), Value: bm[j], HasValue: true})
	}
	for i := len(am) - 1; i >= n; i-- {
		*ops = append(*ops, Operation{Op: "remove", Path: at(p + i)})
	}
}

// referencePatch encodes ops one by one with jsonvalue.Marshal (what
// encoding/json writes, without HTML escaping).
func referencePatch(t testing.TB, ops []Operation) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, op := range ops {
		if i > 0 {
			buf.WriteByte(',')
		}
		o, _ := jsonvalue.Marshal(op.Op)
		p, _ := jsonvalue.Marshal(op.Path)
		buf.WriteString(`{"op":` + string(o) + `,"path":` + string(p))
		if op.HasValue {
			v, err := jsonvalue.Marshal(op.Value)
			if err != nil {
				t.Fatal(err)
			}
			buf.WriteString(`,"value":` + string(v))
		}
		buf.WriteByte('}')
	}
	buf.WriteByte(']')
	return buf.Bytes()
}

// checkPatchBytes fails unless CreatePatch's patch of orig to want is, byte
// for byte, the reference patch.
func checkPatchBytes(t testing.TB, orig, want map[string]any) {
	t.Helper()
	ref := referenceOps(orig, want)
	patch, err := CreatePatch(nil, orig, want)
	if err != nil {
		t.Fatal(err)
	}
	if len(ref) == 0 {
		if patch != nil {
			t.Fatalf("patch %s, the reference has none", patch)
		}
		return
	}
	if w := referencePatch(t, ref); !bytes.Equal(patch, w) {
		t.Fatalf("patch\n%s\nthe reference's\n%s", patch, w)
	}
	// The patch checked: the fast path made it, or the fallback did and
	// then the reference's operations must have failed the check too.
	if fast, ok := createPatchFast(orig, want); !ok || !bytes.Equal(fast, patch) {
		t.Fatalf("the fast path did not make the patch (ok %v)", ok)
	}
	checkNormalizedPatch(t, orig, want, patch)
	checkAppendPatch(t, orig, want, patch)
}

// checkAppendPatch fails unless AppendPatch (and AppendPatchNormalized,
// for an orig that IsNormalized) gives patch, CreatePatch's, whatever the
// memory it is given: none, too little, or a larger buffer full of an
// earlier patch's bytes, which it must then write the patch in.
func checkAppendPatch(t testing.TB, orig, want map[string]any, patch []byte) {
	t.Helper()
	dirty := bytes.Repeat([]byte(`[{"op":"remove","path":"/x~1"}],`), 1+len(patch)/8)
	for _, dst := range [][]byte{nil, []byte("[{"), dirty[:len(dirty)/2], dirty} {
		for _, normalized := range []bool{false, true} {
			if normalized && !IsNormalized(orig) {
				continue
			}
			appendPatch := AppendPatch
			if normalized {
				appendPatch = AppendPatchNormalized
			}
			got, err := appendPatch(dst, nil, orig, want)
			if err != nil || !bytes.Equal(got, patch) || (got == nil) != (patch == nil) {
				t.Fatalf("AppendPatch (normalized %v) in %d bytes of room: %q, %v; CreatePatch: %q", normalized, cap(dst), got, err, patch)
			}
			if len(got) > 0 && len(got) <= cap(dst) && cap(dst) >= 256+128*len(Diff(orig, want)) && &got[0] != &dst[:1][0] {
				t.Fatalf("AppendPatch did not write its patch in the %d bytes of room it had", cap(dst))
			}
		}
	}
}

// checkNormalizedPatch fails unless, for an orig that IsNormalized,
// CreatePatchNormalized and its native path (the check by
// ApplyUnnormalized) make patch, CreatePatch's patch.
func checkNormalizedPatch(t testing.TB, orig, want map[string]any, patch []byte) {
	t.Helper()
	if !IsNormalized(orig) {
		return
	}
	got, err := CreatePatchNormalized(nil, orig, want)
	if err != nil || !bytes.Equal(got, patch) {
		t.Fatalf("CreatePatchNormalized: %s, %v; CreatePatch: %s", got, err, patch)
	}
	fast, ok := createPatchNative(nil, orig, want, false)
	normalized, nok := createPatchNative(nil, orig, want, true)
	if ok != nok || !bytes.Equal(fast, normalized) {
		t.Fatalf("checked with ApplyUnnormalized: %s (ok %v); with Apply: %s (ok %v)", normalized, nok, fast, ok)
	}
}

// TestCreatePatchNormalizedIsCreatePatch holds CreatePatchNormalized to
// CreatePatch on real objects (all of them normalized JSON decodings)
// edited copy-on-write as the engine edits them, with values of every
// kind (whole and fractional floats among them, which the operations'
// values may be), and on the documents the native diff declines.
func TestCreatePatchNormalizedIsCreatePatch(t *testing.T) {
	objs := append(realObjects(t), []byte(pod))
	normalized := 0
	for oi, j := range objs {
		if IsNormalized(decodeObject(t, j)) {
			normalized++
		}
		for seed := 0; seed < 300; seed++ {
			orig := decodeObject(t, j)
			r := rand.New(rand.NewPCG(uint64(oi), uint64(seed)))
			want := editedAtRandom(r, orig)
			patch, err := CreatePatch(nil, orig, want)
			if err != nil {
				t.Fatal(err)
			}
			checkNormalizedPatch(t, orig, want, patch)
		}
	}
	if normalized < len(objs)/2 {
		t.Fatalf("%d of %d objects normalized: too few to tell", normalized, len(objs))
	}
}

// realObjects are the objects of test/load/testdata and examples/, as JSON.
func realObjects(t testing.TB) [][]byte {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../test/load/testdata/*.yaml", "../examples/*/testdata/*.yaml", "../examples/*/objects/*.yaml", "../examples/default-resources/resources.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				continue
			}
			var m map[string]any
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &m); err != nil || m == nil || m["kind"] == nil {
				continue
			}
			out = append(out, j)
		}
	}
	if len(out) < 3 {
		t.Fatalf("only %d objects found", len(out))
	}
	return out
}

func decodeObject(t testing.TB, j []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPatchBytesAreTheReferences edits real objects copy-on-write, as the
// engine changes them, with scripts of many lengths, and holds each patch
// to the reference.
func TestPatchBytesAreTheReferences(t *testing.T) {
	objs := append(realObjects(t), []byte(pod))
	// Whole objects added, replaced and removed: every value encoded.
	for _, a := range objs {
		for _, b := range objs {
			checkPatchBytes(t, decodeObject(t, a), decodeObject(t, b))
		}
		checkPatchBytes(t, map[string]any{}, decodeObject(t, a))
		checkPatchBytes(t, map[string]any{"kind": "x", "spec": []any{}}, decodeObject(t, a))
	}
	for oi, j := range objs {
		for seed := 0; seed < 200; seed++ {
			orig := decodeObject(t, j)
			script := make([]byte, 4+seed%40)
			x := uint32(seed*2654435761 + oi*40503 + 1)
			for i := range script {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				script[i] = byte(x)
			}
			ed := &editor{script: script, orig: orig}
			want := orig
			for len(ed.script) > 0 {
				want = ed.edit(want, 0).(map[string]any)
			}
			checkPatchBytes(t, orig, want)
		}
	}
}

// FuzzPatchBytes holds CreatePatch's bytes to the reference for fuzzed
// edits of real objects (doc picks one, or is an object itself).
func FuzzPatchBytes(f *testing.F) {
	objs := realObjects(f)
	for i, j := range objs {
		f.Add(j, []byte{byte(i), 0x10, 0x21, 0x32, 0x43, 0x54, 0x65, 0x76, 0x87})
	}
	f.Add([]byte(pod), []byte("\xff\x00\xfe\x01\xfd\x02\xfc\x03"))
	f.Fuzz(func(t *testing.T, doc, script []byte) {
		var orig map[string]any
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(doc, &orig); err != nil || orig == nil {
			if len(script) == 0 {
				return
			}
			orig = decodeObject(t, objs[int(script[0])%len(objs)])
		}
		ed := &editor{script: script, orig: orig}
		want := orig
		for len(ed.script) > 0 {
			want = ed.edit(want, 0).(map[string]any)
		}
		checkPatchBytes(t, orig, want)
	})
}

// editedAtRandom is orig edited by a script of 2 to 31 edits drawn from r
// (editor), sharing what it does not change.
func editedAtRandom(r *rand.Rand, orig map[string]any) map[string]any {
	script := make([]byte, 2+r.IntN(30))
	for i := range script {
		script[i] = byte(r.Uint32())
	}
	ed := &editor{script: script, orig: orig}
	want := orig
	for len(ed.script) > 0 {
		want = ed.edit(want, 0).(map[string]any)
	}
	return want
}
