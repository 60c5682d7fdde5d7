package scheme

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/valuetest"

	"github.com/mutatis-dev/mutatis/internal/testobjects"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/randfill"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// checkAgainstOracle normalizes obj both ways and fails unless results
// (exact Go values) and errors agree and obj is left unchanged.
func checkAgainstOracle(t *testing.T, pt *Scheme, obj map[string]any, gvk schema.GroupVersionKind) (fast bool) {
	t.Helper()
	before := valuetest.DeepCopy(obj)
	want, wantErr := pt.normalizeReference(valuetest.DeepCopy(obj).(map[string]any), gvk)
	if !pt.Recognizes(gvk) {
		want, wantErr = obj, nil
	}
	got, err := pt.Normalize(obj, gvk)
	if !oneOfTheErrors(err, wantErr, func() error {
		_, again := pt.normalizeReference(valuetest.DeepCopy(obj).(map[string]any), gvk)
		return again
	}) {
		t.Fatalf("error %v, want %v\ninput: %#v", err, wantErr, before)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("normalized differently from the typed round trip\ninput: %#v\n got: %#v\nwant: %#v", before, got, want)
	}
	if !testobjects.SameValue(obj, before) {
		t.Fatalf("the input was modified: %#v, was %#v", obj, before)
	}
	if pt.Recognizes(gvk) {
		_, fast = pt.plans.normalize(pt.types, obj, nil, gvk)
	}
	return fast
}

// oneOfTheErrors reports whether err is wantErr, or one of the errors that
// reference (run up to 100 times) gives: the converter walks maps in Go's
// random order, so an input with several faults can give one error or
// another, and ours must be one the reference gives too.
func oneOfTheErrors(err, wantErr error, reference func() error) bool {
	seen := fmt.Sprint(err) == fmt.Sprint(wantErr)
	for i := 0; i < 100 && !seen && err != nil && wantErr != nil; i++ {
		seen = fmt.Sprint(reference()) == fmt.Sprint(err)
	}
	return seen
}

// checkDecodeAgainstOracle decodes obj as a JSON patch result both ways
// (Scheme.decode and decodeReference) and fails unless results and errors
// agree and obj is left unchanged.
func checkDecodeAgainstOracle(t *testing.T, pt *Scheme, obj map[string]any, gvk schema.GroupVersionKind) (fast bool) {
	t.Helper()
	before := valuetest.DeepCopy(obj)
	want, wantErr := decodeReference(valuetest.DeepCopy(obj).(map[string]any), gvk, pt.types)
	got, err := pt.decode(obj, gvk)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("error %v, want %v\ninput: %#v", err, wantErr, before)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded differently from decodeReference\ninput: %#v\n got: %#v\nwant: %#v", before, got, want)
	}
	if !testobjects.SameValue(obj, before) {
		t.Fatalf("the input was modified: %#v, was %#v", obj, before)
	}
	if pt.Recognizes(gvk) {
		_, fast = pt.plans.decode(pt.types, obj, gvk)
	}
	return fast
}

func TestDecodeIsJSONPatchDecode(t *testing.T) {
	pt := New()
	for _, in := range testobjects.Inputs(t) {
		t.Run(in.Name, func(t *testing.T) {
			fast := checkDecodeAgainstOracle(t, pt, in.Obj, in.GVK)
			if in.GVK != testobjects.CRGVK && !fast {
				t.Error("a real object took decodeReference: the normalizer should model it")
			}
		})
	}
}

// TestDecodeOfWholeFloatsBeyond2To53: a whole float in an integer field
// decodes as the JSON route reads it, also where its shortest digits are
// not the integer (beyond 2^53).
func TestDecodeOfWholeFloatsBeyond2To53(t *testing.T) {
	pt := New()
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	for _, g := range []float64{1 << 52, 1<<53 - 1, 1 << 53, 1 << 62, -(1 << 62), 1e18 + 64} {
		obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "generation": g}}
		want, wantErr := decodeReference(valuetest.DeepCopy(obj).(map[string]any), gvk, pt.types)
		got, err := pt.decode(valuetest.DeepCopy(obj).(map[string]any), gvk)
		if (err != nil) != (wantErr != nil) || err == nil && !valuetest.BitsEqual(got, want) {
			t.Errorf("generation %v: decoded %v (%v), the JSON route %v (%v)", g, got, err, want, wantErr)
		}
	}
}

