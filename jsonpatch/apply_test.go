package jsonpatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	evanphx "gopkg.in/evanphx/json-patch.v4"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

func init() {
	// kube-apiserver sets this from --json-patch-max-copy-bytes.
	evanphx.AccumulatedCopySizeLimit = AccumulatedCopySizeLimit
}

// upstreamResult is what kube-apiserver's path produces: encode, evanphx
// Apply, k8s JSON decode.
type upstreamResult struct {
	doc      map[string]any
	err      error
	panicked bool
}

// evanphxPatch builds the evanphx patch the way kube-apiserver's jsonPatcher
// does: quoted op and path, from only when non-empty, value when present.
func evanphxPatch(t testing.TB, ops []Operation) evanphx.Patch {
	p := evanphx.Patch{}
	for _, op := range ops {
		o := evanphx.Operation{}
		raw := func(s string) *json.RawMessage { r := json.RawMessage(s); return &r }
		o["op"] = raw(strconv.Quote(op.Op))
		o["path"] = raw(strconv.Quote(op.Path))
		if len(op.From) > 0 {
			o["from"] = raw(strconv.Quote(op.From))
		}
		if op.HasValue {
			b, err := json.Marshal(op.Value)
			if err != nil {
				t.Fatalf("marshal value: %v", err)
			}
			o["value"] = raw(string(b))
		}
		p = append(p, o)
	}
	return p
}

func runUpstream(t testing.TB, doc map[string]any, ops []Operation) (res upstreamResult) {
	docJSON, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("marshal doc: %v", err)
	}
	p := evanphxPatch(t, ops)
	defer func() {
		if r := recover(); r != nil {
			res = upstreamResult{panicked: true, err: fmt.Errorf("panic: %v", r)}
		}
	}()
	out, err := p.Apply(docJSON)
	if err != nil {
		return upstreamResult{err: err}
	}
	var m map[string]any
	if err := utiljson.Unmarshal(out, &m); err != nil {
		return upstreamResult{err: err}
	}
	return upstreamResult{doc: m}
}

// compareWithUpstream applies ops both ways and reports any difference.
func compareWithUpstream(t testing.TB, doc map[string]any, ops []Operation) (map[string]any, error) {
	t.Helper()
	return compareWithUpstreamLimit(t, doc, ops, AccumulatedCopySizeLimit)
}

// compareWithUpstreamLimit is compareWithUpstream for Apply with another
// copy size limit, evanphx's set to the same by the caller (v4 has no
// per-call options: its limit is a package variable, which only these
// tests, the oracle's users, write).
func compareWithUpstreamLimit(t testing.TB, doc map[string]any, ops []Operation, limit int64) (map[string]any, error) {
	t.Helper()
	before, _ := json.Marshal(doc)
	opsBefore, _ := json.Marshal(ops)
	got, gotErr := applyLimited(doc, ops, limit)
	after, _ := json.Marshal(doc)
	if string(before) != string(after) {
		t.Fatalf("Apply modified its input:\nbefore %s\nafter  %s", before, after)
	}
	if opsAfter, _ := json.Marshal(ops); string(opsBefore) != string(opsAfter) {
		t.Fatalf("Apply modified the operations:\nbefore %s\nafter  %s", opsBefore, opsAfter)
	}
	want := runUpstream(t, doc, ops)
	switch {
	case want.panicked:
		if !errors.Is(gotErr, ErrUpstreamPanic) && !errors.Is(gotErr, ErrTestFailed) {
			t.Fatalf("evanphx panicked (%v), Apply returned %v, %v", want.err, got, gotErr)
		}
	case errors.Is(gotErr, ErrUpstreamPanic):
		// evanphx iterates maps randomly: a test that panics on one key may
		// fail on another first.
		if !errors.Is(want.err, ErrTestFailed) {
			t.Fatalf("Apply reports an upstream panic (%v), evanphx returned %v, %v", gotErr, want.doc, want.err)
		}
	case want.err != nil || gotErr != nil:
		if want.err == nil || gotErr == nil || want.err.Error() != gotErr.Error() {
			t.Fatalf("errors differ:\nApply:   %v\nevanphx: %v\nApply result %#v", gotErr, want.err, got)
		}
		if errors.Is(want.err, ErrTestFailed) != errors.Is(gotErr, ErrTestFailed) {
			t.Fatalf("ErrTestFailed matching differs: %v", gotErr)
		}
	default:
		if !reflect.DeepEqual(got, want.doc) {
			t.Fatalf("results differ:\nApply:   %#v\nevanphx: %#v", got, want.doc)
		}
	}
	return got, gotErr
}

