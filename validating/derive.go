package validating

import (
	"context"
	"slices"
	"strconv"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	celtypes "github.com/google/cel-go/common/types"

	"github.com/mutatis-dev/mutatis/compiler"
)

// A validation often compares a count with a bound and words its refusal
// with the count: `object.spec.containers.size() <= 1`, its
// messageExpression `"at most one container, not " +
// string(object.spec.containers.size())`. When the messageExpression is
// made from its literal and a sub-expression `string(X)` (share.go's
// prefixed: X shareable, the conversion int64_to_string, so X is an int)
// and the validation is X compared with an int literal (`X <= 1`, `1 >=
// X`: ==, !=, <, <=, >, >= of one int64 overload each), one evaluation of
// `string(X)` per view gives both: the messageExpression's result as the
// prefixed ones are made, and the validation's. Its value is X's value
// (string(int) is strconv.FormatInt, which strconv.ParseInt reverses
// exactly) compared with the literal; its cost is what cel-go's runtime
// cost tracker charges the whole validation: X's cost (what the
// evaluation of string(X) charged, less the conversion's 1: a conversion
// is O(1) in interpreter.CostTracker.costCall, and Kubernetes' cost
// estimator has no cost of its own for it) plus the comparison's 1
// (int64 comparisons are O(1); equals and not_equals charge the smaller
// operand's size, 1 for an int, times the string traversal factor,
// rounded up: 1), the literal free. The two evaluations run the same
// steps of X, so the per-call limit stops neither when it stops not the
// other; the cost is checked against what is left of the budget and the
// limit, and the validation is evaluated whole whenever the result is
// not made (the sub-expression's result an error or not a number, the
// cost over what is left) and under every condition that stops sharing.
// TestDerivedValidationsAreEvaluations holds value and cost to the whole
// evaluation on random Pods, for every operator, each side.

// derived is a validation made from its messageExpression's
// sub-expression string(X): X op lit, or lit op X when litFirst.
type derived struct {
	sub      *subExpression
	overload string
	lit      int64
	litFirst bool
}

// comparisonOverloads are the comparisons of two ints a derived validation
// can be, by operator: their one overload.
var comparisonOverloads = map[string]string{
	operators.Equals:        overloads.Equals,
	operators.NotEquals:     overloads.NotEquals,
	operators.Less:          overloads.LessInt64,
	operators.LessEquals:    overloads.LessEqualsInt64,
	operators.Greater:       overloads.GreaterInt64,
	operators.GreaterEquals: overloads.GreaterEqualsInt64,
}

// derivation returns validation v as a comparison of the operand of
// message m's string conversion (`<literal> + string(X)`, splitPrefixed's
// form) with an int literal, nil when it is not one (sub is set later).
func derivation(v, m *compiler.Expression) *derived {
	if v == nil || v.Err != nil || v.AST() == nil || m == nil || m.Err != nil || m.AST() == nil {
		return nil
	}
	if _, _, ok := splitPrefixed(m); !ok {
		return nil
	}
	mNat, vNat := m.AST().NativeRep(), v.AST().NativeRep()
	conv := mNat.Expr().AsCall().Args()[1]
	if conv.Kind() != ast.CallKind {
		return nil
	}
	cc := conv.AsCall()
	if cc.FunctionName() != "string" || cc.IsMemberFunction() || len(cc.Args()) != 1 {
		return nil
	}
	if r, found := mNat.ReferenceMap()[conv.ID()]; !found || !slices.Equal(r.OverloadIDs, []string{overloads.IntToString}) {
		return nil
	}
	root := vNat.Expr()
	if root.Kind() != ast.CallKind {
		return nil
	}
	call := root.AsCall()
	overload, isComparison := comparisonOverloads[call.FunctionName()]
	if !isComparison || call.IsMemberFunction() || len(call.Args()) != 2 {
		return nil
	}
	if r, found := vNat.ReferenceMap()[root.ID()]; !found || !slices.Equal(r.OverloadIDs, []string{overload}) {
		return nil
	}
	d := &derived{overload: overload}
	x, lit := call.Args()[0], call.Args()[1]
	if x.Kind() == ast.LiteralKind {
		x, lit, d.litFirst = lit, x, true
	}
	if lit.Kind() != ast.LiteralKind {
		return nil
	}
	k, isInt := lit.AsLiteral().(celtypes.Int)
	if !isInt {
		return nil
	}
	d.lit = int64(k)
	if !sameExpr(x, cc.Args()[0], vNat.ReferenceMap(), mNat.ReferenceMap()) {
		return nil
	}
	return d
}

// compare is the comparison's value for X = x.
func (d *derived) compare(x int64) bool {
	a, b := x, d.lit
	if d.litFirst {
		a, b = b, a
	}
	switch d.overload {
	case overloads.Equals:
		return a == b
	case overloads.NotEquals:
		return a != b
	case overloads.LessInt64:
		return a < b
	case overloads.LessEqualsInt64:
		return a <= b
	case overloads.GreaterInt64:
		return a > b
	}
	return a >= b // GreaterEqualsInt64
}

// derivedResult returns validation i's result made from its
// messageExpression's sub-expression's result for the sharing's view
// (evaluated the first time), ok false when it is to be evaluated whole.
func (s sharing) derivedResult(ctx context.Context, i int, in compiler.Input, budget int64) (compiler.Result, bool) {
	if s.derived == nil || s.derived[i] == nil {
		return compiler.Result{}, false
	}
	d := s.derived[i]
	r, str, ok := s.subResult(ctx, d.sub, in)
	if !ok {
		return compiler.Result{}, false
	}
	x, err := strconv.ParseInt(string(str), 10, 64)
	if err != nil {
		return compiler.Result{}, false
	}
	// X's cost (the conversion's 1 taken off) and the comparison's 1.
	cost := r.Cost - 1 + 1
	if cost > budget || cost > compiler.PerCallLimit {
		return compiler.Result{}, false
	}
	s.results.replayed++
	return compiler.Result{Value: celtypes.Bool(d.compare(x)), Cost: cost, Elapsed: r.Elapsed}, true
}
