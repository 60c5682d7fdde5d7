package applyconfig

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/valuetest"

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
	slow, slowErr := merge(tc, nil, u, nil, false, nil, runtime.DeepCopyJSON(patch), ownedNone)
	liveCopy, patchCopy := runtime.DeepCopyJSON(live), runtime.DeepCopyJSON(patch)
	root := probeRoot(tc, u.GroupVersionKind())
	if root == nil {
		t.Fatalf("no schema for %v", u.GroupVersionKind())
	}
	got, err := merge(tc, root, &unstructured.Unstructured{Object: liveCopy}, nil, false, nil, patchCopy, ownedNone)
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
	// MergeFresh's merge, into the patch's own maps: the same object, the
	// live object untouched.
	liveCopy = runtime.DeepCopyJSON(live)
	fresh, err := merge(tc, root, &unstructured.Unstructured{Object: liveCopy}, nil, false, nil, runtime.DeepCopyJSON(patch), ownedAll)
	if err != nil || !reflect.DeepEqual(fresh.Object.Object, slow.Object.Object) || !reflect.DeepEqual(liveCopy, live) {
		t.Fatalf("fresh merge: %v, live modified: %v\n fresh: %#v\n slow: %#v", err, !reflect.DeepEqual(liveCopy, live), fresh, slow.Object.Object)
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
	n := valuetest.Sweep(3000, 300) // make test-long: the full sweep
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

// TestMergeFreshIsMergeValues holds mergeFresh, which builds the merge in
// the right-hand side's own maps, to mergeValues on random objects of every
// test schema, patches made from the live objects (perturbed, so that the
// two share most paths), the merge cases, and maps that outgrow one group
// either way: the same answer, the same value, the very left-hand value
// where mergeValues gives it, the left-hand side untouched, and the
// right-hand side untouched when the merge is not modelled.
func TestMergeFreshIsMergeValues(t *testing.T) {
	type pair struct{ l, r map[string]any }
	rng := rand.New(rand.NewPCG(11, 29))
	labels := func(n int, prefix string) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprint(prefix, i)] = fmt.Sprint(i)
		}
		return m
	}
	withLabels := func(obj map[string]any, l map[string]any) map[string]any {
		obj = runtime.DeepCopyJSON(obj)
		obj["metadata"].(map[string]any)["labels"] = l
		return obj
	}
	fast, lhs, kept := 0, 0, 0
	for _, k := range planKinds(t) {
		pt := newPlan(k.s, k.tr)
		var pairs []pair
		for _, c := range mergeCases() {
			live := fromYAML(t, c.live)
			if (&unstructured.Unstructured{Object: live}).GetKind() != k.name {
				continue
			}
			patch := fromYAML(t, c.patch)
			pairs = append(pairs, pair{live, patch}, pair{live, live})
			for range 20 {
				pairs = append(pairs, pair{live, perturb(rng, patch).(map[string]any)}, pair{live, perturb(rng, live).(map[string]any)})
			}
			if _, ok := live["metadata"].(map[string]any); ok {
				// Maps past one group: a patch that grows into a table, a
				// live object whose labels do.
				pairs = append(pairs,
					pair{withLabels(live, labels(3, "a")), withLabels(map[string]any{"metadata": map[string]any{}}, labels(12, "b"))},
					pair{withLabels(live, labels(12, "a")), withLabels(map[string]any{"metadata": map[string]any{}}, labels(1, "b"))},
					pair{withLabels(live, labels(12, "a")), withLabels(map[string]any{"metadata": map[string]any{}}, labels(12, "a"))},
					pair{withLabels(live, labels(7, "a")), withLabels(map[string]any{"metadata": map[string]any{}}, labels(2, "b"))})
			}
		}
		for range 200 {
			l := genObject(rng, k.s, k.tr)
			pairs = append(pairs, pair{l, genObject(rng, k.s, k.tr)}, pair{l, perturb(rng, l).(map[string]any)})
		}
		for i, p := range pairs {
			want, wantOK := mergeValues(pt, p.l, valuetest.DeepCopy(p.r))
			r := valuetest.DeepCopy(p.r).(map[string]any)
			frozenL, frozenR := valuetest.Freeze(p.l), valuetest.Freeze(r)
			got, ok := mergeFresh(pt, p.l, r)
			frozenL.Check(t, fmt.Sprintf("%s %d: the left-hand side", k.name, i))
			if ok != wantOK {
				t.Fatalf("%s %d: mergeFresh ok=%v, mergeValues %v\nlhs %#v\nrhs %#v", k.name, i, ok, wantOK, p.l, p.r)
			}
			if !ok {
				frozenR.Check(t, fmt.Sprintf("%s %d: the right-hand side of a merge not modelled", k.name, i))
				continue
			}
			fast++
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %d: mergeFresh %#v\nmergeValues %#v\nlhs %#v\nrhs %#v", k.name, i, got, want, p.l, p.r)
			}
			gm, _ := got.(map[string]any)
			wm, _ := want.(map[string]any)
			if jsonvalue.SameMap(gm, p.l) != jsonvalue.SameMap(wm, p.l) {
				t.Fatalf("%s %d: mergeFresh gives the left-hand map itself: %v, mergeValues %v", k.name, i, jsonvalue.SameMap(gm, p.l), jsonvalue.SameMap(wm, p.l))
			}
			if jsonvalue.SameMap(gm, p.l) {
				lhs++
			} else if jsonvalue.SameMap(gm, r) {
				kept++
			}
		}
	}
	// The cases must reach the paths: merges modelled, the left-hand
	// object itself, the right-hand map built on.
	if fast < 500 || lhs < 20 || kept < 100 {
		t.Fatalf("merged %d, the left-hand object %d, the right-hand map %d: too few", fast, lhs, kept)
	}
	t.Logf("merged %d, the left-hand object %d, the right-hand map %d", fast, lhs, kept)
}