func mustDoc(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := utiljson.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad doc %s: %v", s, err)
	}
	return m
}

// mustOps parses a JSON patch into operations the way FromCEL would produce
// them: op and path strings, from when non-empty, value when present.
func mustOps(t testing.TB, s string) []Operation {
	t.Helper()
	ops, err := opsFromJSON([]byte(s))
	if err != nil {
		t.Fatalf("bad patch %s: %v", s, err)
	}
	return ops
}

func opsFromJSON(b []byte) ([]Operation, error) {
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	ops := make([]Operation, 0, len(raw))
	for _, r := range raw {
		var op Operation
		for k, v := range r {
			switch k {
			case "op", "path", "from":
				var s string
				if err := json.Unmarshal(v, &s); err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
				switch k {
				case "op":
					op.Op = s
				case "path":
					op.Path = s
				default:
					op.From = s
				}
			case "value":
				var val any
				if err := utiljson.Unmarshal(v, &val); err != nil {
					return nil, err
				}
				op.Value, op.HasValue = val, true
			default:
				return nil, fmt.Errorf("unexpected field %q", k)
			}
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func TestApplyMatchesEvanphx(t *testing.T) {
	const pod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1","x/y":"2","t~n":"3"},"creationTimestamp":null},
		"spec":{"containers":[{"name":"c1","image":"nginx","ports":[{"containerPort":80}]},{"name":"c2","image":"busybox"}],"replicas":3,"ratio":1.5}}`
	tests := []struct {
		name    string
		doc     string
		patch   string
		want    string // optional expected result
		wantErr string // optional expected error
	}{
		{name: "add sets a new key", doc: pod, patch: `[{"op":"add","path":"/metadata/labels/b","value":"v"}]`},
		{name: "add replaces an existing key", doc: pod, patch: `[{"op":"add","path":"/metadata/name","value":"q"}]`},
		{name: "add appends with dash", doc: pod, patch: `[{"op":"add","path":"/spec/containers/-","value":{"name":"c3"}}]`},
		{name: "add inserts at an index", doc: pod, patch: `[{"op":"add","path":"/spec/containers/0","value":{"name":"c0"}}]`},
		{name: "add inserts at the length", doc: pod, patch: `[{"op":"add","path":"/spec/containers/2","value":{"name":"c3"}}]`},
		{name: "add past the length fails", doc: pod, patch: `[{"op":"add","path":"/spec/containers/3","value":{}}]`,
			wantErr: "error in add for path: '/spec/containers/3': Unable to access invalid index: 3: invalid index referenced"},
		{name: "add with a negative index inserts from the end", doc: pod, patch: `[{"op":"add","path":"/spec/containers/-1","value":{"name":"cz"}}]`},
		{name: "add with a too negative index fails", doc: pod, patch: `[{"op":"add","path":"/spec/containers/-4","value":1}]`},
		{name: "add with a leading zero index", doc: pod, patch: `[{"op":"add","path":"/spec/containers/01","value":{"name":"z"}}]`},
		{name: "add with a plus sign index", doc: pod, patch: `[{"op":"add","path":"/spec/containers/+1","value":{"name":"z"}}]`},
		{name: "add with a non-numeric index fails", doc: pod, patch: `[{"op":"add","path":"/spec/containers/x","value":1}]`},
		{name: "add below a missing parent fails", doc: pod, patch: `[{"op":"add","path":"/spec/missing/x","value":1}]`,
			wantErr: `add operation does not apply: doc is missing path: "/spec/missing/x": missing value`},
		{name: "add below a scalar fails", doc: pod, patch: `[{"op":"add","path":"/spec/replicas/x","value":1}]`},
		{name: "add below a document null fails", doc: pod, patch: `[{"op":"add","path":"/metadata/creationTimestamp/x","value":1}]`},
		{name: "add with escaped keys", doc: pod, patch: `[{"op":"add","path":"/metadata/labels/x~1y","value":"s"},{"op":"add","path":"/metadata/labels/t~0n","value":"u"}]`},
		{name: "add with an escape that is applied once", doc: `{"a":{}}`, patch: `[{"op":"add","path":"/a/~01","value":1}]`, want: `{"a":{"~1":1}}`},
		{name: "add to the root path fails", doc: pod, patch: `[{"op":"add","path":"","value":{}}]`},
		{name: "add to the empty key", doc: pod, patch: `[{"op":"add","path":"/","value":1}]`},
		{name: "path without a leading slash ignores its first segment", doc: `{"a":1}`, patch: `[{"op":"add","path":"zzz/b","value":2}]`, want: `{"a":1,"b":2}`},
		{name: "path without a slash fails", doc: pod, patch: `[{"op":"add","path":"abc","value":1}]`},
		{name: "add without a value adds null", doc: pod, patch: `[{"op":"add","path":"/x"}]`},
		{name: "add null then write below it panics upstream", doc: `{}`, patch: `[{"op":"add","path":"/x","value":null},{"op":"add","path":"/x/y","value":1}]`},
		{name: "add null then remove below it", doc: `{}`, patch: `[{"op":"add","path":"/x","value":null},{"op":"remove","path":"/x/y"}]`},
		{name: "remove a key", doc: pod, patch: `[{"op":"remove","path":"/metadata/labels/a"}]`},
		{name: "remove a missing key fails", doc: pod, patch: `[{"op":"remove","path":"/metadata/labels/zz"}]`,
			wantErr: "error in remove for path: '/metadata/labels/zz': Unable to remove nonexistent key: zz: missing value"},
		{name: "remove an array element", doc: pod, patch: `[{"op":"remove","path":"/spec/containers/0"}]`},
		{name: "remove the last element by negative index", doc: pod, patch: `[{"op":"remove","path":"/spec/containers/-1"}]`},
		{name: "remove past the end fails", doc: pod, patch: `[{"op":"remove","path":"/spec/containers/2"}]`},
		{name: "remove with dash fails", doc: pod, patch: `[{"op":"remove","path":"/spec/containers/-"}]`},
		{name: "remove a null field", doc: pod, patch: `[{"op":"remove","path":"/metadata/creationTimestamp"}]`},
		{name: "replace a scalar", doc: pod, patch: `[{"op":"replace","path":"/spec/replicas","value":5}]`},
		{name: "replace a missing key adds it", doc: pod, patch: `[{"op":"replace","path":"/spec/newKey","value":true}]`},
		{name: "replace an array element", doc: pod, patch: `[{"op":"replace","path":"/spec/containers/1/image","value":"x"},{"op":"replace","path":"/spec/containers/-2","value":{"name":"n"}}]`},
		{name: "replace past the end fails", doc: pod, patch: `[{"op":"replace","path":"/spec/containers/2","value":{}}]`,
			wantErr: "replace operation does not apply: doc is missing key: /spec/containers/2: missing value"},
		{name: "replace the root with an object", doc: pod, patch: `[{"op":"replace","path":"","value":{"kind":"X"}}]`},
		{name: "replace the root with a scalar fails", doc: pod, patch: `[{"op":"replace","path":"","value":1}]`,
			wantErr: "replace operation value must be object or array: %!w(<nil>)"},
		{name: "replace the root with null gives a nil map", doc: pod, patch: `[{"op":"replace","path":"","value":null}]`},
		{name: "replace the root with an array", doc: pod, patch: `[{"op":"replace","path":"","value":[1]}]`},
		{name: "move a key", doc: pod, patch: `[{"op":"move","from":"/metadata/labels/a","path":"/metadata/labels/b"}]`},
		{name: "move within an array", doc: pod, patch: `[{"op":"move","from":"/spec/containers/0","path":"/spec/containers/-"}]`},
		{name: "move from a missing key fails with the key", doc: pod, patch: `[{"op":"move","from":"/metadata/labels/q","path":"/x"}]`},
		{name: "move without from fails", doc: pod, patch: `[{"op":"move","path":"/x"}]`,
			wantErr: "move operation failed to decode from: operation, missing from field: missing value"},
		{name: "move into itself fails", doc: pod, patch: `[{"op":"move","from":"/spec","path":"/spec/inner"}]`},
		{name: "copy a subtree and modify the copy", doc: pod, patch: `[{"op":"copy","from":"/spec/containers/0","path":"/spec/containers/-"},{"op":"replace","path":"/spec/containers/2/name","value":"copy"}]`},
		{name: "copy from a missing key adds null", doc: pod, patch: `[{"op":"copy","from":"/metadata/nope","path":"/metadata/copied"}]`},
		{name: "copy from an array out of range fails", doc: pod, patch: `[{"op":"copy","from":"/spec/containers/9","path":"/x"}]`},
		{name: "copy without from fails", doc: pod, patch: `[{"op":"copy","path":"/x"}]`},
		{name: "copy a null value keeps its kind", doc: `{}`, patch: `[{"op":"add","path":"/a","value":null},{"op":"copy","from":"/a","path":"/b"},{"op":"test","path":"/b","value":{}}]`},
		{name: "test a matching scalar", doc: pod, patch: `[{"op":"test","path":"/spec/replicas","value":3},{"op":"add","path":"/ok","value":1}]`},
		{name: "test a mismatching scalar", doc: pod, patch: `[{"op":"test","path":"/spec/replicas","value":4}]`,
			wantErr: "testing value /spec/replicas failed: test failed"},
		{name: "test an integer against a float", doc: pod, patch: `[{"op":"test","path":"/spec/replicas","value":3.0}]`},
		{name: "test a float", doc: pod, patch: `[{"op":"test","path":"/spec/ratio","value":1.5}]`},
		{name: "test a string against a number", doc: pod, patch: `[{"op":"test","path":"/spec/replicas","value":"3"}]`},
		{name: "test an object with different key order", doc: pod, patch: `[{"op":"test","path":"/metadata/labels","value":{"t~n":"3","x/y":"2","a":"1"}}]`},
		{name: "test an array", doc: pod, patch: `[{"op":"test","path":"/spec/containers/0/ports","value":[{"containerPort":80}]}]`},
		{name: "test the root", doc: `{"a":1}`, patch: `[{"op":"test","path":"","value":{"a":1}}]`},
		{name: "test the root mismatch", doc: `{"a":1}`, patch: `[{"op":"test","path":"","value":{"a":2}}]`},
		{name: "test a missing key without a value passes", doc: pod, patch: `[{"op":"test","path":"/nope"}]`},
		{name: "test a missing key against null fails", doc: pod, patch: `[{"op":"test","path":"/nope","value":null}]`},
		{name: "test a document null against null fails", doc: pod, patch: `[{"op":"test","path":"/metadata/creationTimestamp","value":null}]`},
		{name: "test an empty object against null passes", doc: `{"a":{}}`, patch: `[{"op":"test","path":"/a","value":null}]`},
		{name: "test an empty array against null passes", doc: `{"a":[]}`, patch: `[{"op":"test","path":"/a","value":null}]`},
		{name: "test an added null against an empty object passes", doc: `{}`, patch: `[{"op":"add","path":"/a","value":null},{"op":"test","path":"/a","value":{}}]`},
		{name: "test an added null against an empty array fails", doc: `{}`, patch: `[{"op":"add","path":"/a","value":null},{"op":"test","path":"/a","value":[]}]`},
		{name: "test an object with a null member", doc: `{"a":{"b":null}}`, patch: `[{"op":"test","path":"/a","value":{"b":null}}]`},
		{name: "test an array with null panics upstream", doc: `{"a":[null]}`, patch: `[{"op":"test","path":"/a","value":[null]}]`},
		{name: "test a present key without a value fails", doc: pod, patch: `[{"op":"test","path":"/kind"}]`},
		{name: "test html characters", doc: `{"a":"<&>\u2028"}`, patch: `[{"op":"test","path":"/a","value":"<&>\u2028"}]`},
		{name: "test with an out of range index fails", doc: pod, patch: `[{"op":"test","path":"/spec/containers/5","value":1}]`},
		{name: "unknown op fails", doc: pod, patch: `[{"op":"merge","path":"/a","value":1}]`, wantErr: "Unexpected kind: merge"},
		{name: "op with a vertical tab is unknown", doc: pod, patch: `[{"op":"add\u000b","path":"/a","value":1}]`, wantErr: "Unexpected kind: unknown"},
		{name: "path with a vertical tab cannot be decoded", doc: pod, patch: `[{"op":"replace","path":"/a\u000b","value":1}]`},
		{name: "path with a non-printable rune is decoded", doc: pod, patch: `[{"op":"add","path":"/a\ue000","value":1}]`},
		{name: "path with a supplementary private rune cannot be decoded", doc: pod, patch: `[{"op":"add","path":"/a\udb80\udc00","value":1}]`},
		{name: "big integers survive", doc: `{"a":9223372036854775807}`, patch: `[{"op":"test","path":"/a","value":9223372036854775807},{"op":"add","path":"/b","value":1e300}]`},
		{name: "negative zero stays distinct in test", doc: `{"a":0}`, patch: `[{"op":"test","path":"/a","value":-0.0}]`},
		{name: "negative zero in the result", doc: `{}`, patch: `[{"op":"add","path":"/a","value":-0.0}]`, want: `{"a":0}`},
		{name: "a failed op aborts everything", doc: pod, patch: `[{"op":"add","path":"/a","value":1},{"op":"remove","path":"/zz"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := mustDoc(t, tc.doc)
			got, err := compareWithUpstream(t, doc, mustOps(t, tc.patch))
			if tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
				t.Fatalf("error = %v, want %s", err, tc.wantErr)
			}
			if tc.want != "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if want := mustDoc(t, tc.want); !reflect.DeepEqual(got, want) {
					t.Fatalf("got %#v, want %#v", got, want)
				}
			}
		})
	}
}

