package scheme

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/testobjects"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/internal/valuetest"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// oracleJSONPatch is the patcher as upstream defines it, without any of
// the engine's shortcuts: jsonpatch.Apply, then decodeReference.
func oracleJSONPatch(obj map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind, s *runtime.Scheme) (map[string]any, bool, error) {
	patched, err := jsonpatch.Apply(obj, ops)
	if errors.Is(err, jsonpatch.ErrTestFailed) {
		return obj, true, nil
	}
	var notObject *jsonpatch.NotObjectError
	if errors.As(err, &notObject) {
		_, err := decodeJSON(notObject.JSON, gvk, s)
		return nil, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("JSON Patch: %w", err)
	}
	out, err := decodeReference(patched, gvk, s)
	return out, false, err
}

// checkJSONPatch applies ops to obj with Scheme.Patch (the fast path
// when it can tell), the exact path it replaces (patchReference) and the
// oracle (jsonpatch.Apply and decodeReference), and fails unless the
// results (bit for bit), skips and error texts agree and obj is left
// unchanged; PatchDefault is held to Patch and the defaulting
// (checkPatchDefault). It reports whether the fast path answered, and
// whether PatchDefault's one walk did.
func checkJSONPatch(t *testing.T, d *Scheme, obj map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind) (fast, oneWalk bool) {
	t.Helper()
	before := valuetest.DeepCopy(obj)
	want, wantSkipped, wantErr := d.patchReference(obj, ops, gvk)
	got, skipped, err := d.Patch(obj, ops, gvk)
	fastOut, fast := d.patchFast(nil, obj, ops, gvk)
	oracle, oracleSkipped, oracleErr := oracleJSONPatch(obj, ops, gvk, d.Types())
	if !valuetest.BitsEqual(obj, before) {
		t.Fatalf("the object was modified: %#v, was %#v", obj, before)
	}
	describe := func() string {
		return fmt.Sprintf("object: %#v\nops: %+v", before, ops)
	}
	// Apply normalizes maps in Go's random order: an object with several
	// faults can fail with one error or another.
	sameError := func(err, want error) bool {
		if errText(err) == errText(want) {
			return true
		}
		for i := 0; i < 50 && err != nil && want != nil; i++ {
			if _, _, again := d.patchReference(obj, ops, gvk); errText(again) == errText(err) {
				return true
			}
		}
		return false
	}
	if !sameError(err, wantErr) {
		t.Fatalf("error %v, want %v\n%s", err, wantErr, describe())
	}
	oneWalk = checkPatchDefault(t, d, obj, ops, gvk, sameError)
	if !sameError(err, oracleErr) {
		t.Fatalf("error %v, oracle %v\n%s", err, oracleErr, describe())
	}
	if skipped != wantSkipped || skipped != oracleSkipped {
		t.Fatalf("skipped %v, want %v, oracle %v\n%s", skipped, wantSkipped, oracleSkipped, describe())
	}
	if !valuetest.BitsEqual(got, want) {
		t.Fatalf("result differs from the exact path\n got: %#v\nwant: %#v\n%s", got, want, describe())
	}
	if !valuetest.BitsEqual(got, oracle) {
		t.Fatalf("result differs from the oracle\n got: %#v\nwant: %#v\n%s", got, oracle, describe())
	}
	if fast {
		if wantErr != nil || wantSkipped {
			t.Fatalf("the fast path answered %#v, the exact path %v (skipped %v)\n%s", fastOut, wantErr, wantSkipped, describe())
		}
		if !valuetest.BitsEqual(fastOut, want) {
			t.Fatalf("the fast path answered\n%#v\nthe exact path\n%#v\n%s", fastOut, want, describe())
		}
		// decodeFixed vouches for jsonpatch.IsNormalized.
		patched, ok := jsonpatch.ApplyUnnormalized(obj, ops)
		if !ok || !jsonpatch.IsNormalized(patched) {
			t.Fatalf("the fast path answered for a result that is not normalized: %#v\n%s", patched, describe())
		}
		exact, err := jsonpatch.Apply(obj, ops)
		if err != nil || !valuetest.BitsEqual(patched, exact) {
			t.Fatalf("ApplyUnnormalized: %#v\nApply: %#v, %v\n%s", patched, exact, err, describe())
		}
	}
	if oneWalk && !fast {
		t.Fatalf("PatchDefault's one walk answered where the fast path did not\n%s", describe())
	}
	return fast, oneWalk
}

