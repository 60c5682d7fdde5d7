package costs

import (
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/ast"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"maps"

	"github.com/mutatis-dev/mutatis/compiler"
)

// Point is one of the three sizes at which every expression's cost is
// evaluated.
type Point string

// The evaluation points.
const (
	// PointSchema sizes an input only by a limit its schema declares
	// (maxItems, maxProperties, maxLength of a CRD); every other input is
	// unbounded. Built-in kinds declare none.
	PointSchema Point = "schema"
	// PointRequest sizes every input as kube-apiserver's estimator does:
	// the declared limit, else the most that fits in a 3 MiB request
	// (k8s.io/apiserver's SchemaDeclType).
	PointRequest Point = "request"
	// PointProfile sizes every input by the realistic Profile (never above
	// the request bound), and sees through the optional idioms
	// (x.?f.orValue(d)), variables and comprehension results, which it
	// sizes as the field they read.
	PointProfile Point = "profile"
)

// Points lists the evaluation points in report order.
func Points() []Point { return []Point{PointSchema, PointRequest, PointProfile} }

// inputInfo is one sized input the estimator asked about at some point.
type inputInfo struct {
	key  string // rendered path, e.g. object.spec.containers[*].env
	path []string
	kind string
}

// pointSizer answers the cost checker's size questions at one Point, for
// one expression, and records the inputs it was asked about.
type pointSizer struct {
	point    Point
	roots    map[string]*apiservercel.DeclType
	declared func(path []string, kind string) bool
	profile  *Profile
	res      *resolver
	expr     *compiler.Expression
	// override sizes inputs by key (formula fitting).
	override map[string]uint64

	inputs map[string]*inputInfo
	order  []string
	// nodes, when set, records the AST node of each sized input.
	nodes map[int64]string
}

func (s *pointSizer) estimate(e *compiler.Expression) (compiler.CostEstimate, bool) {
	s.expr = e
	if s.inputs == nil {
		s.inputs = map[string]*inputInfo{}
	}
	est, err := e.EstimateCost(s)
	if err != nil {
		return compiler.CostEstimate{}, false
	}
	est.Schema = true
	return est, true
}

// EstimateSize implements checker.CostEstimator.
func (s *pointSizer) EstimateSize(element checker.AstNode) *checker.SizeEstimate {
	kind, sized := sizedKind(element.Type())
	if !sized {
		return nil
	}
	path := element.Path()
	if s.point == PointProfile && s.res != nil {
		switch {
		case len(path) > 0 && path[0] == compiler.VariablesVar:
			resolved := s.res.variablePath(path, 0)
			if resolved == nil && len(path) == 2 {
				// A variable built from no field: the size of what it
				// builds.
				if n, ok := s.res.variableBuiltSize(path[1], 0); ok {
					return &checker.SizeEstimate{Min: 0, Max: n}
				}
			}
			path = resolved
		case len(path) == 0 || !profileRoots[path[0]]:
			if element.Expr() != nil {
				path = s.res.pathOf(s.expr, element.Expr(), 0)
			}
		}
	}
	if len(path) == 0 || !profileRoots[path[0]] {
		if s.point == PointProfile && s.profile != nil {
			// A computed value nothing traces to a field: the generic
			// size of its kind.
			n, _ := s.profile.lookup(nil, kind)
			return &checker.SizeEstimate{Min: 0, Max: uint64(n)}
		}
		return nil
	}
	decl := declAt(s.roots, path)
	if k := declKind(decl); k != "" {
		kind = k
	}
	key := renderPath(path)
	if _, ok := s.inputs[key]; !ok {
		s.inputs[key] = &inputInfo{key: key, path: append([]string(nil), path...), kind: kind}
		s.order = append(s.order, key)
	}
	if s.nodes != nil && element.Expr() != nil {
		s.nodes[element.Expr().ID()] = key
	}
	if v, ok := s.override[key]; ok {
		return &checker.SizeEstimate{Min: 0, Max: v}
	}
	requestBound := int64(-1)
	if decl != nil && decl.MaxElements >= 0 {
		requestBound = decl.MaxElements
	}
	switch s.point {
	case PointRequest:
		if requestBound >= 0 {
			return &checker.SizeEstimate{Min: 0, Max: uint64(requestBound)}
		}
	case PointSchema:
		// A value with no length (a number, an object) has the size its
		// type gives; lists, maps and strings only a declared limit.
		if requestBound >= 0 && (declKind(decl) == "" || s.declared != nil && s.declared(path, kind)) {
			return &checker.SizeEstimate{Min: 0, Max: uint64(requestBound)}
		}
	case PointProfile:
		n, _ := s.profile.lookup(path, kind)
		// Never above the request bound (which is the declared limit
		// where a schema has one).
		if requestBound >= 0 && requestBound < n {
			n = requestBound
		}
		return &checker.SizeEstimate{Min: 0, Max: uint64(n)}
	}
	return nil
}

