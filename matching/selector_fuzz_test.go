package matching

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// FuzzLabelSelectors feeds random label selectors (as a policy or binding
// spells them: JSON of a metav1.LabelSelector) and random labels to the
// object selector: it must never panic, must refuse exactly the selectors
// upstream's LabelSelectorAsSelector refuses, and must match exactly as
// that selector does on the new or the old object.
func FuzzLabelSelectors(f *testing.F) {
	f.Add([]byte(`{"matchLabels": {"app": "web"}}`), "app", "web", "tier", "db")
	f.Add([]byte(`{"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "staging"]}]}`), "env", "prod", "", "")
	f.Add([]byte(`{"matchExpressions": [{"key": "env", "operator": "NotIn"}]}`), "env", "dev", "x", "y")
	f.Add([]byte(`{"matchExpressions": [{"key": "a/b/c", "operator": "Exists", "values": ["x"]}]}`), "a", "", "", "")
	f.Add([]byte(`{"matchExpressions": [{"key": "k", "operator": "Bogus"}]}`), "k", "v", "", "")
	f.Add([]byte(`{}`), "", "", "", "")
	f.Fuzz(func(t *testing.T, sel []byte, k1, v1, k2, v2 string) {
		var ls metav1.LabelSelector
		if json.Unmarshal(sel, &ls) != nil {
			return
		}
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}}
		obj.SetLabels(map[string]string{k1: v1})
		old := obj.DeepCopy()
		old.SetLabels(map[string]string{k2: v2})
		a := &Attributes{Object: obj, OldObject: old}
		got, err := matchObjectSelector(parseSelector(&ls), a)
		want, werr := metav1.LabelSelectorAsSelector(&ls)
		if (err != nil) != (werr != nil) {
			t.Fatalf("selector %s: error %v, upstream %v", sel, err, werr)
		}
		if err != nil {
			return
		}
		expected := want.Empty() || want.Matches(labels.Set(obj.GetLabels())) || want.Matches(labels.Set(old.GetLabels()))
		if got != expected {
			t.Fatalf("selector %s on %v / %v: matched %v, upstream %v", sel, obj.GetLabels(), old.GetLabels(), got, expected)
		}
	})
}