// TestMergeTasks holds mergeTasks to a slice, past its fixed room and
// truncated on either side of it.
func TestMergeTasks(t *testing.T) {
	var ts mergeTasks
	var want []mergeTask
	check := func(step string) {
		t.Helper()
		if ts.n != len(want) {
			t.Fatalf("%s: %d tasks, want %d", step, ts.n, len(want))
		}
		for i := range want {
			if got := ts.at(i); got.key != want[i].key {
				t.Fatalf("%s: task %d is %q, want %q", step, i, got.key, want[i].key)
			}
		}
	}
	add := func(n int) {
		for range n {
			task := mergeTask{key: fmt.Sprint("k", len(want))}
			ts.add(task)
			want = append(want, task)
		}
	}
	add(12)
	check("12 added")
	for _, mark := range []int{10, 9, 8, 3, 0} {
		ts.truncate(mark)
		want = want[:mark]
		check(fmt.Sprint("truncated to ", mark))
		add(5)
		check(fmt.Sprint("5 added after ", mark))
	}
}

// TestListKeyIndex holds the table of a long list's keys to a linear
// search: the first position of every key (of the list's and of others),
// and whether some key repeats, on lists of up to 100 items with keys of
// one to four fields drawn from small domains (so that keys repeat, and
// differ in one field alone).
func TestListKeyIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 41))
	randKey := func(n int) itemKey {
		k := itemKey{n: n}
		for j := range n {
			switch rng.IntN(4) {
			case 0:
				k.vals[j] = keyVal{kind: 1, s: []string{"a", "b", "", "item-00042"}[rng.IntN(4)]}
			case 1:
				k.vals[j] = keyVal{kind: 2, i: int64(rng.IntN(3)) - 1}
			case 2:
				k.vals[j] = keyVal{kind: 3, i: int64(rng.IntN(2))}
			}
		}
		return k
	}
	for range 500 {
		n := 1 + rng.IntN(4)
		idx := listKeyIndex{keys: make([]itemKey, smallList+1+rng.IntN(100))}
		for i := range idx.keys {
			idx.keys[i] = randKey(n)
		}
		linear := listKeyIndex{keys: idx.keys}
		idx.index()
		if idx.hasDuplicates() != linear.hasDuplicates() {
			t.Fatalf("hasDuplicates %v, linear %v", idx.hasDuplicates(), linear.hasDuplicates())
		}
		for i := range idx.keys {
			if got, want := idx.find(idx.keys[i]), linear.find(idx.keys[i]); got != want {
				t.Fatalf("find(keys[%d]) = %d, linear %d", i, got, want)
			}
			k := randKey(n)
			if got, want := idx.find(k), linear.find(k); got != want {
				t.Fatalf("find(%v) = %d, linear %d", k, got, want)
			}
		}
	}
}

// TestFastPathTellsNilFromEmptyList merges a nil list (a JSON null kept as
// Go's nil []any, as Go-built objects hold it) and an empty one into each
// other, beside a change that makes the merge copy its map, many times so
// that every map order is taken: structured-merge-diff keeps the patch's
// own list, null or [], and so must the fast path and mergeFresh. Two empty
// slices once counted as the same whatever their nil-ness, and the result
// then depended on which key the map gave first.
func TestFastPathTellsNilFromEmptyList(t *testing.T) {
	s := sharedSchemas(t)
	tc, err := s.TypeConverter(podGVK)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		live, patch any
	}{
		{"nil into empty", []any{}, []any(nil)},
		{"empty into nil", []any(nil), []any{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			live := fromYAML(t, livePod)
			md := live["metadata"].(map[string]any)
			md["finalizers"], md["labels"] = c.live, map[string]any{"a": "1"}
			patch := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"finalizers": c.patch, "labels": map[string]any{"a": "2"}}}
			for range 64 {
				if fast, ok := fastAgainstSlow(t, tc, live, patch); !fast || !ok {
					t.Fatalf("fast path answered %v, merged %v", fast, ok)
				}
			}
		})
	}
}
