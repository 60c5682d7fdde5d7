package applyconfig

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

var fuzzLives = []string{liveDeployment, livePod, livePodDuplicates, liveConfigMap, liveWidget, liveWidgetDuplicates}

// fuzzLiveObjects are fuzzLives decoded.
func fuzzLiveObjects(f *testing.F) []map[string]any {
	lives := make([]map[string]any, len(fuzzLives))
	for i, l := range fuzzLives {
		lives[i] = fromYAML(f, l)
	}
	return lives
}

// fuzzPatch is a fuzz input decoded as a patch: only JSON-shaped values
// (what FromCEL and decoders produce) are meaningful.
func fuzzPatch(patchJSON []byte) (map[string]any, bool) {
	var p map[string]any
	if err := utiljson.Unmarshal(patchJSON, &p); err != nil || p == nil {
		return nil, false
	}
	if _, err := json.Marshal(p); err != nil {
		return nil, false
	}
	return p, true
}

// FuzzMerge checks that Merge never panics and always agrees with upstream's
// ApplyStructuredMergeDiff (same object or same error text), and that a
// second merge of the same patch into the result, reusing its typed value
// (MergeTyped), does too; and that the fast path agrees with
// structured-merge-diff alone (fastAgainstSlow).
func FuzzMerge(f *testing.F) {
	for i, c := range mergeCases() {
		j, err := yaml.YAMLToJSON([]byte(c.patch))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), j)
	}
	f.Add(uint8(0), []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"A"}]},{"name":"app"}]}}}}`))
	f.Add(uint8(4), []byte(`{"spec":{"items":[{"name":"a","tags":["x","x"]}],"config":{"a":[{"b":null}]}}}`))
	f.Add(uint8(2), []byte(`{"metadata":{"labels":{"a":1}},"spec":{"containers":[{"name":"app","env":[{"name":"A","value":"x"}]}]}}`))

	s := sharedSchemas(f)
	lives := fuzzLiveObjects(f)

	f.Fuzz(func(t *testing.T, which uint8, patchJSON []byte) {
		p, ok := fuzzPatch(patchJSON)
		if !ok {
			return
		}
		live := lives[int(which)%len(lives)]
		tc, err := s.TypeConverter((&unstructured.Unstructured{Object: live}).GroupVersionKind())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = compareWithUpstream(t, tc, live, p)
		_, _ = fastAgainstSlow(t, tc, live, p)
		compareChainWithUpstream(t, tc, live, p, p)
	})
}