// jpOddValues are what the property test plants in objects: what JSON
// normalization changes or refuses, and what strict decoding refuses.
var jpOddValues = []func() any{
	func() any { return "a\xffb" },
	func() any { return math.NaN() },
	func() any { return math.Inf(1) },
	func() any { return 2.0 },
	func() any { return 0.0 },
	func() any { return math.Copysign(0, -1) },
	func() any { return 1.5 },
	func() any { return 1e300 },
	func() any { return map[string]any(nil) },
	func() any { return []any(nil) },
	func() any { return map[string]any{"a\xff": "x"} },
	func() any { return map[string]any{"a\xff": "x", "a\uFFFD": "y"} },
	func() any { return map[string]any{"app\uFFFD": map[string]any{}, "app\xff": "s"} },
	func() any { return []any{2.0, "x"} },
	func() any { return []any{nil} },
	func() any { return map[string]any{"k": nil} },
	func() any { return 7 },
	func() any { return json.Number("3") },
	func() any { return map[string]string{"a": "b"} },
}

// perturbJSON plants one odd value (or one of testobjects.OddValues) at a random place
// of v, copying the maps and slices on the way: v is not modified. It
// returns the JSON pointer of that place too.
func perturbJSON(r *rand.Rand, v any) (any, string) {
	odd := func() any {
		if r.IntN(2) == 0 {
			return jpOddValues[r.IntN(len(jpOddValues))]()
		}
		return testobjects.OddValues[r.IntN(len(testobjects.OddValues))]()
	}
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return odd(), ""
		}
		y := make(map[string]any, len(x)+1)
		for k, item := range x {
			y[k] = item
		}
		keys := slices.Sorted(maps.Keys(y))
		switch op := r.IntN(10); {
		case len(keys) == 0 || op == 0:
			k := []string{"bogus", "app\xff", "team\uFFFD", "Name"}[r.IntN(4)]
			y[k] = odd()
			return y, "/" + escapePointer(k)
		case op == 1:
			k := keys[r.IntN(len(keys))]
			y[k] = odd()
			return y, "/" + escapePointer(k)
		default:
			k := keys[r.IntN(len(keys))]
			var path string
			y[k], path = perturbJSON(r, y[k])
			return y, "/" + escapePointer(k) + path
		}
	case []any:
		if x == nil {
			return odd(), ""
		}
		y := slices.Clone(x)
		if len(y) == 0 || r.IntN(8) == 0 {
			return append(y, odd()), "/" + strconv.Itoa(len(y))
		}
		i := r.IntN(len(y))
		var path string
		y[i], path = perturbJSON(r, y[i])
		return y, "/" + strconv.Itoa(i) + path
	default:
		return odd(), ""
	}
}

