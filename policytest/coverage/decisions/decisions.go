// Package decisions finds the decisions of a checked CEL expression: the
// nodes whose evaluation can go two ways (the operands of && and ||, ?:
// conditions, has() tests, optional selections, orValue receivers,
// comprehension predicates), with their text in the source.
// docs/coverage.md defines them for users; package coverage counts their
// outcomes, observed through the compiler's probes (compiler.Probe).
package decisions

import (
	"unicode/utf8"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	celtypes "github.com/google/cel-go/common/types"
)

// Kind tells why a node of an expression is a decision.
type Kind int

// The kinds of decisions, from the most specific: a node that is both, say,
// a has() test and an operand of && is a Has.
const (
	// Has is a has() presence test: present or absent.
	Has Kind = iota
	// Optional is an optional field selection or index (a.?b, a[?k]):
	// present or absent.
	Optional
	// OrValue is the receiver of optional orValue() or or(): present or
	// absent.
	OrValue
	// Conditional is the condition of c ? a : b: true or false.
	Conditional
	// And is an operand of &&: true or false.
	And
	// Or is an operand of ||: true or false.
	Or
	// Predicate is the predicate of a comprehension macro (all, exists,
	// exists_one, filter, the filter of map(x, p, f), and their
	// two-variable forms): true or false, over all iterations.
	Predicate
)

// String names the kind as reports show it.
func (k Kind) String() string {
	switch k {
	case Has:
		return "has()"
	case Optional:
		return "optional"
	case OrValue:
		return "orValue"
	case Conditional:
		return "?:"
	case And:
		return "&&"
	case Or:
		return "||"
	case Predicate:
		return "predicate"
	}
	return "unknown"
}

// Presence reports whether the two outcomes of the kind are "present" and
// "absent" rather than true and false.
func (k Kind) Presence() bool {
	return k == Has || k == Optional || k == OrValue
}

// OptionalValue reports whether the value of a node of the kind is a CEL
// optional whose presence is the outcome (optional selections and orValue
// receivers), rather than a bool (has() included): what a compiler.Probe
// of the node classifies.
func (k Kind) OptionalValue() bool {
	return k.Presence() && k != Has
}

// Decision is one node of an expression whose evaluation can go two ways.
// Every node is at most one decision, whatever roles it plays.
type Decision struct {
	// ID is the node's id in the checked AST.
	ID int64
	// Kind tells why the node is a decision.
	Kind Kind
	// Start and End delimit the node's text in the expression's source,
	// as byte offsets: source[Start:End].
	Start, End int
}

// Of lists the decisions of a checked expression and its source text, in
// the order of their nodes' first appearance in a depth-first walk.
//
// The rules, documented for users in docs/coverage.md:
//   - operands of a chain of the same logical operator are flattened
//     (a && b && c has three operands whatever the parser's grouping);
//   - logical negations are looked through: the decision of !x is x;
//   - the && / || / ?: that comprehension macros generate are not
//     decisions (they combine the accumulator), their predicate is.
func Of(a *ast.AST, source string) []Decision {
	w := &decisionWalker{byID: map[int64]int{}, text: newSourceText(source, a)}
	w.walk(a.Expr())
	for i := range w.out {
		w.out[i].Start, w.out[i].End = w.text.span(w.nodes[i])
	}
	return w.out
}

type decisionWalker struct {
	byID  map[int64]int
	out   []Decision
	nodes []ast.Expr
	accu  []string // accumulators of the enclosing comprehensions
	text  *sourceText
}

// rank orders the kinds a node can have: the smallest wins.
func (k Kind) rank() int { return int(k) }

func (w *decisionWalker) add(e ast.Expr, k Kind) {
	if w.isAccumulator(e) {
		return
	}
	if i, ok := w.byID[e.ID()]; ok {
		if k.rank() < w.out[i].Kind.rank() {
			w.out[i].Kind = k
		}
		return
	}
	w.byID[e.ID()] = len(w.out)
	w.out = append(w.out, Decision{ID: e.ID(), Kind: k})
	w.nodes = append(w.nodes, e)
}

func (w *decisionWalker) isAccumulator(e ast.Expr) bool {
	if e.Kind() != ast.IdentKind {
		return false
	}
	for _, a := range w.accu {
		if e.AsIdent() == a {
			return true
		}
	}
	return false
}

// stripNot looks through logical negations.
func stripNot(e ast.Expr) ast.Expr {
	for isCallOf(e, operators.LogicalNot) && len(e.AsCall().Args()) == 1 {
		e = e.AsCall().Args()[0]
	}
	return e
}

func isCallOf(e ast.Expr, fn string) bool {
	return e.Kind() == ast.CallKind && e.AsCall().FunctionName() == fn
}

