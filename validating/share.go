package validating

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	celcommon "github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	celtypes "github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/compiler"
)

// Several policies often hold the same expression (a policy library's
// checks on every Pod: `object.spec.containers.all(c, …)`). An expression
// that refers to none of params, request, namespaceObject, the authorizer
// and variables sees only object and oldObject: compiled from the same
// text by the same compiler, its program, value, error and runtime cost
// are the same for the same objects, whichever policy holds it. One
// request evaluates it once per view (the objects in one matched kind)
// and gives the other policies its result, charging its cost to their
// budget as the evaluation would: when that cost passes what is left of
// a budget the expression is evaluated, for the error upstream's
// evaluation gives. The budget is charged after the evaluation (cel-go
// evaluates under the per-call limit alone; compiler.Activation.Eval
// compares the cost with the budget afterwards), so the result never
// depends on it. Not shared: under an Observer (each evaluation is told),
// under a bound of the bytes built (compiler.BoundsBytes: it adds up over
// an activation's evaluations), when the context is done (an evaluation
// would be interrupted).

// shareKeys are a hook's expressions' keys among the Evaluator's shared
// expressions, by filter, -1 where an expression is not shared; a nil
// slice shares none of the filter's.
type shareKeys struct {
	conditions, validations, messages, annotations []int32
}

// unsharedVars are the variables an expression that is shared must not
// refer to: all but object and oldObject.
var unsharedVars = []string{compiler.ParamsVar, compiler.RequestVar, compiler.NamespaceVar,
	compiler.AuthorizerVar, compiler.RequestResourceAuthorizerVar, compiler.VariablesVar}

// shareable tells whether e compiled and refers to none of unsharedVars
// (a comprehension's variable of one of those names counts: no sharing).
func shareable(e *compiler.Expression) bool {
	if e == nil || e.Err != nil || e.AST() == nil {
		return false
	}
	for _, r := range e.AST().NativeRep().ReferenceMap() {
		for _, name := range unsharedVars {
			if r.Name == name || strings.HasPrefix(r.Name, name+".") {
				return false
			}
		}
	}
	return true
}

// selfRepeats is 2 for a policy that may evaluate its expressions several
// times itself (several bindings, or params: a selector can find
// several), else 1: what one of its expressions counts among the holders
// of a text.
func selfRepeats(h *Hook) int {
	if len(h.Bindings) > 1 || h.Policy.Spec.ParamKind != nil {
		return 2
	}
	return 1
}

// assignShareKeys gives the expressions that hooks share (the same kind
// and text, shareable, in two places or more, or in a policy that may
// evaluate it more than once: several bindings, params) one key each, sets each
// hook's shareKeys and returns the number of keys.
func assignShareKeys(hooks []Hook) int {
	type text struct {
		kind   compiler.Kind
		source string
	}
	filters := func(h *Hook) [4][]*compiler.Expression {
		vp := h.compiled
		return [4][]*compiler.Expression{vp.MatchConditions, vp.Validations, vp.MessageExpressions, vp.AuditAnnotations}
	}
	count := map[text]int{}
	for i := range hooks {
		h := &hooks[i]
		if h.compiled == nil {
			continue
		}
		n := selfRepeats(h)
		for _, exprs := range filters(h) {
			for _, e := range exprs {
				if shareable(e) {
					count[text{e.Kind, e.Source}] += n
				}
			}
		}
	}
	keys := map[text]int32{}
	for i := range hooks {
		h := &hooks[i]
		if h.compiled == nil {
			continue
		}
		var out [4][]int32
		for f, exprs := range filters(h) {
			for j, e := range exprs {
				if !shareable(e) || count[text{e.Kind, e.Source}] < 2 {
					continue
				}
				if out[f] == nil {
					out[f] = make([]int32, len(exprs))
					for k := range out[f] {
						out[f][k] = -1
					}
				}
				t := text{e.Kind, e.Source}
				k, ok := keys[t]
				if !ok {
					k = int32(len(keys))
					keys[t] = k
				}
				out[f][j] = k
			}
		}
		h.share = shareKeys{conditions: out[0], validations: out[1], messages: out[2], annotations: out[3]}
	}
	return len(keys)
}

