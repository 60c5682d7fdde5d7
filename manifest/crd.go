package manifest

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CRDVersion is one version of a CustomResourceDefinition: the resource it
// serves and the kind of its objects.
type CRDVersion struct {
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
}

// CRDVersions lists the versions of the CustomResourceDefinition crd
// (spec.group, spec.names.plural and spec.names.kind with each of
// spec.versions' names), in the order of spec.versions; fields missing or
// of another type read as empty.
func CRDVersions(crd *unstructured.Unstructured) []CRDVersion {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []CRDVersion
	for _, v := range versions {
		if vm, ok := v.(map[string]any); ok {
			name, _ := vm["name"].(string)
			out = append(out, CRDVersion{
				Resource: schema.GroupVersionResource{Group: group, Version: name, Resource: plural},
				Kind:     schema.GroupVersionKind{Group: group, Version: name, Kind: kind},
			})
		}
	}
	return out
}
