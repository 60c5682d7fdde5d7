package jsonpatch

import (
	"bytes"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
	evanphxjsonpatch "gopkg.in/evanphx/json-patch.v4"

	sigsjson "sigs.k8s.io/json"
)

// pod is a Pod as kube-apiserver sends it to mutating admission.
const pod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"shop","labels":{"app":"web","app.kubernetes.io/name":"web"},"annotations":{"example.com/owner":"team-a","a~b":"tilde"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"5b7f0c2e","controller":true}]},"spec":{"containers":[{"name":"app","image":"docker.io/library/web:1","ports":[{"containerPort":8080,"protocol":"TCP"}],"env":[{"name":"A","value":"1"}],"resources":{"requests":{"cpu":"250m"}}},{"name":"metrics","image":"quay.io/exporter:v1","resources":{}}],"securityContext":{},"tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"terminationGracePeriodSeconds":30,"enableServiceLinks":true,"priority":0},"status":{}}`

// edit returns a copy of the decoding of doc changed by f, sharing nothing
// with it.
func edit(t *testing.T, doc string, f func(m map[string]any)) map[string]any {
	t.Helper()
	m := valuetest.Decode(t, []byte(doc)).(map[string]any)
	f(m)
	return m
}

func at(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

func podContainer(m map[string]any, i int) map[string]any {
	return at(m, "spec")["containers"].([]any)[i].(map[string]any)
}

func TestNativePatch(t *testing.T) {
	cases := []struct {
		name     string
		original string
		want     func(t *testing.T) map[string]any
		// ops are substrings the patch must have, in this order.
		ops []string
		// same: want equals the original once written as JSON.
		same bool
	}{
		{
			name:     "a sidecar with its volume, env, labels and a security context",
			original: pod,
			want: func(t *testing.T) map[string]any {
				return edit(t, pod, func(m map[string]any) {
					spec := at(m, "spec")
					spec["containers"] = append(spec["containers"].([]any), map[string]any{
						"name": "log-shipper", "image": "registry.example.com/log-shipper:1.4.2",
						"volumeMounts": []any{map[string]any{"name": "logs", "mountPath": "/var/log/app"}},
						"resources":    map[string]any{"limits": map[string]any{"memory": "64Mi"}},
					})
					spec["volumes"] = []any{map[string]any{"name": "logs", "emptyDir": map[string]any{}}}
					c := podContainer(m, 0)
					c["env"] = append(c["env"].([]any), map[string]any{"name": "CLUSTER", "value": "prod"})
					c["image"] = "mirror.example.com/library/web:1"
					podContainer(m, 1)["env"] = []any{map[string]any{"name": "CLUSTER", "value": "prod"}}
					spec["securityContext"] = map[string]any{"runAsNonRoot": true, "fsGroup": int64(2000), "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
					spec["tolerations"] = append(spec["tolerations"].([]any), map[string]any{"key": "example.com/spot", "operator": "Exists"})
					spec["terminationGracePeriodSeconds"] = int64(45)
					at(m, "metadata", "labels")["example.com/team"] = "payments"
					at(m, "metadata", "annotations")["prometheus.io/scrape"] = "true"
				})
			},
			ops: []string{
				`{"op":"add","path":"/metadata/annotations/prometheus.io~1scrape","value":"true"}`,
				`{"op":"add","path":"/metadata/labels/example.com~1team","value":"payments"}`,
				`{"op":"add","path":"/spec/containers/0/env/1","value":{"name":"CLUSTER","value":"prod"}}`,
				`{"op":"replace","path":"/spec/containers/0/image","value":"mirror.example.com/library/web:1"}`,
				`{"op":"add","path":"/spec/containers/1/env","value":[{"name":"CLUSTER","value":"prod"}]}`,
				`{"op":"add","path":"/spec/containers/2","value":{"image":"registry.example.com/log-shipper:1.4.2","name":"log-shipper"`,
				`{"op":"add","path":"/spec/securityContext/fsGroup","value":2000}`,
				`{"op":"replace","path":"/spec/terminationGracePeriodSeconds","value":45}`,
				`{"op":"add","path":"/spec/tolerations/1","value":{"key":"example.com/spot","operator":"Exists"}}`,
				`{"op":"add","path":"/spec/volumes","value":[{"emptyDir":{},"name":"logs"}]}`,
			},
		},
		{
			name:     "labels and annotations with / and ~ added, removed and changed",
			original: pod,
			want: func(t *testing.T) map[string]any {
				return edit(t, pod, func(m map[string]any) {
					labels, annotations := at(m, "metadata", "labels"), at(m, "metadata", "annotations")
					delete(labels, "app.kubernetes.io/name")
					labels["x~/y"] = "both"
					labels["~"], labels["/"], labels[""] = "t", "s", "empty"
					annotations["example.com/owner"] = "team-b"
					delete(annotations, "a~b")
					annotations["~1"] = "not a slash"
				})
			},
			ops: []string{
				`{"op":"remove","path":"/metadata/annotations/a~0b"}`,
				`{"op":"replace","path":"/metadata/annotations/example.com~1owner","value":"team-b"}`,
				`{"op":"add","path":"/metadata/annotations/~01","value":"not a slash"}`,
				`{"op":"add","path":"/metadata/labels/","value":"empty"}`,
				`{"op":"add","path":"/metadata/labels/~1","value":"s"}`,
				`{"op":"remove","path":"/metadata/labels/app.kubernetes.io~1name"}`,
				`{"op":"add","path":"/metadata/labels/x~0~1y","value":"both"}`,
				`{"op":"add","path":"/metadata/labels/~0","value":"t"}`,
			},
		},
		{
			name:     "a list grows at the end",
			original: `{"l":[1,2,3]}`,
			want:     literal(map[string]any{"l": []any{int64(1), int64(2), int64(3), int64(4), int64(5)}}),
			ops:      []string{`{"op":"add","path":"/l/3","value":4},{"op":"add","path":"/l/4","value":5}`},
		},
		{
			name:     "a list grows at the front and in the middle",
			original: `{"l":["a","b","c"]}`,
			want:     literal(map[string]any{"l": []any{"x", "a", "y", "b", "c"}}),
			ops:      []string{`{"op":"add","path":"/l/0","value":"x"},{"op":"add","path":"/l/2","value":"y"}`},
		},
		{
			name:     "a list shrinks at the end",
			original: `{"l":[1,2,3,4]}`,
			want:     literal(map[string]any{"l": []any{int64(1), int64(2)}}),
			ops:      []string{`{"op":"remove","path":"/l/3"},{"op":"remove","path":"/l/2"}`},
		},
		{
			name:     "list items removed from the front and the middle",
			original: `{"spec":{"containers":[{"name":"a"},{"name":"b"},{"name":"c"},{"name":"d"}]}}`,
			want:     literal(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "b"}, map[string]any{"name": "d"}}}}),
			ops:      []string{`[{"op":"remove","path":"/spec/containers/2"},{"op":"remove","path":"/spec/containers/0"}]`},
		},
		{
			name:     "a list reordered",
			original: `{"l":[{"n":1},{"n":2},{"n":3}]}`,
			want:     literal(map[string]any{"l": []any{map[string]any{"n": int64(3)}, map[string]any{"n": int64(1)}, map[string]any{"n": int64(2)}}}),
			ops:      []string{`{"op":"replace","path":"/l/0/n","value":3}`},
		},
		{
			name:     "a list with items inserted and reordered",
			original: `{"l":[1,2,3]}`,
			want:     literal(map[string]any{"l": []any{int64(3), int64(0), int64(1), int64(2), int64(4)}}),
		},
		{
			name:     "a list with items both added and removed",
			original: `{"l":["a","b","c","d","e"]}`,
			want:     literal(map[string]any{"l": []any{"a", "x", "c", "y", "z", "w", "e"}}),
			ops:      []string{`{"op":"replace","path":"/l/1","value":"x"},{"op":"replace","path":"/l/3","value":"y"},{"op":"add","path":"/l/4","value":"z"},{"op":"add","path":"/l/5","value":"w"}`},
		},
		{
			name:     "a list shrinks with changed items",
			original: `{"l":["a","b","c","d","e"]}`,
			want:     literal(map[string]any{"l": []any{"x", "y"}}),
			ops:      []string{`{"op":"replace","path":"/l/0","value":"x"},{"op":"replace","path":"/l/1","value":"y"},{"op":"remove","path":"/l/4"},{"op":"remove","path":"/l/3"},{"op":"remove","path":"/l/2"}`},
		},
		{
			name:     "lists emptied and filled",
			original: `{"a":[1,2],"b":[],"c":[[1],[2,[3]]]}`,
			want:     literal(map[string]any{"a": []any{}, "b": []any{"x", nil}, "c": []any{[]any{int64(1)}, []any{int64(2), []any{int64(3), int64(4)}}}}),
			ops:      []string{`{"op":"add","path":"/c/1/1/1","value":4}`},
		},
		{
			name:     "nested nulls",
			original: `{"a":null,"b":{"c":null,"d":1},"l":[null,1,null],"e":{}}`,
			want: literal(map[string]any{
				"a": map[string]any{"x": nil},
				"b": map[string]any{"c": int64(2), "d": nil, "n": nil},
				"l": []any{int64(0), nil, nil, nil},
				"e": nil,
			}),
			ops: []string{
				`{"op":"replace","path":"/a","value":{"x":null}}`,
				`{"op":"replace","path":"/b/c","value":2}`,
				`{"op":"replace","path":"/b/d","value":null}`,
				`{"op":"add","path":"/b/n","value":null}`,
				`{"op":"replace","path":"/e","value":null}`,
			},
		},
		{
			name:     "a key holding null removed",
			original: `{"a":null,"b":1}`,
			want:     literal(map[string]any{"b": int64(1)}),
			ops:      []string{`[{"op":"remove","path":"/a"}]`},
		},
		{
			name:     "ints and floats",
			original: `{"i":1,"f":1.5,"g":2.5,"big":9007199254740993,"neg":-3,"e":1e300}`,
			want:     literal(map[string]any{"i": 1.25, "f": int64(2), "g": 2.5, "big": int64(9007199254740992), "neg": int64(-3), "e": 1e-300}),
			ops: []string{
				`{"op":"replace","path":"/big","value":9007199254740992}`,
				`{"op":"replace","path":"/e","value":1e-300}`,
				`{"op":"replace","path":"/f","value":2}`,
				`{"op":"replace","path":"/i","value":1.25}`,
			},
		},
		{
			name:     "an integral float is the int it is written as",
			original: `{"i":2,"z":0,"l":[1,2]}`,
			want:     literal(map[string]any{"i": 2.0, "z": math.Copysign(0, -1), "l": []any{1.0, int64(2)}}),
			same:     true,
		},
		{
			name:     "empty maps and lists against missing fields",
			original: `{"m":{},"l":[],"keep":{},"spec":{"a":{}}}`,
			want:     literal(map[string]any{"keep": map[string]any{}, "nm": map[string]any{}, "nl": []any{}, "spec": map[string]any{"a": map[string]any{"b": map[string]any{}}}}),
			ops: []string{
				`{"op":"remove","path":"/l"}`,
				`{"op":"remove","path":"/m"}`,
				`{"op":"add","path":"/nl","value":[]}`,
				`{"op":"add","path":"/nm","value":{}}`,
				`{"op":"add","path":"/spec/a/b","value":{}}`,
			},
		},
		{
			name:     "empty map against empty list",
			original: `{"a":{},"b":[]}`,
			want:     literal(map[string]any{"a": []any{}, "b": map[string]any{}}),
			ops:      []string{`[{"op":"replace","path":"/a","value":[]},{"op":"replace","path":"/b","value":{}}]`},
		},
		{
			name:     "root fields removed",
			original: pod,
			want: func(t *testing.T) map[string]any {
				return edit(t, pod, func(m map[string]any) {
					delete(m, "status")
					delete(m, "spec")
				})
			},
			ops: []string{`[{"op":"remove","path":"/spec"},{"op":"remove","path":"/status"}]`},
		},
		{
			name:     "everything removed",
			original: `{"a":1,"b":{"c":2}}`,
			want:     literal(map[string]any{}),
			ops:      []string{`[{"op":"remove","path":"/a"},{"op":"remove","path":"/b"}]`},
		},
		{
			name:     "types changed",
			original: `{"a":{"b":1},"c":"x","d":[1],"e":true,"f":1}`,
			want:     literal(map[string]any{"a": "flat", "c": map[string]any{"x": true}, "d": map[string]any{}, "e": "true", "f": "1"}),
		},
		{
			name:     "keys that look like indexes and special characters",
			original: `{"0":{"-":1},"m":{"1":"a"}}`,
			want:     literal(map[string]any{"0": map[string]any{"-": int64(2), "0": "z"}, "m": map[string]any{"1": "b", "<&>\"\\\n\u2028é": "html and escapes"}}),
			ops: []string{
				`{"op":"replace","path":"/0/-","value":2}`,
				`{"op":"add","path":"/0/0","value":"z"}`,
				`{"op":"replace","path":"/m/1","value":"b"}`,
				`{"op":"add","path":"/m/<&>\"\\\n\u2028é","value":"html and escapes"}`,
			},
		},
		{
			name:     "no change",
			original: pod,
			want:     func(t *testing.T) map[string]any { return edit(t, pod, func(map[string]any) {}) },
			same:     true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want(t)
			for _, shared := range []bool{false, true} {
				orig := valuetest.Decode(t, []byte(tc.original)).(map[string]any)
				w := want
				if shared {
					// As the engine's result, which shares what it did not
					// change with its input.
					w = shareUnchanged(orig, want).(map[string]any)
				}
				patch, ok := createPatchFast(orig, w)
				if !ok {
					t.Fatalf("shared %v: no native patch", shared)
				}
				if tc.same != (patch == nil) {
					t.Fatalf("shared %v: patch %s, want one: %v", shared, patch, !tc.same)
				}
				valuetest.CheckPatch(t, []byte(tc.original), patch, w)
				if !hasIntegralFloats(w) {
					// Exactly want, not only its JSON.
					if got := applyEvanphx(t, []byte(tc.original), patch); !reflect.DeepEqual(got, any(w)) {
						t.Fatalf("shared %v: patch %s gives %#v, want %#v", shared, patch, got, w)
					}
				}
				if !hasOpsInOrder(string(patch), tc.ops) {
					t.Errorf("shared %v: patch\n%s\nwant the operations, in this order,\n%s", shared, patch, strings.Join(tc.ops, "\n"))
				}
				// Patch and Respond's path give the same.
				viaPatch, err := CreatePatch([]byte(tc.original), nil, w)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(viaPatch, patch) {
					t.Errorf("Patch gives %s, want %s", viaPatch, patch)
				}
			}
		})
	}
}

