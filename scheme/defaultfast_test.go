package scheme

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/randfill"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// checkDefault defaults obj both ways (Default and defaultReference) and
// fails unless results (bit for bit) and errors agree, obj is left as it
// was, and an unchanged result is obj itself in both. It reports whether
// the fast path answered.
func checkDefaultFast(t testing.TB, s *Scheme, obj map[string]any, gvk schema.GroupVersionKind) (fast bool) {
	t.Helper()
	before := valuetest.DeepCopy(obj)
	var want, got map[string]any
	var wantErr, err error
	_ = inOneSecond(func() error {
		want, wantErr = s.defaultReference(valuetest.DeepCopy(obj).(map[string]any), gvk)
		got, err = s.Default(obj, gvk)
		return errUnlessBitsEqual(got, want)
	})
	wantSame := wantErr == nil && want != nil && obj != nil && jsonEqualsInput(s, obj, gvk)
	if !oneOfTheErrors(err, wantErr, func() error {
		_, again := s.defaultReference(valuetest.DeepCopy(obj).(map[string]any), gvk)
		return again
	}) {
		t.Fatalf("%s: error %v, want %v\ninput: %#v", gvk.Kind, err, wantErr, before)
	}
	if !valuetest.BitsEqual(got, want) {
		t.Fatalf("%s: defaulted differently from the typed round trip\ninput: %#v\n got: %#v\nwant: %#v", gvk.Kind, before, got, want)
	}
	if !valuetest.BitsEqual(obj, before) {
		t.Fatalf("%s: the input was modified: %#v, was %#v", gvk.Kind, obj, before)
	}
	if wantSame && !jsonvalue.SameMap(got, obj) {
		t.Fatalf("%s: the reference returns the input itself, Default a copy", gvk.Kind)
	}
	if obj != nil && s.Recognizes(gvk) && !s.crs.Recognizes(gvk) {
		k, err := s.kube()
		if err != nil {
			t.Fatal(err)
		}
		_, fast = s.plans.defaultFast(k, obj, gvk, false)
	}
	checkDefaultNormalized(t, s, obj, gvk)
	return fast
}

// checkDefaultNormalized fails unless DefaultNormalized of obj in
// normalized form (normalizeReference's) is, bit for bit, the reference's
// defaulting of it, and that form itself when the reference returns it.
// It reports whether the watch told that the defaulters changed nothing.
func checkDefaultNormalized(t testing.TB, s *Scheme, obj map[string]any, gvk schema.GroupVersionKind) (unchanged bool) {
	t.Helper()
	if obj == nil {
		return false
	}
	n, err := s.normalizeReference(valuetest.DeepCopy(obj).(map[string]any), gvk)
	if err != nil || n == nil {
		return false
	}
	before := valuetest.DeepCopy(n)
	var want, got map[string]any
	var wantErr error
	_ = inOneSecond(func() error {
		want, wantErr = s.defaultReference(valuetest.DeepCopy(n).(map[string]any), gvk)
		got, err = s.DefaultNormalized(n, gvk)
		return errUnlessBitsEqual(got, want)
	})
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s: DefaultNormalized error %v, want %v\ninput: %#v", gvk.Kind, err, wantErr, before)
	}
	if !valuetest.BitsEqual(got, want) {
		t.Fatalf("%s: DefaultNormalized differs from the typed round trip\ninput: %#v\n got: %#v\nwant: %#v", gvk.Kind, before, got, want)
	}
	if !valuetest.BitsEqual(n, before) {
		t.Fatalf("%s: the input was modified: %#v, was %#v", gvk.Kind, n, before)
	}
	if wantErr == nil && jsonEqualsInput(s, n, gvk) && !jsonvalue.SameMap(got, n) {
		t.Fatalf("%s: the reference returns the input itself, DefaultNormalized a copy", gvk.Kind)
	}
	return s.watchUnchanged(t, n, gvk)
}

// watchUnchanged tells whether defaultFast's watch says that the
// defaulters left obj's typed object as built.
func (s *Scheme) watchUnchanged(t testing.TB, obj map[string]any, gvk schema.GroupVersionKind) bool {
	t.Helper()
	if !s.Recognizes(gvk) || s.crs.Recognizes(gvk) {
		return false
	}
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	w := &watch{}
	typed, ok := s.plans.typedWatched(k, obj, gvk, w)
	if !ok {
		return false
	}
	w.take()
	k.scheme.Default(typed)
	return s.plans.unchanged(w)
}

// jsonEqualsInput reports whether defaultReference returns obj itself.
func jsonEqualsInput(s *Scheme, obj map[string]any, gvk schema.GroupVersionKind) bool {
	out, err := s.defaultReference(obj, gvk)
	return err == nil && out != nil && jsonvalue.SameMap(out, obj)
}

func TestDefaultIsTheReference(t *testing.T) {
	s := New()
	for _, in := range testobjects.Inputs(t) {
		t.Run(in.Name, func(t *testing.T) {
			fast := checkDefaultFast(t, s, in.Obj, in.GVK)
			if in.GVK != testobjects.CRGVK && !fast {
				t.Error("a real object took the reference: the fast path should model it")
			}
			// The defaulted object, as the next mutation's input: a fixed
			// point, returned as it is.
			d, err := s.defaultReference(in.Obj, in.GVK)
			if err != nil {
				t.Fatal(err)
			}
			checkDefaultFast(t, s, d, in.GVK)
			if in.GVK == testobjects.CRGVK {
				return
			}
			got, err := s.Default(d, in.GVK)
			if err != nil || !jsonvalue.SameMap(got, d) {
				t.Fatalf("a defaulted object was not returned as it is (err %v)", err)
			}
		})
	}
}

// TestDefaultOnEveryKind defaults, both ways, the zero object and randomly
// filled objects of every external kind of kube-apiserver's scheme.
func TestDefaultOnEveryKind(t *testing.T) {
	s := New()
	ks, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	var gvks []schema.GroupVersionKind
	for gvk := range ks.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || !s.Recognizes(gvk) {
			continue
		}
		gvks = append(gvks, gvk)
	}
	sort.Slice(gvks, func(i, j int) bool { return gvks[i].String() < gvks[j].String() })
	fills := valuetest.Sweep(3, 1) // make test-long: the full sweep
	var slow []string
	fastCount := 0
	for _, gvk := range gvks {
		typed, err := ks.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		zero, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
		if err != nil {
			t.Fatal(err)
		}
		zero["apiVersion"], zero["kind"] = gvk.GroupVersion().String(), gvk.Kind
		if checkDefaultFast(t, s, zero, gvk) {
			fastCount++
		} else {
			slow = append(slow, gvk.String())
		}
		for seed := range fills {
			f := randfill.NewWithSeed(int64(seed)).NilChance(0.3).NumElements(0, 2).MaxDepth(8).Funcs(fillFuncs...)
			obj, err := ks.New(gvk)
			if err != nil {
				t.Fatal(err)
			}
			f.Fill(obj)
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				continue // random bytes where JSON goes
			}
			checkDefaultFast(t, s, u, gvk)
		}
	}
	t.Logf("%d kinds, %d through the fast path; the reference for: %s", len(gvks), fastCount, strings.Join(slow, ", "))
	if len(slow) > 0 {
		t.Errorf("kinds the fast path does not model: %s", strings.Join(slow, ", "))
	}
}

