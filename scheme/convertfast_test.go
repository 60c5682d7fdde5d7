package scheme

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/randfill"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// checkTypedFast converts u, an object of kind gvk, to its Go type both
// ways (typedFast and the reference kube.typed) and fails unless the fast
// path, when it answers, gives the very object the converter gives
// (reflect.DeepEqual) and u is left as it was; typed (fast, falling back)
// must answer what the reference answers, error included. It returns the
// reference's object (nil on error) and whether the fast path answered.
func checkTypedFast(t testing.TB, s *Scheme, k *kube, u map[string]any, gvk schema.GroupVersionKind) (runtime.Object, bool) {
	t.Helper()
	before := valuetest.DeepCopy(u)
	want, wantErr := k.typed(u, gvk)
	got, fast := s.plans.typedFast(k, u, gvk)
	if fast && (wantErr != nil || !reflect.DeepEqual(got, want)) {
		t.Fatalf("%v: typedFast built %#v\nFromUnstructured gives %#v (%v)\ninput: %#v", gvk, got, want, wantErr, before)
	}
	got, err := s.plans.typed(k, u, gvk)
	// The converter walks maps in Go's random order: with two errors in
	// an object, it reports either.
	sameErr := oneOfTheErrors(err, wantErr, func() error {
		_, again := k.typed(u, gvk)
		return again
	})
	if !sameErr || !reflect.DeepEqual(got, want) {
		t.Fatalf("%v: typed gives %#v (%v), the reference %#v (%v)\ninput: %#v", gvk, got, err, want, wantErr, before)
	}
	if !valuetest.BitsEqual(u, before) {
		t.Fatalf("%v: the input was modified: %#v, was %#v", gvk, u, before)
	}
	return want, fast
}

// checkUnstructuredFast converts typed, a versioned object of kind gvk,
// to a map both ways (unstructuredFast and the reference unstructuredOf)
// and fails unless the fast path, when it answers, writes bit for bit
// what ToUnstructured writes and leaves typed as it was (but for its
// kind, which both set), and unstructured answers what the reference
// answers. It reports whether the fast path answered.
func checkUnstructuredFast(t testing.TB, s *Scheme, typed runtime.Object, gvk schema.GroupVersionKind) bool {
	t.Helper()
	ref := typed.DeepCopyObject()
	want, wantErr := unstructuredOf(ref, gvk)
	got, fast := s.plans.unstructuredFast(typed, gvk)
	if fast && (wantErr != nil || !valuetest.BitsEqual(got, want)) {
		t.Fatalf("%v: unstructuredFast wrote %#v\nToUnstructured writes %#v (%v)", gvk, got, want, wantErr)
	}
	if !reflect.DeepEqual(typed, ref) {
		t.Fatalf("%v: the typed object was modified: %#v, was %#v", gvk, typed, ref)
	}
	got, err := s.plans.unstructured(typed, gvk)
	sameErr := oneOfTheErrors(err, wantErr, func() error {
		_, again := unstructuredOf(typed.DeepCopyObject(), gvk)
		return again
	})
	if !sameErr || !valuetest.BitsEqual(got, want) {
		t.Fatalf("%v: unstructured writes %#v (%v), the reference %#v (%v)", gvk, got, err, want, wantErr)
	}
	return fast
}

// checkConversionsOf holds both fast conversions to the converter on u,
// an object of kind gvk, and on the typed objects the admission paths make
// of it: defaulted, and through its internal version and back.
func checkConversionsOf(t testing.TB, s *Scheme, k *kube, u map[string]any, gvk schema.GroupVersionKind) (typedFast, unstructuredFast int) {
	t.Helper()
	typed, fast := checkTypedFast(t, s, k, u, gvk)
	if fast {
		typedFast++
	}
	if typed == nil {
		return
	}
	if checkUnstructuredFast(t, s, typed, gvk) {
		unstructuredFast++
	}
	k.scheme.Default(typed)
	if checkUnstructuredFast(t, s, typed, gvk) {
		unstructuredFast++
	}
	internal, err := k.scheme.ConvertToVersion(typed.DeepCopyObject(), internalVersion(gvk))
	if err != nil {
		return
	}
	versioned, err := k.scheme.ConvertToVersion(internal, gvk.GroupVersion())
	if err != nil {
		return
	}
	if checkUnstructuredFast(t, s, versioned, gvk) {
		unstructuredFast++
	}
	return
}