func literal(m map[string]any) func(*testing.T) map[string]any {
	return func(*testing.T) map[string]any { return m }
}

func hasOpsInOrder(patch string, ops []string) bool {
	for _, op := range ops {
		i := strings.Index(patch, op)
		if i < 0 {
			return false
		}
		patch = patch[i+len(op):]
	}
	return true
}

// hasIntegralFloats tells whether v holds a float64 written as an integer.
func hasIntegralFloats(v any) bool {
	switch x := v.(type) {
	case float64:
		_, isInt := floatInt(x)
		return isInt
	case map[string]any:
		for _, e := range x {
			if hasIntegralFloats(e) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(x, hasIntegralFloats)
	}
	return false
}

func floatInt(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < -9223372036854775808.0 || f >= 9223372036854775808.0 {
		return 0, false
	}
	return int64(f), true
}

func applyEvanphx(t *testing.T, original, patch []byte) any {
	t.Helper()
	if patch == nil {
		return valuetest.Decode(t, original)
	}
	p, err := evanphxjsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(original)
	if err != nil {
		t.Fatal(err)
	}
	return valuetest.Decode(t, out)
}

// shareUnchanged returns want with every subtree equal to orig's subtree at
// the same place replaced by orig's, as the engine's copy-on-write results
// share them.
func shareUnchanged(orig, want any) any {
	if reflect.DeepEqual(orig, want) {
		return orig
	}
	switch w := want.(type) {
	case map[string]any:
		o, ok := orig.(map[string]any)
		if !ok {
			return want
		}
		out := make(map[string]any, len(w))
		for k, v := range w {
			if ov, ok := o[k]; ok {
				v = shareUnchanged(ov, v)
			}
			out[k] = v
		}
		return out
	case []any:
		o, ok := orig.([]any)
		if !ok {
			return want
		}
		out := make([]any, len(w))
		for i, v := range w {
			if i < len(o) {
				v = shareUnchanged(o[i], v)
			}
			out[i] = v
		}
		return out
	}
	return want
}

func TestNativePatchFallsBack(t *testing.T) {
	// Values the native diff does not model make its check fail: Patch
	// then uses the document diff, as before.
	original := []byte(`{"a":1,"s":"x"}`)
	cases := []struct {
		name string
		want map[string]any
	}{
		{"a Go int", map[string]any{"a": 2, "s": "x"}},
		{"a struct", map[string]any{"a": int64(1), "s": struct{ X int }{3}}},
		{"invalid UTF-8", map[string]any{"a": int64(1), "s": "\xff"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			orig := valuetest.Decode(t, original).(map[string]any)
			if _, ok := createPatchFast(orig, tc.want); ok {
				t.Fatal("the native patch checked")
			}
			patch, err := CreatePatch(original, nil, tc.want)
			if err != nil {
				t.Fatal(err)
			}
			valuetest.CheckPatch(t, original, patch, tc.want)
		})
	}
	// What no patch can give is still an error.
	if _, err := CreatePatch(original, nil, map[string]any{"f": math.NaN()}); err == nil || !strings.Contains(err.Error(), "encoding the mutated object") {
		t.Errorf("NaN: error %v", err)
	}
}

func TestOpsEncodeAsJSONMarshal(t *testing.T) {
	values := []any{
		nil, true, false, "", "plain", "<&>", "\"\\/\b\f\n\r\t\x00\x1f\x7f", "\u2028\u2029é😀", "\xff\xfe bad \xc3",
		int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64),
		0.5, -0.0, 1e20, 1e21, 123456789012345678901234.0, 1e-6, 1e-7, 1.5e-10, -2.5e300, math.SmallestNonzeroFloat64, math.MaxFloat64,
		map[string]any{}, []any{}, map[string]any(nil), []any(nil),
		map[string]any{"b": int64(1), "a": []any{nil, "x", map[string]any{"z": 1.5, "\xff": true, "<": "&"}}, "": map[string]any{}},
		3, int32(4), struct {
			A string `json:"a"`
		}{"<x>"},
	}
	for _, v := range values {
		var e jsonEncoder
		if err := e.value(v, 0); err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		if e.abnormal == IsNormalized(v) {
			t.Errorf("%#v: the encoder tells abnormal=%v, IsNormalized gives %v", v, e.abnormal, IsNormalized(v))
		}
		want, err := jsonvalue.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.buf, want) {
			t.Errorf("%#v encodes as %s, want %s", v, e.buf, want)
		}
	}
	ops := []Operation{
		{Op: "add", Path: "/a~1b/\"q\"", Value: nil, HasValue: true},
		{Op: "remove", Path: "/x"},
		{Op: "replace", Path: "/<>", Value: map[string]any{"k": []any{int64(1)}}, HasValue: true},
	}
	got, err := appendOps(nil, ops)
	if err != nil {
		t.Fatal(err)
	}
	const want = `[{"op":"add","path":"/a~1b/\"q\"","value":null},{"op":"remove","path":"/x"},{"op":"replace","path":"/<>","value":{"k":[1]}}]`
	if string(got) != want {
		t.Errorf("ops encode as\n%s\nwant\n%s", got, want)
	}
	var e jsonEncoder
	if err := e.value(math.Inf(1), 0); err == nil {
		t.Error("+Inf encoded")
	}
}

