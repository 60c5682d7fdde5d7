package lint

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"github.com/mutatis-dev/mutatis/compiler"
)

// objectChecker checks the Object{…} constructions of one expression
// against one kind's schema (check "object-*"). It works on the checked
// AST: a construction's type name (Object.spec.containers) is the field
// path from the root, which kube-apiserver requires at run time, so every
// construction has a place in the schema whether or not it sits inside
// another one.
type objectChecker struct {
	k      *kindSchema
	native *ast.AST
	report func(id int64, check, msg string)
	// nested are the constructions reached from a parent construction,
	// checked with the parent's path.
	nested map[int64]bool
}

// checkObjects reports the Object{…} problems of e against kind k.
//
// Only ApplyConfiguration mutations are checked: an Object{…} that is the
// value of a JSON patch operation is plain JSON to the patch (it may write
// an atomic list whole), and one in a variable may end up in either.
func checkObjects(e *compiler.Expression, k *kindSchema, report func(id int64, check, msg string)) {
	if e.AST() == nil || e.Kind != compiler.KindApplyConfiguration {
		return
	}
	c := &objectChecker{k: k, native: e.AST().NativeRep(), report: report, nested: map[int64]bool{}}
	var structs []ast.Expr
	ast.PostOrderVisit(c.native.Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		if x.Kind() == ast.StructKind && isObjectType(x.AsStruct().TypeName()) {
			structs = append(structs, x)
		}
	}))
	for _, s := range reverse(structs) {
		if c.nested[s.ID()] {
			continue
		}
		name := s.AsStruct().TypeName()
		if e.Kind == compiler.KindApplyConfiguration && s.ID() == c.native.Expr().ID() && name != "Object" {
			report(s.ID(), "object-type-name", fmt.Sprintf("the expression returns %s, not Object; at run time: %q", name,
				fmt.Sprintf("type mismatch: unexpected type name %q, expected %q, which matches field name path from root Object type", name, "Object")))
			continue
		}
		tr, path, ok := c.placeOf(name)
		if !ok {
			continue
		}
		c.checkStruct(s, tr, path)
	}
}

func isObjectType(name string) bool { return name == "Object" || strings.HasPrefix(name, "Object.") }

// reverse returns the constructions outermost first: PostOrderVisit lists
// every child before its parent.
func reverse(l []ast.Expr) []ast.Expr {
	out := make([]ast.Expr, len(l))
	for i, x := range l {
		out[len(l)-1-i] = x
	}
	return out
}

// placeOf resolves an Object type name to its schema type and the path
// runtime messages print for it (".spec.containers[*]" when the place of
// an item is not known statically). ok is false when the name leaves the
// schema: the construction holding it reports that.
func (c *objectChecker) placeOf(name string) (smdschema.TypeRef, fieldPath, bool) {
	tr := c.k.root
	var path strings.Builder
	segs := strings.Split(name, ".")[1:]
	for _, seg := range segs {
		a, ok := resolve(c.k.s, tr)
		if !ok || a.Map == nil {
			return tr, fieldPath{}, false
		}
		f, ok := a.Map.FindField(seg)
		if !ok {
			return tr, fieldPath{}, false
		}
		path.WriteString("." + seg)
		tr = f.Type
		// The items of a list or the values of a map are constructed with
		// the field's name.
		for {
			a, ok := resolve(c.k.s, tr)
			if !ok {
				break
			}
			if a.List != nil && a.Scalar == nil {
				tr = a.List.ElementType
				path.WriteString("[*]")
				continue
			}
			if a.Map != nil && a.Scalar == nil && len(a.Map.Fields) == 0 && !isEmptyRef(a.Map.ElementType) {
				// Object.metadata.labels{…} is the map itself; only a map
				// of objects has its values constructed with its name.
				ea, ok := resolve(c.k.s, a.Map.ElementType)
				if !ok || ea.Map == nil || ea.Scalar != nil {
					break
				}
				tr = a.Map.ElementType
				path.WriteString(".*")
				continue
			}
			break
		}
	}
	return tr, fieldPath{path.String(), path.String()}, true
}

// fieldPath is a place in a patch as the runtime's messages print it:
// structured-merge-diff's validation names the items of an associative
// list by their keys ([name="app"]), the atomic check by their index
// ([0]). An item whose place is not known statically is [*].
type fieldPath struct{ index, keyed string }

func (p fieldPath) child(name string) fieldPath {
	return fieldPath{p.index + "." + name, p.keyed + "." + name}
}

func isEmptyRef(tr smdschema.TypeRef) bool {
	return tr.NamedType == nil && tr.Inlined == (smdschema.Atom{})
}