func TestNormalizeIsTheTypedRoundTrip(t *testing.T) {
	pt := New()
	for _, in := range testobjects.Inputs(t) {
		t.Run(in.Name, func(t *testing.T) {
			fast := checkAgainstOracle(t, pt, in.Obj, in.GVK)
			if in.GVK != testobjects.CRGVK && !fast {
				t.Error("a real object took the typed round trip: the normalizer should model it")
			}
		})
	}
}

func TestNormalizeReturnsNormalizedObjectsAsTheyAre(t *testing.T) {
	pt := New()
	for _, in := range testobjects.Inputs(t) {
		if in.GVK == testobjects.CRGVK {
			continue
		}
		t.Run(in.Name, func(t *testing.T) {
			normalized, err := pt.normalizeReference(in.Obj, in.GVK)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pt.Normalize(normalized, in.GVK)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonvalue.SameMap(got, normalized) {
				t.Fatal("a normalized object was copied")
			}
			allocs := testing.AllocsPerRun(20, func() { _, _ = pt.Normalize(normalized, in.GVK) })
			if allocs != 0 {
				t.Errorf("normalizing a normalized object allocates %v times, want 0", allocs)
			}
		})
	}
}

// TestNormalizeOddInputs covers the inputs the typed round trip changes or
// refuses: unknown fields, nulls, wrong types, numbers to convert or
// truncate, empty values under omitempty.
func TestNormalizeOddInputs(t *testing.T) {
	pt := New()
	podGVK := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	pod, container := testPod, testPodContainer
	cases := map[string]map[string]any{
		"empty object":                 {},
		"no apiVersion and kind":       {"metadata": map[string]any{"name": "p"}},
		"wrong apiVersion and kind":    {"apiVersion": "v2", "kind": "Thing"},
		"apiVersion not a string":      {"apiVersion": int64(1)},
		"unknown top-level field":      {"apiVersion": "v1", "kind": "Pod", "bogus": "x"},
		"unknown nested field":         pod(map[string]any{"containers": []any{}, "bogus": map[string]any{"a": int64(1)}}),
		"null metadata":                {"apiVersion": "v1", "kind": "Pod", "metadata": nil},
		"null spec":                    pod(nil),
		"null containers":              pod(map[string]any{"containers": nil}),
		"null list item":               pod(map[string]any{"containers": []any{nil}}),
		"empty containers":             pod(map[string]any{"containers": []any{}}),
		"empty omitempty list":         pod(map[string]any{"containers": []any{}, "volumes": []any{}}),
		"empty omitempty map":          pod(map[string]any{"containers": []any{}, "nodeSelector": map[string]any{}}),
		"null label":                   {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"labels": map[string]any{"a": nil}}},
		"label not a string":           {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"labels": map[string]any{"a": int64(1)}}},
		"labels not a map":             {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"labels": "x"}},
		"typed nil labels":             {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"labels": map[string]any(nil)}},
		"empty string omitempty":       {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "", "namespace": ""}},
		"string for an int":            container("ports", []any{map[string]any{"containerPort": "80"}}),
		"whole float for an int":       container("ports", []any{map[string]any{"containerPort": float64(80)}}),
		"fractional float for an int":  container("ports", []any{map[string]any{"containerPort": 80.5}}),
		"int32 overflow":               container("ports", []any{map[string]any{"containerPort": int64(math.MaxInt32) + 1}}),
		"float overflow":               container("ports", []any{map[string]any{"containerPort": 1e300}}),
		"zero int omitempty":           container("ports", []any{map[string]any{"containerPort": int64(80), "hostPort": int64(0)}}),
		"Go int":                       container("ports", []any{map[string]any{"containerPort": 80}}),
		"json.Number":                  container("ports", []any{map[string]any{"containerPort": json.Number("80")}}),
		"bool for a string":            container("image", true),
		"false omitempty":              container("stdin", false),
		"pointer to false":             container("securityContext", map[string]any{"privileged": false}),
		"pointer to zero":              pod(map[string]any{"containers": []any{}, "terminationGracePeriodSeconds": int64(0)}),
		"pointer to empty string":      pod(map[string]any{"containers": []any{}, "schedulerName": "", "runtimeClassName": ""}),
		"quantity":                     container("resources", map[string]any{"limits": map[string]any{"cpu": "0.5", "memory": "1Gi"}}),
		"quantity as number":           container("resources", map[string]any{"limits": map[string]any{"cpu": int64(2), "memory": 1.5}}),
		"bad quantity":                 container("resources", map[string]any{"limits": map[string]any{"cpu": "lots"}}),
		"null quantity":                container("resources", map[string]any{"limits": map[string]any{"cpu": nil}}),
		"int-or-string":                container("livenessProbe", map[string]any{"httpGet": map[string]any{"port": int64(80)}}),
		"int-or-string as float":       container("livenessProbe", map[string]any{"httpGet": map[string]any{"port": 80.0}}),
		"int-or-string as bool":        container("livenessProbe", map[string]any{"httpGet": map[string]any{"port": true}}),
		"timestamp":                    {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"creationTimestamp": "2026-11-23T10:00:00+02:00"}},
		"bad timestamp":                {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"creationTimestamp": "yesterday"}},
		"empty timestamp":              {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"creationTimestamp": ""}},
		"timestamp as number":          {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"creationTimestamp": int64(0)}},
		"deletion timestamp":           {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"deletionTimestamp": "2026-11-23T10:00:00Z"}},
		"managed fields":               {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"managedFields": []any{map[string]any{"manager": "m", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:metadata": map[string]any{}}}}}},
		"managed fields with values":   {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"managedFields": []any{map[string]any{"fieldsV1": map[string]any{"f:a": "x", "f:b": 1.0, "f:c": []any{}, "f:d": nil}}}}},
		"managed fields, odd keys":     {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"managedFields": []any{map[string]any{"fieldsV1": map[string]any{"\xff": map[string]any{}, "<&>": map[string]any{}}}}}},
		"managed fields not an object": {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"managedFields": []any{map[string]any{"fieldsV1": "x"}}}},
		"list for a struct":            {"apiVersion": "v1", "kind": "Pod", "spec": []any{}},
		"map for a list":               pod(map[string]any{"containers": map[string]any{}}),
	}
	cmGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	cm := func(kv ...any) map[string]any {
		m := map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	cmCases := map[string]map[string]any{
		"binary data":              cm("binaryData", map[string]any{"a": "AAECAw==", "b": "", "c": "AA==", "d": "AAA="}),
		"non-canonical base64":     cm("binaryData", map[string]any{"a": "AAECAx=="}),
		"base64 without padding":   cm("binaryData", map[string]any{"a": "AAECAw"}),
		"base64 with a line break": cm("binaryData", map[string]any{"a": "AAEC\nAw=="}),
		"not base64":               cm("binaryData", map[string]any{"a": "!!!!"}),
		"bytes as a list":          cm("binaryData", map[string]any{"a": []any{int64(1)}}),
		"null data value":          cm("data", map[string]any{"a": nil}),
		"empty data":               cm("data", map[string]any{}),
		"immutable false":          cm("immutable", false),
	}
	cases["invalid UTF-8 string"] = container("image", "a\xffb")
	cases["invalid UTF-8 map key"] = map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"labels": map[string]any{"a\xff": "b"}}}
	cases["key differing in case"] = map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"Name": "p"}}
	cases["null timestamp in a condition"] = map[string]any{"apiVersion": "v1", "kind": "Pod", "status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "lastTransitionTime": nil}}}}
	cases["null plain fields"] = map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"labels": nil, "name": nil}, "spec": map[string]any{"containers": nil, "priority": nil}}
	cases["NaN"] = container("resources", map[string]any{"limits": map[string]any{"cpu": math.NaN()}})
	cases["infinite quantity"] = container("resources", map[string]any{"limits": map[string]any{"cpu": math.Inf(1)}})
	cases["patched kind"] = map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "p"}}
	cases["patched apiVersion"] = map[string]any{"apiVersion": "apps/v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}}
	for name, obj := range cases {
		t.Run("Pod/"+name, func(t *testing.T) {
			checkAgainstOracle(t, pt, obj, podGVK)
			checkDecodeAgainstOracle(t, pt, obj, podGVK)
		})
	}
	for name, obj := range cmCases {
		t.Run("ConfigMap/"+name, func(t *testing.T) {
			checkAgainstOracle(t, pt, obj, cmGVK)
			checkDecodeAgainstOracle(t, pt, obj, cmGVK)
		})
	}
}

