package lsp

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
	yaml "go.yaml.in/yaml/v3"
)

// The quick fixes of CEL: each is offered only where the rewrite is
// certain, read from the expression's syntax tree (cel-go's parser, with
// the macros and the optional syntax kube-apiserver enables):
//
//   - guardFix: a read of an optional field lint finds unguarded
//     (read-unguarded-optional), R == c, R != c (c a constant) or c in R,
//     gets the has() of each selection from that field on and the k in m
//     of each index by a string key: (has(…) && … && R == c), and
//     (!(has(…) && …) || R != c). An object without the field gives false
//     (true for !=) where the read failed with "no such key". (The
//     optional form, R' == optional.of(c), is the same value but its cost
//     estimate has no bound: lint would warn about it.)
//   - jsonPatchFix: an ApplyConfiguration that writes an atomic list
//     (object-atomic), Object{a: Object.a{…{f: [ … ]}}} with one field
//     at each level, becomes the JSONPatch that replaces the list as a
//     structured-merge-diff merge would, creating the missing parents
//     ({}) as the merge does.

// celParser parses expressions as kube-apiserver's environments do:
// every macro, the optional syntax.
func parseCEL(expr string) (*ast.AST, bool) {
	p, err := parser.NewParser(parser.Macros(parser.AllMacros...), parser.EnableOptionalSyntax(true), parser.MaxRecursionDepth(250))
	if err != nil {
		return nil, false
	}
	a, errs := p.Parse(common.NewTextSource(expr))
	if errs != nil && len(errs.GetErrors()) > 0 {
		return nil, false
	}
	return a, true
}

// syntax is a parsed expression with each node's parent and start.
type syntax struct {
	ast    *ast.AST
	expr   []rune
	parent map[int64]ast.Expr
}

func newSyntax(expr string) (*syntax, bool) {
	a, ok := parseCEL(expr)
	if !ok {
		return nil, false
	}
	s := &syntax{ast: a, expr: []rune(expr), parent: map[int64]ast.Expr{}}
	ast.PreOrderVisit(a.Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		for _, c := range children(x) {
			s.parent[c.ID()] = x
		}
	}))
	return s, true
}

// children are a node's direct operands.
func children(x ast.Expr) []ast.Expr {
	switch x.Kind() {
	case ast.SelectKind:
		return []ast.Expr{x.AsSelect().Operand()}
	case ast.CallKind:
		var out []ast.Expr
		if x.AsCall().IsMemberFunction() {
			out = append(out, x.AsCall().Target())
		}
		return append(out, x.AsCall().Args()...)
	case ast.ListKind:
		return x.AsList().Elements()
	case ast.MapKind:
		var out []ast.Expr
		for _, e := range x.AsMap().Entries() {
			out = append(out, e.AsMapEntry().Key(), e.AsMapEntry().Value())
		}
		return out
	case ast.StructKind:
		var out []ast.Expr
		for _, f := range x.AsStruct().Fields() {
			out = append(out, f.AsStructField().Value())
		}
		return out
	case ast.ComprehensionKind:
		c := x.AsComprehension()
		return []ast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()}
	}
	return nil
}

// start is the index in the expression of a node's first character as
// the parser records it: a selection's dot, an index's '[', a call's
// function name, a literal's first character.
func (s *syntax) start(x ast.Expr) (int, bool) {
	r, ok := s.ast.SourceInfo().GetOffsetRange(x.ID())
	if !ok || r.Start < 0 || int(r.Start) > len(s.expr) {
		return 0, false
	}
	return int(r.Start), true
}

// chainStep is one step of a read: a selection (its dot at at) or an
// index by a constant (its '[' at at).
type chainStep struct {
	x  ast.Expr
	at int
}

// readChain is the read x is a step of: its steps from x up (selections
// and indexes by a constant), and the read's outermost node.
func (s *syntax) readChain(x ast.Expr) ([]chainStep, ast.Expr, bool) {
	var steps []chainStep
	cur := x
	for {
		at, ok := s.start(cur)
		if !ok {
			return nil, nil, false
		}
		steps = append(steps, chainStep{x: cur, at: at})
		p, ok := s.parent[cur.ID()]
		if !ok {
			return steps, cur, true
		}
		switch {
		case p.Kind() == ast.SelectKind && !p.AsSelect().IsTestOnly() && p.AsSelect().Operand().ID() == cur.ID():
		case isConstIndex(p) && p.AsCall().Args()[0].ID() == cur.ID():
		default:
			return steps, cur, true
		}
		cur = p
	}
}

func isConstIndex(x ast.Expr) bool {
	if x.Kind() != ast.CallKind || x.AsCall().FunctionName() != operators.Index || len(x.AsCall().Args()) != 2 {
		return false
	}
	return x.AsCall().Args()[1].Kind() == ast.LiteralKind
}