// sharedResults are one request's results of the shared expressions, by
// key: the first evaluation's, with the view it saw.
type sharedResults struct {
	slots []sharedSlot
	// replayed counts the results given instead of an evaluation (tests).
	replayed int
}

type sharedSlot struct {
	view *view
	res  compiler.Result
	// pending marks a slot whose view's first holder evaluated whole
	// (disjunction.go): res is not the expression's result yet.
	pending bool
}

// sharing is what evalAll shares a filter's evaluations through: the
// filter's keys, the request's results and the view the filter sees. The
// zero value shares nothing.
type sharing struct {
	keys    []int32
	results *sharedResults
	view    *view
	// prefixes are the filter's expressions made from a literal and a
	// shared sub-expression (prefixedResult), by index; nil for none.
	prefixes []*prefixed
	// derived are the filter's validations made from their
	// messageExpression's sub-expression (derive.go), by index; nil for
	// none.
	derived []*derived
	// disjunctions are the filter's validations made from their operands
	// (disjunction.go), by index; nil for none.
	disjunctions []*disjunction
	// paramKeys are the filter's expressions' keys among paramResults,
	// the results of the param bound (nil: none kept).
	paramKeys    []int32
	paramResults *paramResults
}

// key is expression i's key, -1 when it is not shared.
func (s sharing) key(i int) int32 {
	if s.keys == nil || s.results == nil || s.view == nil {
		return -1
	}
	return s.keys[i]
}

// get returns the result of key k for the sharing's view when one was
// kept and its cost fits budget.
func (s sharing) get(ctx context.Context, k int32, budget int64) (compiler.Result, bool) {
	slot := &s.results.slots[k]
	if slot.view != s.view || slot.res.Cost > budget || ctx.Err() != nil {
		return compiler.Result{}, false
	}
	s.results.replayed++
	return slot.res, true
}

// put keeps the result of key k for the sharing's view, unless one is kept
// (for another view).
func (s sharing) put(k int32, r compiler.Result) {
	if slot := &s.results.slots[k]; slot.view == nil {
		slot.view, slot.res = s.view, r
	}
}

// shared returns the request's shared results (in buf), nil when nothing is shared
// (no shared expression nor param result kept, an Observer, a bound of the
// bytes built): param results are kept and used only when it is not nil.
func (e *Evaluator) shared(ctx context.Context, buf *scratch) *sharedResults {
	if (e.shareCount == 0 && !e.keepsParamResults) || e.observer != nil || e.noShare || compiler.BoundsBytes(ctx) {
		return nil
	}
	buf.shared.slots = resize(&buf.shared.slots, e.shareCount)
	return &buf.shared
}

// A messageExpression often words its policy's refusal as a literal and
// an expression several policies hold: `"policy 07: " + object.spec.
// containers.filter(…).map(c, c.name).join(", ")`. When the expression
// after the literal (the sub-expression) is shareable and held by two
// such messageExpressions or more, one request evaluates it once per view
// (compiled by itself, from its own text, by the same compiler) and makes
// each messageExpression's result from it: the literal and its string
// joined, as cel-go's `_+_` (add_string) joins them, and the cost cel-go's
// runtime cost tracker charges for the whole expression: the
// sub-expression's cost, nothing for the literal (a constant), and the
// concatenation's (interpreter.CostTracker.costCall: the operands' sizes
// in code points times common.StringTraversalCostFactor, rounded up).
// Whenever that does not hold the messageExpression is evaluated whole:
// the sub-expression's result is an error or not a string, or the cost
// passes what is left of the budget or the per-call limit (cel-go would
// stop the evaluation). Under the conditions that stop sharing (an
// Observer, a bound of the bytes built, a context done) nothing is made.
// TestPrefixedMessagesAreEvaluations holds the results, costs included,
// to the whole evaluation.

// prefixed is a messageExpression made from its literal and a shared
// sub-expression.
type prefixed struct {
	lit string
	sub *subExpression
}

