// Package coverage measures how much of a set of MutatingAdmissionPolicies a
// test suite exercises: per policy, the mutations evaluated, the bindings
// that invoked it, the matchConditions seen true and false, the variables
// evaluated, and the CEL branches taken both ways (each operand of && and
// ||, each ?: condition, each has(), optional selection and orValue, each
// comprehension predicate). docs/coverage.md defines every metric.
//
// A Recorder observes evaluations through a compiler.Observer and engine
// results through RecordResult; Report turns what it saw into numbers, a
// text table, JSON and an HTML page that highlights expression sources.
package coverage

import (
	"sync"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/policytest/coverage/decisions"
)

// Recorder accumulates coverage. It is safe for concurrent use: test cases
// may run in parallel against one Recorder.
type Recorder struct {
	mu          sync.Mutex
	expressions map[exprKey]*exprRecord
	bindings    map[bindingKey]*bindingRecord
	conditions  map[conditionKey]compiler.Outcome // matchCondition outcomes learnt from engine results
	comp        *compiler.Compiler                // compiles policies for Report, created on first use
}

type exprKey struct{ policy, path string }

type exprRecord struct {
	evaluations int
	// results are the outcomes of the expression's value (true, false,
	// error), which is what matters for a matchCondition.
	results  compiler.Outcome
	outcomes []compiler.Outcome
}

type bindingKey struct{ policy, binding string }

type bindingRecord struct {
	invoked, selected int
	falseConditions   map[string]bool
}

type conditionKey struct{ policy, condition string }

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{
		expressions: map[exprKey]*exprRecord{},
		bindings:    map[bindingKey]*bindingRecord{},
		conditions:  map[conditionKey]compiler.Outcome{},
	}
}

// CompilerOption returns the option that makes a compiler report its
// evaluations to r: compiler.New(r.CompilerOption()).
func (r *Recorder) CompilerOption() compiler.Option {
	return compiler.WithObserver(r)
}

// Probes implements compiler.Observer: one probe per decision of the
// expression (package decisions), in the order of decisions.Of.
func (r *Recorder) Probes(source string, checked *cel.Ast) []compiler.Probe {
	var out []compiler.Probe
	for _, d := range decisions.Of(checked.NativeRep(), source) {
		out = append(out, compiler.Probe{ID: d.ID, Optional: d.Kind.OptionalValue()})
	}
	return out
}

// ObserveEvaluation implements compiler.Observer.
func (r *Recorder) ObserveEvaluation(ev compiler.Evaluation) {
	if ev.Policy == nil || ev.Expression == nil || ev.Expression.Path == nil {
		return
	}
	key := exprKey{policy: ev.Policy.Name, path: ev.Expression.Path.String()}
	var result compiler.Outcome
	switch {
	case ev.Err != nil:
		result = compiler.OutcomeOther
	case ev.Value == celtypes.True:
		result = compiler.OutcomeTrue
	case ev.Value == celtypes.False:
		result = compiler.OutcomeFalse
	default:
		result = compiler.OutcomeOther
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.expressions[key]
	if rec == nil {
		rec = &exprRecord{}
		r.expressions[key] = rec
	}
	rec.evaluations++
	rec.results |= result
	if len(ev.Outcomes) > len(rec.outcomes) {
		rec.outcomes = append(rec.outcomes, make([]compiler.Outcome, len(ev.Outcomes)-len(rec.outcomes))...)
	}
	for i, o := range ev.Outcomes {
		rec.outcomes[i] |= o
	}
}

// notSelected are the engine's reasons for skipping a binding before its
// matchConditions.
func notSelected(r chain.Skip) bool {
	return r == chain.SkipBindingNotSelected || r == chain.SkipBindingConfigError
}

// RecordResult records the bindings of one admission result: a binding is
// exercised when an invocation through it ran its mutations; it is
// selected when its matchResources selected the request (whatever the
// matchConditions decided). A matchCondition that filtered an invocation
// out counts as evaluated false, and an invocation that got past them
// counts as all of its policy's matchConditions true, so that
// matchCondition coverage is right even without the compiler option.
func (r *Recorder) RecordResult(res chain.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, inv := range res.Invocations {
		if inv.Hook == "" || notSelected(inv.Skip) {
			continue
		}
		key := bindingKey{policy: inv.Configuration, binding: inv.Hook}
		rec := r.bindings[key]
		if rec == nil {
			rec = &bindingRecord{falseConditions: map[string]bool{}}
			r.bindings[key] = rec
		}
		rec.selected++
		switch {
		case inv.Ran():
			rec.invoked++
			r.conditions[conditionKey{policy: inv.Configuration}] |= compiler.OutcomeTrue
		case inv.Skip == chain.SkipNotReinvoked:
			r.conditions[conditionKey{policy: inv.Configuration}] |= compiler.OutcomeTrue
		case inv.Skip == chain.SkipMatchConditionFalse:
			name := inv.Condition
			rec.falseConditions[name] = true
			r.conditions[conditionKey{policy: inv.Configuration, condition: name}] |= compiler.OutcomeFalse
		}
	}
}

// compiler returns the compiler Report uses to know the expressions and
// decisions of the policies (compilation is deterministic: the same
// source gives the same decisions as in the observed compiler).
func (r *Recorder) compiler() (*compiler.Compiler, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.comp == nil {
		c, err := compiler.New()
		if err != nil {
			return nil, err
		}
		r.comp = c
	}
	return r.comp, nil
}