// dropOp is an operation that drops the value at path or at one of its
// ancestors (path "" is left alone).
func dropOp(r *rand.Rand, path string) jsonpatch.Operation {
	parts := strings.Split(path, "/")
	if len(parts) > 2 && r.IntN(2) == 0 {
		parts = parts[:2+r.IntN(len(parts)-2)]
	}
	path = strings.Join(parts, "/")
	switch r.IntN(6) {
	case 0:
		return jsonpatch.Operation{Op: "replace", Path: path, Value: "x", HasValue: true}
	case 1:
		return jsonpatch.Operation{Op: "add", Path: path, Value: map[string]any{}, HasValue: true}
	}
	return jsonpatch.Operation{Op: "remove", Path: path}
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// randomPointer walks v from its root, mostly along what is there, and
// returns a JSON pointer and the value it points at (nil when none).
func randomPointer(r *rand.Rand, v any) (string, any) {
	var b strings.Builder
	cur := v
	for depth := 0; ; depth++ {
		if depth > 0 && r.IntN(6) == 0 {
			break
		}
		switch c := cur.(type) {
		case map[string]any:
			keys := slices.Sorted(maps.Keys(c))
			if len(keys) == 0 || r.IntN(8) == 0 {
				k := []string{"team", "bogus", "app\uFFFD", "x/y", "t~n", "replicas", "Name"}[r.IntN(7)]
				b.WriteString("/" + escapePointer(k))
				cur = c[k]
				if r.IntN(3) != 0 {
					return b.String(), cur
				}
				continue
			}
			k := keys[r.IntN(len(keys))]
			b.WriteString("/" + escapePointer(k))
			cur = c[k]
		case []any:
			idx := r.IntN(len(c)+2) - 1
			switch r.IntN(10) {
			case 0:
				b.WriteString("/-")
				return b.String(), nil
			case 1:
				b.WriteString("/" + strconv.Itoa(idx-len(c)))
			case 2:
				b.WriteString("/0" + strconv.Itoa(idx))
			default:
				b.WriteString("/" + strconv.Itoa(idx))
			}
			if idx >= 0 && idx < len(c) {
				cur = c[idx]
			} else {
				cur = nil
			}
		default:
			if r.IntN(4) == 0 {
				b.WriteString("/x")
				cur = nil
			}
			return b.String(), cur
		}
	}
	return b.String(), cur
}

// jpValues are operation values: what JSON Patch policies set, and a few
// values normalization changes.
var jpValues = []func() any{
	func() any { return "shop" },
	func() any { return "" },
	func() any { return "100m" },
	func() any { return int64(3) },
	func() any { return int64(0) },
	func() any { return 1.5 },
	func() any { return 2.0 },
	func() any { return 0.0 },
	func() any { return math.Copysign(0, -1) },
	func() any { return nil },
	func() any { return true },
	func() any { return map[string]any{"app": "web"} },
	func() any { return map[string]any{"name": "sidecar", "image": "envoy"} },
	func() any { return []any{"a"} },
	func() any { return []any{map[string]any{"name": "x", "image": "y"}} },
	func() any { return map[string]any{"k": nil} },
	func() any { return []any{nil} },
	func() any { return "a\xffb" },
	func() any { return map[string]any{"a\xff": "b"} },
	func() any { return math.NaN() },
}

// typicalOp is an operation like those of real policies: labels and
// annotations set, scalars replaced with values of their type, containers
// added, fields removed.
func typicalOp(r *rand.Rand, obj map[string]any) jsonpatch.Operation {
	set := func(kind, path string, v any) jsonpatch.Operation {
		return jsonpatch.Operation{Op: kind, Path: path, Value: v, HasValue: true}
	}
	switch r.IntN(8) {
	case 0:
		return set("add", "/metadata/labels/"+[]string{"team", "app", "example.com~1tier"}[r.IntN(3)], "v"+strconv.Itoa(r.IntN(3)))
	case 1:
		return set("add", "/metadata/annotations", map[string]any{"note": "x"})
	case 2:
		return set("add", "/metadata/labels", map[string]any{"team": "shop"})
	case 3:
		return set("add", []string{"/spec/containers/-", "/spec/template/spec/containers/0"}[r.IntN(2)], map[string]any{"name": "sidecar", "image": "envoy"})
	}
	// An existing scalar or object.
	for try := 0; try < 20; try++ {
		path, cur := randomPointer(r, obj)
		switch c := cur.(type) {
		case string:
			return set("replace", path, c+"x")
		case int64:
			return set("replace", path, c+1)
		case bool:
			return set("replace", path, !c)
		case map[string]any, []any:
			if path != "" && r.IntN(2) == 0 {
				return jsonpatch.Operation{Op: "remove", Path: path}
			}
		}
	}
	return jsonpatch.Operation{Op: "remove", Path: "/metadata/name"}
}

// randomPatch is a patch of one to four operations on obj, mostly add,
// replace and remove.
func randomPatch(r *rand.Rand, obj map[string]any) []jsonpatch.Operation {
	var ops []jsonpatch.Operation
	for i := 1 + r.IntN(2) + r.IntN(2)*r.IntN(3); i > 0; i-- {
		if r.IntN(2) == 0 {
			ops = append(ops, typicalOp(r, obj))
			continue
		}
		kind := []string{"add", "add", "add", "replace", "replace", "remove", "remove", "test", "copy", "move"}[r.IntN(10)]
		path, cur := randomPointer(r, obj)
		op := jsonpatch.Operation{Op: kind, Path: path}
		switch kind {
		case "copy", "move":
			op.From, _ = randomPointer(r, obj)
		case "test":
			op.Value, op.HasValue = cur, true
			if r.IntN(3) == 0 {
				op.Value = jpValues[r.IntN(len(jpValues))]()
			}
		case "remove":
		default:
			op.Value, op.HasValue = jpValues[r.IntN(len(jpValues))](), true
			if r.IntN(3) == 0 {
				// A value like the one there: most likely of the right type.
				switch cur.(type) {
				case string:
					op.Value = "v" + strconv.Itoa(r.IntN(3))
				case int64:
					op.Value = int64(r.IntN(5))
				}
			}
		}
		if r.IntN(30) == 0 {
			op.HasValue = !op.HasValue
		}
		ops = append(ops, op)
	}
	return ops
}

// jpObjects are the real objects of the property test, and the custom
// resource.
func jpObjects(t testing.TB) []testobjects.Input {
	return testobjects.Inputs(t)
}

// TestJSONPatchFastPathIsExact compares Scheme.Patch with the exact
// path and the oracle on chosen cases, and checks which take the fast
// path.
func TestJSONPatchFastPathIsExact(t *testing.T) {
	d := New()
	inputs := map[string]testobjects.Input{}
	for _, in := range jpObjects(t) {
		inputs[in.Name] = in
	}
	deploy := inputs["Deployment (ToUnstructured)"]
	pod := inputs["Pod (JSON)"]
	cm := inputs["ConfigMap (JSON)"]
	with := func(obj map[string]any, path string, v any) map[string]any {
		obj = valuetest.DeepCopy(obj).(map[string]any)
		parts := strings.Split(path, "/")[1:]
		var cur any = obj
		for _, p := range parts[:len(parts)-1] {
			if l, isList := cur.([]any); isList {
				i, _ := strconv.Atoi(p)
				cur = l[i]
			} else {
				cur = cur.(map[string]any)[p]
			}
		}
		cur.(map[string]any)[parts[len(parts)-1]] = v
		return obj
	}
	op := func(kind, path string, v ...any) jsonpatch.Operation {
		o := jsonpatch.Operation{Op: kind, Path: path}
		if len(v) == 1 {
			o.Value, o.HasValue = v[0], true
		}
		return o
	}
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name string
		in   testobjects.Input
		obj  map[string]any // in.Obj when nil
		ops  []jsonpatch.Operation
		fast bool
	}{
		{name: "label", in: deploy, ops: []jsonpatch.Operation{op("add", "/metadata/labels/team", "shop")}, fast: true},
		{name: "escaped label", in: pod, ops: []jsonpatch.Operation{op("add", "/metadata/labels/example.com~1team", "shop")}, fast: true},
		{name: "label over a label", in: pod, ops: []jsonpatch.Operation{op("add", "/metadata/labels/app", "db")}, fast: true},
		{name: "replicas", in: deploy, ops: []jsonpatch.Operation{op("replace", "/spec/replicas", int64(5))}, fast: true},
		{name: "replicas as a whole float", in: deploy, ops: []jsonpatch.Operation{op("replace", "/spec/replicas", 5.0)}, fast: true},
		{name: "replicas as -0", in: deploy, ops: []jsonpatch.Operation{op("replace", "/spec/replicas", negZero)}, fast: true},
		{name: "sidecar", in: pod, ops: []jsonpatch.Operation{op("add", "/spec/containers/-", map[string]any{"name": "envoy", "image": "envoy"})}, fast: true},
		{name: "remove a container", in: pod, ops: []jsonpatch.Operation{op("remove", "/spec/containers/0")}, fast: true},
		{name: "data", in: cm, ops: []jsonpatch.Operation{op("add", "/data/b", "2"), op("remove", "/data/a")}, fast: true},
		{name: "test", in: deploy, ops: []jsonpatch.Operation{op("test", "/metadata/name", "web"), op("add", "/metadata/labels/team", "shop")}},
		{name: "failed test", in: deploy, ops: []jsonpatch.Operation{op("test", "/metadata/name", "db"), op("add", "/metadata/labels/team", "shop")}},
		{name: "copy", in: pod, ops: []jsonpatch.Operation{op("copy", "/metadata/labels/app", "/metadata/labels/team")}},
		{name: "move", in: pod, ops: []jsonpatch.Operation{op("move", "/metadata/labels/app", "/metadata/labels/team")}},
		{name: "missing path", in: deploy, ops: []jsonpatch.Operation{op("add", "/metadata/bogus/team", "shop")}},
		{name: "unknown field", in: deploy, ops: []jsonpatch.Operation{op("add", "/metadata/bogus", "shop")}},
		{name: "wrong type", in: deploy, ops: []jsonpatch.Operation{op("replace", "/spec/replicas", "5")}},
		{name: "root replaced by a list", in: deploy, ops: []jsonpatch.Operation{op("replace", "", []any{})}},
		{name: "kept whole float", in: deploy, obj: with(deploy.Obj, "/spec/replicas", 3.0), ops: []jsonpatch.Operation{op("add", "/metadata/labels/team", "shop")}},
		{name: "replaced whole float", in: deploy, obj: with(deploy.Obj, "/spec/replicas", 3.0), ops: []jsonpatch.Operation{op("replace", "/spec/replicas", int64(4))}, fast: true},
		{name: "kept -0", in: deploy, obj: with(deploy.Obj, "/spec/replicas", negZero), ops: []jsonpatch.Operation{op("add", "/metadata/labels/team", "shop")}},
		{name: "kept -0 with a null", in: deploy, obj: with(deploy.Obj, "/spec/replicas", negZero), ops: []jsonpatch.Operation{op("add", "/metadata/labels/team", "shop"), op("add", "/metadata/annotations", nil)}, fast: true},
		{name: "removed whole float", in: pod, obj: with(pod.Obj, "/metadata/bogus", 3.0), ops: []jsonpatch.Operation{op("remove", "/metadata/bogus")}, fast: true},
		{name: "kept whole float quantity", in: pod, obj: with(pod.Obj, "/spec/containers/0/resources/limits/cpu", 2.0), ops: []jsonpatch.Operation{op("add", "/metadata/labels/team", "x")}},
		{name: "kept -0 quantity", in: pod, obj: with(pod.Obj, "/spec/containers/0/resources/limits/cpu", negZero), ops: []jsonpatch.Operation{op("add", "/metadata/labels/team", "x")}},
		{name: "kept fractional quantity", in: pod, obj: with(pod.Obj, "/spec/containers/0/resources/limits/cpu", 1.5), ops: []jsonpatch.Operation{op("add", "/metadata/labels/team", "x")}, fast: true},
		{name: "kept whole float port", in: pod, obj: with(pod.Obj, "/spec/containers/0/livenessProbe/tcpSocket/port", 8080.0), ops: []jsonpatch.Operation{op("add", "/metadata/labels/team", "x")}},
		{name: "kept whole float in managed fields", in: pod, obj: with(pod.Obj, "/metadata/managedFields/0/fieldsV1", map[string]any{"f:a": 1.0}), ops: []jsonpatch.Operation{op("add", "/metadata/labels/team", "x")}},
		{name: "removed NaN", in: pod, obj: with(pod.Obj, "/metadata/bogus", math.NaN()), ops: []jsonpatch.Operation{op("remove", "/metadata/bogus")}},
		{name: "replaced NaN label", in: pod, obj: with(pod.Obj, "/metadata/labels/app", math.Inf(1)), ops: []jsonpatch.Operation{op("replace", "/metadata/labels/app", "x")}},
		{name: "kept NaN", in: pod, obj: with(pod.Obj, "/metadata/labels/app", math.NaN()), ops: []jsonpatch.Operation{op("add", "/metadata/labels/team", "x")}},
		{name: "invalid label key", in: pod, obj: with(pod.Obj, "/metadata/labels/app\xff", "x"), ops: []jsonpatch.Operation{op("add", "/metadata/labels/app\uFFFD", "y")}},
		{name: "invalid label value", in: pod, obj: with(pod.Obj, "/metadata/labels/app", "\xff"), ops: []jsonpatch.Operation{op("add", "/metadata/labels/team", "y")}},
		{name: "replaced invalid label value", in: pod, obj: with(pod.Obj, "/metadata/labels/app", "\xff"), ops: []jsonpatch.Operation{op("replace", "/metadata/labels/app", "y")}, fast: true},
		{name: "nil labels", in: pod, obj: with(pod.Obj, "/metadata/labels", map[string]any(nil)), ops: []jsonpatch.Operation{op("add", "/metadata/labels/team", "shop")}},
		{name: "replaced nil labels", in: pod, obj: with(pod.Obj, "/metadata/labels", map[string]any(nil)), ops: []jsonpatch.Operation{op("add", "/metadata/labels", map[string]any{"a": "b"})}, fast: true},
		{name: "colliding keys, then removed", in: pod,
			obj: with(pod.Obj, "/metadata/bogus", map[string]any{"k\uFFFD": map[string]any{}, "k\xff": "s"}),
			ops: []jsonpatch.Operation{op("add", "/metadata/bogus/k\uFFFD/b", int64(1)), op("remove", "/metadata/bogus")}},
		{name: "custom resource", in: inputs["custom resource"], ops: []jsonpatch.Operation{op("add", "/metadata/labels", map[string]any{"a": "b"})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := tt.obj
			if obj == nil {
				obj = tt.in.Obj
			}
			if fast, _ := checkJSONPatch(t, d, obj, tt.ops, tt.in.GVK); fast != tt.fast {
				t.Errorf("fast path taken: %v, want %v", fast, tt.fast)
			}
		})
	}
}

