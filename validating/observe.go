package validating

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Observer is told about the evaluations of the expressions of the
// policies a Compiler created with NewObservedCompiler compiles: each
// validation, messageExpression and auditAnnotation each time upstream's
// Validator evaluates it, each variable when its lazy evaluation runs, and
// the matchConditions' results. It observes upstream's own evaluations
// (their results, passed through unchanged), so the decisions are those of
// an unobserved Compiler. ObserveValidating is called on the evaluating
// goroutine, from many at once when requests run in parallel.
type Observer interface {
	ObserveValidating(Observation)
}

// ExpressionKind is the kind of a ValidatingAdmissionPolicy expression.
type ExpressionKind string

// The kinds of expressions.
const (
	KindValidation        ExpressionKind = "validation"
	KindMessageExpression ExpressionKind = "messageExpression"
	KindAuditAnnotation   ExpressionKind = "auditAnnotation"
	KindMatchCondition    ExpressionKind = "matchCondition"
	KindVariable          ExpressionKind = "variable"
)

// Observation is one evaluation of an expression of a policy.
type Observation struct {
	// Policy is the policy's name.
	Policy string
	// Kind is the expression's kind; Path its field path in the policy
	// (spec.validations[0].expression …); Name a variable's or a
	// matchCondition's name.
	Kind ExpressionKind
	Path string
	Name string
	// Value is the expression's value (nil when Err is set); for a
	// matchCondition, true or false as the matcher decided it.
	Value ref.Val
	// Err is the evaluation's error.
	Err error
}

// NewObservedCompiler returns a Compiler whose policies tell o about their
// evaluations (coverage). Its Validators decide as NewCompiler's do.
func NewObservedCompiler(o Observer) *Compiler {
	c := NewCompiler()
	c.observer = o
	return c
}

// compileError tells an evaluation result that carries its expression's
// compilation error (upstream's activation.Evaluate): such an expression
// was never evaluated.
func compileError(err error) bool {
	var e *apiservercel.Error
	return errors.As(err, &e) && e.Type == apiservercel.ErrorTypeInvalid && strings.HasPrefix(e.Detail, "compilation error")
}

// observedEvaluator passes upstream's condition evaluator's results
// through and tells the observer of each (expression i of paths; "" for a
// slot without an expression, e.g. a validation without
// messageExpression).
type observedEvaluator struct {
	plugincel.ConditionEvaluator
	o      Observer
	policy string
	kind   ExpressionKind
	paths  []string
}

// ForInput implements plugincel.ConditionEvaluator.
func (e *observedEvaluator) ForInput(ctx context.Context, versionedAttr *admission.VersionedAttributes, request *admissionv1.AdmissionRequest, optionalVars plugincel.OptionalVariableBindings, namespace *corev1.Namespace, runtimeCELCostBudget int64) ([]plugincel.EvaluationResult, int64, error) {
	results, remaining, err := e.ConditionEvaluator.ForInput(ctx, versionedAttr, request, optionalVars, namespace, runtimeCELCostBudget)
	for i, r := range results {
		if i >= len(e.paths) || e.paths[i] == "" || r.ExpressionAccessor == nil || compileError(r.Error) {
			continue
		}
		if r.EvalResult == nil && r.Error == nil {
			// Not reached (the budget ran out before it).
			continue
		}
		e.o.ObserveValidating(Observation{Policy: e.policy, Kind: e.kind, Path: e.paths[i], Value: r.EvalResult, Err: r.Error})
	}
	return results, remaining, err
}

// observedMatcher passes upstream's matchConditions matcher's result
// through and tells the observer what it shows: every condition true when
// the request matches, the one that failed false when not (upstream does
// not say how the others evaluated; an error tells nothing).
type observedMatcher struct {
	matchconditions.Matcher
	o      Observer
	policy string
	names  []string
}

// Match implements matchconditions.Matcher.
func (m *observedMatcher) Match(ctx context.Context, versionedAttr *admission.VersionedAttributes, versionedParams runtime.Object, authz authorizer.UnconditionalAuthorizer) matchconditions.MatchResult {
	res := m.Matcher.Match(ctx, versionedAttr, versionedParams, authz)
	switch {
	case res.Error != nil:
	case res.Matches:
		for i, name := range m.names {
			m.o.ObserveValidating(Observation{Policy: m.policy, Kind: KindMatchCondition, Path: matchConditionPath(i), Name: name, Value: celtypes.True})
		}
	default:
		for i, name := range m.names {
			if name == res.FailedConditionName {
				m.o.ObserveValidating(Observation{Policy: m.policy, Kind: KindMatchCondition, Path: matchConditionPath(i), Name: name, Value: celtypes.False})
			}
		}
	}
	return res
}

func matchConditionPath(i int) string { return fmt.Sprintf("spec.matchConditions[%d].expression", i) }

// observedCompiler compiles a policy's variables as upstream's compiler
// does, each program wrapped to tell the observer when the composition
// context's lazy evaluation runs it.
type observedCompiler struct {
	plugincel.Compiler
	o      Observer
	policy string
	paths  map[string]string // variable name → path
}

// CompileCELExpression implements plugincel.Compiler.
func (c *observedCompiler) CompileCELExpression(a plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations, mode environment.Type) plugincel.CompilationResult {
	res := c.Compiler.CompileCELExpression(a, opts, mode)
	if named, ok := a.(plugincel.NamedExpressionAccessor); ok && res.Error == nil && res.Program != nil {
		res.Program = &observedProgram{Program: res.Program, o: c.o, obs: Observation{Policy: c.policy, Kind: KindVariable, Path: c.paths[named.GetName()], Name: named.GetName()}}
	}
	return res
}

// observedProgram is a variable's program, its evaluations observed.
type observedProgram struct {
	cel.Program
	o   Observer
	obs Observation
}

// Eval implements cel.Program.
func (p *observedProgram) Eval(vars any) (ref.Val, *cel.EvalDetails, error) {
	v, d, err := p.Program.Eval(vars)
	p.observe(v, err)
	return v, d, err
}

// ContextEval implements cel.Program.
func (p *observedProgram) ContextEval(ctx context.Context, vars any) (ref.Val, *cel.EvalDetails, error) {
	v, d, err := p.Program.ContextEval(ctx, vars)
	p.observe(v, err)
	return v, d, err
}

func (p *observedProgram) observe(v ref.Val, err error) {
	obs := p.obs
	obs.Value, obs.Err = v, err
	p.o.ObserveValidating(obs)
}
