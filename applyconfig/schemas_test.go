package applyconfig

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTypeConverterForUnknownKindIsUpstreams503(t *testing.T) {
	s := NewSchemas()
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "example.com", Version: "v1", Kind: "Widget"},
		{Group: "apps", Version: "v1", Kind: "Nope"},
		{Version: "v1", Kind: ""},
		{},
	} {
		_, err := s.TypeConverter(gvk)
		want := fmt.Sprintf("Resource kind %s not found. There can be a delay between when CustomResourceDefinitions are created and when they are available.", gvk)
		var status *apierrors.StatusError
		if !errors.As(err, &status) || status.Status().Code != http.StatusServiceUnavailable || err.Error() != want {
			t.Errorf("%v: error = %#v, want 503 %q", gvk, err, want)
		}
	}
}

func TestTypeConverterBuiltins(t *testing.T) {
	s := NewSchemas()
	for _, gvk := range []schema.GroupVersionKind{
		deploymentGVK, podGVK, configMapGVK,
		{Group: "batch", Version: "v1", Kind: "Job"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingAdmissionPolicy"},
	} {
		tc, err := s.TypeConverter(gvk)
		if err != nil || tc == nil {
			t.Errorf("%v: %v", gvk, err)
		}
	}
}

func TestCRDLifecycle(t *testing.T) {
	s := NewSchemas()
	crdObj := loadCRD(t, "testdata/widgets.crd.yaml")
	var typed apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(crdObj.Object, &typed); err != nil {
		t.Fatal(err)
	}
	if err := s.AddCRD(&typed); err != nil {
		t.Fatal(err)
	}

	t.Run("a served version has a converter, built once", func(t *testing.T) {
		a, err := s.TypeConverter(widgetGVK)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := s.TypeConverter(widgetGVK)
		if a != b {
			t.Error("type converter was rebuilt")
		}
	})
	t.Run("a version that is not served has none", func(t *testing.T) {
		if _, err := s.TypeConverter(schema.GroupVersionKind{Group: "example.com", Version: "v1alpha1", Kind: "Widget"}); !apierrors.IsServiceUnavailable(err) {
			t.Errorf("error = %v, want 503", err)
		}
	})
	t.Run("re-adding replaces the versions", func(t *testing.T) {
		changed := typed.DeepCopy()
		changed.Spec.Versions[0].Served = true
		changed.Spec.Versions[1].Served = false
		if err := s.AddCRD(changed); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TypeConverter(widgetGVK); !apierrors.IsServiceUnavailable(err) {
			t.Errorf("v1: error = %v, want 503", err)
		}
		tc, err := s.TypeConverter(schema.GroupVersionKind{Group: "example.com", Version: "v1alpha1", Kind: "Widget"})
		if err != nil {
			t.Fatal(err)
		}
		// v1alpha1 preserves unknown fields at the root.
		live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1alpha1", "kind": "Widget", "spec": map[string]any{"a": int64(1)}}}
		got, err := Merge(tc, live, map[string]any{"spec": map[string]any{"b": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if spec := got.Object["spec"].(map[string]any); spec["a"] != int64(1) || spec["b"] != "x" {
			t.Errorf("spec = %v", spec)
		}
	})
	t.Run("removing forgets every version", func(t *testing.T) {
		s.RemoveCRD("widgets.example.com")
		s.RemoveCRD("widgets.example.com")
		if _, err := s.TypeConverter(schema.GroupVersionKind{Group: "example.com", Version: "v1alpha1", Kind: "Widget"}); !apierrors.IsServiceUnavailable(err) {
			t.Errorf("error = %v, want 503", err)
		}
	})
	t.Run("a CRD version without a schema merges as upstream does", func(t *testing.T) {
		noSchema := typed.DeepCopy()
		noSchema.Spec.Versions[1].Schema = nil
		if err := s.AddCRD(noSchema); err != nil {
			t.Fatal(err)
		}
		tc, err := s.TypeConverter(widgetGVK)
		if err != nil {
			t.Fatal(err)
		}
		live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget"}}
		_, _ = compareWithUpstream(t, tc, live.Object, map[string]any{"spec": map[string]any{"b": "x"}})
	})
}

func TestAddCRDRefusesBadInput(t *testing.T) {
	s := NewSchemas()
	for name, obj := range map[string]runtime.Object{
		"another type":  &apiextensionsv1.CustomResourceDefinitionList{},
		"no name":       &apiextensionsv1.CustomResourceDefinition{},
		"no kind":       &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1ObjectMeta("x.example.com")},
		"bad structure": &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}, "spec": "nope"}},
	} {
		if err := s.AddCRD(obj); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestSchemasConcurrentUse(t *testing.T) {
	s := NewSchemas()
	crd := loadCRD(t, "testdata/widgets.crd.yaml")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i % 4 {
			case 0:
				_ = s.AddCRD(crd)
			case 1:
				s.RemoveCRD("widgets.example.com")
			case 2:
				_, _ = s.TypeConverter(widgetGVK)
				_, _ = s.DeclType(widgetGVK)
			default:
				if _, err := s.TypeConverter(deploymentGVK); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

func TestDeclType(t *testing.T) {
	s := sharedSchemas(t)
	decl, err := s.DeclType(widgetGVK)
	if err != nil {
		t.Fatal(err)
	}
	spec, ok := decl.Fields["spec"]
	if !ok {
		t.Fatalf("no spec field in %v", decl)
	}
	for field, want := range map[string]int64{"ports": 16, "name": 63 * 4 /* bytes */, "settings": 8} {
		f, ok := spec.Type.Fields[field]
		if !ok {
			t.Errorf("no spec.%s", field)
			continue
		}
		if f.Type.MaxElements != want {
			t.Errorf("spec.%s MaxElements = %d, want %d", field, f.Type.MaxElements, want)
		}
	}
	for _, f := range []string{"apiVersion", "kind", "metadata"} {
		if _, ok := decl.Fields[f]; !ok {
			t.Errorf("root lacks %s", f)
		}
	}
	if again, _ := s.DeclType(widgetGVK); again != decl {
		t.Error("DeclType was rebuilt")
	}

	for _, gvk := range []schema.GroupVersionKind{deploymentGVK, {Group: "x", Version: "v1", Kind: "Y"}} {
		if _, err := s.DeclType(gvk); !errors.Is(err, ErrNoSchema) {
			t.Errorf("%v: error = %v, want ErrNoSchema", gvk, err)
		}
	}
}

func metav1ObjectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