// FuzzNativePatch checks the native patch against evanphx/json-patch v4 on
// the original's JSON, as kube-apiserver applies webhook patches. The
// original is a JSON object; the wanted object is either another JSON
// object or the original, then changed by the edits that script encodes,
// copy-on-write as the engine changes objects (so that it shares its
// unchanged parts with the original). The native patch must always be made
// (every value is JSON-shaped), must apply and must give the wanted
// object; so must Patch's.
func FuzzNativePatch(f *testing.F) {
	for _, seed := range []struct{ doc, other, script string }{
		{pod, "", "\x00\x01\x02\x03\x04\x05\x06\x07"},
		{pod, "", "\x10\x21\x32\x43\x54\x65\x76\x87\x98\xa9\xba\xcb\xdc\xed\xfe"},
		{pod, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","labels":{"a/b":"c"}},"spec":{"containers":[{"name":"c"}]}}`, ""},
		{`{"l":[1,2,3,4],"m":{"a~b":null,"c/d":[{}]}}`, "", "\xff\x00\xfe\x01\xfd\x02\xfc\x03"},
		{`{"a":1.0,"b":-0.0,"c":1e2,"d":[1.5,null,true]}`, `{"a":1,"b":0,"c":100.5,"d":[null,1.5]}`, "\x03\x07\x0b"},
		{`{}`, `{"x":{"y":[[],{}]}}`, "\x01\x02"},
	} {
		f.Add([]byte(seed.doc), []byte(seed.other), []byte(seed.script))
	}
	f.Fuzz(func(t *testing.T, doc, other, script []byte) {
		var orig map[string]any
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(doc, &orig); err != nil || orig == nil {
			return
		}
		want := orig
		var o map[string]any
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(other, &o); err == nil && o != nil {
			want = shareUnchanged(orig, o).(map[string]any)
		}
		ed := &editor{script: script, orig: orig}
		for len(ed.script) > 0 {
			want = ed.edit(want, 0).(map[string]any)
		}
		patch, ok := createPatchFast(orig, want)
		if !ok {
			t.Fatalf("no native patch from\n%s\nto\n%s", doc, mustJSON(t, want))
		}
		valuetest.CheckPatch(t, doc, patch, want)
		if !hasIntegralFloats(want) && !hasIntegralFloats(orig) {
			if got := applyEvanphx(t, doc, patch); !reflect.DeepEqual(got, any(want)) {
				t.Fatalf("patch %s gives %#v, want %#v", patch, got, want)
			}
		}
		viaPatch, err := CreatePatch(doc, nil, want)
		if err != nil {
			t.Fatal(err)
		}
		valuetest.CheckPatch(t, doc, viaPatch, want)
		checkNormalizedPatch(t, orig, want, viaPatch)
		// The encoder writes what jsonMarshal writes.
		var e jsonEncoder
		if err := e.value(want, 0); err != nil {
			t.Fatal(err)
		}
		if e.abnormal == IsNormalized(want) {
			t.Fatalf("the encoder tells abnormal=%v of %#v, IsNormalized gives %v", e.abnormal, want, IsNormalized(want))
		}
		if w := mustJSON(t, want); !bytes.Equal(e.buf, w) {
			t.Fatalf("encoded as\n%s\nwant\n%s", e.buf, w)
		}
	})
}

// editor changes JSON-shaped values copy-on-write, as script says.
type editor struct {
	script []byte
	orig   map[string]any
}

func (e *editor) next() int {
	if len(e.script) == 0 {
		return 0
	}
	b := e.script[0]
	e.script = e.script[1:]
	return int(b)
}

var fuzzKeys = []string{"a", "b", "a/b", "~", "~1", "x~0/y", "", "0", "-", "labels", "metadata", "spec"}

// value is a new value to put somewhere.
func (e *editor) value() any {
	switch n := e.next(); n % 12 {
	case 0:
		return nil
	case 1:
		return "s" + strings.Repeat("/~", n%3)
	case 2:
		return int64(n) - 100
	case 3:
		return float64(n) + 0.25
	case 4:
		return n%2 == 0
	case 5:
		return map[string]any{}
	case 6:
		return []any{}
	case 7:
		return map[string]any{fuzzKeys[n%len(fuzzKeys)]: e.value()}
	case 8:
		return []any{e.value(), e.value()}
	case 9:
		// A subtree of the original, shared.
		return e.pick(e.orig)
	case 10:
		return "<&>\u2028é"
	default:
		return int64(1) << 60
	}
}

// pick returns some subtree of v.
func (e *editor) pick(v any) any {
	for i := 0; i < 4; i++ {
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 {
				return v
			}
			keys := sortedKeys(x)
			v = x[keys[e.next()%len(keys)]]
		case []any:
			if len(x) == 0 {
				return v
			}
			v = x[e.next()%len(x)]
		default:
			return v
		}
	}
	return v
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// edit returns v with one change somewhere below it.
func (e *editor) edit(v any, depth int) any {
	op := e.next()
	switch x := v.(type) {
	case map[string]any:
		keys := sortedKeys(x)
		out := make(map[string]any, len(x)+1)
		for k, el := range x {
			out[k] = el
		}
		switch {
		case op%4 == 0 && len(keys) > 0 && depth < 6:
			k := keys[e.next()%len(keys)]
			out[k] = e.edit(x[k], depth+1)
		case op%4 == 1:
			out[fuzzKeys[e.next()%len(fuzzKeys)]] = e.value()
		case op%4 == 2 && len(keys) > 0:
			delete(out, keys[e.next()%len(keys)])
		case len(keys) > 0:
			out[keys[e.next()%len(keys)]] = e.value()
		}
		return out
	case []any:
		out := slices.Clone(x)
		if out == nil {
			out = []any{}
		}
		i := 0
		if len(x) > 0 {
			i = e.next() % len(x)
		}
		switch {
		case op%7 == 0 && len(x) > 0 && depth < 6:
			out[i] = e.edit(x[i], depth+1)
		case op%7 == 1:
			out = append(out, e.value())
		case op%7 == 2:
			out = slices.Insert(out, i, e.value())
		case op%7 == 3 && len(x) > 0:
			out = slices.Delete(out, i, i+1)
		case op%7 == 4 && len(x) > 1:
			j := e.next() % len(x)
			out[i], out[j] = out[j], out[i]
		case op%7 == 5 && len(x) > 0:
			out = out[:i]
		case len(x) > 0:
			out[i] = e.value()
		}
		return out
	}
	if depth == 0 {
		return v
	}
	return e.value()
}