// conversionFillFuncs add to fillFuncs values no map gives build: quantities
// in non-canonical forms and times below the second, in other zones.
var conversionFillFuncs = append([]any{
	func(q *resource.Quantity, c randfill.Continue) {
		*q = resource.MustParse([]string{"0", "1000m", "0.5", "1e3", "1.5Gi", "100M", "2"}[c.Intn(7)])
	},
	func(tm *metav1.Time, c randfill.Continue) {
		if c.Intn(3) > 0 {
			tm.Time = time.Unix(int64(c.Intn(1<<30)), int64(c.Intn(1e9))).In(time.FixedZone("z", 3600*(c.Intn(5)-2)))
		}
	},
	func(tm *metav1.MicroTime, c randfill.Continue) {
		if c.Intn(3) > 0 {
			tm.Time = time.Unix(int64(c.Intn(1<<30)), int64(c.Intn(1e9)))
		}
	},
}, fillFuncs...)

// filledObject is a new object of kind gvk: the zero object for seed 0,
// randomly filled from seed otherwise.
func filledObject(t testing.TB, k *kube, gvk schema.GroupVersionKind, seed int) runtime.Object {
	t.Helper()
	obj, err := k.scheme.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	if seed > 0 {
		randfill.NewWithSeed(int64(seed)).NilChance(0.3).NumElements(0, 2).MaxDepth(8).Funcs(conversionFillFuncs...).Fill(obj)
	}
	return obj
}

// TestTypedAndUnstructuredAreTheConverter holds the fast typed conversions
// of the admission paths (typedFast, unstructuredFast) to the converter's
// FromUnstructured and ToUnstructured: on the zero and randomly filled
// typed objects of every external kind of kube-apiserver's scheme (empty
// and nil slices and maps, non-canonical quantities, times below the
// second) written to maps, on the maps the converter writes read back,
// defaulted, and through the internal version; and on the real objects
// and random perturbations of them.
func TestTypedAndUnstructuredAreTheConverter(t *testing.T) {
	s := New()
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	gvks := externalKinds(s, k.scheme)
	fills := valuetest.Sweep(4, 1) // make test-long: the full sweep
	var typedCount, unstructuredCount, objects int
	for _, gvk := range gvks {
		fastKind := false
		for seed := range fills + 1 {
			obj := filledObject(t, k, gvk, seed)
			objects++
			if checkUnstructuredFast(t, s, obj, gvk) {
				unstructuredCount++
				fastKind = true
			}
			u, err := unstructuredOf(obj.DeepCopyObject(), gvk)
			if err != nil {
				continue
			}
			tf, uf := checkConversionsOf(t, s, k, u, gvk)
			typedCount, unstructuredCount = typedCount+tf, unstructuredCount+uf
		}
		if !fastKind {
			t.Errorf("%v: the zero object and the random ones all took the reference", gvk)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	ins := testobjects.Inputs(t)
	n := valuetest.Sweep(1000, 200) // make test-long: the full sweep
	for i := range n {
		in := ins[i%len(ins)]
		if !s.Recognizes(in.GVK) {
			continue
		}
		obj := valuetest.DeepCopy(in.Obj)
		if i >= len(ins) {
			for range 1 + r.IntN(3) {
				obj = testobjects.Perturb(r, obj)
			}
		}
		if m, ok := obj.(map[string]any); ok {
			objects++
			tf, uf := checkConversionsOf(t, s, k, m, in.GVK)
			typedCount, unstructuredCount = typedCount+tf, unstructuredCount+uf
			if i < len(ins) && tf == 0 {
				t.Errorf("%s: a real object took the reference", in.Name)
			}
			if tf, _ := checkConversionsOf(t, s, k, yamlNumbers(m).(map[string]any), in.GVK); i < len(ins) && tf == 0 {
				t.Errorf("%s with YAML's numbers: a real object took the reference", in.Name)
			}
		}
	}
	t.Logf("%d kinds, %d objects: %d typed and %d written through the fast paths", len(gvks), objects, typedCount, unstructuredCount)
}

// FuzzTypedAndUnstructured: any JSON object, as any of the real objects'
// kinds, converts to its Go type and back through the fast paths as
// through the converter.
func FuzzTypedAndUnstructured(f *testing.F) {
	s := New()
	k, err := s.kube()
	if err != nil {
		f.Fatal(err)
	}
	var gvks []schema.GroupVersionKind
	for _, in := range testobjects.Inputs(f) {
		if !s.Recognizes(in.GVK) {
			continue
		}
		data, err := json.Marshal(in.Obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(len(gvks)), data)
		gvks = append(gvks, in.GVK)
	}
	f.Add(uint8(0), []byte(`{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1000m"}},"ports":[]}]},"metadata":{"creationTimestamp":"2026-11-23T10:00:00+02:00"}}`))
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		var obj map[string]any
		if err := utiljson.Unmarshal(data, &obj); err != nil || obj == nil {
			return
		}
		checkConversionsOf(t, s, k, obj, gvks[int(kind)%len(gvks)])
	})
}

