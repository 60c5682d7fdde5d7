package costs

import (
	"encoding/json"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schemaresolver "k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/mutatis-dev/mutatis/costs/internal/kindschema"
)

// ResolveSchema returns the OpenAPI schema of gvk, every reference
// resolved, as kube-controller-manager's ValidatingAdmissionPolicy type
// checker resolves it (its SchemaResolver: the built-in kinds' definitions,
// resolver.NewDefinitionsSchemaResolver, combined with
// resolver.ClientDiscoveryResolver for the rest): a built-in kind from the
// embedded definitions (costs/internal/kindschema), a kind a loaded
// CustomResourceDefinition serves from the OpenAPI v3 document
// kube-apiserver serves for its group/version (apiextensions-apiserver's
// builder, with the options of its openapiv3 controller, through JSON as on
// the wire). An unknown kind is an error wrapping schemaresolver.ErrSchemaNotFound.
// ix so implements k8s.io/apiserver's resolver.SchemaResolver, for
// validating.TypeChecker.
func (ix *CRDIndex) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if ix.definitions == nil {
		// Held to their generator by kindschema's tests: they always parse.
		ix.definitions, _ = kindschema.Builtin()
	}
	if ix.definitions != nil {
		s, err := ix.definitions.ResolveSchema(gvk)
		if err == nil {
			return s, nil
		}
	}
	crd, ok := ix.objects[gvk]
	if !ok {
		return nil, fmt.Errorf("cannot resolve group version kind %q: %w", gvk, schemaresolver.ErrSchemaNotFound)
	}
	return crdSchema(crd, gvk)
}

var _ schemaresolver.SchemaResolver = (*CRDIndex)(nil)

// crdSchema is the schema of gvk in the OpenAPI v3 document kube-apiserver
// serves for the CRD's group/version, resolved as
// resolver.ClientDiscoveryResolver resolves it: the component whose
// x-kubernetes-group-version-kind names gvk, its references populated.
func crdSchema(u *unstructured.Unstructured, gvk schema.GroupVersionKind) (*spec.Schema, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, fmt.Errorf("decoding CustomResourceDefinition %s: %w", u.GetName(), err)
	}
	// kube-apiserver stores CRDs defaulted; the builder relies on listKind.
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	doc, err := builder.BuildOpenAPIV3(crd, gvk.Version, builder.Options{V2: false, IncludeSelectableFields: true})
	if err != nil {
		return nil, fmt.Errorf("building OpenAPI v3 for %s version %s: %w", crd.Name, gvk.Version, err)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var served spec3.OpenAPI
	if err := json.Unmarshal(raw, &served); err != nil {
		return nil, err
	}
	if served.Components == nil {
		return nil, fmt.Errorf("cannot resolve group version kind %q: %w", gvk, schemaresolver.ErrSchemaNotFound)
	}
	const refPrefix = "#/components/schemas/"
	for name, s := range served.Components.Schemas {
		var gvks []schema.GroupVersionKind
		if err := s.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil {
			return nil, err
		}
		for _, g := range gvks {
			if g != gvk {
				continue
			}
			return schemaresolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
				s, ok := served.Components.Schemas[strings.TrimPrefix(ref, refPrefix)]
				return s, ok
			}, name)
		}
	}
	return nil, fmt.Errorf("cannot resolve group version kind %q: %w", gvk, schemaresolver.ErrSchemaNotFound)
}