// subExpression is a sub-expression compiled by itself, with its key among
// the Evaluator's shared results.
type subExpression struct {
	policy *compiler.Policy
	expr   *compiler.Expression
	key    int32
}

// splitPrefixed returns the literal and the text of the sub-expression of
// a messageExpression written `<string literal> + <sub-expression>` (the
// root an add_string call whose first operand is a string constant), ok
// false for any other.
func splitPrefixed(e *compiler.Expression) (lit, sub string, ok bool) {
	left, _, right, ok := splitBinary(e, operators.Add, overloads.AddString, "+")
	if !ok || left.Kind() != ast.LiteralKind {
		return "", "", false
	}
	s, isString := left.AsLiteral().(celtypes.String)
	if !isString {
		return "", "", false
	}
	return string(s), right, true
}

// splitBinary returns the operands of e's root when it is the non-member
// call fn of two operands resolved to the one overload, written op (the
// call's offset, in code points, is the operator's), and the text after
// the operator; ok false for any other.
func splitBinary(e *compiler.Expression, fn, overload, op string) (left ast.Expr, leftText, rightText string, ok bool) {
	if e == nil || e.Err != nil || e.AST() == nil {
		return nil, "", "", false
	}
	nat := e.AST().NativeRep()
	root := nat.Expr()
	if root.Kind() != ast.CallKind {
		return nil, "", "", false
	}
	call := root.AsCall()
	if call.FunctionName() != fn || call.IsMemberFunction() || len(call.Args()) != 2 {
		return nil, "", "", false
	}
	if ref, found := nat.ReferenceMap()[root.ID()]; !found || !slices.Equal(ref.OverloadIDs, []string{overload}) {
		return nil, "", "", false
	}
	r, found := nat.SourceInfo().GetOffsetRange(root.ID())
	src, opRunes := []rune(e.Source), []rune(op)
	if !found || r.Start < 0 || int(r.Start)+len(opRunes) > len(src) || string(src[r.Start:int(r.Start)+len(opRunes)]) != op {
		return nil, "", "", false
	}
	return call.Args()[0], string(src[:r.Start]), string(src[int(r.Start)+len(opRunes):]), true
}

// samePrefixedSub tells whether sub, compiled, is the second operand of
// e's root: the same tree (ids aside) with the same overloads.
func samePrefixedSub(e, sub *compiler.Expression) bool {
	nat, subNat := e.AST().NativeRep(), sub.AST().NativeRep()
	return sameExpr(nat.Expr().AsCall().Args()[1], subNat.Expr(), nat.ReferenceMap(), subNat.ReferenceMap())
}

// sameExpr tells whether a and b are the same tree, ids aside, with the
// same references (identifiers and overloads) at each node.
func sameExpr(a, b ast.Expr, refsA, refsB map[int64]*ast.ReferenceInfo) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	ra, rb := refsA[a.ID()], refsB[b.ID()]
	if (ra == nil) != (rb == nil) || ra != nil && (ra.Name != rb.Name || !slices.Equal(ra.OverloadIDs, rb.OverloadIDs) || (ra.Value == nil) != (rb.Value == nil) || ra.Value != nil && ra.Value.Equal(rb.Value) != celtypes.True) {
		return false
	}
	same := func(x, y ast.Expr) bool { return sameExpr(x, y, refsA, refsB) }
	all := func(xs, ys []ast.Expr) bool { return slices.EqualFunc(xs, ys, same) }
	switch a.Kind() {
	case ast.LiteralKind:
		x, y := a.AsLiteral(), b.AsLiteral()
		return x.Type() == y.Type() && x.Equal(y) == celtypes.True
	case ast.IdentKind:
		return a.AsIdent() == b.AsIdent()
	case ast.SelectKind:
		x, y := a.AsSelect(), b.AsSelect()
		return x.FieldName() == y.FieldName() && x.IsTestOnly() == y.IsTestOnly() && same(x.Operand(), y.Operand())
	case ast.CallKind:
		x, y := a.AsCall(), b.AsCall()
		if x.FunctionName() != y.FunctionName() || x.IsMemberFunction() != y.IsMemberFunction() {
			return false
		}
		return (!x.IsMemberFunction() || same(x.Target(), y.Target())) && all(x.Args(), y.Args())
	case ast.ListKind:
		x, y := a.AsList(), b.AsList()
		return slices.Equal(x.OptionalIndices(), y.OptionalIndices()) && all(x.Elements(), y.Elements())
	case ast.ComprehensionKind:
		x, y := a.AsComprehension(), b.AsComprehension()
		return x.IterVar() == y.IterVar() && x.IterVar2() == y.IterVar2() && x.AccuVar() == y.AccuVar() &&
			same(x.IterRange(), y.IterRange()) && same(x.AccuInit(), y.AccuInit()) && same(x.LoopCondition(), y.LoopCondition()) &&
			same(x.LoopStep(), y.LoopStep()) && same(x.Result(), y.Result())
	}
	// Maps, structs and anything else: not compared, not the same.
	return false
}