func (w *decisionWalker) walk(e ast.Expr) {
	switch e.Kind() {
	case ast.CallKind:
		c := e.AsCall()
		switch fn := c.FunctionName(); {
		case fn == operators.LogicalAnd:
			w.logical(e, fn, And)
			return
		case fn == operators.LogicalOr:
			w.logical(e, fn, Or)
			return
		case fn == operators.Conditional && len(c.Args()) == 3:
			w.add(stripNot(c.Args()[0]), Conditional)
		case fn == operators.OptSelect || fn == operators.OptIndex:
			w.add(e, Optional)
		case (fn == "orValue" || fn == "or") && c.IsMemberFunction() && len(c.Args()) == 1:
			w.add(c.Target(), OrValue)
		}
		if c.IsMemberFunction() {
			w.walk(c.Target())
		}
		for _, arg := range c.Args() {
			w.walk(arg)
		}
	case ast.SelectKind:
		s := e.AsSelect()
		if s.IsTestOnly() {
			w.add(e, Has)
		}
		w.walk(s.Operand())
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			w.walk(el)
		}
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			if en.Kind() == ast.MapEntryKind {
				w.walk(en.AsMapEntry().Key())
				w.walk(en.AsMapEntry().Value())
			}
		}
	case ast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			if f.Kind() == ast.StructFieldKind {
				w.walk(f.AsStructField().Value())
			}
		}
	case ast.ComprehensionKind:
		comp := e.AsComprehension()
		w.walk(comp.IterRange())
		w.walk(comp.AccuInit())
		w.accu = append(w.accu, comp.AccuVar())
		w.walk(comp.LoopCondition())
		w.step(comp.LoopStep())
		w.walk(comp.Result())
		w.accu = w.accu[:len(w.accu)-1]
	}
}

// logical adds the operands of a chain of fn (&& or ||) and walks them.
func (w *decisionWalker) logical(e ast.Expr, fn string, k Kind) {
	for _, arg := range e.AsCall().Args() {
		if isCallOf(arg, fn) {
			w.logical(arg, fn, k)
			continue
		}
		w.add(stripNot(arg), k)
		w.walk(arg)
	}
}

// step walks the loop step of a comprehension. Macros combine the
// accumulator with the user's predicate through && (all), || (exists) or
// ?: (exists_one, filter, map with a filter, transformList…): the predicate
// is the decision, the generated operator is not.
func (w *decisionWalker) step(e ast.Expr) {
	if e.Kind() == ast.CallKind {
		c := e.AsCall()
		args := c.Args()
		switch fn := c.FunctionName(); {
		case (fn == operators.LogicalAnd || fn == operators.LogicalOr) && len(args) == 2:
			for i, arg := range args {
				if w.isAccumulator(arg) {
					other := args[1-i]
					w.add(stripNot(other), Predicate)
					w.walk(other)
					return
				}
			}
		case fn == operators.Conditional && len(args) == 3 && w.isAccumulator(args[2]):
			w.add(stripNot(args[0]), Predicate)
			w.walk(args[0])
			w.walk(args[1])
			return
		}
	}
	w.walk(e)
}

// sourceText maps AST nodes to their text. The parser records only the
// position of each node's own token (an operator, a '(' or '.'), in code
// points; a node's text is the union of its subtree's tokens, widened to
// the field names, function names and brackets the AST does not record.
type sourceText struct {
	src      []rune
	byteOff  []int // byteOff[i] is the byte offset of rune i
	info     *ast.SourceInfo
	literals []ast.OffsetRange // string and bytes literals, skipped when counting brackets
}

func newSourceText(source string, a *ast.AST) *sourceText {
	t := &sourceText{src: []rune(source), info: a.SourceInfo()}
	t.byteOff = make([]int, 0, len(t.src)+1)
	for i := range source {
		t.byteOff = append(t.byteOff, i)
	}
	t.byteOff = append(t.byteOff, len(source))
	var collect func(e ast.Expr)
	collect = func(e ast.Expr) {
		if e.Kind() == ast.LiteralKind {
			switch e.AsLiteral().(type) {
			case celtypes.String, celtypes.Bytes:
				if lo, hi, ok := t.own(e); ok {
					t.literals = append(t.literals, ast.OffsetRange{Start: int32(lo), Stop: int32(hi)})
				}
			}
		}
		for _, c := range astChildren(e) {
			collect(c)
		}
	}
	collect(a.Expr())
	return t
}

// astChildren lists the direct subexpressions of e.
func astChildren(e ast.Expr) []ast.Expr {
	var out []ast.Expr
	switch e.Kind() {
	case ast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() {
			out = append(out, c.Target())
		}
		out = append(out, c.Args()...)
	case ast.SelectKind:
		out = append(out, e.AsSelect().Operand())
	case ast.ListKind:
		out = append(out, e.AsList().Elements()...)
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			if en.Kind() == ast.MapEntryKind {
				out = append(out, en.AsMapEntry().Key(), en.AsMapEntry().Value())
			}
		}
	case ast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			if f.Kind() == ast.StructFieldKind {
				out = append(out, f.AsStructField().Value())
			}
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		out = append(out, c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result())
	}
	return out
}

// span returns the byte range of e's text, or 0, 0 when unknown.
func (t *sourceText) span(e ast.Expr) (int, int) {
	lo, hi, ok := t.extent(e)
	if !ok {
		return 0, 0
	}
	lo, hi = t.balance(lo, hi)
	return t.byteOff[lo], t.byteOff[hi]
}

