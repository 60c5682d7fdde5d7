package clientgoschema

import (
	"encoding/json"
	"fmt"
	"math"

	"sigs.k8s.io/structured-merge-diff/v6/schema"
)

// The JSON form of a schema.Schema. encoding/json cannot write schema's
// own types faithfully (Atom embeds *List and *Map, whose ElementType and
// ElementRelationship fields collide when flattened, and the YAML decoder
// gives defaults as map[any]any), hence these mirrors with short names.
type (
	wireSchema struct {
		Types []wireTypeDef `json:"t"`
	}
	wireTypeDef struct {
		Name string   `json:"n"`
		Atom wireAtom `json:"a"`
	}
	wireAtom struct {
		Scalar *schema.Scalar `json:"s,omitempty"`
		List   *wireList      `json:"l,omitempty"`
		Map    *wireMap       `json:"m,omitempty"`
	}
	wireTypeRef struct {
		NamedType           *string                     `json:"n,omitempty"`
		Inlined             wireAtom                    `json:"i"`
		ElementRelationship *schema.ElementRelationship `json:"r,omitempty"`
		Nullable            bool                        `json:"null,omitempty"`
	}
	wireMap struct {
		Fields              []wireField                `json:"f,omitempty"`
		Unions              []schema.Union             `json:"u,omitempty"`
		ElementType         wireTypeRef                `json:"e"`
		ElementRelationship schema.ElementRelationship `json:"r,omitempty"`
	}
	wireField struct {
		Name    string      `json:"n"`
		Type    wireTypeRef `json:"t"`
		Default any         `json:"d,omitempty"`
	}
	wireList struct {
		ElementType         wireTypeRef                `json:"e"`
		ElementRelationship schema.ElementRelationship `json:"r,omitempty"`
		Keys                []string                   `json:"k,omitempty"`
	}
)

// Encode writes s as JSON that Decode reads back into an equal Schema.
func Encode(s *schema.Schema) ([]byte, error) {
	w := wireSchema{Types: make([]wireTypeDef, len(s.Types))}
	for i, t := range s.Types {
		w.Types[i] = wireTypeDef{Name: t.Name, Atom: toWireAtom(t.Atom)}
	}
	return json.Marshal(w)
}

// Decode reads what Encode wrote: a Schema reflect.DeepEqual to the one
// encoded (defaults in the YAML decoder's types: int, string, bool,
// float64, map[any]any, []any).
func Decode(b []byte) (*schema.Schema, error) {
	var w wireSchema
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	s := &schema.Schema{Types: make([]schema.TypeDef, len(w.Types))}
	for i, t := range w.Types {
		s.Types[i] = schema.TypeDef{Name: t.Name, Atom: fromWireAtom(t.Atom)}
	}
	return s, nil
}

func toWireAtom(a schema.Atom) wireAtom {
	w := wireAtom{Scalar: a.Scalar}
	if a.List != nil {
		w.List = &wireList{ElementType: toWireRef(a.List.ElementType), ElementRelationship: a.List.ElementRelationship, Keys: a.List.Keys}
	}
	if a.Map != nil {
		m := &wireMap{Unions: a.Map.Unions, ElementType: toWireRef(a.Map.ElementType), ElementRelationship: a.Map.ElementRelationship}
		for _, f := range a.Map.Fields {
			m.Fields = append(m.Fields, wireField{Name: f.Name, Type: toWireRef(f.Type), Default: jsonValue(f.Default)})
		}
		w.Map = m
	}
	return w
}

func toWireRef(r schema.TypeRef) wireTypeRef {
	return wireTypeRef{NamedType: r.NamedType, Inlined: toWireAtom(r.Inlined), ElementRelationship: r.ElementRelationship, Nullable: r.Nullable}
}

func fromWireAtom(w wireAtom) schema.Atom {
	a := schema.Atom{Scalar: w.Scalar}
	if w.List != nil {
		a.List = &schema.List{ElementType: fromWireRef(w.List.ElementType), ElementRelationship: w.List.ElementRelationship, Keys: w.List.Keys}
	}
	if w.Map != nil {
		m := &schema.Map{Unions: w.Map.Unions, ElementType: fromWireRef(w.Map.ElementType), ElementRelationship: w.Map.ElementRelationship}
		if w.Map.Fields != nil {
			m.Fields = make([]schema.StructField, len(w.Map.Fields))
			for i, f := range w.Map.Fields {
				m.Fields[i] = schema.StructField{Name: f.Name, Type: fromWireRef(f.Type), Default: yamlValue(f.Default)}
			}
		}
		a.Map = m
	}
	return a
}

func fromWireRef(w wireTypeRef) schema.TypeRef {
	return schema.TypeRef{NamedType: w.NamedType, Inlined: fromWireAtom(w.Inlined), ElementRelationship: w.ElementRelationship, Nullable: w.Nullable}
}

// jsonValue is a default as the YAML decoder gave it, with its maps keyed
// by strings so that encoding/json can write it.
func jsonValue(v any) any {
	switch v := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[fmt.Sprint(k)] = jsonValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i := range v {
			out[i] = jsonValue(v[i])
		}
		return out
	}
	return v
}

// yamlValue is v, decoded from JSON, as the YAML decoder of
// structured-merge-diff (go.yaml.in/yaml/v2) decodes the same value:
// integers as int, maps as map[any]any.
func yamlValue(v any) any {
	switch v := v.(type) {
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int(v)
		}
		return v
	case map[string]any:
		out := make(map[any]any, len(v))
		for k, e := range v {
			out[k] = yamlValue(e)
		}
		return out
	case []any:
		for i := range v {
			v[i] = yamlValue(v[i])
		}
		return v
	}
	return v
}
