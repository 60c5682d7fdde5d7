package applyconfig

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// fastAgainstSlow merges patch into live twice, with the fast path and with
// structured-merge-diff alone, and fails unless both give the same object
// or the same error. It also checks the validity claim of the fast path's
// validation on both inputs. It reports whether the fast path answered.
func fastAgainstSlow(t testing.TB, tc managedfields.TypeConverter, live, patch map[string]any) (fast, merged bool) {
	t.Helper()
	checkValidity(t, tc, live, true)
	checkValidity(t, tc, patch, false)

	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(live)}
	slow, slowErr := merge(tc, nil, u, nil, false, nil, runtime.DeepCopyJSON(patch), false)
	liveCopy, patchCopy := runtime.DeepCopyJSON(live), runtime.DeepCopyJSON(patch)
	root := probeRoot(tc, u.GroupVersionKind())
	if root == nil {
		t.Fatalf("no schema for %v", u.GroupVersionKind())
	}
	got, err := merge(tc, root, &unstructured.Unstructured{Object: liveCopy}, nil, false, nil, patchCopy, false)
	if !reflect.DeepEqual(liveCopy, live) || !reflect.DeepEqual(patchCopy, patch) {
		t.Fatal("the merge modified its inputs")
	}
	switch {
	case (err == nil) != (slowErr == nil):
		t.Fatalf("error mismatch:\n fast: %v\n slow: %v", err, slowErr)
	case err != nil:
		// Structured-merge-diff's message varies with map order when there
		// are several problems: the fast path's must be one it can give.
		if !sameError(err.Error(), slowErr.Error()) && !upstreamCanSay(tc, live, patch, "error applying patch: "+err.Error()) {
			t.Fatalf("error text mismatch:\n fast: %v\n slow: %v", err, slowErr)
		}
		return false, false
	}
	if !reflect.DeepEqual(got.Object.Object, slow.Object.Object) {
		t.Fatalf("result mismatch:\n fast: %#v\n slow: %#v", got.Object.Object, slow.Object.Object)
	}
	if !got.valid {
		t.Fatal("a merge result is not marked valid")
	}
	return got.typed == nil, true // the fast path makes no typed value
}

// checkValidity fails when validValue accepts what structured-merge-diff's
// validation refuses (with duplicates allowed for live objects).
func checkValidity(t testing.TB, tc managedfields.TypeConverter, obj map[string]any, allowDuplicates bool) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	stub := &unstructured.Unstructured{Object: map[string]any{}}
	stub.SetGroupVersionKind(u.GroupVersionKind())
	st, err := tc.ObjectToTyped(stub)
	if err != nil {
		return // not a kind of this converter
	}
	if !validValue(newPlan(st.Schema(), st.TypeRef()), obj, allowDuplicates) {
		return
	}
	var opts []typed.ValidationOptions
	if allowDuplicates {
		opts = append(opts, typed.AllowDuplicates)
	}
	if _, err := tc.ObjectToTyped(u, opts...); err != nil {
		t.Fatalf("the fast validation accepts what structured-merge-diff refuses (%v): %#v", err, obj)
	}
}

// TestFastPathIsStructuredMergeDiff runs every merge case, and every pair of
// merge cases chained on the same live object, with and without the fast
// path, and requires the fast path to answer the common cases.
func TestFastPathIsStructuredMergeDiff(t *testing.T) {
	s := sharedSchemas(t)
	fast, total := 0, 0
	for _, c := range mergeCases() {
		live := fromYAML(t, c.live)
		tc, err := s.TypeConverter((&unstructured.Unstructured{Object: live}).GroupVersionKind())
		if err != nil {
			t.Fatal(err)
		}
		p := fromYAML(t, c.patch)
		t.Run(c.name, func(t *testing.T) {
			f, ok := fastAgainstSlow(t, tc, live, p)
			if ok {
				total++
			}
			if f {
				fast++
			}
		})
	}
	t.Logf("fast path answered %d of %d successful merge cases", fast, total)
	// Duplicate keys and nulls meeting values go to structured-merge-diff;
	// nearly every other successful merge must take the fast path.
	if fast*10 < total*8 {
		t.Fatalf("the fast path answered only %d of %d successful merge cases", fast, total)
	}
}

