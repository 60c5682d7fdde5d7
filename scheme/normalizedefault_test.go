package scheme

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/randfill"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// inOneSecond runs check, and runs it again (at most twice more) when it
// failed while the wall clock's second changed: defaulters that stamp the
// time (resource.k8s.io's DeviceTaint: timeAdded, now truncated to the
// second) give the two sides of a comparison different results only then.
func inOneSecond(check func() error) error {
	var err error
	for range 3 {
		start := time.Now().Unix()
		if err = check(); err == nil || time.Now().Unix() == start {
			return err
		}
	}
	return err
}

// errUnlessBitsEqual is an error when got and want differ (for
// inOneSecond).
func errUnlessBitsEqual(got, want any) error {
	if valuetest.BitsEqual(got, want) {
		return nil
	}
	return errors.New("the results differ")
}

// checkNormalizeDefault holds NormalizeDefault of obj to its definition:
// normalizeReference, then defaultReference of the result, bit for bit,
// with the same errors (a defaulting error wrapped in a *DefaultError),
// the normalized input itself when the reference returns it, obj left as
// it was. It reports whether the one walk answered.
func checkNormalizeDefault(t testing.TB, d *Scheme, obj map[string]any, gvk schema.GroupVersionKind) (oneWalk bool) {
	t.Helper()
	err := inOneSecond(func() (err error) {
		oneWalk, err = normalizeDefaultAgrees(d, obj, gvk)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return oneWalk
}

// normalizeDefaultAgrees is checkNormalizeDefault's check, its failure
// returned.
func normalizeDefaultAgrees(d *Scheme, obj map[string]any, gvk schema.GroupVersionKind) (oneWalk bool, _ error) {
	before := valuetest.DeepCopy(obj)
	got, err := d.NormalizeDefault(obj, gvk)
	if !valuetest.BitsEqual(obj, before) {
		return false, fmt.Errorf("%s: NormalizeDefault modified the object: %#v, was %#v", gvk.Kind, obj, before)
	}
	n, wantErr := d.normalizeReference(valuetest.DeepCopy(obj).(map[string]any), gvk)
	var want map[string]any
	var defaultErr error
	if wantErr == nil {
		want, defaultErr = d.defaultReference(n, gvk)
	}
	var failed *DefaultError
	switch {
	case defaultErr != nil:
		if !errors.As(err, &failed) || errText(failed.Err) != errText(defaultErr) {
			return false, fmt.Errorf("%s: error %v, want the defaulting error %v\ninput: %#v", gvk.Kind, err, defaultErr, before)
		}
	case errors.As(err, &failed):
		return false, fmt.Errorf("%s: defaulting error %v, want %v\ninput: %#v", gvk.Kind, err, wantErr, before)
	case (err == nil) != (wantErr == nil) || err != nil && errText(err) != errText(wantErr):
		return false, fmt.Errorf("%s: error %v, want %v\ninput: %#v", gvk.Kind, err, wantErr, before)
	}
	if err != nil {
		return false, nil
	}
	if !valuetest.BitsEqual(got, want) {
		return false, fmt.Errorf("%s: NormalizeDefault differs from normalizing and defaulting\ninput: %#v\n got: %#v\nwant: %#v", gvk.Kind, before, got, want)
	}
	out, oneWalk := d.normalizeDefaultFast(obj, gvk, false)
	if oneWalk && jsonvalue.Equal(obj, want) && !jsonvalue.SameMap(out, obj) {
		return false, fmt.Errorf("%s: the one walk returns a copy of an input that nothing changed", gvk.Kind)
	}
	return oneWalk, normalizeDefaultOwnAgrees(d, obj, gvk, want)
}

// normalizeDefaultOwnAgrees holds NormalizeDefaultOwn of obj's top level
// copied (the caller's own map, every map and list below it obj's) to
// want, NormalizeDefault's result, bit for bit, and obj (its maps and
// lists below the top level) left as it was.
func normalizeDefaultOwnAgrees(d *Scheme, obj map[string]any, gvk schema.GroupVersionKind, want map[string]any) error {
	frozen := valuetest.Freeze(obj)
	own := make(map[string]any, len(obj))
	for k, v := range obj {
		own[k] = v
	}
	got, err := d.NormalizeDefaultOwn(own, gvk)
	if err != nil {
		return fmt.Errorf("%s: NormalizeDefaultOwn: %v, NormalizeDefault none", gvk.Kind, err)
	}
	if frozen.Modified() {
		return fmt.Errorf("%s: NormalizeDefaultOwn modified its input (the maps and lists below the top level are obj's)", gvk.Kind)
	}
	if !valuetest.BitsEqual(got, want) {
		return fmt.Errorf("%s: NormalizeDefaultOwn differs from NormalizeDefault\ninput: %#v\n got: %#v\nwant: %#v", gvk.Kind, obj, got, want)
	}
	return nil
}

// TestNormalizeDefaultIsNormalizeThenDefault holds NormalizeDefault to
// Normalize and the defaulting on every real object as written, in
// normalized form, defaulted, and perturbed (in place and shared, as a
// merge result shares its input), and on the zero and random objects of
// every built-in kind. The one walk must answer for every real built-in
// object in normalized form.
func TestNormalizeDefaultIsNormalizeThenDefault(t *testing.T) {
	d := New()
	r := rand.New(rand.NewPCG(21, 2026))
	builtIn, oneWalk, asWritten := 0, 0, 0
	var ins []testobjects.Input
	for _, in := range testobjects.Inputs(t) {
		ins = append(ins, in)
		if checkNormalizeDefault(t, d, in.Obj, in.GVK) {
			asWritten++ // some lacking only fields walk adds (zeroWhenMissing)
		}
		if !d.types.Recognizes(in.GVK) || d.crs.Recognizes(in.GVK) {
			continue
		}
		n, err := d.Normalize(in.Obj, in.GVK)
		if err != nil {
			continue
		}
		builtIn++
		if checkNormalizeDefault(t, d, n, in.GVK) {
			oneWalk++
		}
		ins = append(ins, testobjects.Input{Name: in.Name + " normalized", GVK: in.GVK, Obj: n})
		if dflt, err := d.Default(n, in.GVK); err == nil {
			if !checkNormalizeDefault(t, d, dflt, in.GVK) {
				t.Errorf("%s defaulted: the one walk did not answer", in.Name)
			}
			ins = append(ins, testobjects.Input{Name: in.Name + " defaulted", GVK: in.GVK, Obj: dflt})
		}
	}
	t.Logf("the one walk answered for %d of %d built-in objects in normalized form, %d as written", oneWalk, builtIn, asWritten)
	if oneWalk < builtIn {
		t.Errorf("the one walk answered for only %d of %d built-in objects in normalized form", oneWalk, builtIn)
	}
	perturbed := 0
	for i := range valuetest.Sweep(3000, 400) {
		if m, in, ok := perturbedInput(r, ins, i); ok && checkNormalizeDefault(t, d, m, in.GVK) {
			perturbed++
		}
	}
	t.Logf("the one walk answered for %d perturbed objects", perturbed)
}

// TestNormalizeDefaultOnEveryKind: the zero and randomly filled objects of
// every built-in kind, as ToUnstructured writes them (normalized form)
// and with an unknown field.
func TestNormalizeDefaultOnEveryKind(t *testing.T) {
	d := New()
	ks, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	gvks := kindGVKs(t, d)
	oneWalk := 0
	for _, gvk := range gvks {
		for u := range filledObjects(t, ks, gvk, valuetest.Sweep(3, 1)) {
			u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
			if checkNormalizeDefault(t, d, u, gvk) {
				oneWalk++
			}
			u["unknownField"] = "x"
			checkNormalizeDefault(t, d, u, gvk)
		}
	}
	t.Logf("%d kinds, the one walk answered %d times", len(gvks), oneWalk)
}

// FuzzNormalizeDefault: any JSON object, as any of the real objects'
// kinds, normalizes and defaults through NormalizeDefault as through
// Normalize and the defaulting.
func FuzzNormalizeDefault(f *testing.F) {
	d := New()
	gvks := fuzzObjects(f, d, func(kind uint8, data []byte) { f.Add(kind, data) })
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		var obj map[string]any
		if utiljson.Unmarshal(data, &obj) != nil || obj == nil {
			return
		}
		checkNormalizeDefault(t, d, obj, gvks[int(kind)%len(gvks)])
	})
}

