// Package kindschema holds the OpenAPI schemas of the built-in kinds that
// Kubernetes 1.37.1 sizes CEL expressions by, and builds their CEL
// declaration types as upstream does.
//
// The one place upstream builds a CEL declaration type from a built-in
// kind's OpenAPI schema is the type checking of admission policies
// (k8s.io/apiserver's validating.TypeChecker, run by kube-controller-manager):
// its schema resolver is resolver.NewDefinitionsSchemaResolver over
// k8s.io/kubernetes/pkg/generated/openapi.GetOpenAPIDefinitions and the
// client-go and apiextensions schemes, and the declaration type is
// common.SchemaDeclType of the resolved schema, sized from the 3 MiB
// request where the schema declares no maxItems, maxLength or
// maxProperties. Those definitions declare required fields, defaults
// and string enums, which is what sizes a list by its items' smallest
// form and a string by its longest enum value.
//
// Only package scheme may import k8s.io/kubernetes, and the definitions
// are megabytes of Go; so the generator (costs/internal/openapigen, `go
// generate ./costs`) resolves them with upstream's resolver and writes
// the definitions the built-in kinds reach, reduced to what SchemaDeclType
// reads, as JSON embedded here. The generator checks, for every kind, that
// the declaration type built from the reduced definitions is the one built
// from upstream's resolver; TestDefinitionsAreGenerated holds the file to
// the generator's output.
package kindschema

import (
	"cmp"
	_ "embed" // the generated definitions
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	celopenapi "k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

//go:generate go run ../openapigen -out zz_generated_definitions.json

// definitionsJSON is the generated file: see the package documentation.
//
//go:embed zz_generated_definitions.json
var definitionsJSON []byte

// Kind names the definition of one built-in kind.
type Kind struct {
	Group      string `json:"group,omitempty"`
	Version    string `json:"version"`
	Kind       string `json:"kind"`
	Definition string `json:"definition"`
}

// GroupVersionKind returns k's group, version and kind.
func (k Kind) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
}

// Definitions are OpenAPI definitions by name (their references name
// other definitions) and the definition of each kind. A definition is
// decoded when a kind first reaches it: a Pod reaches a few hundred of the
// thousand, and decoding them all would cost every run of `mutatis cost`
// tens of milliseconds.
type Definitions struct {
	kinds  []Kind
	byKind map[schema.GroupVersionKind]string
	raw    map[string]json.RawMessage

	mu      sync.Mutex
	decoded map[string]*spec.Schema
}

// Builtin returns the embedded definitions of Kubernetes 1.37.1.
func Builtin() (*Definitions, error) {
	d, err := Parse(definitionsJSON)
	if err != nil {
		return nil, fmt.Errorf("the built-in kinds' OpenAPI definitions: %w", err)
	}
	return d, nil
}

// Parse reads definitions written by Encode; every kind's definition must
// be there.
func Parse(data []byte) (*Definitions, error) {
	var f struct {
		Kinds       []Kind                     `json:"kinds"`
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	d := &Definitions{kinds: f.Kinds, raw: f.Definitions, byKind: make(map[schema.GroupVersionKind]string, len(f.Kinds)), decoded: map[string]*spec.Schema{}}
	for _, k := range f.Kinds {
		if _, ok := d.raw[k.Definition]; !ok {
			return nil, fmt.Errorf("kind %s: no definition %q", k.GroupVersionKind(), k.Definition)
		}
		d.byKind[k.GroupVersionKind()] = k.Definition
	}
	return d, nil
}

// Kinds lists the kinds d defines.
func (d *Definitions) Kinds() []Kind { return append([]Kind(nil), d.kinds...) }

// Names lists the definitions, sorted.
func (d *Definitions) Names() []string {
	names := make([]string, 0, len(d.raw))
	for n := range d.raw {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Definition returns the definition name (shared: not to be modified),
// ok false when d has none.
func (d *Definitions) Definition(name string) (*spec.Schema, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.decoded[name]; ok {
		return s, true, nil
	}
	raw, ok := d.raw[name]
	if !ok {
		return nil, false, nil
	}
	s := &spec.Schema{}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, true, fmt.Errorf("definition %s: %w", name, err)
	}
	d.decoded[name] = s
	return s, true, nil
}

// Encode writes kinds and definitions deterministically: kinds sorted,
// one definition a line.
func Encode(kinds []Kind, definitions map[string]*spec.Schema) ([]byte, error) {
	kinds = append([]Kind(nil), kinds...)
	slices.SortFunc(kinds, func(a, b Kind) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Kind, b.Kind))
	})
	names := make([]string, 0, len(definitions))
	for n := range definitions {
		names = append(names, n)
	}
	sort.Strings(names)
	out := []byte("{\"kinds\":[")
	for i, k := range kinds {
		b, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(out, "\n"...), b...)
	}
	out = append(out, "],\n\"definitions\":{"...)
	for i, n := range names {
		name, err := json.Marshal(n)
		if err != nil {
			return nil, err
		}
		s, err := json.Marshal(definitions[n])
		if err != nil {
			return nil, fmt.Errorf("definition %s: %w", n, err)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(append(append(out, "\n"...), name...), ':'), s...)
	}
	return append(out, "}}\n"...), nil
}

