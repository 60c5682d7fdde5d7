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
	"github.com/google/cel-go/common/types/ref"

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
	// vexpressions and vbindings are the ValidatingAdmissionPolicies'
	// (validating.go), apart: a policy of each kind may have one name.
	vexpressions map[exprKey]*exprRecord
	vbindings    map[bindingKey]*bindingRecord
	comp         *compiler.Compiler // compiles policies for Report, created on first use
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

		vexpressions: map[exprKey]*exprRecord{},
		vbindings:    map[bindingKey]*bindingRecord{},
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
	result := resultOf(ev.Value, ev.Err)
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := evaluated(r.expressions, key, result)
	if len(ev.Outcomes) > len(rec.outcomes) {
		rec.outcomes = append(rec.outcomes, make([]compiler.Outcome, len(ev.Outcomes)-len(rec.outcomes))...)
	}
	for i, o := range ev.Outcomes {
		rec.outcomes[i] |= o
	}
}

// selectedBinding counts a selection of the binding of rec, a record of
// an evaluation through it, in m, and returns the binding's record; nil
// when rec is not of a binding its matchResources selected.
func selectedBinding(m map[bindingKey]*bindingRecord, rec chain.Record) *bindingRecord {
	if rec.Hook == "" || notSelected(rec.Skip) {
		return nil
	}
	key := bindingKey{policy: rec.Configuration, binding: rec.Hook}
	b := m[key]
	if b == nil {
		b = &bindingRecord{falseConditions: map[string]bool{}}
		m[key] = b
	}
	b.selected++
	return b
}

// evaluated counts one evaluation of the expression key, whose value was
// result, in records (created on its first evaluation) and returns its
// record. The caller holds the Recorder's mu.
func evaluated(records map[exprKey]*exprRecord, key exprKey, result compiler.Outcome) *exprRecord {
	rec := records[key]
	if rec == nil {
		rec = &exprRecord{}
		records[key] = rec
	}
	rec.evaluations++
	rec.results |= result
	return rec
}

// resultOf is the outcome of an expression's value v (or its error err):
// true, false or other, which is what matters for a condition.
func resultOf(v ref.Val, err error) compiler.Outcome {
	switch {
	case err != nil:
		return compiler.OutcomeOther
	case v == celtypes.True:
		return compiler.OutcomeTrue
	case v == celtypes.False:
		return compiler.OutcomeFalse
	}
	return compiler.OutcomeOther
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
// The ValidatingAdmissionPolicies' evaluations (Result.Validations, of a
// validating stage's result) are recorded for ValidatingReport.
func (r *Recorder) RecordResult(res chain.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recordValidations(res.Validations)
	for _, inv := range res.Invocations {
		rec := selectedBinding(r.bindings, inv.Record)
		if rec == nil {
			continue
		}
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