// TestConvertFreshIsConvertToVersion holds convertFresh (the conversion
// without the deep copy of its input) to ConvertToVersion on the zero and
// randomly filled objects of every external kind of kube-apiserver's
// scheme and on the real objects, to the internal version and back:
// results are reflect.DeepEqual, errors the same.
func TestConvertFreshIsConvertToVersion(t *testing.T) {
	s := New()
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	converted := 0
	check := func(in runtime.Object, target runtime.GroupVersioner) runtime.Object {
		t.Helper()
		want, wantErr := k.scheme.ConvertToVersion(in, target)
		got, err := k.convertFresh(in.DeepCopyObject(), target)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("%T to %v: error %v, ConvertToVersion's %v", in, target, err, wantErr)
		}
		if err != nil {
			return nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%T to %v: converted %#v\nConvertToVersion gives %#v", in, target, got, want)
		}
		converted++
		return want
	}
	fills := valuetest.Sweep(4, 1) // make test-long: the full sweep
	var objects []runtime.Object
	for _, gvk := range externalKinds(s, k.scheme) {
		for seed := range fills + 1 {
			obj := filledObject(t, k, gvk, seed)
			obj.GetObjectKind().SetGroupVersionKind(gvk)
			objects = append(objects, obj)
		}
	}
	for _, in := range testobjects.Inputs(t) {
		if typed, err := k.typed(in.Obj, in.GVK); err == nil {
			k.scheme.Default(typed)
			objects = append(objects, typed)
		}
	}
	for _, obj := range objects {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if internal := check(obj, internalVersion(gvk)); internal != nil {
			check(internal, gvk.GroupVersion())
		}
		check(obj, gvk.GroupVersion())
	}
	t.Logf("%d objects, %d conversions", len(objects), converted)
}

// checkDecodeRequestFast decodes obj, the body of a request for kind gvk,
// through DecodeRequest and through kube-apiserver's request decoder
// (decodeRequestReference), and fails unless the objects (bit for bit),
// warnings and errors agree and obj is left as it was. It reports whether
// the fast path answered.
func checkDecodeRequestFast(t testing.TB, s *Scheme, k *kube, obj map[string]any, gvk schema.GroupVersionKind) bool {
	t.Helper()
	before := valuetest.DeepCopy(obj)
	want, wantWarnings, wantErr := s.decodeRequestReference(valuetest.DeepCopy(obj).(map[string]any), gvk)
	got, warnings, err := s.DecodeRequest(obj, gvk)
	if !oneOfTheErrors(err, wantErr, func() error {
		_, _, again := s.decodeRequestReference(valuetest.DeepCopy(obj).(map[string]any), gvk)
		return again
	}) {
		t.Fatalf("%v: error %v, the decoder's %v\ninput: %#v", gvk, err, wantErr, before)
	}
	if !valuetest.BitsEqual(got, want) || !reflect.DeepEqual(warnings, wantWarnings) {
		t.Fatalf("%v: decoded %#v (warnings %q)\nthe decoder gives %#v (warnings %q)\ninput: %#v", gvk, got, warnings, want, wantWarnings, before)
	}
	if !valuetest.BitsEqual(obj, before) {
		t.Fatalf("%v: the input was modified: %#v, was %#v", gvk, obj, before)
	}
	_, fast := s.decodeRequestFast(k, obj, gvk)
	return fast
}