// fillFuncs keep randfill's values within what a JSON object holds.
var fillFuncs = []any{
	func(s *string, c randfill.Continue) { *s = []string{"", "a", "Always", "TCP", "10%", "1"}[c.Intn(6)] },
	func(f *float64, c randfill.Continue) { *f = float64(c.Intn(5)) / 2 },
	func(f *float32, c randfill.Continue) { *f = float32(c.Intn(5)) / 2 },
	func(r *runtime.RawExtension, c randfill.Continue) {
		if c.Intn(2) == 0 {
			r.Raw = []byte(`{"a":1}`)
		}
	},
	func(r *runtime.Object, c randfill.Continue) {},
}

// TestDefaultAgreesOnPerturbedObjects is the property test: real objects,
// defaulted or not, with one to three random changes (unknown fields,
// nulls, wrong types, numbers, empty values), in place or shared as in a
// merge result.
func TestDefaultAgreesOnPerturbedObjects(t *testing.T) {
	s := New()
	r := rand.New(rand.NewPCG(1, 2))
	n := valuetest.Sweep(3000, 300) // make test-long: the full sweep
	var ins []testobjects.Input
	for _, in := range testobjects.Inputs(t) {
		ins = append(ins, in)
		if d, err := s.defaultReference(in.Obj, in.GVK); err == nil && in.GVK != testobjects.CRGVK {
			ins = append(ins, testobjects.Input{Name: in.Name + " defaulted", GVK: in.GVK, Obj: d})
		}
	}
	fast := 0
	for i := range n {
		m, in, ok := perturbedInput(r, ins, i)
		if !ok {
			continue
		}
		if checkDefaultFast(t, s, m, in.GVK) {
			fast++
		}
	}
	t.Logf("%d of %d perturbed objects through the fast path", fast, n)
}

// testPod is a Pod named p with spec.
func testPod(spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}, "spec": spec}
}

// testPodContainer is a Pod with one container c (image i) that also has
// the fields kv (name, value, ...).
func testPodContainer(kv ...any) map[string]any {
	c := map[string]any{"name": "c", "image": "i"}
	for i := 0; i < len(kv); i += 2 {
		c[kv[i].(string)] = kv[i+1]
	}
	return testPod(map[string]any{"containers": []any{c}})
}