// rootStart is where the read of x begins: its innermost operand's start
// (an identifier's).
func (s *syntax) rootStart(x ast.Expr) (int, bool) {
	for {
		switch {
		case x.Kind() == ast.SelectKind:
			x = x.AsSelect().Operand()
		case isConstIndex(x):
			x = x.AsCall().Args()[0]
		case x.Kind() == ast.IdentKind:
			return s.start(x)
		default:
			return 0, false
		}
	}
}

// end is the index after a read's last character: after a selection's
// field name or an index's ']'.
func (s *syntax) end(x ast.Expr) (int, bool) {
	at, ok := s.start(x)
	if !ok {
		return 0, false
	}
	switch {
	case x.Kind() == ast.SelectKind:
		name := []rune(x.AsSelect().FieldName())
		i := at + 1
		for i < len(s.expr) && (s.expr[i] == ' ' || s.expr[i] == '\n' || s.expr[i] == '\t') {
			i++
		}
		if i+len(name) > len(s.expr) || string(s.expr[i:i+len(name)]) != string(name) {
			return 0, false
		}
		return i + len(name), true
	case isConstIndex(x):
		if e := matchingClose(s.expr, at); e > at {
			return e + 1, true
		}
	case x.Kind() == ast.LiteralKind:
		if e := literalEnd(s.expr, at); e > at {
			return e, true
		}
	case x.Kind() == ast.ListKind:
		if e := matchingClose(s.expr, at); e > at {
			return e + 1, true
		}
	}
	return 0, false
}

