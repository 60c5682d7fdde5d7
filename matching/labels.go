package matching

import "k8s.io/apimachinery/pkg/labels"

// labelsOf is the labels of an unstructured object as
// Unstructured.GetLabels reads them (NestedNullCoercingStringMap of
// metadata.labels), as a labels.Labels over the object's own map instead of
// a copy: no labels when metadata or metadata.labels is absent, null or not
// an object, or when a label's value is neither a string nor null; a null
// value is the empty string.
func labelsOf(obj map[string]any) labels.Labels {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return labels.Set(nil)
	}
	m, ok := md["labels"].(map[string]any)
	if !ok {
		return labels.Set(nil)
	}
	for _, v := range m {
		switch v.(type) {
		case string, nil:
		default:
			return labels.Set(nil)
		}
	}
	return objectLabels(m)
}

// objectLabels is a labels.Labels over an object's metadata.labels whose
// values are strings or null (labelsOf).
type objectLabels map[string]any

// Has tells whether the label exists.
func (l objectLabels) Has(label string) bool {
	_, ok := l[label]
	return ok
}

// Get is the label's value ("" when it is absent or null).
func (l objectLabels) Get(label string) string {
	v, _ := l[label].(string)
	return v
}

// Lookup is the label's value and whether it exists.
func (l objectLabels) Lookup(label string) (string, bool) {
	v, ok := l[label]
	s, _ := v.(string)
	return s, ok
}