// TestDefaultOddInputs covers inputs the conversions change or refuse.
func TestDefaultOddInputs(t *testing.T) {
	s := New()
	podGVK := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	depGVK := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	cmGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	pod, container := testPod, testPodContainer
	cases := map[string]map[string]any{
		"empty object":             {},
		"unknown field":            {"apiVersion": "v1", "kind": "Pod", "bogus": "x"},
		"null spec":                {"apiVersion": "v1", "kind": "Pod", "spec": nil},
		"typed nil spec":           pod(nil),
		"null list item":           pod(map[string]any{"containers": []any{nil}}),
		"typed nil labels":         {"metadata": map[string]any{"labels": map[string]any(nil)}},
		"null label":               {"metadata": map[string]any{"labels": map[string]any{"a": nil}}},
		"int32 overflow":           container("ports", []any{map[string]any{"containerPort": int64(math.MaxInt32) + 1}}),
		"whole float for an int":   container("ports", []any{map[string]any{"containerPort": float64(80)}}),
		"Go int":                   container("ports", []any{map[string]any{"containerPort": 80}}),
		"negative zero":            pod(map[string]any{"containers": []any{}, "overhead": map[string]any{"cpu": math.Copysign(0, -1)}}),
		"limits into requests":     container("resources", map[string]any{"limits": map[string]any{"cpu": "500m", "memory": "1Gi"}}),
		"quantity as number":       container("resources", map[string]any{"limits": map[string]any{"cpu": int64(2), "memory": 1.5}}),
		"bad quantity":             container("resources", map[string]any{"limits": map[string]any{"cpu": "lots"}}),
		"non-canonical quantity":   container("resources", map[string]any{"requests": map[string]any{"cpu": "0.5"}}),
		"int-or-string":            container("livenessProbe", map[string]any{"httpGet": map[string]any{"port": int64(80)}}),
		"int-or-string as float":   container("livenessProbe", map[string]any{"httpGet": map[string]any{"port": 80.0}}),
		"timestamp":                {"metadata": map[string]any{"creationTimestamp": "2026-11-23T10:00:00+02:00"}},
		"bad timestamp":            {"metadata": map[string]any{"creationTimestamp": "yesterday"}},
		"host network ports":       pod(map[string]any{"hostNetwork": true, "containers": []any{map[string]any{"name": "c", "ports": []any{map[string]any{"containerPort": int64(80)}}}}}),
		"NaN":                      container("resources", map[string]any{"limits": map[string]any{"cpu": math.NaN()}}),
		"managed fields":           {"metadata": map[string]any{"managedFields": []any{map[string]any{"manager": "m", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:metadata": map[string]any{}}}}}},
		"list for a struct":        {"spec": []any{}},
		"patched kind":             {"apiVersion": "v1", "kind": "Service"},
		"no apiVersion":            {"kind": "Pod", "metadata": map[string]any{"name": "p"}},
		"empty containers":         pod(map[string]any{"containers": []any{}}),
		"ephemeral containers":     pod(map[string]any{"ephemeralContainers": []any{map[string]any{"name": "e"}}}),
		"init containers":          pod(map[string]any{"initContainers": []any{map[string]any{"name": "i", "restartPolicy": "Always"}}}),
		"volumes":                  pod(map[string]any{"volumes": []any{map[string]any{"name": "s", "secret": map[string]any{"secretName": "x"}}, map[string]any{"name": "h", "hostPath": map[string]any{"path": "/"}}}}),
		"status conditions":        {"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "lastTransitionTime": nil}}}},
		"security context":         container("securityContext", map[string]any{"privileged": false}),
		"empty string for pointer": pod(map[string]any{"schedulerName": "", "runtimeClassName": ""}),
	}
	for name, obj := range cases {
		t.Run("Pod/"+name, func(t *testing.T) { checkDefaultFast(t, s, obj, podGVK) })
	}
	depCases := map[string]map[string]any{
		"empty":       {},
		"strategy":    {"spec": map[string]any{"strategy": map[string]any{"type": "RollingUpdate"}}},
		"recreate":    {"spec": map[string]any{"strategy": map[string]any{"type": "Recreate", "rollingUpdate": map[string]any{}}}},
		"percentages": {"spec": map[string]any{"strategy": map[string]any{"rollingUpdate": map[string]any{"maxSurge": "50%", "maxUnavailable": int64(0)}}}},
		"replicas 0":  {"spec": map[string]any{"replicas": int64(0)}},
	}
	for name, obj := range depCases {
		t.Run("Deployment/"+name, func(t *testing.T) { checkDefaultFast(t, s, obj, depGVK) })
	}
	cmCases := map[string]map[string]any{
		"binary data":          {"binaryData": map[string]any{"a": "AAECAw==", "b": ""}},
		"non-canonical base64": {"binaryData": map[string]any{"a": "AAECAx=="}},
		"not base64":           {"binaryData": map[string]any{"a": "!!!!"}},
		"null data value":      {"data": map[string]any{"a": nil}},
	}
	for name, obj := range cmCases {
		t.Run("ConfigMap/"+name, func(t *testing.T) { checkDefaultFast(t, s, obj, cmGVK) })
	}
}

// TestDefaultFixedPointDoesNotAllocateMuch guards the point of the fast
// path: an object the defaulters leave alone comes back as it is.
func TestDefaultFixedPointComesBackAsItIs(t *testing.T) {
	s := New()
	for _, in := range testobjects.Inputs(t) {
		if in.GVK == testobjects.CRGVK {
			continue
		}
		d, err := s.defaultReference(in.Obj, in.GVK)
		if err != nil {
			t.Fatal(err)
		}
		k, err := s.kube()
		if err != nil {
			t.Fatal(err)
		}
		out, ok := s.plans.defaultFast(k, d, in.GVK, false)
		if !ok || !jsonvalue.SameMap(out, d) {
			t.Errorf("%s: a defaulted object did not come back as it is (fast path %v)", in.Name, ok)
		}
		if !s.watchUnchanged(t, d, in.GVK) {
			t.Errorf("%s: the watch sees a change in a defaulted object: DefaultNormalized writes it again", in.Name)
		}
	}
}

// TestCustomBuildIsTheEntry checks build's shortcut for IntOrString
// against the converter's entry (json.Marshal, then UnmarshalJSON), on
// odd and ordinary values.
func TestCustomBuildIsTheEntry(t *testing.T) {
	p := &planner{}
	odd := []any{"", "null", "a\xffb", "\u2028<&>", " 1", "1 ", "\"1\"", "\\1", "<1>", "1&", "\t1", 1.5, 80.0, true, map[string]any{}, []any{}}
	cases := map[reflect.Type][]any{
		reflect.TypeFor[intstr.IntOrString](): {"25%", "80", int64(0), int64(80), int64(-1), int64(math.MaxInt32), int64(math.MaxInt32) + 1, int64(math.MinInt32), int64(math.MinInt32) - 1},
		reflect.TypeFor[resource.Quantity]():  {"0", "100m", "1.5Gi", "2", "1e3", "0.1", "-1", "1E3", "lots", "1Ki ", "+5", int64(0), int64(7), int64(math.MaxInt64), int64(math.MinInt64)},
		reflect.TypeFor[metav1.Time]():        {"2026-11-23T10:00:00Z", "2026-11-23T10:00:00+02:00", "2026-11-23T10:00:00.123456789Z", "2026-11-23", "yesterday", int64(0)},
	}
	for typ, values := range cases {
		p.mu.Lock()
		n := p.node(typ, "")
		p.mu.Unlock()
		for _, v := range append(values, odd...) {
			got := reflect.New(n.t).Elem()
			ok := build(v, got.Addr().UnsafePointer(), n)
			want := reflect.New(n.t).Elem()
			err := n.entry.FromUnstructured(reflect.ValueOf(v), want)
			if ok && (err != nil || !reflect.DeepEqual(got.Interface(), want.Interface())) {
				t.Errorf("%v %#v: built %#v, the entry gives %#v (%v)", typ, v, got.Interface(), want.Interface(), err)
			}
			if !ok && err == nil && isJSONValue(v, 0) {
				t.Errorf("%v %#v: build declined what the entry converts", typ, v)
			}
		}
	}
}

// FuzzDefault: any JSON object, as any of the real objects' kinds, defaults
// through the fast path as through the reference.
func FuzzDefaultFast(f *testing.F) {
	s := New()
	var gvks []schema.GroupVersionKind
	for _, in := range testobjects.Inputs(f) {
		data, err := json.Marshal(in.Obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(len(gvks)), data)
		gvks = append(gvks, in.GVK)
	}
	f.Add(uint8(0), []byte(`{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1"}}}]}}`))
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		var obj map[string]any
		if err := utiljson.Unmarshal(data, &obj); err != nil || obj == nil {
			return
		}
		checkDefaultFast(t, s, obj, gvks[int(kind)%len(gvks)])
	})
}

// TestCustomOutIsTheEntry checks emit's shortcuts for custom types (the
// type's own ToUnstructured through a pointer, IntOrString) against the
// converter's entry, on random values.
func TestCustomOutIsTheEntry(t *testing.T) {
	p := &planner{}
	r := rand.New(rand.NewPCG(3, 4))
	strs := []string{"", "0", "25%", "a\xffb", "\u2028<&>", "80", "x y"}
	for i := range 2000 {
		var v any
		switch i % 4 {
		case 0:
			v = &intstr.IntOrString{Type: intstr.Type(r.IntN(3)), IntVal: r.Int32() - 1<<30, StrVal: strs[r.IntN(len(strs))]}
		case 1:
			v = &metav1.Time{}
			if r.IntN(2) == 0 {
				v = &metav1.Time{Time: time.Unix(r.Int64N(1<<34), r.Int64N(1e9)).In(time.FixedZone("z", 3600*(r.IntN(5)-2)))}
			}
		case 2:
			q := resource.MustParse([]string{"0", "100m", "1.5Gi", "2", "1e3", "0.1"}[r.IntN(6)])
			v = &q
		case 3:
			v = &metav1.MicroTime{Time: time.Unix(r.Int64N(1<<34), r.Int64N(1e9))}
		}
		sv := reflect.ValueOf(v).Elem()
		p.mu.Lock()
		n := p.node(sv.Type(), "")
		p.mu.Unlock()
		got, gotOK := customOut(sv.Addr().UnsafePointer(), n, true)
		want, err := n.entry.ToUnstructured(sv)
		if gotOK != (err == nil) || !valuetest.BitsEqual(got, want) {
			t.Fatalf("%#v: got %#v (%v), want %#v (%v)", v, got, gotOK, want, err)
		}
		// Unaddressable, as a map's value.
		got, gotOK = customOut(sv.Addr().UnsafePointer(), n, false)
		want, err = n.entry.ToUnstructured(reflect.ValueOf(sv.Interface()))
		if gotOK != (err == nil) || !valuetest.BitsEqual(got, want) {
			t.Fatalf("%#v (unaddressable): got %#v (%v), want %#v (%v)", v, got, gotOK, want, err)
		}
		// The pointer, as in a field of type *T, nil or not.
		pv := reflect.ValueOf(v)
		if r.IntN(4) == 0 {
			pv = reflect.Zero(pv.Type())
		}
		p.mu.Lock()
		pn := p.node(pv.Type(), "")
		p.mu.Unlock()
		pp := reflect.New(pv.Type())
		pp.Elem().Set(pv)
		got, gotOK = (&emitter{}).emit(pp.UnsafePointer(), pn, nil, true)
		want, err = pn.entry.ToUnstructured(pv)
		if gotOK != (err == nil) || !valuetest.BitsEqual(got, want) {
			t.Fatalf("%#v (pointer): got %#v (%v), want %#v (%v)", pv, got, gotOK, want, err)
		}
	}
}

// BenchmarkDefault defaults the real Deployment and Pod, as written
// (undefaulted) and defaulted (a fixed point), through Default and
// defaultReference.
func BenchmarkDefault(b *testing.B) {
	s := New()
	for _, in := range testobjects.Inputs(b) {
		if in.GVK.Kind != "Deployment" && in.GVK.Kind != "Pod" || !strings.HasSuffix(in.Name, "(ToUnstructured)") {
			continue
		}
		d, err := s.defaultReference(in.Obj, in.GVK)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name string
			obj  map[string]any
		}{{"undefaulted", in.Obj}, {"defaulted", d}} {
			for _, impl := range []struct {
				name string
				f    func(map[string]any, schema.GroupVersionKind) (map[string]any, error)
			}{{"fast", s.Default}, {"reference", s.defaultReference}} {
				b.Run(in.GVK.Kind+"/"+c.name+"/impl="+impl.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := impl.f(c.obj, in.GVK); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// TestDefaultConcurrently defaults the real objects from several
// goroutines on a fresh scheme, so that the plans are built concurrently
// (run with -race).
func TestDefaultConcurrently(t *testing.T) {
	s := New()
	ins := testobjects.Inputs(t)
	done := make(chan error)
	for g := range 4 {
		go func() {
			var err error
			for i := range ins {
				in := ins[(i+g)%len(ins)]
				if _, e := s.Default(in.Obj, in.GVK); e != nil && err == nil {
					err = e
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestBuildAndEmitAreTheConverter holds the two planned conversions, which
// write and read typed objects through unsafe pointers at the offsets of
// their plans, to the converter's reflection: build gives the very typed
// object FromUnstructured gives (reflect.DeepEqual), and emit writes what
// ToUnstructured writes for it (bit for bit), from scratch and against the
// input it was built from. Objects: the zero and randomly filled objects of
// every external kind of kube-apiserver's scheme (random maps of structs
// and quantities, reached unaddressable by the converter, included), the
// real objects and random perturbations of them.
func TestBuildAndEmitAreTheConverter(t *testing.T) {
	s := New()
	ks, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	var p planner
	built := 0
	check := func(u map[string]any, gvk schema.GroupVersionKind) {
		t.Helper()
		n := p.typedKind(ks, gvk)
		if n == nil {
			return
		}
		want, err := ks.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		wantErr := runtime.DefaultUnstructuredConverter.FromUnstructured(u, want)
		got := reflect.New(n.t)
		if !build(u, got.UnsafePointer(), n) {
			return
		}
		built++
		if wantErr != nil {
			t.Fatalf("%v: built what FromUnstructured refuses (%v)\ninput: %#v", gvk, wantErr, u)
		}
		if !reflect.DeepEqual(got.Interface(), want) {
			t.Fatalf("%v: built %#v\nFromUnstructured gives %#v\ninput: %#v", gvk, got.Interface(), want, u)
		}
		wantOut, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
		for _, prev := range []map[string]any{nil, u} {
			out, ok := (&emitter{}).emit(got.UnsafePointer(), n, prev, true)
			if !ok {
				continue
			}
			if err != nil || !valuetest.BitsEqual(out, wantOut) {
				t.Fatalf("%v: emitted %#v\nToUnstructured writes %#v (%v)", gvk, out, wantOut, err)
			}
		}
	}
	gvks := externalKinds(s, ks)
	fills := valuetest.Sweep(3, 1) // make test-long: the full sweep
	for _, gvk := range gvks {
		for u := range filledObjects(t, ks, gvk, fills) {
			check(u, gvk)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	ins := testobjects.Inputs(t)
	for i := range 1000 {
		in := ins[i%len(ins)]
		obj := valuetest.DeepCopy(in.Obj)
		if i >= len(ins) {
			for range 1 + r.IntN(3) {
				obj = testobjects.Perturb(r, obj)
			}
		}
		if m, ok := obj.(map[string]any); ok {
			check(m, in.GVK)
		}
	}
	t.Logf("%d objects built and emitted", built)
	if built < len(gvks) {
		t.Errorf("only %d objects built for %d kinds", built, len(gvks))
	}
}

// externalKinds are the external kinds of kube-apiserver's scheme ks that
// s recognizes, in order.
func externalKinds(s *Scheme, ks *runtime.Scheme) []schema.GroupVersionKind {
	var gvks []schema.GroupVersionKind
	for gvk := range ks.AllKnownTypes() {
		if gvk.Version != runtime.APIVersionInternal && s.Recognizes(gvk) {
			gvks = append(gvks, gvk)
		}
	}
	sort.Slice(gvks, func(i, j int) bool { return gvks[i].String() < gvks[j].String() })
	return gvks
}

// TestEmitQuantityAgainstItsText holds emit's shortcut for a Quantity
// whose previous value is a string (isQuantityText) to the entry's
// ToUnstructured: the previous string itself when that is what the entry
// writes, the entry's string otherwise; on texts String caches and texts
// it does not, quantities changed by arithmetic, and texts that are not
// the quantity's.
func TestEmitQuantityAgainstItsText(t *testing.T) {
	if quantityCache < 0 {
		t.Fatal("resource.Quantity has no string field s: the shortcut is off")
	}
	p := &planner{}
	p.mu.Lock()
	n := p.node(reflect.TypeFor[resource.Quantity](), "")
	p.mu.Unlock()
	texts := quantityTexts()
	e := &emitter{}
	for _, text := range texts {
		q0, added := parsedAndAdded(t, text)
		for _, q := range []resource.Quantity{q0, added} {
			want := q.DeepCopy().ToUnstructured()
			for _, prevText := range append([]string{text, q.String()}, texts...) {
				prev := any(strings.Clone(prevText))
				got, ok := e.emit(reflect.ValueOf(&q).UnsafePointer(), n, prev, true)
				if !ok || !valuetest.BitsEqual(got, want) {
					t.Fatalf("%q as %q over %q: emitted %#v (%v), want %#v", text, q.String(), prevText, got, ok, want)
				}
				if gs, ws := got.(string), want.(string); gs == ws && prevText == ws && unsafe.StringData(gs) != unsafe.StringData(prev.(string)) {
					t.Fatalf("%q over %q: a new string, not the previous one", q.String(), prevText)
				}
			}
		}
	}
}

// TestDefaultNormalizedSeesEveryWrite holds the watch to the writes the
// defaulters make, one kind of memory at a time: into an existing map (a
// Pod's requests filled from its limits, a quantity rounded in place), a
// slice's elements (a Service's port, a container's pull policy), a new
// pointer (a Deployment's replicas). Each object, in normalized form, is
// changed by the reference's defaulting: the watch must see it, and
// DefaultNormalized give the reference's result; once defaulted, the watch
// must see nothing.
// podWithAccounts is a defaulted Pod whose serviceAccountName is name and
// serviceAccount deprecated (the same text in memory of its own).
func podWithAccounts(t *testing.T, s *Scheme, name, deprecated string) map[string]any {
	t.Helper()
	d, err := s.defaultReference(map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p"},
		"spec": map[string]any{"serviceAccountName": name, "containers": []any{map[string]any{
			"name": "c", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
			"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}}}},
		schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	if err != nil {
		t.Fatal(err)
	}
	d = valuetest.DeepCopy(d).(map[string]any)
	// Text of its own, as a decoded object's strings are: not the data
	// of name's string.
	d["spec"].(map[string]any)["serviceAccount"] = strings.Clone(deprecated)
	return d
}

// TestDefaultNormalizedReadsStringsAsText holds the watch to what emit
// writes for string fields: the defaulters writing a string field again
// with the same text (SetDefaults_PodSpec's serviceAccount from
// serviceAccountName, in a Pod's spec, a template's, a container list's
// element) change nothing, and the same Pod with other text in
// serviceAccount is a change (TestDefaultNormalizedSeesEveryWrite).
func TestDefaultNormalizedReadsStringsAsText(t *testing.T) {
	s := New()
	podGVK := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	pod := podWithAccounts(t, s, "builder", "builder")
	deploy, err := s.defaultReference(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "d"},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "a"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "a"}},
				"spec": pod["spec"]}}}, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	if err != nil {
		t.Fatal(err)
	}
	deploy = valuetest.DeepCopy(deploy).(map[string]any)
	deploy["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["serviceAccount"] = strings.Clone("builder")
	for _, c := range []struct {
		gvk schema.GroupVersionKind
		obj map[string]any
	}{{podGVK, pod}, {schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, deploy}} {
		if !checkDefaultNormalized(t, s, c.obj, c.gvk) || !s.watchUnchanged(t, c.obj, c.gvk) {
			t.Errorf("%v: the watch sees a change where the defaulters wrote the same text: %s", c.gvk, mustJSONText(c.obj))
		}
	}
	// The element of a Pod's containers, defaulted on its own: the unit
	// object holds the spec's service accounts.
	changed := valuetest.DeepCopy(pod).(map[string]any)
	spec := changed["spec"].(map[string]any)
	spec["containers"] = []any{valuetest.DeepCopy(spec["containers"].([]any)[0]).(map[string]any)}
	spec["containers"].([]any)[0].(map[string]any)["image"] = "nginx:1.28"
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	u := s.units()[podGVK][0]
	elem := spec["containers"].([]any)[0].(map[string]any)
	if d, ok := s.defaultElement(k, podGVK, u, spec, "containers", elem); !ok || !jsonvalue.SameMap(d, elem) {
		t.Errorf("a container defaulted on its own in a Pod with a service account did not come back as it is (ok %v)", ok)
	}
	if how := checkDefaultFrom(t, s, changed, pod, podGVK); how != defaultedElements {
		t.Errorf("a changed image defaulted %d, want the element alone", how)
	}
}

func TestDefaultNormalizedSeesEveryWrite(t *testing.T) {
	s := New()
	podGVK := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	container := func(resources map[string]any) map[string]any {
		return map[string]any{"name": "c", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
			"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "resources": resources}
	}
	pod := func(c map[string]any) map[string]any {
		d, err := s.defaultReference(map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "labels": map[string]any{"app": "web"}},
			"spec":     map[string]any{"containers": []any{container(nil)}}}, podGVK)
		if err != nil {
			t.Fatal(err)
		}
		d = valuetest.DeepCopy(d).(map[string]any)
		spec := d["spec"].(map[string]any)
		spec["containers"].([]any)[0] = c
		return d
	}
	cases := map[string]struct {
		gvk schema.GroupVersionKind
		obj map[string]any
	}{
		"into an existing map": {podGVK, pod(container(map[string]any{
			"limits": map[string]any{"cpu": "1", "memory": "1Gi"}, "requests": map[string]any{"memory": "1Gi"}}))},
		"a quantity rounded in a map": {podGVK, pod(container(map[string]any{
			"requests": map[string]any{"cpu": "0.0001"}}))},
		"a slice element's field": {podGVK, pod(map[string]any{"name": "c", "image": "nginx:latest",
			"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"})},
		"a port of a list": {schema.GroupVersionKind{Version: "v1", Kind: "Service"}, map[string]any{
			"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
			"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}},
		"a new pointer": {schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"}}},
		// SetDefaults_PodSpec writes serviceAccountName into
		// serviceAccount: a string of the same length, other text.
		"a string written with other text": {podGVK, podWithAccounts(t, s, "ab", "ba")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			n, err := s.normalizeReference(c.obj, c.gvk)
			if err != nil {
				t.Fatal(err)
			}
			want, err := s.defaultReference(valuetest.DeepCopy(n).(map[string]any), c.gvk)
			if err != nil {
				t.Fatal(err)
			}
			if valuetest.BitsEqual(want, n) {
				t.Fatalf("the defaulters change nothing in %s: the case tests nothing", mustJSONText(n))
			}
			if s.watchUnchanged(t, n, c.gvk) {
				t.Errorf("the watch missed the defaulters' change: %s\nto %s", mustJSONText(n), mustJSONText(want))
			}
			if checkDefaultNormalized(t, s, n, c.gvk) {
				t.Error("checkDefaultNormalized: the watch missed the change")
			}
			if !checkDefaultNormalized(t, s, want, c.gvk) {
				t.Errorf("the watch sees a change in the defaulted %s", mustJSONText(want))
			}
		})
	}
}

// TestLastStringIsScalarOut holds lastString.out to scalarOut's output for a
// string field: the same text, prev itself when prev is that text, whatever
// string the box kept first, from goroutines at once (under -race).
func TestLastStringIsScalarOut(t *testing.T) {
	var b lastString
	texts := []string{"/dev/termination-log", "File", "", "Always", "/dev/termination-log", "IfNotPresent", "File"}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := range 200 {
				s := texts[(i+g)%len(texts)]
				var prev any
				switch i % 3 {
				case 1:
					prev = s
				case 2:
					prev = texts[(i+g+1)%len(texts)]
				}
				o := b.out(s, prev)
				if got, ok := o.(string); !ok || got != s {
					t.Errorf("out(%q, %v) = %#v", s, prev, o)
					return
				}
				if p, isString := prev.(string); isString && p == s && !sameValue(o, prev) {
					t.Errorf("out(%q, %q) is not prev", s, p)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

// TestWatchWorthIsTheSame holds the defaulting of an object in normalized
// form to the reference whether defaultBuilt takes the watch or leaves it
// out (watchWorth): DefaultNormalized, PatchDefault of a label and
// NormalizeDefault of every real object (as written, normalized,
// defaulted) and of the zero and filled objects of every built-in kind,
// each run with the kind's counter set both ways, bit for bit the
// reference and the input itself where the reference returns it. And the
// counter: left out after watchMisses changed objects, taken again after
// one the defaulters left alone.
func TestWatchWorthIsTheSame(t *testing.T) {
	d := New()
	k, err := d.kube()
	if err != nil {
		t.Fatal(err)
	}
	ins := builtInInputs(t, d, 1, true)
	label := []jsonpatch.Operation{{Op: "add", Path: "/metadata/labels/team", Value: "shop", HasValue: true}}
	ways := [...]struct {
		name   string
		misses uint32
	}{{"watched", 0}, {"unwatched", watchMisses}}
	left, unchanged := 0, 0
	for _, in := range ins {
		n := d.plans.typedKind(k.scheme, in.GVK)
		if n == nil {
			continue
		}
		norm, err := d.normalizeReference(valuetest.DeepCopy(in.Obj).(map[string]any), in.GVK)
		if err != nil || norm == nil {
			continue
		}
		before := valuetest.DeepCopy(norm)
		var want, patchWant map[string]any
		var wantErr, patchErr error
		wantSame := jsonEqualsInput(d, norm, in.GVK)
		for _, way := range ways {
			err := inOneSecond(func() error {
				want, wantErr = d.defaultReference(valuetest.DeepCopy(norm).(map[string]any), in.GVK)
				patchWant, _, patchErr = d.Patch(norm, label, in.GVK)
				if patchErr == nil {
					patchWant, patchErr = d.defaultReference(patchWant, in.GVK)
				}
				n.watchMisses.Store(way.misses)
				got, err := d.DefaultNormalized(norm, in.GVK)
				if (err == nil) != (wantErr == nil) {
					return fmt.Errorf("DefaultNormalized error %v, want %v", err, wantErr)
				}
				if err := errUnlessBitsEqual(got, want); err != nil {
					return fmt.Errorf("DefaultNormalized: %w", err)
				}
				if wantErr == nil && wantSame != jsonvalue.SameMap(got, norm) {
					return fmt.Errorf("DefaultNormalized returns the input: %v, the reference %v", jsonvalue.SameMap(got, norm), wantSame)
				}
				if wantErr == nil && jsonvalue.SameMap(got, norm) {
					unchanged++
				}
				n.watchMisses.Store(way.misses)
				got, err = d.NormalizeDefault(norm, in.GVK)
				if (err == nil) != (wantErr == nil) {
					return fmt.Errorf("NormalizeDefault error %v, want %v", err, wantErr)
				}
				if err := errUnlessBitsEqual(got, want); err != nil {
					return fmt.Errorf("NormalizeDefault: %w", err)
				}
				n.watchMisses.Store(way.misses)
				got, _, err = d.PatchDefault(norm, label, in.GVK)
				if (err == nil) != (patchErr == nil) {
					return fmt.Errorf("PatchDefault error %v, want %v", err, patchErr)
				}
				if err := errUnlessBitsEqual(got, patchWant); err != nil {
					return fmt.Errorf("PatchDefault: %w", err)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s, %s: %v\ninput: %#v", in.Name, way.name, err, before)
			}
			if !valuetest.BitsEqual(norm, before) {
				t.Fatalf("%s, %s: the input was modified", in.Name, way.name)
			}
		}
		if wantErr == nil && !wantSame {
			// Changed by the defaulters: counted until left out, where
			// the watch is taken at all (the fast path, of a kind with
			// apiVersion and kind).
			n.watchMisses.Store(0)
			for i := range watchMisses {
				if !watchWorth(n) {
					t.Fatalf("%s: the watch left out before %d changed objects", in.Name, watchMisses)
				}
				if _, err := d.DefaultNormalized(norm, in.GVK); err != nil {
					t.Fatal(err)
				}
				if i == 0 && n.watchMisses.Load() == 0 {
					break
				}
			}
			if n.watchMisses.Load() != 0 {
				if watchWorth(n) {
					t.Fatalf("%s: the watch still taken after %d changed objects", in.Name, watchMisses)
				}
				left++
			}
		} else if wantErr == nil && hasTypeMeta(n, in.GVK) {
			// Left alone: taken again (a kind without apiVersion and kind
			// is never watched).
			n.watchMisses.Store(watchMisses)
			if _, err := d.DefaultNormalized(norm, in.GVK); err != nil {
				t.Fatal(err)
			}
			if !watchWorth(n) {
				t.Fatalf("%s: the watch still left out after an object the defaulters left alone", in.Name)
			}
		}
		n.watchMisses.Store(0)
	}
	t.Logf("%d objects, %d changed by the defaulters, %d left alone", len(ins), left, unchanged/len(ways))
	if left == 0 || unchanged == 0 {
		t.Errorf("both kinds of object are needed: %d changed, %d left alone", left, unchanged)
	}
}

// hasTypeMeta tells whether the typed object of root n keeps the
// apiVersion and kind of gvk (WatchEvent has none).
func hasTypeMeta(n *node, gvk schema.GroupVersionKind) bool {
	obj, ok := reflect.New(n.t).Interface().(runtime.Object)
	if !ok {
		return false
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj.GetObjectKind().GroupVersionKind() == gvk
}

// defaultedTyped is the plan of in's kind and the address of in built as
// that kind's typed object and defaulted by upstream's defaulters; a nil
// plan when the kind has no struct plan of its own or the object does not
// convert.
func defaultedTyped(d *Scheme, k *kube, in testobjects.Input) (*node, unsafe.Pointer) {
	n := d.plans.typedKind(k.scheme, in.GVK)
	if n == nil || n.kind != nodeStruct || n.toCustom {
		return nil, nil
	}
	typed, err := k.typed(in.Obj, in.GVK)
	if err != nil {
		return nil, nil
	}
	k.scheme.Default(typed)
	return n, reflect.ValueOf(typed).UnsafePointer()
}

// TestEmitOwnIsEmit holds emitOwn, which writes the output's root into
// the input's root map, to emitObject, which writes a new one: every real
// object (as written, normalized, defaulted) and the zero and filled
// objects of every built-in kind, defaulted in typed form and written
// against a copy of the input, and of the input with keys the output
// lacks: bit for bit the same output, in the map given.
func TestEmitOwnIsEmit(t *testing.T) {
	d := New()
	k, err := d.kube()
	if err != nil {
		t.Fatal(err)
	}
	ins := builtInInputs(t, d, 1, false)
	written, kept := 0, 0
	for _, in := range ins {
		n, at := defaultedTyped(d, k, in)
		if n == nil {
			continue
		}
		for _, extra := range []bool{false, true} {
			prev := valuetest.DeepCopy(in.Obj).(map[string]any)
			if extra {
				prev["zz-not-a-field"] = "x"
				prev["status"] = map[string]any{"odd": true}
			}
			want, ok := d.plans.emitObject(at, n, valuetest.DeepCopy(prev).(map[string]any))
			own := valuetest.DeepCopy(prev).(map[string]any)
			got, wrote, ownOK := d.plans.emitOwn(at, n, own)
			if ok != ownOK {
				t.Fatalf("%s: emitOwn ok %v, emitObject %v", in.Name, ownOK, ok)
			}
			if !ok {
				continue
			}
			if !jsonvalue.SameMap(got, own) {
				t.Fatalf("%s: emitOwn returned another map than the one given", in.Name)
			}
			if !valuetest.BitsEqual(got, want) {
				t.Fatalf("%s (extra keys %v): emitOwn wrote\n%#v\nemitObject\n%#v", in.Name, extra, got, want)
			}
			if wrote == valuetest.BitsEqual(got, prev) && wrote {
				t.Fatalf("%s: emitOwn says it wrote, and the output is its input", in.Name)
			}
			if wrote {
				written++
			} else {
				kept++
			}
		}
	}
	t.Logf("%d outputs written into the input's root, %d left as they were", written, kept)
	if written == 0 || kept == 0 {
		t.Errorf("both cases are needed: %d written, %d kept", written, kept)
	}
}

// TestFieldIsEmptyIsIsEmptyAt holds the emptiness that emit reads of an
// omitempty field through one word of its value (field.isEmpty) to
// isEmptyAt, on empty and non-empty values of every kind of field,
// named types included, and on every field of the built-in kinds' zero
// objects.
func TestFieldIsEmptyIsIsEmptyAt(t *testing.T) {
	type named string
	type s struct {
		S  string              `json:"s,omitempty"`
		N  named               `json:"n,omitempty"`
		L  []int32             `json:"l,omitempty"`
		B  []byte              `json:"b,omitempty"`
		P  *int32              `json:"p,omitempty"`
		M  map[string]string   `json:"m,omitempty"`
		MI map[string]int64    `json:"mi,omitempty"`
		I  int32               `json:"i,omitempty"`
		F  bool                `json:"f,omitempty"`
		Q  resource.Quantity   `json:"q,omitempty"`
		MS map[string][]string `json:"ms,omitempty"`
	}
	one := int32(1)
	values := []s{
		{},
		{S: "x", N: "y", L: []int32{1}, B: []byte{0}, P: &one, M: map[string]string{"a": ""}, MI: map[string]int64{"a": 0}, I: 1, F: true, Q: resource.MustParse("1"), MS: map[string][]string{"a": nil}},
		{L: []int32{}, B: []byte{}, M: map[string]string{}, MI: map[string]int64{}, MS: map[string][]string{}},
	}
	p := &planner{}
	n := p.typedType(reflect.TypeFor[s]())
	if n == nil {
		t.Fatal("no plan")
	}
	byWord := 0
	for i := range values {
		at := unsafe.Pointer(&values[i])
		for j := range n.fields {
			f := &n.fields[j]
			if f.wordEmpty {
				byWord++
			}
			if got, want := f.isEmpty(unsafe.Add(at, f.own)), isEmptyAt(unsafe.Add(at, f.own), f.node); got != want {
				t.Errorf("value %d, field %s: isEmpty %v, isEmptyAt %v", i, f.name, got, want)
			}
		}
	}
	if byWord != 5*len(values) {
		t.Errorf("%d fields read by their word, want %d", byWord, 5*len(values))
	}
	d := New()
	k, err := d.kube()
	if err != nil {
		t.Fatal(err)
	}
	for _, gvk := range kindGVKs(t, d) {
		root := d.plans.typedKind(k.scheme, gvk)
		if root == nil {
			continue
		}
		zero := reflect.New(root.t).UnsafePointer()
		for j := range root.fields {
			f := &root.fields[j]
			if got, want := f.isEmpty(unsafe.Add(zero, f.own)), isEmptyAt(unsafe.Add(zero, f.own), f.node); got != want {
				t.Errorf("%s.%s (zero): isEmpty %v, isEmptyAt %v", gvk.Kind, f.name, got, want)
			}
		}
	}
}

// TestFieldsLeftIsEveryLookup holds emit, whose fields stop looking
// fields up in the previous map once every entry of it was found
// (fieldsLeft), to emit looking every field up (everyLookup): the same
// output bit for bit, sharing exactly the same maps and lists of the
// previous value, on every real object (as written, normalized, defaulted)
// and the zero and a filled object of every built-in kind, defaulted in
// typed form, against the object itself, against a copy with an unknown
// key added (never all found) and against copies with random entries of
// random maps deleted (found sooner).
func TestFieldsLeftIsEveryLookup(t *testing.T) {
	d := New()
	k, err := d.kube()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(29, 26))
	compared, skipped := 0, 0
	for _, in := range builtInInputs(t, d, 1, true) {
		n, at := defaultedTyped(d, k, in)
		if n == nil {
			continue
		}
		prevs := []map[string]any{in.Obj}
		extra := valuetest.DeepCopy(in.Obj).(map[string]any)
		extra["zz-not-a-field"] = "x"
		prevs = append(prevs, extra)
		for range 3 {
			cut := valuetest.DeepCopy(in.Obj).(map[string]any)
			deleteRandomEntries(rng, cut, 0.2)
			prevs = append(prevs, cut)
		}
		for i, prev := range prevs {
			got, ok := (&emitter{}).emit(at, n, prev, true)
			want, wantOK := (&emitter{everyLookup: true}).emit(at, n, prev, true)
			if ok != wantOK {
				t.Fatalf("%s (prev %d): ok %v, every lookup %v", in.Name, i, ok, wantOK)
			}
			if !ok {
				skipped++
				continue
			}
			if !valuetest.BitsEqual(got, want) {
				t.Fatalf("%s (prev %d): emit wrote\n%#v\nwith every lookup\n%#v", in.Name, i, got, want)
			}
			if path, same := sameSharing(got, want, prev, ""); !same {
				t.Fatalf("%s (prev %d): at %s, one output shares the previous value, the other not", in.Name, i, path)
			}
			compared++
		}
	}
	t.Logf("%d outputs compared, %d left to the reference by both", compared, skipped)
	if compared == 0 {
		t.Fatal("nothing compared")
	}
}

// deleteRandomEntries deletes each entry of m and of the maps below it
// with probability p.
func deleteRandomEntries(rng *rand.Rand, v any, p float64) {
	switch x := v.(type) {
	case map[string]any:
		for k, item := range x {
			if rng.Float64() < p {
				delete(x, k)
				continue
			}
			deleteRandomEntries(rng, item, p)
		}
	case []any:
		for _, item := range x {
			deleteRandomEntries(rng, item, p)
		}
	}
}

// sameSharing tells whether a and b, two outputs equal bit for bit, are
// each the previous value prev (the same map or list) at the same places.
func sameSharing(a, b, prev any, path string) (string, bool) {
	switch x := a.(type) {
	case map[string]any:
		y, _ := b.(map[string]any)
		pm, _ := prev.(map[string]any)
		if pm != nil && jsonvalue.SameMap(x, pm) != jsonvalue.SameMap(y, pm) {
			return path, false
		}
		for k, item := range x {
			var pv any
			if pm != nil {
				pv = pm[k]
			}
			if at, same := sameSharing(item, y[k], pv, path+"/"+k); !same {
				return at, false
			}
		}
	case []any:
		y, _ := b.([]any)
		pl, _ := prev.([]any)
		if len(pl) > 0 && len(x) > 0 && len(y) > 0 && (&x[0] == &pl[0]) != (&y[0] == &pl[0]) {
			return path, false
		}
		for i, item := range x {
			var pv any
			if i < len(pl) {
				pv = pl[i]
			}
			if at, same := sameSharing(item, y[i], pv, fmt.Sprintf("%s/%d", path, i)); !same {
				return at, false
			}
		}
	}
	return path, true
}

// TestQuantityTextsKept holds isQuantityText's kept texts (quantities
// without an inf.Dec, formatted once per emitter) to the quantity's own
// String: every quantity, uncached, asked against its text and others',
// twice (the second time from what the emitter kept), in one emitter
// that keeps texts and in a new emitter for each.
func TestQuantityTextsKept(t *testing.T) {
	if quantityDec < 0 {
		t.Fatal("resource.Quantity has no inf.Dec field d: the texts are never kept")
	}
	texts := append(quantityTexts(), "1500m", "1.5", "0.5Gi", "512Mi")
	var qs []resource.Quantity
	for _, text := range texts {
		q, added := parsedAndAdded(t, text)
		qs = append(qs, q, added, *resource.NewQuantity(int64(len(text))*1024, resource.BinarySI),
			*resource.NewMilliQuantity(int64(len(text))*1000, resource.DecimalSI))
	}
	kept := &emitter{}
	for round := range 2 {
		for i := range qs {
			want := qs[i].DeepCopy()
			wantText := want.String()
			for _, s := range append([]string{wantText}, texts...) {
				q := qs[i] // uncached: no String called on qs
				if got := kept.isQuantityText(&q, s); got != (s == wantText) {
					t.Fatalf("round %d: %q against %q: kept says %v", round, wantText, s, got)
				}
				q = qs[i]
				if got := (&emitter{}).isQuantityText(&q, s); got != (s == wantText) {
					t.Fatalf("%q against %q: new says %v", wantText, s, got)
				}
			}
		}
	}
	if len(kept.quantities) != maxQuantityTexts {
		t.Fatalf("%d texts kept, want %d", len(kept.quantities), maxQuantityTexts)
	}
}

// quantityTexts are texts of quantities of every format, canonical and not.
func quantityTexts() []string {
	return []string{"0", "1", "2", "100m", "250m", "1000m", "0.1", "1.5", "1e3", "1E3", "2e-3", "1k", "1M", "1.5Gi", "256Mi", "500Mi", "1Gi", "1024", "1023", "1Ki", "2048Ki", "-1", "-256Mi", "12345678901234567890", "0.0000000001", "100n", "1.0", "3Ei"}
}

// parsedAndAdded is the quantity of text, and that quantity plus 1m.
func parsedAndAdded(t *testing.T, text string) (q, added resource.Quantity) {
	t.Helper()
	q, err := resource.ParseQuantity(text)
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	added = q.DeepCopy()
	added.Add(resource.MustParse("1m"))
	return q, added
}
