//go:build ignore

// Command dump is the half of costs/internal/openapigen that imports
// k8s.io/kubernetes: openapigen runs it (`go run` with a module file of its
// own, so that neither mutatis' go.mod nor its packages depend on
// k8s.io/kubernetes/pkg/generated/openapi). It resolves every built-in kind
// a policy can meet (matching.BuiltinResources, subresources included)
// as kube-controller-manager's admission policy type checker does
// (resolver.NewDefinitionsSchemaResolver over GetOpenAPIDefinitions, the
// client-go and apiextensions schemes), keeps the definitions those kinds
// reach with only what common.SchemaDeclType reads, checks that every
// kind's declaration type built from them is the one built from upstream's
// resolver, and writes them (kindschema.Encode).
package main

import (
	"flag"
	"log"
	"os"
	"slices"

	apiextensionsscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/common"
	celopenapi "k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	k8sscheme "k8s.io/client-go/kubernetes/scheme"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kubernetes/pkg/generated/openapi"

	"github.com/mutatis-dev/mutatis/costs/internal/kindschema"
	"github.com/mutatis-dev/mutatis/matching"
)

func main() {
	out := flag.String("out", "", "output file")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("openapigen: ")

	schemes := []*runtime.Scheme{k8sscheme.Scheme, apiextensionsscheme.Scheme}
	upstream := resolver.NewDefinitionsSchemaResolver(openapi.GetOpenAPIDefinitions, schemes...)
	defs := openapi.GetOpenAPIDefinitions(spec.MustCreateRef)

	// The kinds a policy can meet: every resource and subresource kind
	// of Kubernetes 1.37 (matching.BuiltinResources), as object or params.
	served := map[schema.GroupVersionKind]bool{}
	for _, r := range matching.BuiltinResources() {
		served[schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}] = true
		for _, sub := range r.Subresources {
			served[sub.Kind] = true
		}
	}
	var kinds []kindschema.Kind
	definitions := map[string]*spec.Schema{}
	for _, s := range schemes {
		for gvk := range s.AllKnownTypes() {
			if !served[gvk] || slices.ContainsFunc(kinds, func(k kindschema.Kind) bool { return k.GroupVersionKind() == gvk }) {
				continue
			}
			if _, err := upstream.ResolveSchema(gvk); err != nil {
				continue // served by an aggregated server: resolved through discovery upstream
			}
			name, err := s.ToOpenAPIDefinitionName(gvk)
			if err != nil {
				log.Fatal(err)
			}
			kinds = append(kinds, kindschema.Kind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Definition: name})
			keep(defs, definitions, name)
		}
	}
	var unresolved []string
	for gvk := range served {
		if !slices.ContainsFunc(kinds, func(k kindschema.Kind) bool { return k.GroupVersionKind() == gvk }) {
			unresolved = append(unresolved, gvk.String())
		}
	}
	slices.Sort(unresolved)
	if len(unresolved) > 0 {
		log.Printf("no definition (upstream resolves them through discovery): %v", unresolved)
	}
	b, err := kindschema.Encode(kinds, definitions)
	if err != nil {
		log.Fatal(err)
	}
	reduced, err := kindschema.Parse(b)
	if err != nil {
		log.Fatal(err)
	}
	for _, k := range reduced.Kinds() {
		gvk := k.GroupVersionKind()
		full, err := upstream.ResolveSchema(gvk)
		if err != nil {
			log.Fatal(err)
		}
		got, err := reduced.DeclType(gvk)
		if err != nil {
			log.Fatal(err)
		}
		want := common.SchemaDeclType(&celopenapi.Schema{Schema: full}, true)
		if kindschema.Describe(got) != kindschema.Describe(want) {
			log.Fatalf("%s: the declaration type of the reduced definitions is not upstream's", gvk)
		}
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d kinds, %d definitions, %d bytes", len(reduced.Kinds()), len(reduced.Names()), len(b))
}

// keep adds the definition name, reduced, and every definition it
// references to out.
func keep(defs map[string]openapicommon.OpenAPIDefinition, out map[string]*spec.Schema, name string) {
	if _, ok := out[name]; ok {
		return
	}
	def, ok := defs[name]
	if !ok {
		log.Fatalf("no definition %s", name)
	}
	var refs []string
	out[name] = reduce(&def.Schema, &refs)
	for _, r := range refs {
		keep(defs, out, r)
	}
}

// reduce returns s with only what common.SchemaDeclType and
// resolver.PopulateRefs read: type, format, items, properties,
// additionalProperties, required, default, enum, the maxItems, maxLength
// and maxProperties limits, the int-or-string and embedded-resource
// extensions, and references (direct or wrapped in allOf). Descriptions,
// patch strategies and list types size nothing.
func reduce(s *spec.Schema, refs *[]string) *spec.Schema {
	r := &spec.Schema{SchemaProps: spec.SchemaProps{
		Type:          s.Type,
		Format:        s.Format,
		Required:      s.Required,
		Default:       s.Default,
		Enum:          s.Enum,
		MaxItems:      s.MaxItems,
		MaxLength:     s.MaxLength,
		MaxProperties: s.MaxProperties,
	}}
	if u := s.Ref.GetURL(); u != nil {
		r.Ref = s.Ref
		*refs = append(*refs, s.Ref.String())
	}
	for _, a := range s.AllOf {
		if a.Ref.GetURL() != nil {
			r.AllOf = append(r.AllOf, spec.Schema{SchemaProps: spec.SchemaProps{Ref: a.Ref}})
			*refs = append(*refs, a.Ref.String())
		}
	}
	for _, ext := range []string{"x-kubernetes-int-or-string", "x-kubernetes-embedded-resource"} {
		if v, ok := s.Extensions.GetBool(ext); ok {
			r.AddExtension(ext, v)
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		r.Items = &spec.SchemaOrArray{Schema: reduce(s.Items.Schema, refs)}
	}
	if s.AdditionalProperties != nil {
		r.AdditionalProperties = &spec.SchemaOrBool{Allows: s.AdditionalProperties.Allows}
		if s.AdditionalProperties.Schema != nil {
			r.AdditionalProperties.Schema = reduce(s.AdditionalProperties.Schema, refs)
		}
	}
	if s.Properties != nil {
		r.Properties = make(map[string]spec.Schema, len(s.Properties))
		for n, p := range s.Properties {
			r.Properties[n] = *reduce(&p, refs)
		}
	}
	return r
}
