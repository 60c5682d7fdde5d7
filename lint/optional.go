package lint

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"github.com/mutatis-dev/mutatis/compiler"
)

// oftenOmitted lists, per schema type of the built-in kinds, the optional
// fields real objects often lack after kube-apiserver decoded and
// defaulted them (defaulted fields, such as a PodSpec's securityContext or
// a Pod's tolerations, are left out): reading one without a guard fails
// with "no such key" on such objects. The list is documented in
// docs/lint.md.
var oftenOmitted = map[string][]string{
	"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"labels", "annotations", "ownerReferences", "finalizers"},
	"io.k8s.api.core.v1.PodSpec":                      {"initContainers", "volumes", "nodeSelector", "affinity", "imagePullSecrets", "ephemeralContainers", "hostAliases", "topologySpreadConstraints"},
	"io.k8s.api.core.v1.Container":                    {"env", "envFrom", "ports", "volumeMounts", "args", "command", "securityContext", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"},
	"io.k8s.api.core.v1.ResourceRequirements":         {"limits", "requests"},
}

func omitted(typeName, field string) bool {
	for _, f := range oftenOmitted[typeName] {
		if f == field {
			return true
		}
	}
	return false
}

// place is where a CEL value comes from in the object: the root variable
// and the fields below it, "[]" for a list item.
type place struct {
	root string
	segs []string
}

func (p place) key() string { return p.root + "." + strings.Join(p.segs, ".") }

// readWalker finds the unguarded reads of often omitted fields in one
// expression (check "read-unguarded-optional").
type readWalker struct {
	k      *kindSchema
	native *ast.AST
	// guards are the places some has() or optional selection tests, in
	// this expression or in a matchCondition of the policy.
	guards map[string]bool
	report func(id int64, msg string)
}

// placeOf returns the place x reads, following comprehension variables
// bound in scope.
func placeOf(x ast.Expr, scope map[string]place) (place, bool) {
	switch x.Kind() {
	case ast.IdentKind:
		name := x.AsIdent()
		if p, ok := scope[name]; ok {
			return p, true
		}
		if name == compiler.ObjectVar || name == compiler.OldObjectVar {
			return place{root: name}, true
		}
	case ast.SelectKind:
		p, ok := placeOf(x.AsSelect().Operand(), scope)
		if !ok {
			return place{}, false
		}
		return place{root: p.root, segs: append(append([]string{}, p.segs...), x.AsSelect().FieldName())}, true
	case ast.CallKind:
		call := x.AsCall()
		if call.FunctionName() == operators.Index && len(call.Args()) == 2 {
			if p, ok := placeOf(call.Args()[0], scope); ok {
				return place{root: p.root, segs: append(append([]string{}, p.segs...), "[]")}, true
			}
		}
		if call.FunctionName() == operators.OptSelect && len(call.Args()) == 2 && call.Args()[1].Kind() == ast.LiteralKind {
			if p, ok := placeOf(call.Args()[0], scope); ok {
				if f, ok := call.Args()[1].AsLiteral().(types.String); ok {
					return place{root: p.root, segs: append(append([]string{}, p.segs...), string(f))}, true
				}
			}
		}
	}
	return place{}, false
}

// collectGuards adds the places x tests with has() or reads with ?.
// guardsOf is guards (the policy's, from its matchConditions) with those
// of expression x added, in a new map.
func guardsOf(x ast.Expr, guards map[string]bool) map[string]bool {
	local := make(map[string]bool, len(guards))
	for g := range guards {
		local[g] = true
	}
	collectGuards(x, local)
	return local
}

func collectGuards(x ast.Expr, guards map[string]bool) {
	walkScoped(x, map[string]place{}, func(x ast.Expr, scope map[string]place) {
		switch {
		case x.Kind() == ast.SelectKind && x.AsSelect().IsTestOnly(),
			x.Kind() == ast.CallKind && x.AsCall().FunctionName() == operators.OptSelect:
			if p, ok := placeOf(x, scope); ok {
				guards[p.key()] = true
			}
		}
	})
}

// walkScoped visits every node of x with the comprehension variables in
// scope bound to the items of the places they range over.
func walkScoped(x ast.Expr, scope map[string]place, visit func(ast.Expr, map[string]place)) {
	visit(x, scope)
	switch x.Kind() {
	case ast.SelectKind:
		walkScoped(x.AsSelect().Operand(), scope, visit)
	case ast.CallKind:
		call := x.AsCall()
		if call.IsMemberFunction() {
			walkScoped(call.Target(), scope, visit)
		}
		for _, a := range call.Args() {
			walkScoped(a, scope, visit)
		}
	case ast.ListKind:
		for _, el := range x.AsList().Elements() {
			walkScoped(el, scope, visit)
		}
	case ast.MapKind:
		for _, en := range x.AsMap().Entries() {
			walkScoped(en.AsMapEntry().Key(), scope, visit)
			walkScoped(en.AsMapEntry().Value(), scope, visit)
		}
	case ast.StructKind:
		for _, f := range x.AsStruct().Fields() {
			walkScoped(f.AsStructField().Value(), scope, visit)
		}
	case ast.ComprehensionKind:
		comp := x.AsComprehension()
		walkScoped(comp.IterRange(), scope, visit)
		walkScoped(comp.AccuInit(), scope, visit)
		inner := scope
		if p, ok := placeOf(comp.IterRange(), scope); ok && !comp.HasIterVar2() {
			inner = make(map[string]place, len(scope)+1)
			for k, v := range scope {
				inner[k] = v
			}
			inner[comp.IterVar()] = place{root: p.root, segs: append(append([]string{}, p.segs...), "[]")}
		}
		walkScoped(comp.LoopCondition(), inner, visit)
		walkScoped(comp.LoopStep(), inner, visit)
		walkScoped(comp.Result(), scope, visit)
	}
}

// typeAt resolves a place of the kind's object to its schema type.
func (k *kindSchema) typeAt(segs []string) (smdschema.TypeRef, bool) {
	tr := k.root
	for _, seg := range segs {
		a, ok := k.s.Resolve(tr)
		if !ok {
			return tr, false
		}
		switch {
		case seg == "[]" && a.List != nil:
			tr = a.List.ElementType
		case a.Map != nil && len(a.Map.Fields) > 0:
			f, ok := a.Map.FindField(seg)
			if !ok {
				return tr, false
			}
			tr = f.Type
		case a.Map != nil && !isEmptyRef(a.Map.ElementType):
			tr = a.Map.ElementType
		default:
			return tr, false
		}
	}
	return tr, true
}

// checkOptionalReads reports the reads of e of often omitted fields that
// nothing guards.
func checkOptionalReads(e *compiler.Expression, k *kindSchema, guards map[string]bool, report func(id int64, msg string)) {
	if e.AST() == nil {
		return
	}
	native := e.AST().NativeRep()
	local := guardsOf(native.Expr(), guards)
	seen := map[string]bool{}
	walkScoped(native.Expr(), map[string]place{}, func(x ast.Expr, scope map[string]place) {
		if x.Kind() != ast.SelectKind || x.AsSelect().IsTestOnly() {
			return
		}
		operand, ok := placeOf(x.AsSelect().Operand(), scope)
		if !ok || operand.root != compiler.ObjectVar {
			return
		}
		field := x.AsSelect().FieldName()
		tr, ok := k.typeAt(operand.segs)
		if !ok || tr.NamedType == nil || !omitted(*tr.NamedType, field) {
			return
		}
		p, _ := placeOf(x, scope)
		if local[p.key()] || seen[p.key()] {
			return
		}
		seen[p.key()] = true
		text := render(x)
		op := render(x.AsSelect().Operand())
		def := "{}"
		if ft, ok := k.typeAt(p.segs); ok {
			if a, ok := k.s.Resolve(ft); ok && a.List != nil {
				def = "[]"
			}
		}
		report(x.ID(), fmt.Sprintf("%s is optional in the schema of %s and often absent: on objects without it the read fails with %q; guard it with has(%s) or read %s.?%s.orValue(%s)",
			text, k.gvkLabel(), "no such key: "+field, text, op, field, def))
	})
}

// render prints a read as it would be written.
func render(x ast.Expr) string {
	switch x.Kind() {
	case ast.IdentKind:
		return x.AsIdent()
	case ast.SelectKind:
		return render(x.AsSelect().Operand()) + "." + x.AsSelect().FieldName()
	case ast.CallKind:
		call := x.AsCall()
		if call.FunctionName() == operators.Index && len(call.Args()) == 2 {
			idx := "…"
			if l := call.Args()[1]; l.Kind() == ast.LiteralKind {
				idx = fmt.Sprint(l.AsLiteral().Value())
				if s, ok := l.AsLiteral().(types.String); ok {
					idx = fmt.Sprintf("%q", string(s))
				}
			}
			return render(call.Args()[0]) + "[" + idx + "]"
		}
	}
	return "…"
}