// ResolveSchema returns the schema of gvk with every reference replaced by
// the definition it names, as upstream's DefinitionsSchemaResolver does
// (resolver.PopulateRefs: a definition that contains itself is an empty
// object where it recurs).
func (d *Definitions) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	name, ok := d.byKind[gvk]
	if !ok {
		return nil, fmt.Errorf("cannot resolve %v: %w", gvk, resolver.ErrSchemaNotFound)
	}
	var decodeErr error
	s, err := resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
		s, ok, err := d.Definition(ref)
		if err != nil {
			decodeErr = err
			return nil, false
		}
		if !ok {
			return nil, false
		}
		c := *s
		return &c, true
	}, name)
	if decodeErr != nil {
		return nil, decodeErr
	}
	return s, err
}

// DeclType returns the CEL declaration type of gvk as the admission
// policies' type checker builds it: common.SchemaDeclType of the resolved
// schema as a resource root. The type checker also gives it a unique type
// name (MaybeAssignTypeName with the time of day); that name only types
// expressions and sizes nothing, so it is left out to keep results
// reproducible.
func (d *Definitions) DeclType(gvk schema.GroupVersionKind) (*apiservercel.DeclType, error) {
	s, err := d.ResolveSchema(gvk)
	if err != nil {
		return nil, err
	}
	return common.SchemaDeclType(&celopenapi.Schema{Schema: s}, true), nil
}

// Describe writes t as an indented tree of everything a cost estimate
// reads from it (CEL type, MaxElements, MinSerializedSize) and every field
// with its required flag, enum values and default: two declaration types
// that describe alike size every expression alike.
func Describe(t *apiservercel.DeclType) string {
	var b []byte
	var walk func(t *apiservercel.DeclType, indent string)
	walk = func(t *apiservercel.DeclType, indent string) {
		if t == nil {
			b = append(b, " nil\n"...)
			return
		}
		b = fmt.Appendf(b, " %s max=%d min=%d\n", t.CelType(), t.MaxElements, t.MinSerializedSize)
		if t.KeyType != nil {
			b = append(b, indent+"@keys"...)
			walk(t.KeyType, indent+"  ")
		}
		if t.ElemType != nil {
			b = append(b, indent+"@items"...)
			walk(t.ElemType, indent+"  ")
		}
		for _, n := range slices.Sorted(maps.Keys(t.Fields)) {
			f := t.Fields[n]
			b = fmt.Appendf(b, "%s%s required=%t enum=%v default=%s", indent, n, f.Required, f.EnumValues(), defaultOf(f))
			walk(f.Type, indent+"  ")
		}
	}
	walk(t, "")
	return string(b)
}

// defaultOf renders a field's default as JSON (numbers read from JSON and
// from Go literals alike).
func defaultOf(f *apiservercel.DeclField) string {
	v := f.DefaultValue()
	if v == nil {
		return "none"
	}
	b, err := json.Marshal(v.Value())
	if err != nil {
		return fmt.Sprint(v.Value())
	}
	return string(b)
}
