package validating

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/cel/common"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// A built-in param reaches upstream's CEL as its map, through
// structured-merge-diff's UnstructuredConverter (upstream's wrappedParam),
// not through a JSON round trip.
var _ value.UnstructuredConverter = (*typedParam)(nil)

// TestParamsAsCELSeesThem: the param mutatis binds (withTypeMeta) is what
// upstream's CEL sees of the param its dispatcher hands the Validator.
func TestParamsAsCELSeesThem(t *testing.T) {
	kind := &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	typed := map[string]any{"metadata": map[string]any{"name": "limits"}, "data": map[string]any{"max": "3"}}
	custom := map[string]any{"apiVersion": "example.com/v1", "kind": "Limit", "spec": map[string]any{"max": int64(3)}}
	for _, tc := range []struct {
		name string
		obj  map[string]any
		want map[string]any
	}{
		{"a built-in kind gets the paramKind's apiVersion and kind", typed,
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "limits"}, "data": map[string]any{"max": "3"}}},
		{"a custom resource is as stored", custom, custom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := withTypeMeta(tc.obj, kind); !equalJSON(got, tc.want) {
				t.Errorf("mutatis binds %#v, want %#v", got, tc.want)
			}
			got := common.SchemalessTypedToVal(upstreamParam(tc.obj, kind)).Value()
			if !equalJSON(got, tc.want) {
				t.Errorf("upstream's CEL sees %#v, want %#v", got, tc.want)
			}
		})
	}
	if _, ok := typed["apiVersion"]; ok {
		t.Error("withTypeMeta changed the param it was given")
	}
}

// equalJSON compares two unstructured values.
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if !equalJSON(v, bm[k]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}