// keyedOnce hands out one compilation per source text: the first get of
// a text compiles it with the next key (next counts the compilations that
// succeeded), later ones return that compilation (nil when it failed).
type keyedOnce struct {
	compiled map[string]*subExpression
	next     int
}

// get is the compilation of text, compile(key) the first time.
func (k *keyedOnce) get(text string, compile func(key int) *subExpression) *subExpression {
	if s, done := k.compiled[text]; done {
		return s
	}
	s := compile(k.next)
	if k.compiled == nil {
		k.compiled = map[string]*subExpression{}
	}
	k.compiled[text] = s
	if s != nil {
		k.next++
	}
	return s
}

// assignPrefixed finds the hooks' messageExpressions (not shared whole)
// made of a literal and a shareable sub-expression that two of them or
// more hold (a validation that can be made from its messageExpression's
// sub-expression, derive.go, holds it too), compiles each sub-expression
// once with comp (as the messageExpression of a policy of its own), gives
// it a key from next on and sets the hooks' prefixes and derived
// validations; it returns the next key.
func assignPrefixed(hooks []Hook, comp *Compiler, next int) int {
	type candidate struct {
		hook, index int
		lit, sub    string
		// derived is the validation made from the sub-expression, if any.
		derived *derived
	}
	var cands []candidate
	count := map[string]int{}
	for i := range hooks {
		h := &hooks[i]
		if h.compiled == nil {
			continue
		}
		n := selfRepeats(h)
		for j, m := range h.compiled.MessageExpressions {
			if h.share.messages != nil && h.share.messages[j] >= 0 {
				continue
			}
			if lit, sub, ok := splitPrefixed(m); ok {
				c := candidate{hook: i, index: j, lit: lit, sub: sub}
				count[sub] += n
				if h.share.validations == nil || h.share.validations[j] < 0 {
					// The validation made from the sub-expression holds it too.
					if c.derived = derivation(h.compiled.Validations[j], m); c.derived != nil {
						count[sub] += n
					}
				}
				cands = append(cands, c)
			}
		}
	}
	subs := keyedOnce{next: next}
	for _, c := range cands {
		if count[c.sub] < 2 {
			continue
		}
		s := subs.get(c.sub, func(key int) *subExpression { return compileSub(comp, c.sub, key) })
		h := &hooks[c.hook]
		if s == nil || !samePrefixedSub(h.compiled.MessageExpressions[c.index], s.expr) {
			continue
		}
		if h.prefixes == nil {
			h.prefixes = make([]*prefixed, len(h.compiled.MessageExpressions))
		}
		h.prefixes[c.index] = &prefixed{lit: c.lit, sub: s}
		if c.derived != nil {
			if h.derived == nil {
				h.derived = make([]*derived, len(h.compiled.Validations))
			}
			c.derived.sub = s
			h.derived[c.index] = c.derived
		}
	}
	return subs.next
}

// compileSub compiles the sub-expression text as the messageExpression of
// a policy of its own (a name no policy can have: it keys comp's cache),
// nil when it does not compile or is not shareable.
func compileSub(comp *Compiler, text string, key int) *subExpression {
	return compileAlone(comp, admissionregistrationv1.Validation{Expression: "true", MessageExpression: text}, "messageExpression: "+text, key)
}