func TestApplyCopySizeLimit(t *testing.T) {
	evanphx.AccumulatedCopySizeLimit = 20
	defer func() { evanphx.AccumulatedCopySizeLimit = AccumulatedCopySizeLimit }()
	doc := mustDoc(t, `{"a":{"b":"0123456789"}}`)
	for _, patch := range []string{
		`[{"op":"copy","from":"/a","path":"/c"}]`,
		`[{"op":"copy","from":"/a","path":"/c"},{"op":"copy","from":"/a","path":"/d"}]`,
		`[{"op":"copy","from":"/a/b","path":"/c"},{"op":"copy","from":"/zz","path":"/d"}]`,
	} {
		compareWithUpstreamLimit(t, doc, mustOps(t, patch), 20)
	}
}

func TestApplyDoesNotShareWrittenContainers(t *testing.T) {
	doc := mustDoc(t, `{"a":{"b":[1,2]},"c":{"d":1}}`)
	got, err := Apply(doc, mustOps(t, `[{"op":"add","path":"/a/b/-","value":3},{"op":"copy","from":"/a","path":"/e"},{"op":"add","path":"/e/b/0","value":0}]`))
	if err != nil {
		t.Fatal(err)
	}
	if want := mustDoc(t, `{"a":{"b":[1,2,3]},"c":{"d":1},"e":{"b":[0,1,2,3]}}`); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
	if !reflect.DeepEqual(doc, mustDoc(t, `{"a":{"b":[1,2]},"c":{"d":1}}`)) {
		t.Fatalf("input modified: %v", doc)
	}
	// Untouched subtrees are shared rather than copied.
	if reflect.ValueOf(got["c"]).Pointer() != reflect.ValueOf(doc["c"]).Pointer() {
		t.Errorf("untouched subtree was copied")
	}
}

