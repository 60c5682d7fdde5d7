package validating

import (
	"context"

	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	celtypes "github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mutatis-dev/mutatis/compiler"
)

// Policies often guard a check with the same test: `!has(object.metadata.
// labels) || !("forbidden-07" in object.metadata.labels)`, ten policies
// with ten different second operands. When a validation is `A || B` (the
// root a logical_or call), A and B shareable and A held by two such
// validations or more, A and B are compiled by themselves (from their own
// text, by the same compiler, as validations of a policy of their own),
// one request evaluates A once per view (from the view's second holder
// on: the first is evaluated whole, so that a request one holder matches
// costs what it cost before), and each validation's result is made as
// cel-go's evalOr makes it, short-circuit on true:
//
//   - A true: true, at A's cost (B is not evaluated);
//   - A false: B evaluated (under the per-call limit alone), its value
//     when it is a bool, at A's cost plus B's: cel-go's runtime cost
//     tracker charges `||` nothing of its own (interpreter.CostTracker.
//     PostEval: evalOr only drops its terms), and each operand's steps
//     what they cost evaluated by themselves.
//
// Whenever that does not hold the validation is evaluated whole: A or B
// an error, an unknown or not a bool (evalOr's error and unknown
// absorption: an error of A is absorbed by a true B, and the error kept
// is labelled with the `||` node), the cost over what is left of the
// budget or over the per-call limit (cel-go would have stopped the
// whole evaluation: its cost only grows as it runs), and under every
// condition that stops sharing (an Observer, a bound of the bytes built,
// a context done). TestDisjunctionsAreEvaluations holds value and cost to
// the whole evaluation on random Pods.

// disjunction is a validation `first || second` made from its operands
// compiled by themselves; first is shared (it has a key).
type disjunction struct {
	first, second *subExpression
}

// splitDisjunction returns the texts of the operands of a validation
// written `A || B` (the root a logical_or call), ok false for any other.
func splitDisjunction(e *compiler.Expression) (first, second string, ok bool) {
	_, first, second, ok = splitBinary(e, operators.LogicalOr, overloads.LogicalOr, "||")
	return first, second, ok
}

// assignDisjunctions finds the hooks' validations (not shared whole nor
// derived) written `A || B`, A and B shareable and A held by two of them
// or more, compiles each A once and each B with comp, gives each A a key
// from next on and sets the hooks' disjunctions; it returns the next key.
func assignDisjunctions(hooks []Hook, comp *Compiler, next int) int {
	type candidate struct {
		hook, index   int
		first, second string
	}
	var cands []candidate
	count := map[string]int{}
	for i := range hooks {
		h := &hooks[i]
		if h.compiled == nil {
			continue
		}
		for j, v := range h.compiled.Validations {
			if h.share.validations != nil && h.share.validations[j] >= 0 || h.derived != nil && h.derived[j] != nil {
				continue
			}
			if a, b, ok := splitDisjunction(v); ok {
				cands = append(cands, candidate{hook: i, index: j, first: a, second: b})
				count[a] += selfRepeats(h)
			}
		}
	}
	firsts := keyedOnce{next: next}
	for _, c := range cands {
		if count[c.first] < 2 {
			continue
		}
		a := firsts.get(c.first, func(key int) *subExpression { return compileOperand(comp, c.first, key) })
		if a == nil {
			continue
		}
		b := compileOperand(comp, c.second, -1)
		h := &hooks[c.hook]
		v := h.compiled.Validations[c.index]
		nat := v.AST().NativeRep()
		args := nat.Expr().AsCall().Args()
		if b == nil || !sameExpr(args[0], a.expr.AST().NativeRep().Expr(), nat.ReferenceMap(), a.expr.AST().NativeRep().ReferenceMap()) ||
			!sameExpr(args[1], b.expr.AST().NativeRep().Expr(), nat.ReferenceMap(), b.expr.AST().NativeRep().ReferenceMap()) {
			continue
		}
		if h.disjunctions == nil {
			h.disjunctions = make([]*disjunction, len(h.compiled.Validations))
		}
		h.disjunctions[c.index] = &disjunction{first: a, second: b}
	}
	return firsts.next
}

// compileOperand compiles the operand text as the validation of a policy
// of its own, with key, nil when it does not compile or is not shareable.
func compileOperand(comp *Compiler, text string, key int) *subExpression {
	return compileAlone(comp, admissionregistrationv1.Validation{Expression: text}, "operand: "+text, key)
}

// disjunctionResult returns validation i's result made from its operands'
// results for the sharing's view (the first evaluated the first time),
// ok false when it is to be evaluated whole.
func (s sharing) disjunctionResult(ctx context.Context, i int, in compiler.Input, budget int64) (compiler.Result, bool) {
	if s.disjunctions == nil || s.disjunctions[i] == nil {
		return compiler.Result{}, false
	}
	d := s.disjunctions[i]
	if s.results == nil || s.view == nil {
		return compiler.Result{}, false
	}
	if slot := &s.results.slots[d.first.key]; slot.view != s.view {
		// The view's first holder is evaluated whole, as if no other held
		// A (a request that one of them matches pays nothing more); the
		// next evaluates A.
		slot.view, slot.pending = s.view, true
		return compiler.Result{}, false
	}
	a, ok := s.subEval(ctx, d.first, in)
	if !ok || a.Err != nil {
		return compiler.Result{}, false
	}
	av, isBool := a.Value.(celtypes.Bool)
	if !isBool {
		return compiler.Result{}, false
	}
	r := compiler.Result{Value: celtypes.True, Cost: a.Cost, Elapsed: a.Elapsed}
	if av != celtypes.True {
		act := d.second.policy.NewActivation(ctx, in)
		b, _, err := act.Eval(d.second.expr, compiler.PerCallLimit)
		act.Release()
		if err != nil || b.Err != nil || ctx.Err() != nil {
			return compiler.Result{}, false
		}
		bv, isBool := b.Value.(celtypes.Bool)
		if !isBool {
			return compiler.Result{}, false
		}
		r.Value, r.Cost, r.Elapsed = bv, a.Cost+b.Cost, a.Elapsed+b.Elapsed
	}
	if r.Cost > budget || r.Cost > compiler.PerCallLimit {
		return compiler.Result{}, false
	}
	s.results.replayed++
	return r, true
}
