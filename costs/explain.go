package costs

import (
	"sort"
	"strconv"
	"strings"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/mutatis-dev/mutatis/compiler"
)

// SizeDriver is one input of an expression whose size drives its worst-case
// cost: a list, map or string the expression iterates, searches or compares,
// found in the checked AST.
type SizeDriver struct {
	// Path is the input's path as the cost checker names it: a root
	// variable, then field names and "@items", "@keys" or "@values". It is
	// nil for a computed input (e.g. the result of orValue()).
	Path []string
	// Source is the CEL text of a computed input (Path nil).
	Source string
	// Kind is "list", "map" or "string" when the schema or the checked type
	// tells, "" when the type is dynamic (no schema).
	Kind string
	// Bound is the largest size the schema allows (maxItems, maxProperties,
	// maxLength, or kube-apiserver's estimate from the request size limit
	// for CRD fields without one); -1 when nothing bounds the input.
	Bound int64
	// Share is the part of the worst case that goes away when this input
	// is limited to one element: how much of the cost it drives (0..1].
	// Unbounded inputs are measured as if bounded by 1 MiB.
	Share float64
	// Uses are the constructs that make the cost depend on the input's
	// size, e.g. "all()", "map()", "startsWith()", "==".
	Uses []string
}

// Unbounded reports whether nothing bounds the input's size.
func (d SizeDriver) Unbounded() bool { return d.Bound < 0 }

// explainPlaceholder sizes unbounded inputs while the drivers are measured,
// so that the share of each one is finite and comparable.
const explainPlaceholder = 1 << 20

// explainMinShare is the smallest share for an input to count as a driver.
const explainMinShare = 0.1

// ExplainCost returns the inputs that drive the worst-case cost of e when
// estimated as EstimateWithSchema(e, object, params) does, largest share
// first. Each input of a variable size that the estimate asked about is
// limited, in turn, to one element; those that remove at least a tenth of
// the worst case are drivers. It returns nil when the expression did not
// compile.
func ExplainCost(e *compiler.Expression, object, params *apiservercel.DeclType) []SizeDriver {
	if e.AST() == nil {
		return nil
	}
	roots := sizeRoots(object, params)
	base := newSizeProbe(roots, explainPlaceholder, nil)
	worst, ok := base.estimate(e)
	if !ok || worst == 0 {
		return nil
	}
	uses := sizeUses(e, base.nodes)
	var out []SizeDriver
	for _, key := range base.order {
		p := base.seen[key]
		one := newSizeProbe(roots, explainPlaceholder, map[string]uint64{key: 1})
		m, ok := one.estimate(e)
		if !ok || m >= worst {
			continue
		}
		share := float64(worst-m) / float64(worst)
		if share < explainMinShare {
			continue
		}
		d := SizeDriver{Path: p.path, Kind: p.kind, Bound: p.bound, Share: share, Uses: uses[key]}
		if len(p.path) == 0 {
			d.Path = nil
			if src, err := parser.Unparse(p.expr, e.AST().NativeRep().SourceInfo()); err == nil {
				d.Source = src
			}
		}
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Share > out[j].Share })
	return out
}

// VariableReferences returns the names of the policy variables e refers to
// (variables.NAME), in order of first use. It returns nil when e did not
// compile.
func VariableReferences(e *compiler.Expression) []string {
	if e.AST() == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	ast.PreOrderVisit(e.AST().NativeRep().Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		if x.Kind() != ast.SelectKind {
			return
		}
		sel := x.AsSelect()
		if op := sel.Operand(); op.Kind() == ast.IdentKind && op.AsIdent() == compiler.VariablesVar && !seen[sel.FieldName()] {
			seen[sel.FieldName()] = true
			out = append(out, sel.FieldName())
		}
	}))
	return out
}

// probed is one sized input the cost checker asked about.
type probed struct {
	path  []string
	kind  string
	bound int64
	expr  ast.Expr
}

// sizeProbe answers the cost checker's size questions from the schemas of
// the root variables (see declAt), records the sized inputs asked about (and
// which AST nodes they are), and can override the size of some of them.
// With a placeholder, inputs nothing bounds get that size.
type sizeProbe struct {
	roots       map[string]*apiservercel.DeclType
	placeholder uint64
	override    map[string]uint64

	seen  map[string]*probed
	order []string
	nodes map[int64]string // AST node ID → path key
}

func newSizeProbe(roots map[string]*apiservercel.DeclType, placeholder uint64, override map[string]uint64) *sizeProbe {
	return &sizeProbe{roots: roots, placeholder: placeholder, override: override,
		seen: map[string]*probed{}, nodes: map[int64]string{}}
}

func (p *sizeProbe) estimate(e *compiler.Expression) (uint64, bool) {
	est, err := e.EstimateCost(p)
	if err != nil {
		return 0, false
	}
	return est.Max, true
}

