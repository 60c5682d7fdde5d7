package costs

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	celopenapi "k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"github.com/mutatis-dev/mutatis/applyconfig"
)

// builtinDeclType returns the CEL declaration type of a built-in kind, sized
// as kube-apiserver sizes a schema without maxItems, maxProperties or
// maxLength: from the 3 MiB request size (common.SchemaDeclType on the
// resource root). The schema is the structured-merge-diff schema of
// client-go's applyconfigurations (the one MutatingAdmissionPolicy merges
// with), turned into OpenAPI; it declares no required fields, so every
// object's smallest serialized form is "{}" and the bounds are those of
// kube-apiserver's estimator for that schema. nil when gvk has no schema.
func builtinDeclType(schemas *applyconfig.Schemas, gvk schema.GroupVersionKind) *apiservercel.DeclType {
	tc, err := schemas.TypeConverter(gvk)
	if err != nil {
		return nil
	}
	stub := &unstructured.Unstructured{Object: map[string]any{}}
	stub.SetGroupVersionKind(gvk)
	tv, err := tc.ObjectToTyped(stub)
	if err != nil {
		return nil
	}
	c := &smdToOpenAPI{s: tv.Schema(), active: map[string]bool{}}
	root := c.of(tv.TypeRef())
	if root == nil {
		return nil
	}
	return common.SchemaDeclType(&celopenapi.Schema{Schema: root}, true)
}

// smdToOpenAPI converts a structured-merge-diff schema into the OpenAPI
// schema kube-apiserver's CEL declarations are built from. A named type
// that contains itself is left out where it recurs (CEL declarations are
// finite).
type smdToOpenAPI struct {
	s      *smdschema.Schema
	active map[string]bool
}

func (c *smdToOpenAPI) of(tr smdschema.TypeRef) *spec.Schema {
	if tr.NamedType != nil {
		name := *tr.NamedType
		if c.active[name] {
			return nil
		}
		a, ok := c.s.Resolve(tr)
		if !ok {
			return nil
		}
		c.active[name] = true
		defer delete(c.active, name)
		return c.atom(a)
	}
	return c.atom(tr.Inlined)
}

func (c *smdToOpenAPI) atom(a smdschema.Atom) *spec.Schema {
	switch {
	case a.Scalar != nil:
		switch *a.Scalar {
		case smdschema.String:
			return &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}}}
		case smdschema.Boolean:
			return &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"boolean"}}}
		case smdschema.Numeric:
			return &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"number"}}}
		}
		// Untyped scalars (int-or-string, quantities): sized as a string.
		s := &spec.Schema{}
		s.AddExtension("x-kubernetes-int-or-string", true)
		return s
	case a.List != nil:
		items := c.of(a.List.ElementType)
		if items == nil {
			return nil
		}
		return &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"array"}, Items: &spec.SchemaOrArray{Schema: items}}}
	case a.Map != nil:
		s := &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}
		if len(a.Map.Fields) == 0 {
			elem := c.of(a.Map.ElementType)
			if elem == nil {
				return s
			}
			s.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: elem}
			return s
		}
		s.Properties = make(map[string]spec.Schema, len(a.Map.Fields))
		for _, f := range a.Map.Fields {
			if fs := c.of(f.Type); fs != nil {
				s.Properties[f.Name] = *fs
			}
		}
		return s
	}
	return nil
}
