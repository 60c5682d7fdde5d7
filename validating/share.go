package validating

import (
	"context"
	"strings"

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
		// A policy with several bindings, or params (a selector can find
		// several), may evaluate its expressions several times itself.
		n := 1
		if len(h.Bindings) > 1 || h.Policy.Spec.ParamKind != nil {
			n = 2
		}
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
}

// sharing is what evalAll shares a filter's evaluations through: the
// filter's keys, the request's results and the view the filter sees. The
// zero value shares nothing.
type sharing struct {
	keys    []int32
	results *sharedResults
	view    *view
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
// (no shared expression, an Observer, a bound of the bytes built).
func (e *Evaluator) shared(ctx context.Context, buf *scratch) *sharedResults {
	if e.shareCount == 0 || e.observer != nil || e.noShare || compiler.BoundsBytes(ctx) {
		return nil
	}
	buf.shared.slots = resize(&buf.shared.slots, e.shareCount)
	return &buf.shared
}