// checkStruct checks a construction of schema type tr at path.
func (c *objectChecker) checkStruct(s ast.Expr, tr smdschema.TypeRef, path fieldPath) {
	a, ok := resolve(c.k.s, tr)
	if !ok || a.Map == nil || a.Scalar != nil {
		return // untyped: anything goes
	}
	name := s.AsStruct().TypeName()
	for _, f := range s.AsStruct().Fields() {
		sf := f.AsStructField()
		field, declared := a.Map.FindField(sf.Name())
		fpath := path.child(sf.Name())
		if !declared {
			if len(a.Map.Fields) == 0 {
				// A map: the field names are its keys.
				if !isEmptyRef(a.Map.ElementType) {
					c.checkValue(sf.Value(), a.Map.ElementType, fpath, name)
				}
				continue
			}
			c.report(f.ID(), "object-undeclared-field", fmt.Sprintf("field %q is not declared in the schema of %s (%s); at run time: %q",
				sf.Name(), c.k.gvkLabel(), name, "failed to convert patch object to typed object: "+fpath.keyed+": field not declared in schema"))
			continue
		}
		c.checkValue(sf.Value(), field.Type, fpath, name+"."+sf.Name())
	}
}

// checkValue checks value v written at path, whose schema type is tr;
// typeName is the Object type name constructions there must have.
func (c *objectChecker) checkValue(v ast.Expr, tr smdschema.TypeRef, path fieldPath, typeName string) {
	a, ok := resolve(c.k.s, tr)
	if !ok || (a.Scalar != nil && *a.Scalar == smdschema.Untyped) {
		return
	}
	t := c.native.GetType(v.ID())
	if t == nil || t.Kind() == types.DynKind || t.Kind() == types.NullTypeKind || t.Kind() == types.AnyKind {
		return
	}
	if v.Kind() == ast.StructKind {
		c.nested[v.ID()] = true
		if got := v.AsStruct().TypeName(); got != typeName {
			c.report(v.ID(), "object-type-name", fmt.Sprintf("%s is constructed as %s; at run time: %q", path.index, got,
				fmt.Sprintf("type mismatch: unexpected type name %q, expected %q, which matches field name path from root Object type", got, typeName)))
			return
		}
	}
	if want, bad := mismatch(a, t); bad && c.certain(v) {
		c.report(v.ID(), "object-value-type", fmt.Sprintf("%s is a %s in the schema of %s but the value is of type %s; at run time: %q%s", path.index, want, c.k.gvkLabel(), t,
			"failed to convert patch object to typed object: "+path.keyed+": expected "+runtimeKind(a)+", got "+valueKind(a, t), gotSuffix(a)))
		return
	}
	if atomic(a) {
		c.report(v.ID(), "object-atomic", fmt.Sprintf("%s is atomic in the schema of %s: a patch may not write into it; at run time: %q", path.index, c.k.gvkLabel(),
			"invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: "+path.index))
		return
	}
	switch {
	case a.List != nil && v.Kind() == ast.ListKind:
		for i, el := range v.AsList().Elements() {
			c.checkValue(el, a.List.ElementType, c.item(path, a.List, i, el), typeName)
		}
	case a.List != nil && t.Kind() == types.ListKind && len(t.Parameters()) == 1:
		// A list built by an expression: its items may still be atomic.
		ea, ok := resolve(c.k.s, a.List.ElementType)
		et := t.Parameters()[0]
		if ok && atomic(ea) && (et.Kind() == types.MapKind || et.Kind() == types.StructKind) {
			c.report(v.ID(), "object-atomic", fmt.Sprintf("the items of %s are atomic in the schema of %s: a patch may not write into them; at run time (for a non-empty list): %q", path.index, c.k.gvkLabel(),
				"invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: "+path.index+"[0]"))
		}
	case a.Map != nil && v.Kind() == ast.StructKind:
		c.checkStruct(v, tr, path)
	case a.Map != nil && v.Kind() == ast.MapKind && len(a.Map.Fields) == 0 && !isEmptyRef(a.Map.ElementType):
		for _, e := range v.AsMap().Entries() {
			me := e.AsMapEntry()
			if me.Key().Kind() == ast.LiteralKind {
				if k, ok := me.Key().AsLiteral().(types.String); ok {
					c.checkValue(me.Value(), a.Map.ElementType, path.child(string(k)), typeName)
				}
			}
		}
	}
}