// compileAlone compiles v as the one validation of a policy of its own
// named name (a name no policy can have: it keys comp's cache) and
// returns its messageExpression when v has one, else its expression, with
// key; nil when it does not compile or is not shareable.
func compileAlone(comp *Compiler, v admissionregistrationv1.Validation, name string, key int) *subExpression {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{v}},
	}
	vp, err := comp.compile(p)
	if err != nil || len(vp.Validations) != 1 {
		return nil
	}
	e := vp.Validations[0]
	if v.MessageExpression != "" {
		if len(vp.MessageExpressions) != 1 {
			return nil
		}
		e = vp.MessageExpressions[0]
	}
	if !shareable(e) {
		return nil
	}
	return &subExpression{policy: vp.Policy, expr: e, key: int32(key)}
}

// prefixedResult returns messageExpression i's result made from its
// literal and its sub-expression's result for the sharing's view
// (evaluated the first time), ok false when it is to be evaluated whole.
func (s sharing) prefixedResult(ctx context.Context, i int, in compiler.Input, budget int64) (compiler.Result, bool) {
	if s.prefixes == nil || s.results == nil || s.view == nil || s.prefixes[i] == nil || ctx.Err() != nil {
		return compiler.Result{}, false
	}
	p := s.prefixes[i]
	r, v, ok := s.subResult(ctx, p.sub, in)
	if !ok {
		return compiler.Result{}, false
	}
	cost := r.Cost + concatCost(celtypes.String(p.lit), v)
	if cost > budget || cost > compiler.PerCallLimit {
		return compiler.Result{}, false
	}
	s.results.replayed++
	return compiler.Result{Value: celtypes.String(p.lit + string(v)), Cost: cost, Elapsed: r.Elapsed}, true
}

// subResult returns sub's result for the sharing's view, evaluated the
// first time (under the per-call limit alone: the caller charges the
// budget), and its string; ok false when sharing is off (no results, no
// view, a context done), the evaluation ended in an error that stops it,
// or its result is an error or not a string.
func (s sharing) subResult(ctx context.Context, sub *subExpression, in compiler.Input) (compiler.Result, celtypes.String, bool) {
	r, ok := s.subEval(ctx, sub, in)
	if !ok {
		return compiler.Result{}, "", false
	}
	str, isString := r.Value.(celtypes.String)
	if r.Err != nil || !isString {
		return compiler.Result{}, "", false
	}
	return r, str, true
}

// subEval returns sub's result for the sharing's view, evaluated the
// first time (under the per-call limit alone: the caller charges the
// budget); ok false when sharing is off (no results, no view, a context
// done) or the evaluation ended in an error that stops it.
func (s sharing) subEval(ctx context.Context, sub *subExpression, in compiler.Input) (compiler.Result, bool) {
	if s.results == nil || s.view == nil || ctx.Err() != nil {
		return compiler.Result{}, false
	}
	slot := &s.results.slots[sub.key]
	if slot.view != s.view || slot.pending {
		act := sub.policy.NewActivation(ctx, in)
		r, _, err := act.Eval(sub.expr, compiler.PerCallLimit)
		act.Release()
		if err != nil {
			return compiler.Result{}, false
		}
		slot.view, slot.res, slot.pending = s.view, r, false
	}
	return slot.res, true
}

// concatCost is what cel-go's runtime cost tracker charges for a + b
// (add_string): their sizes in code points times the string traversal
// factor, rounded up.
func concatCost(a, b celtypes.String) int64 {
	size := a.Size().(celtypes.Int) + b.Size().(celtypes.Int)
	return int64(math.Ceil(float64(size) * celcommon.StringTraversalCostFactor))
}

// An expression of a policy with params that refers to params and to
// nothing else of the request (not object, oldObject, request,
// namespaceObject, the authorizer, variables) has, for one param object,
// the same value, error and cost on every request: `"team " +
// params.data.team`, a passing validation's messageExpression evaluated
// for its cost only. Its first evaluation over a param (the param object
// as the Evaluator's params.Memo holds it: a changed param is another
// object) is kept with the param's binding and used, its cost charged,
// on later requests and bindings, under the rules of the sharing above:
// not when its cost passes what is left of the budget (evaluated, for
// upstream's error), not under an Observer, a bound of the bytes built or
// a context done (neither kept nor used), and only a result of an
// evaluation that ended (no budget error) in a context not done is kept.
// TestParamResultsAreEvaluations and TestParamResultUnderBudget hold it.

