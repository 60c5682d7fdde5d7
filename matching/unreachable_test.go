package matching

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestUnreachable: a CRD's resource in a group the table serves built in is
// unreachable (kube-apiserver's 404), one in any other group — a built-in
// group version kube-apiserver does not serve by default included — is not,
// nor is a built-in resource.
func TestUnreachable(t *testing.T) {
	crd := func(group, version, plural, kind string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: group, Scope: apiextensionsv1.NamespaceScoped,
				Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: version, Served: true, Storage: true}},
			},
		}
	}
	tab := DefaultTable()
	for _, c := range []*apiextensionsv1.CustomResourceDefinition{
		crd("storage.k8s.io", "v1alpha9", "gizmos", "Gizmo"),
		crd("internal.apiserver.k8s.io", "v1alpha1", "watchevents", "WatchEvent"),
		crd("example.com", "v1", "widgets", "Widget"),
	} {
		if err := tab.AddCRD(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		gvk  schema.GroupVersionKind
		want bool
	}{
		{schema.GroupVersionKind{Group: "storage.k8s.io", Version: "v1alpha9", Kind: "Gizmo"}, true},
		{schema.GroupVersionKind{Group: "internal.apiserver.k8s.io", Version: "v1alpha1", Kind: "WatchEvent"}, false},
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, false},
		{schema.GroupVersionKind{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"}, false},
		{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, false},
	} {
		rs := tab.ResourcesForKind(tc.gvk)
		if len(rs) == 0 {
			t.Fatalf("%s: no resource", tc.gvk)
		}
		if got := tab.Unreachable(rs[0]); got != tc.want {
			t.Errorf("Unreachable(%s) = %v, want %v", rs[0].GroupVersionResource(), got, tc.want)
		}
	}
	tab.RemoveCRD("gizmos.storage.k8s.io")
	var nilTable *Table
	if nilTable.Unreachable(Resource{Group: "storage.k8s.io", Resource: "gizmos"}) {
		t.Error("a nil table: unreachable")
	}
}
