package applyconfig

import (
	"os"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// compareChainWithUpstream merges first into live, then second into the
// result with MergeTyped reusing the first merge's typed value, and fails
// unless the first result validates as a live object (the claim MergeTyped
// rests on) and the second agrees with upstream's merge of second into the
// first result (same object, or an error upstream can give).
func compareChainWithUpstream(t *testing.T, tc managedfields.TypeConverter, live, first, second map[string]any) (chained bool) {
	t.Helper()
	m1, err := MergeTyped(tc, &unstructured.Unstructured{Object: runtime.DeepCopyJSON(live)}, runtime.DeepCopyJSON(first), nil)
	if err != nil {
		return false
	}
	if !m1.valid {
		t.Fatal("the merge result is not marked valid")
	}
	if _, err := tc.ObjectToTyped(m1.Object, typed.AllowDuplicates); err != nil {
		t.Fatalf("a merge result does not validate as a live object: %v\n%#v", err, m1.Object.Object)
	}
	snapshot := runtime.DeepCopyJSON(m1.Object.Object)
	got, err := MergeTyped(tc, &unstructured.Unstructured{Object: m1.Object.Object}, runtime.DeepCopyJSON(second), m1)
	want, wantErr := upstreamMerge(tc, &unstructured.Unstructured{Object: runtime.DeepCopyJSON(snapshot)}, runtime.DeepCopyJSON(second))
	if !reflect.DeepEqual(m1.Object.Object, snapshot) {
		t.Fatal("the chained merge modified its live object")
	}
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("error mismatch:\n mutatis:  %v\n upstream: %v", err, wantErr)
	case err != nil:
		if !sameError(err.Error(), wantErr.Error()) && !upstreamCanSay(tc, snapshot, second, err.Error()) {
			t.Fatalf("error text mismatch:\n mutatis:  %s\n upstream: %s", err, wantErr)
		}
	default:
		if !reflect.DeepEqual(got.Object.Object, want.Object) {
			t.Fatalf("result mismatch:\n mutatis:  %#v\n upstream: %#v", got.Object.Object, want.Object)
		}
	}
	return true
}

// TestChainedMergesAreMerges chains every pair of merge cases on the same
// live object: the second merge, which reuses the first one's typed value
// instead of converting and validating the object again, gives upstream's
// result.
func TestChainedMergesAreMerges(t *testing.T) {
	s := sharedSchemas(t)
	cases := mergeCases()
	chained := 0
	// make test-long (MUTATIS_LONG=1): every pair of cases on one object; by
	// default each case chained with itself and with the next on its object.
	full := !testing.Short() && os.Getenv("MUTATIS_LONG") != ""
	for i, a := range cases {
		next := -1
		for k := 1; k < len(cases) && next < 0; k++ {
			if j := (i + k) % len(cases); cases[j].live == a.live {
				next = j
			}
		}
		for j, b := range cases {
			if a.live != b.live || !full && j != i && j != next {
				continue
			}
			live := fromYAML(t, a.live)
			tc, err := s.TypeConverter((&unstructured.Unstructured{Object: live}).GroupVersionKind())
			if err != nil {
				t.Fatal(err)
			}
			t.Run(a.name+" then "+b.name, func(t *testing.T) {
				if compareChainWithUpstream(t, tc, live, fromYAML(t, a.patch), fromYAML(t, b.patch)) {
					chained++
				}
			})
		}
	}
	if chained < len(cases) {
		t.Fatalf("only %d chained merges", chained)
	}
	t.Logf("%d chained merges", chained)
}

func TestMergeTypedReusesOnlyTheSameObject(t *testing.T) {
	s := sharedSchemas(t)
	live := fromYAML(t, livePod)
	tc, err := s.TypeConverter(podGVK)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := MergeTyped(tc, &unstructured.Unstructured{Object: live}, fromYAML(t, `metadata: {labels: {b: "2"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	// An equal copy is not the same object: it is converted (and validated)
	// again, so a broken copy fails as with Merge.
	broken := runtime.DeepCopyJSON(m1.Object.Object)
	broken["spec"] = "not an object"
	_, err = MergeTyped(tc, &unstructured.Unstructured{Object: broken}, fromYAML(t, `metadata: {labels: {c: "3"}}`), m1)
	_, wantErr := Merge(tc, &unstructured.Unstructured{Object: broken}, fromYAML(t, `metadata: {labels: {c: "3"}}`))
	if err == nil || wantErr == nil || err.Error() != wantErr.Error() {
		t.Fatalf("merging into a different object with a stale typed value: %v, want %v", err, wantErr)
	}
}