func TestApplyTestFailedIsMatchable(t *testing.T) {
	_, err := Apply(map[string]any{"a": int64(1)}, []Operation{{Op: "test", Path: "/a", Value: int64(2), HasValue: true}})
	if !errors.Is(err, ErrTestFailed) || !errors.Is(err, evanphx.ErrTestFailed) {
		t.Fatalf("err = %v, want ErrTestFailed", err)
	}
}

func TestApplyNormalizesNumbersLikeTheJSONRoundTrip(t *testing.T) {
	doc := map[string]any{"f": 2.0, "g": 2.5, "h": int32(7), "big": 1e20, "s": "a\xffb"}
	compareWithUpstream(t, doc, nil)
	got, err := Apply(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"f": int64(2), "g": 2.5, "h": int64(7), "big": 1e20, "s": "a\uFFFDb"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v", got)
	}
}

func unmarshalObject(b []byte, m *map[string]any) error {
	if err := utiljson.Unmarshal(b, m); err != nil {
		return err
	}
	if *m == nil {
		return errors.New("null document")
	}
	return nil
}

// TestApplyWritesToManyContainers writes twice to more containers than
// applier.ownedFew holds: containers made by the call are written in place,
// the document's never.
func TestApplyWritesToManyContainers(t *testing.T) {
	doc := map[string]any{}
	var ops []Operation
	for i := 0; i < 12; i++ {
		k := strconv.Itoa(i)
		doc[k] = map[string]any{"l": []any{int64(i)}, "m": map[string]any{"x": int64(i)}}
		ops = append(ops, Operation{Op: "add", Path: "/" + k + "/l/-", Value: "a", HasValue: true},
			Operation{Op: "add", Path: "/" + k + "/m/y", Value: "b", HasValue: true})
	}
	for i := 11; i >= 0; i-- {
		k := strconv.Itoa(i)
		ops = append(ops, Operation{Op: "add", Path: "/" + k + "/l/0", Value: "c", HasValue: true},
			Operation{Op: "remove", Path: "/" + k + "/m/x"})
	}
	got, err := compareWithUpstream(t, doc, ops)
	if err != nil {
		t.Fatal(err)
	}
	if l := got["3"].(map[string]any)["l"]; !reflect.DeepEqual(l, []any{"c", int64(3), "a"}) {
		t.Fatalf("got %#v", l)
	}
	unn, ok := ApplyUnnormalized(doc, ops)
	if !ok || !reflect.DeepEqual(unn, got) {
		t.Fatalf("ApplyUnnormalized: %v %#v", ok, unn)
	}
}

// TestDecodePatchKey holds decodePatchKey to evanphx's replacer on every
// key of up to six characters over the alphabet that matters.
func TestDecodePatchKey(t *testing.T) {
	const alphabet = "~01a/"
	var walk func(k string)
	walk = func(k string) {
		if got, want := decodePatchKey(k), decodePatchKeyReference(k); got != want {
			t.Fatalf("decodePatchKey(%q) = %q, want %q", k, got, want)
		}
		if len(k) == 6 {
			return
		}
		for _, c := range alphabet {
			walk(k + string(c))
		}
	}
	walk("")
}
