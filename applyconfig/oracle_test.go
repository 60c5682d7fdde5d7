package applyconfig

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"sigs.k8s.io/yaml"
)

var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	podGVK        = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	configMapGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	widgetGVK     = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
)

var (
	testSchemasOnce sync.Once
	testSchemas     *Schemas
)

// sharedSchemas is one registry for all tests, with the widgets CRD added, so
// type converters are built once per test binary.
func sharedSchemas(tb testing.TB) *Schemas {
	tb.Helper()
	testSchemasOnce.Do(func() {
		s := NewSchemas()
		if err := s.AddCRD(loadCRD(tb, "testdata/widgets.crd.yaml")); err != nil {
			tb.Fatalf("adding CRD: %v", err)
		}
		testSchemas = s
	})
	return testSchemas
}

func loadCRD(tb testing.TB, path string) *unstructured.Unstructured {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return &unstructured.Unstructured{Object: fromYAML(tb, string(raw))}
}

// fromYAML decodes YAML the way the API server decodes JSON into unstructured
// objects: whole numbers become int64.
func fromYAML(tb testing.TB, s string) map[string]any {
	tb.Helper()
	j, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		tb.Fatalf("yaml: %v\n%s", err, s)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(j, &m); err != nil {
		tb.Fatalf("json: %v", err)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// upstreamMerge is the oracle: what kube-apiserver's ApplyConfiguration
// patcher does with an evaluated Object{...} value.
func upstreamMerge(tc managedfields.TypeConverter, live *unstructured.Unstructured, value map[string]any) (*unstructured.Unstructured, error) {
	patchObject := unstructured.Unstructured{Object: value}
	patchObject.SetGroupVersionKind(live.GetObjectKind().GroupVersionKind())
	patched, err := patch.ApplyStructuredMergeDiff(tc, live, &patchObject)
	if err != nil {
		return nil, fmt.Errorf("error applying patch: %w", err)
	}
	u, ok := patched.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("oracle returned %T", patched)
	}
	return u, nil
}

const atomicPrefix = "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: "

// sameError compares error texts; the list of atomic paths is compared as a
// set because upstream orders it by Go map iteration.
func sameError(a, b string) bool {
	if a == b {
		return true
	}
	if strings.HasPrefix(a, atomicPrefix) && strings.HasPrefix(b, atomicPrefix) {
		pa := strings.Split(strings.TrimPrefix(a, atomicPrefix), ", ")
		pb := strings.Split(strings.TrimPrefix(b, atomicPrefix), ", ")
		slices.Sort(pa)
		slices.Sort(pb)
		return slices.Equal(pa, pb)
	}
	return false
}

// compareWithUpstream runs Merge and the oracle on independent copies of the
// inputs and fails unless they agree exactly. It also checks that Merge left
// its inputs alone. It returns Merge's result.
func compareWithUpstream(t testing.TB, tc managedfields.TypeConverter, live, patchValue map[string]any) (*unstructured.Unstructured, error) {
	t.Helper()
	liveMine := runtime.DeepCopyJSON(live)
	patchMine := runtime.DeepCopyJSON(patchValue)
	got, err := Merge(tc, &unstructured.Unstructured{Object: liveMine}, patchMine)

	want, wantErr := upstreamMerge(tc, &unstructured.Unstructured{Object: runtime.DeepCopyJSON(live)}, runtime.DeepCopyJSON(patchValue))

	if !reflect.DeepEqual(liveMine, live) {
		t.Errorf("Merge modified the live object")
	}
	if !reflect.DeepEqual(patchMine, patchValue) {
		t.Errorf("Merge modified the patch")
	}
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("error mismatch:\n mutatis:  %v\n upstream: %v", err, wantErr)
	case err != nil:
		if !sameError(err.Error(), wantErr.Error()) && !upstreamCanSay(tc, live, patchValue, err.Error()) {
			t.Fatalf("error text mismatch:\n mutatis:  %s\n upstream: %s", err, wantErr)
		}
	default:
		if !reflect.DeepEqual(got.Object, want.Object) {
			t.Fatalf("result mismatch:\n mutatis:  %#v\n upstream: %#v", got.Object, want.Object)
		}
	}
	return got, err
}

// upstreamCanSay reports whether upstream, run again, ever returns the error
// text msg. Structured-merge-diff validates maps in Go map order and stops at the
// first error, so when a patch has several problems upstream's message varies
// from run to run; since Merge calls the same converter, any of them is right.
func upstreamCanSay(tc managedfields.TypeConverter, live, patchValue map[string]any, msg string) bool {
	for range 200 {
		_, err := upstreamMerge(tc, &unstructured.Unstructured{Object: runtime.DeepCopyJSON(live)}, runtime.DeepCopyJSON(patchValue))
		if err != nil && sameError(err.Error(), msg) {
			return true
		}
	}
	return false
}