// TestDecodeRequestIsTheDecoder holds DecodeRequest, which decodes what it
// can without encoding JSON, to kube-apiserver's request decoder (strict
// JSON decoding, defaulting, conversion to the internal version) on the
// zero and randomly filled objects of every external kind of
// kube-apiserver's scheme, on the real objects (which must take the fast
// path) and on random perturbations of them (unknown fields, nulls, wrong
// types, numbers, empty values).
func TestDecodeRequestIsTheDecoder(t *testing.T) {
	s := New()
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	fills := valuetest.Sweep(4, 1) // make test-long: the full sweep
	objects, fast := 0, 0
	for _, gvk := range externalKinds(s, k.scheme) {
		for seed := range fills + 1 {
			u, err := unstructuredOf(filledObject(t, k, gvk, seed), gvk)
			if err != nil {
				continue
			}
			objects++
			if checkDecodeRequestFast(t, s, k, u, gvk) {
				fast++
			}
		}
	}
	r := rand.New(rand.NewPCG(9, 10))
	ins := testobjects.Inputs(t)
	n := valuetest.Sweep(2000, 300) // make test-long: the full sweep
	for i := range n {
		in := ins[i%len(ins)]
		if !s.Recognizes(in.GVK) {
			continue
		}
		var obj any = in.Obj
		if i >= len(ins) {
			obj = valuetest.DeepCopy(in.Obj)
			for range 1 + r.IntN(3) {
				obj = testobjects.Perturb(r, obj)
			}
		}
		m, ok := obj.(map[string]any)
		if !ok {
			continue
		}
		for _, m := range []map[string]any{m, yamlNumbers(m).(map[string]any)} {
			objects++
			if checkDecodeRequestFast(t, s, k, m, in.GVK) {
				fast++
			} else if i < len(ins) {
				t.Errorf("%s: a real object took the decoder", in.Name)
			}
		}
	}
	t.Logf("%d objects, %d decoded through the fast path", objects, fast)
}

// yamlNumbers is v with its integers as float64s, as a YAML document's
// decode (sigs.k8s.io/yaml: YAML to JSON, then encoding/json).
func yamlNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = yamlNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = yamlNumbers(e)
		}
		return out
	case int64:
		return float64(x)
	}
	return v
}

// TestWholeFloatsForIntegers covers the float64s build reads into integer
// fields (as the converter does, exactly, only for whole numbers in the
// field's range) through all the fast paths that build serves.
func TestWholeFloatsForIntegers(t *testing.T) {
	s := New()
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	podGVK := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	values := []float64{0, math.Copysign(0, -1), 1, -1, 80, 2.5, -0.5, math.MaxInt32, math.MaxInt32 + 1, math.MinInt32, math.MinInt32 - 1,
		1<<53 - 1, 1 << 53, -(1 << 53), 1<<53 + 2, 1 << 62, 1 << 63, -(1 << 63), 1e21, math.Inf(1), math.NaN()}
	for _, x := range values {
		for _, obj := range []map[string]any{
			// int32
			testPodContainer("ports", []any{map[string]any{"containerPort": x}}),
			// int64 pointer
			{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "generation": x}, "spec": map[string]any{"activeDeadlineSeconds": x, "containers": []any{}}},
		} {
			checkConversionsOf(t, s, k, obj, podGVK)
			checkDefaultFast(t, s, obj, podGVK)
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				checkDecodeRequestFast(t, s, k, obj, podGVK)
			}
		}
	}
}

// TestPlanAheadIsWhatTheDecoderWalks: the plans planAhead builds from the
// kinds' Go types, before kube-apiserver's scheme is registered, are the
// very plans the request decoder's fast path then finds through that
// scheme, for every versioned kind of both: building them ahead builds
// nothing twice and changes nothing.
func TestPlanAheadIsWhatTheDecoderWalks(t *testing.T) {
	s := New()
	for gvk := range s.types.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		s.planAhead(gvk)
	}
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for gvk := range k.scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || !s.Recognizes(gvk) {
			continue
		}
		if ahead, ok := s.plans.kinds.load(kindKey{s.types, gvk}); !ok || ahead != s.plans.kind(s.types, gvk) {
			t.Errorf("%v: the normalizer's plan was not built ahead", gvk)
		}
		obj, err := s.types.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		ahead, _ := s.plans.roots.load(reflect.TypeOf(obj).Elem())
		if got := s.plans.typedKind(k.scheme, gvk); got != ahead {
			t.Errorf("%v: the decoder's plan %p is not the one built ahead %p", gvk, got, ahead)
		}
		checked++
	}
	if checked < 500 {
		t.Errorf("%d kinds checked, want every versioned kind (over 500)", checked)
	}
}