// extent is the rune range of e's subtree tokens, widened by the rules of
// each node kind.
func (t *sourceText) extent(e ast.Expr) (lo, hi int, ok bool) {
	lo, hi, ok = t.own(e)
	for _, c := range astChildren(e) {
		if clo, chi, cok := t.extent(c); cok {
			if !ok || clo < lo {
				lo = clo
			}
			if !ok || chi > hi {
				hi = chi
			}
			ok = true
		}
	}
	if !ok {
		return 0, 0, false
	}
	switch e.Kind() {
	case ast.SelectKind:
		if olo, ohi, ook := t.extent(e.AsSelect().Operand()); ook {
			hi = max(hi, t.afterField(ohi))
			if e.AsSelect().IsTestOnly() {
				lo = min(lo, t.beforeWord(olo, "has"))
			}
		}
	case ast.CallKind, ast.StructKind:
		lo = t.beforeName(lo)
	}
	return lo, hi, true
}

// own is the rune range of e's own token. The parser records a token's
// start in code points but its stop as start plus the token's length in
// bytes (they differ in string literals with non-ASCII text).
func (t *sourceText) own(e ast.Expr) (lo, hi int, ok bool) {
	r, found := t.info.GetOffsetRange(e.ID())
	if !found || r.Stop <= r.Start || r.Start < 0 || int(r.Start) >= len(t.src) {
		return 0, 0, false
	}
	lo, hi = int(r.Start), int(r.Start)
	for n := 0; hi < len(t.src) && n < int(r.Stop-r.Start); hi++ {
		n += utf8.RuneLen(t.src[hi])
	}
	return lo, hi, true
}

func isIdentRune(r rune) bool {
	return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}

func isSourceSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// afterField returns the end of ".name" (or ".`name`") following pos, or
// pos when the text there is not a field selection.
func (t *sourceText) afterField(pos int) int {
	p := pos
	for p < len(t.src) && isSourceSpace(t.src[p]) {
		p++
	}
	if p >= len(t.src) || t.src[p] != '.' {
		return pos
	}
	p++
	for p < len(t.src) && isSourceSpace(t.src[p]) {
		p++
	}
	if p < len(t.src) && t.src[p] == '`' {
		for q := p + 1; q < len(t.src); q++ {
			if t.src[q] == '`' {
				return q + 1
			}
		}
		return pos
	}
	q := p
	for q < len(t.src) && isIdentRune(t.src[q]) {
		q++
	}
	if q == p {
		return pos
	}
	return q
}

// beforeWord returns the start of "word (" preceding pos (the has() macro),
// or pos.
func (t *sourceText) beforeWord(pos int, word string) int {
	p := pos - 1
	for p >= 0 && isSourceSpace(t.src[p]) {
		p--
	}
	if p < 0 || t.src[p] != '(' {
		return pos
	}
	p--
	for p >= 0 && isSourceSpace(t.src[p]) {
		p--
	}
	w := []rune(word)
	start := p - len(w) + 1
	if start < 0 || string(t.src[start:p+1]) != word || (start > 0 && isIdentRune(t.src[start-1])) {
		return pos
	}
	return start
}

// beforeName widens a range that starts at the '(' of a global call or the
// '{' of a message construction to the (qualified) name before it.
func (t *sourceText) beforeName(lo int) int {
	if lo >= len(t.src) || (t.src[lo] != '(' && t.src[lo] != '{') {
		return lo
	}
	p := lo - 1
	for p >= 0 && isSourceSpace(t.src[p]) {
		p--
	}
	end := p
	for p >= 0 && (isIdentRune(t.src[p]) || t.src[p] == '.') {
		p--
	}
	if p == end {
		return lo
	}
	return p + 1
}

// balance widens [lo, hi) until its brackets pair up: the closing brackets
// of calls, lists, maps and messages are not AST tokens, nor are the
// parentheses around a grouped subexpression that the range cuts.
func (t *sourceText) balance(lo, hi int) (int, int) {
	open, unmatched := 0, 0
	for i := lo; i < hi; i++ {
		if r, ok := t.literalAt(i); ok {
			i = int(r.Stop) - 1
			continue
		}
		switch t.src[i] {
		case '(', '[', '{':
			open++
		case ')', ']', '}':
			if open > 0 {
				open--
			} else {
				unmatched++
			}
		}
	}
	for ; unmatched > 0; unmatched-- {
		p := lo - 1
		for p >= 0 && isSourceSpace(t.src[p]) {
			p--
		}
		if p < 0 || (t.src[p] != '(' && t.src[p] != '[' && t.src[p] != '{') {
			break
		}
		lo = p
	}
	for ; open > 0; open-- {
		p := hi
		for p < len(t.src) && (isSourceSpace(t.src[p]) || t.src[p] == ',') {
			p++
		}
		if p >= len(t.src) || (t.src[p] != ')' && t.src[p] != ']' && t.src[p] != '}') {
			break
		}
		hi = p + 1
	}
	return lo, hi
}

func (t *sourceText) literalAt(i int) (ast.OffsetRange, bool) {
	for _, r := range t.literals {
		if int(r.Start) == i {
			return r, true
		}
	}
	return ast.OffsetRange{}, false
}