// TestFastPathTakesTheCommonCases names cases the fast path must answer
// itself (not structured-merge-diff), and cases it must leave to it.
func TestFastPathTakesTheCommonCases(t *testing.T) {
	s := sharedSchemas(t)
	for _, c := range []struct {
		name, live, patch string
		fast              bool
	}{
		{"label", livePod, `metadata: {labels: {b: "2"}}`, true},
		{"container env by name", liveDeployment, `spec: {template: {spec: {containers: [{name: app, env: [{name: C, value: "3"}]}]}}}`, true},
		{"new container", liveDeployment, `spec: {template: {spec: {containers: [{name: side, image: busybox}]}}}`, true},
		{"container port with a defaulted key", liveDeployment, `spec: {template: {spec: {containers: [{name: app, ports: [{containerPort: 8080}]}]}}}`, true},
		{"set union", liveDeployment, `metadata: {finalizers: [example.com/c, example.com/b]}`, true},
		{"custom resource", liveWidget, `spec: {ports: [{name: https, protocol: TCP, port: 443}], settings: {s2: v2}}`, true},
		{"duplicate keys in the live list merged", livePodDuplicates, `spec: {containers: [{name: app, image: x}]}`, false},
		{"a null label value", livePod, `metadata: {labels: {a: null}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			live := fromYAML(t, c.live)
			tc, err := s.TypeConverter((&unstructured.Unstructured{Object: live}).GroupVersionKind())
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := fastAgainstSlow(t, tc, live, fromYAML(t, c.patch)); got != c.fast {
				t.Fatalf("fast path answered: %v, want %v", got, c.fast)
			}
		})
	}
}

// TestFastPathOnPerturbedInputs merges random perturbations of the merge
// cases' patches (items reordered, duplicated, dropped, values swapped for
// nulls, numbers, strings, maps and lists) into random perturbations of the
// live objects, with and without the fast path.
func TestFastPathOnPerturbedInputs(t *testing.T) {
	s := sharedSchemas(t)
	cases := mergeCases()
	rng := rand.New(rand.NewPCG(5, 37))
	n := 3000
	if testing.Short() || os.Getenv("MUTATIS_LONG") == "" { // make test-long: the full sweep
		n = 300
	}
	fast, merged := 0, 0
	for i := range n {
		c := cases[rng.IntN(len(cases))]
		live := fromYAML(t, c.live)
		tc, err := s.TypeConverter((&unstructured.Unstructured{Object: live}).GroupVersionKind())
		if err != nil {
			t.Fatal(err)
		}
		p := fromYAML(t, c.patch)
		if rng.IntN(3) > 0 {
			p = perturb(rng, p).(map[string]any)
		}
		if rng.IntN(3) == 0 {
			live = perturb(rng, live).(map[string]any)
			live["apiVersion"], live["kind"] = fromYAML(t, c.live)["apiVersion"], fromYAML(t, c.live)["kind"]
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			f, ok := fastAgainstSlow(t, tc, live, p)
			if ok {
				merged++
			}
			if f {
				fast++
			}
		})
	}
	t.Logf("fast path answered %d of %d successful merges (%d merges)", fast, merged, n)
	if fast*2 < merged {
		t.Fatalf("the fast path answered only %d of %d successful perturbed merges", fast, merged)
	}
}

// perturb returns a copy of v with one random change somewhere inside.
func perturb(rng *rand.Rand, v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		keys := make([]string, 0, len(t))
		for k, fv := range t {
			out[k] = fv
			keys = append(keys, k)
		}
		if len(keys) == 0 || rng.IntN(6) == 0 {
			out["x"+fmt.Sprint(rng.IntN(3))] = leaf(rng)
			return out
		}
		slices.Sort(keys)
		k := keys[rng.IntN(len(keys))]
		if rng.IntN(5) == 0 {
			out[k] = leaf(rng)
		} else {
			out[k] = perturb(rng, t[k])
		}
		return out
	case []any:
		out := append([]any(nil), t...)
		switch {
		case len(out) == 0:
			return append(out, leaf(rng))
		case rng.IntN(4) == 0 && len(out) > 1:
			i, j := rng.IntN(len(out)), rng.IntN(len(out))
			out[i], out[j] = out[j], out[i]
		case rng.IntN(4) == 0:
			out = append(out, out[rng.IntN(len(out))]) // a duplicate
		case rng.IntN(4) == 0:
			i := rng.IntN(len(out))
			out = append(out[:i], out[i+1:]...)
		default:
			i := rng.IntN(len(out))
			out[i] = perturb(rng, out[i])
		}
		return out
	}
	return leaf(rng)
}

func leaf(rng *rand.Rand) any {
	switch rng.IntN(8) {
	case 0:
		return nil
	case 1:
		return int64(rng.IntN(3))
	case 2:
		return 1.5
	case 3:
		return true
	case 4:
		return map[string]any{}
	case 5:
		return []any{}
	case 6:
		return map[string]any{"name": "app"}
	}
	return "v" + fmt.Sprint(rng.IntN(3))
}