// fuzzObjects hands add each real object of testobjects, normalized where
// it can be, as JSON, with its index in the kinds it returns.
func fuzzObjects(f *testing.F, d *Scheme, add func(kind uint8, data []byte)) []schema.GroupVersionKind {
	var gvks []schema.GroupVersionKind
	for _, in := range testobjects.Inputs(f) {
		obj, err := d.Normalize(in.Obj, in.GVK)
		if err != nil {
			obj = in.Obj
		}
		data, err := json.Marshal(obj)
		if err != nil {
			f.Fatal(err)
		}
		add(uint8(len(gvks)), data)
		gvks = append(gvks, in.GVK)
	}
	return gvks
}

// perturbedInput is the i-th of a run of perturbed objects: one of ins
// with one to three random changes (unknown fields, nulls, wrong types,
// numbers, empty values), in a copy (even i) or shared as in a merge
// result (odd i); ok=false when the changes left no object.
func perturbedInput(r *rand.Rand, ins []testobjects.Input, i int) (map[string]any, testobjects.Input, bool) {
	in := ins[r.IntN(len(ins))]
	var obj any
	if i%2 == 0 {
		obj = valuetest.DeepCopy(in.Obj)
		for range 1 + r.IntN(3) {
			obj = testobjects.Perturb(r, obj)
		}
	} else {
		obj = in.Obj
		for range 1 + r.IntN(3) {
			obj = testobjects.PerturbShared(r, obj)
		}
	}
	m, ok := obj.(map[string]any)
	return m, in, ok
}