// paramResults are the results kept for one param object, by the policy's
// paramKeys; safe for concurrent use.
type paramResults struct {
	slots []atomic.Pointer[compiler.Result]
}

// newParamResults returns the results of n keys, nil for none.
func newParamResults(n int) *paramResults {
	if n == 0 {
		return nil
	}
	return &paramResults{slots: make([]atomic.Pointer[compiler.Result], n)}
}

// paramsOnly tells whether e compiled and refers to params and to none of
// the other variables.
func paramsOnly(e *compiler.Expression) bool {
	if e == nil || e.Err != nil || e.AST() == nil {
		return false
	}
	usesParams := false
	for _, r := range e.AST().NativeRep().ReferenceMap() {
		for _, name := range append([]string{compiler.ObjectVar, compiler.OldObjectVar}, unsharedVars...) {
			if r.Name == name || strings.HasPrefix(r.Name, name+".") {
				if name != compiler.ParamsVar {
					return false
				}
				usesParams = true
			}
		}
	}
	return usesParams
}

// assignParamKeys gives h's expressions over params alone (a policy with
// a paramKind) their keys among a param's results.
func assignParamKeys(h *Hook) {
	if h.compiled == nil || h.Policy.Spec.ParamKind == nil {
		return
	}
	vp := h.compiled
	n := 0
	keys := func(exprs []*compiler.Expression) []int32 {
		var out []int32
		for i, e := range exprs {
			if !paramsOnly(e) {
				continue
			}
			if out == nil {
				out = make([]int32, len(exprs))
				for j := range out {
					out[j] = -1
				}
			}
			out[i] = int32(n)
			n++
		}
		return out
	}
	h.paramKeys = shareKeys{conditions: keys(vp.MatchConditions), validations: keys(vp.Validations), messages: keys(vp.MessageExpressions), annotations: keys(vp.AuditAnnotations)}
	h.paramKeyCount = n
}

// paramKey is expression i's key among the param's results, -1 when none
// is kept (not over params alone, no param results, sharing off).
func (s sharing) paramKey(i int) int32 {
	if s.paramKeys == nil || s.paramResults == nil || s.results == nil {
		return -1
	}
	return s.paramKeys[i]
}

// kept returns expression i's result made without evaluating it: shared
// (key k), made from its literal and shared sub-expression, or kept for
// the param (key pk; an expression over params alone is not shareable).
func (s sharing) kept(ctx context.Context, i int, k, pk int32, in compiler.Input, budget int64) (compiler.Result, bool) {
	if k >= 0 {
		return s.get(ctx, k, budget)
	}
	if r, ok := s.prefixedResult(ctx, i, in, budget); ok {
		return r, true
	}
	if r, ok := s.derivedResult(ctx, i, in, budget); ok {
		return r, true
	}
	if r, ok := s.disjunctionResult(ctx, i, in, budget); ok {
		return r, true
	}
	if pk >= 0 {
		return s.paramResult(ctx, pk, budget)
	}
	return compiler.Result{}, false
}

// paramResult returns the param's result of key k when one is kept and its
// cost fits budget.
func (s sharing) paramResult(ctx context.Context, k int32, budget int64) (compiler.Result, bool) {
	r := s.paramResults.slots[k].Load()
	if r == nil || r.Cost > budget || ctx.Err() != nil {
		return compiler.Result{}, false
	}
	s.results.replayed++
	return *r, true
}

// putParamResult keeps r as the param's result of key k, unless one is
// kept or ctx is done.
func (s sharing) putParamResult(ctx context.Context, k int32, r compiler.Result) {
	if ctx.Err() == nil && s.paramResults.slots[k].Load() == nil {
		s.paramResults.slots[k].CompareAndSwap(nil, &r)
	}
}