// EstimateSize implements checker.CostEstimator.
func (p *sizeProbe) EstimateSize(element checker.AstNode) *checker.SizeEstimate {
	path := element.Path()
	var decl *apiservercel.DeclType
	var fromSchema *checker.SizeEstimate
	if len(path) > 0 {
		if decl = declAt(p.roots, path); decl != nil && decl.MaxElements >= 0 {
			fromSchema = &checker.SizeEstimate{Min: 0, Max: uint64(decl.MaxElements)}
		}
	}
	kind, sized := sizedKind(element.Type())
	if !sized || (len(path) == 0 && element.Expr() == nil) {
		return fromSchema
	}
	key := strings.Join(path, "\x1f")
	if len(path) == 0 {
		// A computed input of unknown size: named by its AST node.
		key = "#" + strconv.FormatInt(element.Expr().ID(), 10)
	}
	if _, ok := p.seen[key]; !ok {
		bound := int64(-1)
		if fromSchema != nil {
			bound = int64(fromSchema.Max)
		}
		if k := declKind(decl); k != "" {
			kind = k
		}
		p.seen[key] = &probed{path: append([]string(nil), path...), kind: kind, bound: bound, expr: element.Expr()}
		p.order = append(p.order, key)
	}
	if element.Expr() != nil {
		p.nodes[element.Expr().ID()] = key
	}
	if v, ok := p.override[key]; ok {
		return &checker.SizeEstimate{Min: 0, Max: v}
	}
	if fromSchema != nil {
		return fromSchema
	}
	if p.placeholder > 0 {
		return &checker.SizeEstimate{Min: 0, Max: p.placeholder}
	}
	return nil
}

// EstimateCallCost implements checker.CostEstimator.
func (p *sizeProbe) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return nil
}

// declKind names the kind of a schema type, "" if unknown.
func declKind(t *apiservercel.DeclType) string {
	switch {
	case t == nil:
		return ""
	case t.IsList():
		return "list"
	case t.IsMap():
		return "map"
	case t.CelType() != nil && t.CelType().Kind() == types.StringKind:
		return "string"
	case t.CelType() != nil && t.CelType().Kind() == types.BytesKind:
		return "bytes"
	}
	return ""
}

// sizedKind tells whether values of t have a size that costs depend on.
func sizedKind(t *types.Type) (string, bool) {
	if t == nil {
		return "", true
	}
	switch t.Kind() {
	case types.ListKind:
		return "list", true
	case types.MapKind:
		return "map", true
	case types.StringKind:
		return "string", true
	case types.BytesKind:
		return "bytes", true
	case types.DynKind, types.AnyKind:
		return "", true
	}
	return "", false
}

// sizeUses walks the checked AST and names, per recorded path key, the
// constructs whose cost depends on that input's size: comprehensions over
// it, and calls with it as target or argument.
func sizeUses(e *compiler.Expression, nodes map[int64]string) map[string][]string {
	native := e.AST().NativeRep()
	out := map[string][]string{}
	add := func(id int64, what string) {
		key, ok := nodes[id]
		if !ok {
			return
		}
		for _, u := range out[key] {
			if u == what {
				return
			}
		}
		out[key] = append(out[key], what)
	}
	ast.PreOrderVisit(native.Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		switch x.Kind() {
		case ast.ComprehensionKind:
			add(x.AsComprehension().IterRange().ID(), comprehensionName(native, x))
		case ast.CallKind:
			call := x.AsCall()
			name := callName(call.FunctionName())
			if call.IsMemberFunction() {
				add(call.Target().ID(), name)
			}
			for _, a := range call.Args() {
				add(a.ID(), name)
			}
		}
	}))
	return out
}

// comprehensionName names the macro a comprehension was expanded from: from
// the source info when macro calls were kept, else from its shape.
func comprehensionName(native *ast.AST, x ast.Expr) string {
	if call, ok := native.SourceInfo().GetMacroCall(x.ID()); ok && call.Kind() == ast.CallKind {
		return call.AsCall().FunctionName() + "()"
	}
	comp := x.AsComprehension()
	init := comp.AccuInit()
	switch init.Kind() {
	case ast.LiteralKind:
		switch init.AsLiteral() {
		case types.True:
			return "all()"
		case types.False:
			return "exists()"
		}
		if _, ok := init.AsLiteral().(types.Int); ok {
			return "exists_one()"
		}
	case ast.ListKind:
		if step := comp.LoopStep(); step.Kind() == ast.CallKind && step.AsCall().FunctionName() == "_?_:_" {
			return "filter()"
		}
		return "map()"
	case ast.MapKind:
		return "transformMap()"
	}
	return "a comprehension"
}

// callName presents a function or operator as written in CEL.
func callName(fn string) string {
	switch fn {
	case "_[_]":
		return "index"
	case "@in":
		return "in"
	}
	if strings.HasPrefix(fn, "_") && strings.HasSuffix(fn, "_") && len(fn) > 2 {
		return strings.ReplaceAll(strings.Trim(fn, "_"), "_", "")
	}
	return fn + "()"
}