// TestNormalizeAgreesOnPerturbedObjects is a property test: real objects
// with one to three random changes (unknown fields, nulls, wrong types,
// numbers, empty values) normalize as through the typed round trip.
func TestNormalizeAgreesOnPerturbedObjects(t *testing.T) {
	pt := New()
	inputs := testobjects.Inputs(t)
	r := rand.New(rand.NewPCG(5, 2026))
	n := valuetest.Sweep(4000, 400) // make test-long: the full sweep
	fast, fastDecode := 0, 0
	for i := 0; i < n; i++ {
		in := inputs[r.IntN(len(inputs))]
		obj := valuetest.DeepCopy(in.Obj)
		for k := r.IntN(3); k >= 0; k-- {
			obj = testobjects.Perturb(r, obj)
		}
		if m, ok := obj.(map[string]any); ok {
			t.Run(fmt.Sprintf("%d %s", i, in.Name), func(t *testing.T) {
				if checkAgainstOracle(t, pt, m, in.GVK) {
					fast++
				}
				if checkDecodeAgainstOracle(t, pt, m, in.GVK) {
					fastDecode++
				}
			})
		}
	}
	if fast < n/4 || fastDecode < n/20 {
		t.Errorf("only %d (normalize) and %d (decode) of %d perturbed objects took the normalizer", fast, fastDecode, n)
	}
	t.Logf("normalizer: %d (normalize), %d (decode) of %d", fast, fastDecode, n)
}