// item is the place of item i (expression el) of a list of schema l.
func (c *objectChecker) item(path fieldPath, l *smdschema.List, i int, el ast.Expr) fieldPath {
	out := fieldPath{index: path.index + "[" + strconv.Itoa(i) + "]"}
	if l.ElementRelationship != smdschema.Associative || len(l.Keys) == 0 {
		out.keyed = path.keyed + "[" + strconv.Itoa(i) + "]"
		return out
	}
	// [k1=v1,k2=v2] with the keys' constant values, as fieldpath prints them.
	keys := map[string]string{}
	if el.Kind() == ast.StructKind {
		for _, f := range el.AsStruct().Fields() {
			sf := f.AsStructField()
			if sf.Value().Kind() == ast.LiteralKind {
				if b, err := json.Marshal(sf.Value().AsLiteral().Value()); err == nil {
					keys[sf.Name()] = string(b)
				}
			}
		}
	}
	var parts []string
	for _, k := range l.Keys {
		v, ok := keys[k]
		if !ok {
			out.keyed = path.keyed + "[*]"
			return out
		}
		parts = append(parts, k+"="+v)
	}
	out.keyed = path.keyed + "[" + strings.Join(parts, ",") + "]"
	return out
}

// certain tells whether the checked type of v is the type of its value
// whenever it has one: no dyn operand chose the overload that typed it
// (object.metadata.name + 1 is typed int with a dyn operand, but fails
// before it has a value). Conversions fix their result type whatever
// their operand.
func (c *objectChecker) certain(v ast.Expr) bool {
	ok := true
	var walk func(x ast.Expr)
	walk = func(x ast.Expr) {
		if !ok {
			return
		}
		if t := c.native.GetType(x.ID()); t != nil && t.Kind() == types.DynKind {
			ok = false
			return
		}
		switch x.Kind() {
		case ast.CallKind:
			call := x.AsCall()
			switch call.FunctionName() {
			case "string", "int", "uint", "double", "bool", "size", "bytes":
				return
			}
			if call.IsMemberFunction() {
				walk(call.Target())
			}
			for _, a := range call.Args() {
				walk(a)
			}
		case ast.SelectKind:
			walk(x.AsSelect().Operand())
		case ast.ComprehensionKind:
			ok = false
		}
	}
	walk(v)
	return ok
}

// atomic tells whether a list, map or struct type is atomic.
func atomic(a smdschema.Atom) bool {
	if a.Scalar != nil {
		return false
	}
	if a.List != nil {
		return a.List.ElementRelationship == smdschema.Atomic
	}
	if a.Map != nil {
		return a.Map.ElementRelationship == smdschema.Atomic
	}
	return false
}

// mismatch tells whether a value of checked type t can never be a value of
// schema type a; want names a.
func mismatch(a smdschema.Atom, t *types.Type) (string, bool) {
	k := t.Kind()
	switch {
	case a.Scalar != nil:
		switch *a.Scalar {
		case smdschema.String:
			return "string", k != types.StringKind && k != types.BytesKind
		case smdschema.Numeric:
			return "number", k != types.IntKind && k != types.DoubleKind && k != types.UintKind
		case smdschema.Boolean:
			return "boolean", k != types.BoolKind
		}
	case a.List != nil:
		return "list", k != types.ListKind
	case a.Map != nil:
		return describe(a), k != types.MapKind && k != types.StructKind
	}
	return "", false
}

// runtimeKind is how structured-merge-diff names what a schema type expects.
func runtimeKind(a smdschema.Atom) string {
	switch {
	case a.Scalar != nil:
		switch *a.Scalar {
		case smdschema.String:
			return "string"
		case smdschema.Numeric:
			return "numeric (int or float)"
		case smdschema.Boolean:
			return "boolean"
		}
	case a.List != nil:
		return "list"
	case a.Map != nil:
		return "map"
	}
	return "value"
}

// valueKind is how structured-merge-diff names the value it got: the Go
// type of the unstructured value where it expected a number (%T); where
// it expected anything else it prints the value itself, which a static
// check does not know, so the quote stops before it (see gotSuffix).
func valueKind(a smdschema.Atom, t *types.Type) string {
	if a.Scalar == nil || *a.Scalar != smdschema.Numeric {
		return ""
	}
	switch t.Kind() {
	case types.StringKind, types.BytesKind:
		return "string"
	case types.BoolKind:
		return "bool"
	case types.ListKind:
		return "[]interface {}"
	case types.MapKind, types.StructKind:
		return "map[string]interface {}"
	}
	return t.String()
}

// gotSuffix says what follows the quoted message when it stops before the
// value (see valueKind).
func gotSuffix(a smdschema.Atom) string {
	if a.Scalar != nil && *a.Scalar == smdschema.Numeric {
		return ""
	}
	return " and the value"
}

func (k *kindSchema) gvkLabel() string { return target{gvk: k.gvk}.label() }
