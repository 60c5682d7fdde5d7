package compiler

import (
	"context"
	"errors"
	"math"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// Observer is told about every evaluation of a compiled expression by a
// Compiler created WithObserver: each matchCondition and mutation Eval,
// and each (lazy, at most once per Activation) evaluation of a variable.
// Expressions that failed to compile are never evaluated and never
// observed. ObserveEvaluation is called synchronously by the evaluating
// goroutine, from many goroutines at once when evaluations run in
// parallel: implementations must be safe for concurrent use and must not
// keep ev.Outcomes beyond the call unless they copy it.
type Observer interface {
	// Probes returns the nodes of a compiled expression (its source and
	// checked AST, as Expression.Source and Expression.AST) whose outcomes
	// each Evaluation of it reports. It is called once per expression,
	// when it compiles.
	Probes(source string, checked *cel.Ast) []Probe
	ObserveEvaluation(ev Evaluation)
}

// Probe is a node of a checked AST whose value an Observer wants
// classified as an Outcome at every execution of the node.
type Probe struct {
	// ID is the node's id in the checked AST.
	ID int64
	// Optional tells that the node's value is a CEL optional: present is
	// OutcomeTrue, absent OutcomeFalse. Otherwise true and false are.
	Optional bool
}

// Outcome is a set of outcomes of a probed node observed during one
// evaluation (a node in a comprehension can be observed many times).
type Outcome uint8

// The outcomes of a probed node.
const (
	// OutcomeTrue is true, or present for an Optional probe.
	OutcomeTrue Outcome = 1 << iota
	// OutcomeFalse is false, or absent for an Optional probe.
	OutcomeFalse
	// OutcomeOther is an error, an unknown or a value of another type:
	// it covers neither branch.
	OutcomeOther
)

// outcomeOf classifies the value a probed node evaluated to.
func outcomeOf(optional bool, v any) Outcome {
	if optional {
		if opt, ok := v.(*celtypes.Optional); ok {
			if opt.HasValue() {
				return OutcomeTrue
			}
			return OutcomeFalse
		}
		return OutcomeOther
	}
	switch v {
	case celtypes.True:
		return OutcomeTrue
	case celtypes.False:
		return OutcomeFalse
	}
	return OutcomeOther
}

// Evaluation is one evaluation of an expression, as an Observer sees it.
type Evaluation struct {
	// Policy is the compiled policy the expression belongs to.
	Policy *Policy
	// Expression is the evaluated expression.
	Expression *Expression
	// Value is the result; nil when Err is set.
	Value ref.Val
	// Err is the evaluation's error: the expression's own (as in
	// Result.Err, or a variable's evaluation error) or the budget
	// exhaustion Eval returned.
	Err error
	// Cost is the runtime cost charged, as in Result.Cost (for a variable:
	// its own cost, charged to the expression that used it first).
	Cost int64
	// Outcomes holds, for each of the probes the Observer returned for the
	// expression (same index), the outcomes observed in this evaluation; a
	// node that was not reached has none. Outcomes is nil when the
	// evaluation was cut short (per-call cost limit, cancelled context) and
	// its branches are unknown, or when the probes could not be planned.
	Outcomes []Outcome
}

// outcomesName is the name under which an observing activation answers
// with itself. No CEL identifier can spell it.
const outcomesName = "#mutatis.outcomes"

// probe wraps the plan of a probed node in the instrumented program and
// records the outcome of every execution in the observing activation.
type probe struct {
	interpreter.InterpretableV2
	index    int
	optional bool
}

// Exec implements interpreter.InterpretableV2.
func (p *probe) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	v := p.InterpretableV2.Exec(frame)
	if o, ok := frame.ResolveName(outcomesName); ok {
		if obs, ok := o.(*observingActivation); ok && p.index < len(obs.outcomes) {
			obs.outcomes[p.index] |= outcomeOf(p.optional, v)
		}
	}
	return v
}

// Eval implements interpreter.Interpretable.
func (p *probe) Eval(vars interpreter.Activation) ref.Val {
	return p.Exec(interpreter.AsFrame(vars))
}

// instrumentedProgram plans ast a second time with a probe around every
// probed node. It is only ever evaluated after the ordinary program, for
// its probes: its own cost is not accounted (cel-go's state tracking,
// OptTrackState, would have been simpler but it disables cost tracking
// when combined with OptTrackCost) and it has no cost limit, because the
// ordinary evaluation it repeats finished within the limit.
func instrumentedProgram(env *cel.Env, a *cel.Ast, probes []Probe) (cel.Program, error) {
	index := make(map[int64]int, len(probes))
	for i, p := range probes {
		index[p.ID] = i
	}
	// The planner decorates some nodes twice under the same id (a
	// relative attribute built over an operand that was already planned):
	// only the first, the node's own plan, gets the probe. Planning runs
	// once, on one goroutine, so the set needs no lock.
	planned := make(map[int64]bool, len(probes))
	decorate := func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		n, ok := index[i.ID()]
		if !ok || planned[i.ID()] {
			return i, nil
		}
		planned[i.ID()] = true
		return &probe{InterpretableV2: i, index: n, optional: probes[n].Optional}, nil
	}
	return env.Program(a,
		cel.InterruptCheckFrequency(celconfig.CheckFrequency),
		cel.CostLimit(math.MaxUint64),
		cel.CustomDecoratorV2(decorate))
}

// observingActivation is the activation of one instrumented evaluation:
// it resolves names through the shadow activation and collects outcomes.
type observingActivation struct {
	*Activation
	outcomes []Outcome
}

// ResolveName implements interpreter.Activation.
func (o *observingActivation) ResolveName(name string) (any, bool) {
	if name == outcomesName {
		return o, true
	}
	return o.Activation.ResolveName(name)
}

// shadowActivation returns the twin of a that instrumented evaluations
// use: same inputs, its own lazily evaluated variables, no observer and no
// cost accounting, so that observing can never change what the ordinary
// evaluation charges or which variables it evaluates.
func (a *Activation) shadowActivation() *Activation {
	if a.observing.shadow != nil {
		return a.observing.shadow
	}
	s := &Activation{policy: a.policy, ctx: a.ctx, in: a.in,
		request: a.request, namespace: a.namespace,
		authorizer: a.authorizer, requestResource: a.requestResource, authorizerBound: a.authorizerBound}
	a.observing.shadow = s
	return s
}

// observe runs the instrumented program of e after its ordinary evaluation
// and tells the observer. evalErr is the error of the ordinary ContextEval.
func (a *Activation) observe(e *Expression, val ref.Val, err error, cost int64, evalErr error) {
	ev := Evaluation{Policy: a.policy, Expression: e, Value: val, Err: err, Cost: cost}
	if e.instrumented != nil && !cutShort(a.ctx, evalErr) {
		obs := &observingActivation{Activation: a.shadowActivation(), outcomes: make([]Outcome, len(e.probes))}
		_, _, _ = e.instrumented.ContextEval(a.ctx, obs)
		ev.Outcomes = obs.outcomes
	}
	a.observing.observer.ObserveEvaluation(ev)
}

// cutShort reports whether an ordinary evaluation stopped before its end
// (cost limit, cancellation), so that repeating it would do more work than
// it did and observe branches it never reached.
func cutShort(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	if err == nil {
		return false
	}
	var cancelled interpreter.EvalCancelledError
	return errors.As(err, &cancelled) || errors.Is(err, interpreter.InterruptError{})
}