// FuzzNormalize compares Normalize with the typed round trip, and decode
// with decodeReference, on arbitrary JSON objects of a few kinds.
func FuzzNormalize(f *testing.F) {
	kinds := []schema.GroupVersionKind{}
	for _, in := range testobjects.Inputs(f) {
		if !slices.Contains(kinds, in.GVK) {
			kinds = append(kinds, in.GVK)
		}
		data, err := json.Marshal(in.Obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(len(kinds)-1), data)
	}
	f.Add(uint8(0), []byte(`{"spec":{"containers":[{"name":"c","ports":[{"containerPort":1.0}]}]},"metadata":{"labels":null}}`))
	pt := New()
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		var obj map[string]any
		if err := utiljson.Unmarshal(data, &obj); err != nil || obj == nil {
			return
		}
		checkAgainstOracle(t, pt, obj, kinds[int(kind)%len(kinds)])
		checkDecodeAgainstOracle(t, pt, obj, kinds[int(kind)%len(kinds)])
	})
}

// TestNormalizeFromANormalizedBase is a property test of normalizing with a
// base: objects that share all but one to three changed paths with an
// object in normalized form (as merge results do) normalize, skipping what
// they share, as through the typed round trip.
func TestNormalizeFromANormalizedBase(t *testing.T) {
	pt := New()
	inputs := testobjects.Inputs(t)
	r := rand.New(rand.NewPCG(7, 2026))
	n := valuetest.Sweep(3000, 300) // make test-long: the full sweep
	fast := 0
	for i := 0; i < n; i++ {
		in := inputs[r.IntN(len(inputs))]
		if !pt.Recognizes(in.GVK) {
			continue
		}
		base, err := pt.Normalize(valuetest.DeepCopy(in.Obj).(map[string]any), in.GVK)
		if err != nil {
			continue
		}
		baseBefore := valuetest.DeepCopy(base)
		var obj any = base
		for k := r.IntN(3); k >= 0; k-- {
			obj = testobjects.PerturbShared(r, obj)
		}
		m, ok := obj.(map[string]any)
		if !ok {
			continue
		}
		t.Run(fmt.Sprintf("%d %s", i, in.Name), func(t *testing.T) {
			want, wantErr := pt.normalizeReference(valuetest.DeepCopy(m).(map[string]any), in.GVK)
			got, err := pt.normalizeFrom(m, base, in.GVK)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				seen := false
				for i := 0; i < 100 && !seen && err != nil && wantErr != nil; i++ {
					_, again := pt.normalizeReference(valuetest.DeepCopy(m).(map[string]any), in.GVK)
					seen = fmt.Sprint(again) == fmt.Sprint(err)
				}
				if !seen {
					t.Fatalf("error %v, want %v\ninput: %#v", err, wantErr, m)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("normalized differently from the typed round trip\ninput: %#v\n got: %#v\nwant: %#v", m, got, want)
			}
			if !testobjects.SameValue(base, baseBefore) {
				t.Fatal("the base was modified")
			}
			if _, ok := pt.plans.normalize(pt.types, m, base, in.GVK); ok {
				fast++
			}
		})
	}
	if fast < n/4 {
		t.Errorf("only %d of %d objects took the normalizer", fast, n)
	}
	t.Logf("normalizer: %d of %d", fast, n)
}