// EstimateCallCost implements checker.CostEstimator.
func (s *pointSizer) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return nil
}

// resolver finds, in the syntax of an expression, the field a computed
// value stands for: x.?f.orValue(d) and x.?f.value() are x.f, x[i] is an
// item of x, a filter() or map() result is sized as its range, an
// iteration variable is an item of its range, cel.bind names its value,
// and variables.NAME is the value of the policy's variable NAME.
type resolver struct {
	vars   map[string]*compiler.Expression
	scopes map[*compiler.Expression]map[int64]ast.Expr
	// items tells which scope entries are iteration variables (an item
	// of the bound expression) rather than aliases.
	items map[*compiler.Expression]map[int64]bool
	// built memoizes variableBuiltSize.
	built map[string]builtResult
}

func newResolver(vars map[string]*compiler.Expression) *resolver {
	return &resolver{vars: vars, scopes: map[*compiler.Expression]map[int64]ast.Expr{}, items: map[*compiler.Expression]map[int64]bool{}, built: map[string]builtResult{}}
}

// maxResolveDepth bounds the variables followed through other variables.
const maxResolveDepth = 16

// variablePath resolves a path that starts with variables.NAME.
func (r *resolver) variablePath(path []string, depth int) []string {
	if len(path) < 2 || depth > maxResolveDepth {
		return nil
	}
	v, ok := r.vars[path[1]]
	if !ok || v.AST() == nil {
		return nil
	}
	base := r.pathOf(v, v.AST().NativeRep().Expr(), depth+1)
	if base == nil {
		return nil
	}
	return append(append([]string(nil), base...), path[2:]...)
}

func (r *resolver) scope(e *compiler.Expression) (map[int64]ast.Expr, map[int64]bool) {
	if s, ok := r.scopes[e]; ok {
		return s, r.items[e]
	}
	s, items := map[int64]ast.Expr{}, map[int64]bool{}
	if e.AST() != nil {
		bindScopes(e.AST().NativeRep().Expr(), map[string]scopeEntry{}, s, items)
	}
	r.scopes[e], r.items[e] = s, items
	return s, items
}

type scopeEntry struct {
	expr ast.Expr
	item bool
}

// bindScopes records, for every identifier that names a comprehension's
// iteration or accumulator variable, the expression it stands for.
func bindScopes(x ast.Expr, env map[string]scopeEntry, out map[int64]ast.Expr, items map[int64]bool) {
	switch x.Kind() {
	case ast.IdentKind:
		if b, ok := env[x.AsIdent()]; ok {
			out[x.ID()], items[x.ID()] = b.expr, b.item
		}
	case ast.SelectKind:
		bindScopes(x.AsSelect().Operand(), env, out, items)
	case ast.CallKind:
		c := x.AsCall()
		if c.IsMemberFunction() {
			bindScopes(c.Target(), env, out, items)
		}
		for _, a := range c.Args() {
			bindScopes(a, env, out, items)
		}
	case ast.ListKind:
		for _, el := range x.AsList().Elements() {
			bindScopes(el, env, out, items)
		}
	case ast.MapKind:
		for _, en := range x.AsMap().Entries() {
			me := en.AsMapEntry()
			bindScopes(me.Key(), env, out, items)
			bindScopes(me.Value(), env, out, items)
		}
	case ast.StructKind:
		for _, f := range x.AsStruct().Fields() {
			bindScopes(f.AsStructField().Value(), env, out, items)
		}
	case ast.ComprehensionKind:
		c := x.AsComprehension()
		bindScopes(c.IterRange(), env, out, items)
		bindScopes(c.AccuInit(), env, out, items)
		res := maps.Clone(env)
		res[c.AccuVar()] = accuEntry(c)
		inner := maps.Clone(res)
		inner[c.IterVar()] = scopeEntry{expr: c.IterRange(), item: true}
		if c.HasIterVar2() {
			inner[c.IterVar2()] = scopeEntry{expr: c.IterRange(), item: true}
		}
		bindScopes(c.LoopCondition(), inner, out, items)
		bindScopes(c.LoopStep(), inner, out, items)
		bindScopes(c.Result(), res, out, items)
	}
}