// filledObjects yields the zero object of kind gvk and those randfill fills
// with seeds 1 to fills, as ToUnstructured writes them (those it can).
func filledObjects(t testing.TB, ks *runtime.Scheme, gvk schema.GroupVersionKind, fills int) iter.Seq[map[string]any] {
	return func(yield func(map[string]any) bool) {
		for seed := range fills + 1 {
			obj, err := ks.New(gvk)
			if err != nil {
				t.Fatal(err)
			}
			if seed > 0 {
				randfill.NewWithSeed(int64(seed)).NilChance(0.3).NumElements(0, 2).MaxDepth(8).Funcs(fillFuncs...).Fill(obj)
			}
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				continue
			}
			if !yield(u) {
				return
			}
		}
	}
}

// TestInOneSecondRetriesOnlyAcrossASecond: a check that failed while the
// wall clock's second changed is run again, one that failed within a
// second is not.
func TestInOneSecondRetriesOnlyAcrossASecond(t *testing.T) {
	calls := 0
	err := inOneSecond(func() error {
		calls++
		if calls == 1 {
			// Until just past the next second: the clock changes second.
			next := time.Unix(time.Now().Unix()+1, int64(10*time.Millisecond))
			time.Sleep(time.Until(next))
			return errors.New("differs across the second")
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Errorf("across a second: %d calls, error %v; want 2 calls, no error", calls, err)
	}
	// Just past a second's start, a quick check fails within it.
	time.Sleep(time.Until(time.Unix(time.Now().Unix()+1, int64(10*time.Millisecond))))
	calls = 0
	err = inOneSecond(func() error {
		calls++
		return errors.New("differs")
	})
	if err == nil || calls != 1 {
		t.Errorf("within a second: %d calls, error %v; want 1 call and the error", calls, err)
	}
}