// TestNormalizeFromABaseSkipsWhatItShares shows that the walk does skip
// shared subtrees: a shared subtree in a form the walk would refuse (a null
// in a list, which sends normalize to the typed round trip) is not looked at.
func TestNormalizeFromABaseSkipsWhatItShares(t *testing.T) {
	pt := New()
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	odd := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "finalizers": []any{nil}}}
	if _, ok := pt.plans.normalize(pt.types, odd, nil, gvk); ok {
		t.Fatal("the walk models a null in a list: pick another odd input")
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": odd["metadata"], "data": map[string]any{"k": "v"}}
	if _, ok := pt.plans.normalize(pt.types, obj, odd, gvk); !ok {
		t.Fatal("the shared metadata was walked")
	}
}

// reachableTypes are the Go types of the kinds of ks (internal versions
// included), their pointers and every type reachable through their
// fields, elements and pointees.
func reachableTypes(ks *runtime.Scheme) map[reflect.Type]bool {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		if seen[rt] {
			return
		}
		seen[rt] = true
		switch rt.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(rt.Elem())
		case reflect.Struct:
			for i := range rt.NumField() {
				walk(rt.Field(i).Type)
			}
		}
	}
	for _, gt := range ks.AllKnownTypes() {
		walk(gt)
		walk(reflect.PointerTo(gt))
	}
	return seen
}

// TestConversionMethodsAreTheEntrys: what conversionMethods tells of every
// type reachable from every kind is what structured-merge-diff's entry of
// the type tells, which the converter asks.
func TestConversionMethodsAreTheEntrys(t *testing.T) {
	ks, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	seen := reachableTypes(ks)
	custom := 0
	for rt := range seen {
		e := value.TypeReflectEntryOf(rt)
		to, from := conversionMethods(rt)
		if to != e.CanConvertToUnstructured() || from != e.CanConvertFromUnstructured() {
			t.Errorf("%v: to %v, from %v; the entry says %v, %v", rt, to, from, e.CanConvertToUnstructured(), e.CanConvertFromUnstructured())
		}
		if to || from {
			custom++
		}
	}
	if len(seen) < 2000 || custom < 10 {
		t.Errorf("%d types, %d with methods: the walk missed the kinds", len(seen), custom)
	}
}