// accuEntry is what a comprehension's accumulator stands for: the result
// of a filter(), map() or transformMap() has at most as many items as its
// range; cel.bind's accumulator is the bound value.
func accuEntry(c ast.ComprehensionExpr) scopeEntry {
	switch c.AccuInit().Kind() {
	case ast.ListKind, ast.MapKind:
		if r := c.IterRange(); !(r.Kind() == ast.ListKind && len(r.AsList().Elements()) == 0) {
			return scopeEntry{expr: r}
		}
	}
	return scopeEntry{expr: c.AccuInit()}
}

// pathOf returns the field path x of expression e stands for, nil when it
// stands for no field.
func (r *resolver) pathOf(e *compiler.Expression, x ast.Expr, depth int) []string {
	if depth > maxResolveDepth || x == nil {
		return nil
	}
	switch x.Kind() {
	case ast.IdentKind:
		name := x.AsIdent()
		scope, items := r.scope(e)
		if b, ok := scope[x.ID()]; ok {
			p := r.pathOf(e, b, depth+1)
			if p == nil {
				return nil
			}
			if items[x.ID()] {
				return append(append([]string(nil), p...), "@items")
			}
			return p
		}
		if profileRoots[name] {
			return []string{name}
		}
	case ast.SelectKind:
		sel := x.AsSelect()
		if sel.IsTestOnly() {
			return nil
		}
		if op := sel.Operand(); op.Kind() == ast.IdentKind && op.AsIdent() == compiler.VariablesVar {
			return r.variablePath([]string{compiler.VariablesVar, sel.FieldName()}, depth+1)
		}
		if p := r.pathOf(e, sel.Operand(), depth+1); p != nil {
			return append(append([]string(nil), p...), sel.FieldName())
		}
	case ast.CallKind:
		c := x.AsCall()
		args := c.Args()
		switch fn := c.FunctionName(); {
		case (fn == "_?._") && len(args) == 2 && args[1].Kind() == ast.LiteralKind:
			if f, ok := args[1].AsLiteral().Value().(string); ok {
				if p := r.pathOf(e, args[0], depth+1); p != nil {
					return append(append([]string(nil), p...), f)
				}
			}
		case (fn == "_[_]" || fn == "_[?_]") && len(args) == 2:
			if p := r.pathOf(e, args[0], depth+1); p != nil {
				return append(append([]string(nil), p...), "@items")
			}
		case (fn == "orValue" || fn == "value") && c.IsMemberFunction():
			return r.pathOf(e, c.Target(), depth+1)
		case (fn == "optional.of" || fn == "optional.ofNonZeroValue") && len(args) == 1:
			return r.pathOf(e, args[0], depth+1)
		}
	case ast.ComprehensionKind:
		// A filter(), map() or transformMap() result has at most as many
		// items as its range; cel.bind's result is its body.
		c := x.AsComprehension()
		if c.IterRange().Kind() == ast.ListKind && len(c.IterRange().AsList().Elements()) == 0 {
			return r.pathOf(e, c.Result(), depth+1)
		}
		switch c.AccuInit().Kind() {
		case ast.ListKind, ast.MapKind:
			return r.pathOf(e, c.IterRange(), depth+1)
		}
	}
	return nil
}