// matchingClose is the index of the bracket closing the one at i
// (string literals skipped); -1 if none.
func matchingClose(expr []rune, i int) int {
	if i >= len(expr) {
		return -1
	}
	depth := 0
	for j := i; j < len(expr); j++ {
		switch expr[j] {
		case '"', '\'':
			e := literalEnd(expr, j)
			if e <= j {
				return -1
			}
			j = e - 1
		case '[', '(', '{':
			depth++
		case ']', ')', '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// literalEnd is the index after the literal starting at i: a string
// (quoted, triple-quoted, raw, bytes) or a number, bool or null; i when
// there is none.
func literalEnd(expr []rune, i int) int {
	j := i
	raw := false
	for j < len(expr) && (expr[j] == 'r' || expr[j] == 'R' || expr[j] == 'b' || expr[j] == 'B') && j-i < 2 {
		if expr[j] == 'r' || expr[j] == 'R' {
			raw = true
		}
		j++
	}
	if j < len(expr) && (expr[j] == '"' || expr[j] == '\'') {
		q := expr[j]
		triple := j+2 < len(expr) && expr[j+1] == q && expr[j+2] == q
		k := j + 1
		if triple {
			k = j + 3
		}
		for k < len(expr) {
			switch {
			case expr[k] == '\\' && !raw:
				k += 2
				continue
			case triple && expr[k] == q && k+2 < len(expr) && expr[k+1] == q && expr[k+2] == q:
				return k + 3
			case !triple && expr[k] == q:
				return k + 1
			}
			k++
		}
		return i
	}
	k := i
	if k < len(expr) && expr[k] == '-' {
		k++
	}
	for k < len(expr) && (isIdentRune(expr[k]) || expr[k] == '.') {
		k++
	}
	return k
}

// celEdit replaces the characters [from, to) of an expression with text.
type celEdit struct {
	from, to int
	text     string
}

// guardFix is the quick fix of the unguarded read whose field name starts
// at index at of expr (where lint's diagnostic starts): the edits and a
// title; ok is false where no rewrite is certain.
func guardFix(expr string, at int) ([]celEdit, string, bool) {
	s, ok := newSyntax(expr)
	if !ok {
		return nil, "", false
	}
	var sel ast.Expr
	ast.PreOrderVisit(s.ast.Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		if x.Kind() == ast.SelectKind && !x.AsSelect().IsTestOnly() {
			if st, ok := s.start(x); ok && st+1 <= at && at <= st+2 && sel == nil {
				if e, ok := s.end(x); ok && e-len([]rune(x.AsSelect().FieldName())) == at {
					sel = x
				}
			}
		}
	}))
	if sel == nil {
		return nil, "", false
	}
	steps, top, ok := s.readChain(sel)
	if !ok {
		return nil, "", false
	}
	parent, ok := s.parent[top.ID()]
	if !ok || parent.Kind() != ast.CallKind {
		return nil, "", false
	}
	call := parent.AsCall()
	args := call.Args()
	if len(args) != 2 {
		return nil, "", false
	}
	// The guards: has() of each selection from the optional field on, k in
	// m of each index by a string.
	rs, ok := s.rootStart(top)
	if !ok {
		return nil, "", false
	}
	var guards []string
	for _, st := range steps {
		e, ok := s.end(st.x)
		if !ok {
			return nil, "", false
		}
		if st.x.Kind() == ast.SelectKind {
			guards = append(guards, "has("+string(s.expr[rs:e])+")")
			continue
		}
		key := st.x.AsCall().Args()[1]
		if _, isString := key.AsLiteral().(types.String); !isString {
			return nil, "", false
		}
		ks, ok1 := s.start(key)
		ke, ok2 := s.end(key)
		me, ok3 := s.end(st.x.AsCall().Args()[0])
		if !ok1 || !ok2 || !ok3 {
			return nil, "", false
		}
		guards = append(guards, string(s.expr[ks:ke])+" in "+string(s.expr[rs:me]))
	}
	guard := strings.Join(guards, " && ")
	other := args[0]
	if other.ID() == top.ID() {
		other = args[1]
	}
	if other.Kind() != ast.LiteralKind {
		return nil, "", false
	}
	ostart, ok1 := s.start(other)
	oe, ok2 := s.end(other)
	te, ok3 := s.end(top)
	if !ok1 || !ok2 || !ok3 {
		return nil, "", false
	}
	from, to := min(ostart, rs), max(oe, te)
	switch call.FunctionName() {
	case operators.Equals:
		return []celEdit{{from: from, to: from, text: "(" + guard + " && "}, {from: to, to: to, text: ")"}}, "Guard the read with " + guard + " (false without the field)", true
	case operators.NotEquals:
		return []celEdit{{from: from, to: from, text: "(!(" + guard + ") || "}, {from: to, to: to, text: ")"}}, "Guard the read with " + guard + " (true without the field)", true
	case operators.In:
		if args[1].ID() != top.ID() {
			return nil, "", false
		}
		return []celEdit{{from: from, to: from, text: "(" + guard + " && "}, {from: to, to: to, text: ")"}}, "Guard the read with " + guard, true
	}
	return nil, "", false
}

// jsonPatchFix is the JSONPatch expression equivalent to an
// ApplyConfiguration expression that writes the atomic list whose value
// starts at index at: Object{f1: Object.f1{f2: … [items]}}, one field at
// each level and the list a literal. isList tells whether the schema of
// a field path is a list (for every kind the policy targets). ok is
// false where the rewrite is not certain.
func jsonPatchFix(expr string, at int, isList func(path []string) bool) (string, bool) {
	s, ok := newSyntax(expr)
	if !ok {
		return "", false
	}
	x := s.ast.Expr()
	var path []string
	typeName := "Object"
	for x.Kind() == ast.StructKind {
		st := x.AsStruct()
		if st.TypeName() != typeName || len(st.Fields()) != 1 {
			return "", false
		}
		f := st.Fields()[0].AsStructField()
		if f.IsOptional() {
			return "", false
		}
		path = append(path, f.Name())
		typeName += "." + f.Name()
		x = f.Value()
	}
	if len(path) == 0 || x.Kind() != ast.ListKind || !isList(path) {
		return "", false
	}
	vs, ok1 := s.start(x)
	ve, ok2 := s.end(x)
	if !ok1 || !ok2 || vs != at {
		return "", false
	}
	var b strings.Builder
	// The parents a merge creates when missing, each an empty object
	// before the list is added.
	for i := 1; i < len(path); i++ {
		fmt.Fprintf(&b, "(object.?%s.hasValue() ? [] : [JSONPatch{op: \"add\", path: %q, value: {}}]) +\n", strings.Join(path[:i], ".?"), "/"+strings.Join(path[:i], "/"))
	}
	fmt.Fprintf(&b, "[JSONPatch{op: \"add\", path: %q, value: %s}]", "/"+strings.Join(path, "/"), string(s.expr[vs:ve]))
	return b.String(), true
}

// celFixAt maps an expression's edits to the file's text edits: the
// scalar n's characters as scalarOffsets reads them.
func celFixEdits(f *parsedFile, n *yaml.Node, edits []celEdit) []protocol.TextEdit {
	offs := scalarOffsets(f.text, n)
	var out []protocol.TextEdit
	for _, e := range edits {
		from, to := offs[min(e.from, len(offs)-1)], offs[min(e.to, len(offs)-1)]
		out = append(out, protocol.TextEdit{Range: protocol.Range{Start: f.text.position(from), End: f.text.position(to)}, NewText: e.text})
	}
	return out
}

// blockScalar writes text as a YAML literal block scalar (|, or |- when
// it does not end in a newline) whose lines are indented by indent.
func blockScalar(text string, indent int) string {
	header := "|-"
	if strings.HasSuffix(text, "\n") {
		header = "|"
		text = strings.TrimSuffix(text, "\n")
	}
	var b strings.Builder
	b.WriteString(header)
	for _, l := range strings.Split(text, "\n") {
		b.WriteString("\n")
		if l != "" {
			b.WriteString(strings.Repeat(" ", indent))
			b.WriteString(l)
		}
	}
	return b.String()
}

// quickFix is a code action with one file's edits.
func quickFix(path, title string, d protocol.Diagnostic, edits []protocol.TextEdit) protocol.CodeAction {
	return protocol.CodeAction{Title: title, Kind: protocol.QuickFix, Diagnostics: []protocol.Diagnostic{d}, IsPreferred: true,
		Edit: &protocol.WorkspaceEdit{Changes: map[uri.URI][]protocol.TextEdit{uri.File(path): edits}}}
}