// TestZeroStructIsTheConverter: the normalizer's output for the zero value
// of a struct is what runtime.DefaultUnstructuredConverter.ToUnstructured
// writes, for every struct type reachable from every kind of the scheme
// (internal versions included), as the plan meets them.
func TestZeroStructIsTheConverter(t *testing.T) {
	ks, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	var p planner
	p.mu.Lock()
	defer p.mu.Unlock()
	var structs []reflect.Type
	for st := range reachableTypes(ks) {
		if st.Kind() == reflect.Struct && !isCustom(st) {
			structs = append(structs, st)
		}
	}
	if len(structs) < 1000 {
		t.Fatalf("%d struct types: the walk missed the kinds", len(structs))
	}
	modelled := 0
	for _, st := range structs {
		want, wantErr := converterZero(st)
		if _, ok := p.zeroFields(st, map[string]any{}); ok {
			modelled++
		}
		got, err := p.zeroStruct(st)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%v: error %v, the converter's %v", st, err, wantErr)
		}
		if err == nil && !valuetest.BitsEqual(got, want) {
			t.Errorf("%v: zero value written as %#v, the converter writes %#v", st, got, want)
		}
	}
	if modelled*10 < len(structs)*9 {
		t.Errorf("%d of %d struct types modelled: want nearly all", modelled, len(structs))
	}
	t.Logf("%d struct types, %d modelled", len(structs), modelled)
}

// TestNormalizeOnEveryKind normalizes, both ways, objects of every external
// kind of the scheme's types (every group and version, with the kinds
// metav1.AddToGroupVersion registers in each: WatchEvent, the options,
// Status): the zero object with its apiVersion and kind, without them, with
// another kind's, and randomly filled objects; decode and NormalizeRequest
// too. The other oracle
// tests see only testobjects' real objects, all of kinds with TypeMeta: none
// caught normalize writing apiVersion and kind into a WatchEvent, which has
// neither (its GetObjectKind is schema.EmptyObjectKind).
func TestNormalizeOnEveryKind(t *testing.T) {
	pt := New()
	var gvks []schema.GroupVersionKind
	for gvk := range pt.types.AllKnownTypes() {
		if gvk.Version != runtime.APIVersionInternal && pt.Recognizes(gvk) {
			gvks = append(gvks, gvk)
		}
	}
	slices.SortFunc(gvks, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	fills := valuetest.Sweep(3, 1) // make test-long: the full sweep
	var slow []string
	for _, gvk := range gvks {
		typed, err := pt.types.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		zero, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
		if err != nil {
			t.Fatal(err)
		}
		with := valuetest.DeepCopy(zero).(map[string]any)
		with["apiVersion"], with["kind"] = gvk.GroupVersion().String(), gvk.Kind
		other := valuetest.DeepCopy(zero).(map[string]any)
		other["apiVersion"], other["kind"] = "apps/v1", "Deployment"
		empty := valuetest.DeepCopy(zero).(map[string]any)
		empty["apiVersion"], empty["kind"] = "", ""
		inputs := map[string]map[string]any{"zero": zero, "with apiVersion and kind": with, "another kind's": other, "empty apiVersion and kind": empty}
		for seed := range fills {
			f := randfill.NewWithSeed(int64(seed)).NilChance(0.3).NumElements(0, 2).MaxDepth(8).Funcs(fillFuncs...)
			obj, err := pt.types.New(gvk)
			if err != nil {
				t.Fatal(err)
			}
			f.Fill(obj)
			obj.GetObjectKind().SetGroupVersionKind(gvk)
			if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err == nil {
				u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
				inputs[fmt.Sprintf("filled %d", seed)] = u
			}
		}
		for name, obj := range inputs {
			t.Run(gvk.String()+"/"+name, func(t *testing.T) {
				// NormalizeRequest takes the same fast path; its fallback
				// (JSON decoding) must agree too.
				want, wantErr := pt.normalizeReference(valuetest.DeepCopy(obj).(map[string]any), gvk)
				got, err := pt.NormalizeRequest(valuetest.DeepCopy(obj).(map[string]any), gvk)
				if wantErr == nil && (err != nil || !reflect.DeepEqual(got, want)) {
					t.Errorf("NormalizeRequest = %v, %v; the typed round trip %v", got, err, want)
				}
				if !checkAgainstOracle(t, pt, obj, gvk) && name == "with apiVersion and kind" {
					slow = append(slow, gvk.String())
				}
				checkDecodeAgainstOracle(t, pt, obj, gvk)
			})
		}
	}
	t.Logf("%d kinds; the typed round trip for: %s", len(gvks), strings.Join(slow, ", "))
	if len(slow) > 0 {
		t.Errorf("kinds the fast path does not model: %s", strings.Join(slow, ", "))
	}
}