// TestJSONPatchFastPathOnRandomPatches is a property test: real objects,
// as they are or with one to three odd values (see perturbJSON), patched
// with random operations on existing and missing paths, give the same
// result or error with the fast path as with the exact path and the
// oracle.
func TestJSONPatchFastPathOnRandomPatches(t *testing.T) {
	d := New()
	inputs := jpObjects(t)
	r := rand.New(rand.NewPCG(11, 2026))
	n := valuetest.Sweep(5000, 500) // make test-long: the full sweep
	fast, cleanFast, clean, perturbedFast, oneWalk := 0, 0, 0, 0, 0
	for i := 0; i < n; i++ {
		in := inputs[r.IntN(len(inputs))]
		var obj any = in.Obj
		perturbed := r.IntN(5) < 3
		var planted []string
		if perturbed {
			for k := r.IntN(3); k >= 0; k-- {
				var path string
				obj, path = perturbJSON(r, obj)
				if path != "" {
					planted = append(planted, path)
				}
			}
		}
		m, ok := obj.(map[string]any)
		if !ok {
			continue
		}
		ops := randomPatch(r, m)
		if perturbed && r.IntN(2) == 0 {
			ops = []jsonpatch.Operation{typicalOp(r, m)}
		}
		// Drop most of what was planted, so that the fast path can answer.
		for _, path := range planted {
			if r.IntN(4) != 0 {
				ops = slices.Insert(ops, r.IntN(len(ops)+1), dropOp(r, path))
			}
		}
		t.Run(fmt.Sprintf("%d %s", i, in.Name), func(t *testing.T) {
			f, one := checkJSONPatch(t, d, m, ops, in.GVK)
			if f {
				fast++
			}
			if one {
				oneWalk++
			}
			if !perturbed {
				clean++
				if f {
					cleanFast++
				}
			} else if f {
				perturbedFast++
			}
		})
	}
	t.Logf("fast path: %d of %d cases, %d of %d unperturbed, %d perturbed; PatchDefault's one walk: %d", fast, n, cleanFast, clean, perturbedFast, oneWalk)
	if oneWalk < fast/4 {
		t.Errorf("PatchDefault's one walk answered for only %d of the %d cases of the fast path", oneWalk, fast)
	}
	if fast < n/20 || cleanFast < clean/10 || perturbedFast < n/50 {
		t.Errorf("the fast path answered for only %d of %d cases (%d of %d unperturbed)", fast, n, cleanFast, clean)
	}
}
