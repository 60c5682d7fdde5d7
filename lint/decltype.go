package lint

import (
	"strconv"

	apiservercel "k8s.io/apiserver/pkg/cel"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// declTypes builds the CEL declaration types of one structured-merge-diff
// schema, as the values appear at run time: objects are unstructured, so a
// string is a string whatever its format (a timestamp too), and numbers,
// whose schema does not tell an int from a double, and untyped or deduced
// values are dyn. A type must never be narrower than what the runtime can
// hold, or the typed check would refuse expressions that succeed. Object
// types are built once per named type (a Container is one type wherever it
// appears); a type that contains itself becomes dyn where it recurs, as CEL
// declarations must be finite.
type declTypes struct {
	s      *smdschema.Schema
	prefix string
	named  map[string]*apiservercel.DeclType
	active map[string]bool
	// inline counts the object types built for inline schemas, for names.
	inline int
	root   *apiservercel.DeclType
}

func newDeclTypes(s *smdschema.Schema, prefix string) *declTypes {
	return &declTypes{s: s, prefix: prefix, named: map[string]*apiservercel.DeclType{}, active: map[string]bool{}}
}

// of returns the declaration type of tr.
func (d *declTypes) of(tr smdschema.TypeRef) *apiservercel.DeclType {
	if tr.NamedType != nil {
		name := *tr.NamedType
		if t, ok := d.named[name]; ok {
			return t
		}
		if d.active[name] {
			return apiservercel.DynType
		}
		d.active[name] = true
		a, ok := d.s.Resolve(smdschema.TypeRef{NamedType: tr.NamedType})
		t := apiservercel.DynType
		if ok {
			t = d.atom(a, d.prefix+"."+name)
		}
		delete(d.active, name)
		d.named[name] = t
		return t
	}
	d.inline++
	return d.atom(tr.Inlined, d.prefix+".inline"+strconv.Itoa(d.inline))
}

func (d *declTypes) atom(a smdschema.Atom, name string) *apiservercel.DeclType {
	switch {
	case a.Scalar != nil:
		switch *a.Scalar {
		case smdschema.String:
			return apiservercel.StringType
		case smdschema.Boolean:
			return apiservercel.BoolType
		}
		return apiservercel.DynType
	case a.List != nil:
		return apiservercel.NewListType(d.of(a.List.ElementType), -1)
	case a.Map != nil:
		if len(a.Map.Fields) == 0 {
			elem := d.of(a.Map.ElementType)
			if a.Map.ElementType.NamedType == nil && a.Map.ElementType.Inlined == (smdschema.Atom{}) {
				elem = apiservercel.DynType
			}
			return apiservercel.NewMapType(apiservercel.StringType, elem, -1)
		}
		if a.Map.ElementType.NamedType != nil || a.Map.ElementType.Inlined != (smdschema.Atom{}) {
			// Fields and other keys: a map whose known fields CEL cannot
			// type apart from the others.
			return apiservercel.DynType
		}
		fields := make(map[string]*apiservercel.DeclField, len(a.Map.Fields))
		for _, f := range a.Map.Fields {
			fields[f.Name] = apiservercel.NewDeclField(f.Name, d.of(f.Type), false, nil, nil)
		}
		return apiservercel.NewObjectType(name, fields)
	}
	return apiservercel.DynType
}

// rootType returns the declaration type of the kind's root.
func (k *kindSchema) rootType() *apiservercel.DeclType {
	if k.decl.root == nil {
		k.decl.root = k.decl.of(k.root)
	}
	return k.decl.root
}
