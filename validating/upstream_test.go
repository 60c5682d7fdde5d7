package validating

import (
	"context"
	"fmt"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	upstream "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
)

// upstream's Validator, as kube-apiserver's plugin compiles it, is the
// oracle of Hook.validate (TestValidateIsUpstreams): the code below is
// test code only.

// typedParam is a built-in param in its typed form with the paramKind's
// apiVersion and kind, as upstream's wrappedParam reaches CEL: its map as
// is (value.UnstructuredConverter), where an *unstructured.Unstructured
// would go through a JSON encoding and decoding.
type typedParam struct {
	unstructured.Unstructured
}

// ToUnstructured is the param's content (value.UnstructuredConverter).
func (p *typedParam) ToUnstructured() any { return p.Object }

// upstreamParam is the param as the dispatcher hands it to upstream's
// Validator: nil, a typedParam for a built-in param, the object.
func upstreamParam(obj map[string]any, kind *admissionregistrationv1.ParamKind) runtime.Object {
	if obj == nil {
		return nil
	}
	if m, typed := withTypeMeta(obj, kind); typed {
		return &typedParam{Unstructured: unstructured.Unstructured{Object: m}}
	}
	return &unstructured.Unstructured{Object: obj}
}

// compilePolicy is k8s.io/apiserver v0.37.1's compilePolicy
// (pkg/admission/plugin/policy/validating/plugin.go), which is unexported:
// the same compiler, options, accessors and order, over env (its
// composition environment template). With an observer o, the compiled
// evaluators, matcher and variable programs are upstream's, wrapped to
// tell o of their results, which they pass through unchanged.
func compilePolicy(env *environment.EnvSet, policy *admissionregistrationv1.ValidatingAdmissionPolicy, o Observer) upstream.Validator {
	hasParam := policy.Spec.ParamKind != nil
	optionalVars := plugincel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: true}
	expressionOptionalVars := plugincel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: false}
	failurePolicy := policy.Spec.FailurePolicy
	var matcher matchconditions.Matcher
	filterCompiler, err := plugincel.NewCompositedCompiler(env)
	if err != nil {
		return upstream.NewValidator(nil, nil, nil, nil, failurePolicy, err)
	}
	variables := make([]plugincel.NamedExpressionAccessor, len(policy.Spec.Variables))
	for i, v := range policy.Spec.Variables {
		variables[i] = &upstream.Variable{Name: v.Name, Expression: v.Expression}
	}
	if o != nil {
		// CompileAndStoreVariables compiles through the embedded Compiler
		// (the conditions through their own ConditionCompiler).
		paths := make(map[string]string, len(variables))
		for i, v := range policy.Spec.Variables {
			paths[v.Name] = fmt.Sprintf("spec.variables[%d].expression", i)
		}
		filterCompiler.Compiler = &observedCompiler{Compiler: filterCompiler.Compiler, o: o, policy: policy.Name, paths: paths}
	}
	filterCompiler.CompileAndStoreVariables(variables, optionalVars, environment.StoredExpressions)

	if mcs := policy.Spec.MatchConditions; len(mcs) > 0 {
		accessors := make([]plugincel.ExpressionAccessor, len(mcs))
		for i := range mcs {
			accessors[i] = (*matchconditions.MatchCondition)(&mcs[i])
		}
		matcher = matchconditions.NewMatcher(filterCompiler.CompileCondition(accessors, optionalVars, environment.StoredExpressions), failurePolicy, "policy", "validate", policy.Name)
		if o != nil {
			names := make([]string, len(mcs))
			for i, mc := range mcs {
				names[i] = mc.Name
			}
			matcher = &observedMatcher{Matcher: matcher, o: o, policy: policy.Name, names: names}
		}
	}
	validations := make([]plugincel.ExpressionAccessor, len(policy.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(policy.Spec.Validations))
	for i, v := range policy.Spec.Validations {
		validations[i] = &upstream.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &upstream.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	annotations := make([]plugincel.ExpressionAccessor, len(policy.Spec.AuditAnnotations))
	for i, a := range policy.Spec.AuditAnnotations {
		annotations[i] = &upstream.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	validationFilter := filterCompiler.CompileCondition(validations, optionalVars, environment.StoredExpressions)
	annotationFilter := filterCompiler.CompileCondition(annotations, optionalVars, environment.StoredExpressions)
	messageFilter := filterCompiler.CompileCondition(messages, expressionOptionalVars, environment.StoredExpressions)
	if o != nil {
		validationPaths := make([]string, len(policy.Spec.Validations))
		messagePaths := make([]string, len(policy.Spec.Validations))
		for i, v := range policy.Spec.Validations {
			validationPaths[i] = fmt.Sprintf("spec.validations[%d].expression", i)
			if v.MessageExpression != "" {
				messagePaths[i] = fmt.Sprintf("spec.validations[%d].messageExpression", i)
			}
		}
		annotationPaths := make([]string, len(policy.Spec.AuditAnnotations))
		for i := range policy.Spec.AuditAnnotations {
			annotationPaths[i] = fmt.Sprintf("spec.auditAnnotations[%d].valueExpression", i)
		}
		validationFilter = &observedEvaluator{ConditionEvaluator: validationFilter, o: o, policy: policy.Name, kind: KindValidation, paths: validationPaths}
		annotationFilter = &observedEvaluator{ConditionEvaluator: annotationFilter, o: o, policy: policy.Name, kind: KindAuditAnnotation, paths: annotationPaths}
		messageFilter = &observedEvaluator{ConditionEvaluator: messageFilter, o: o, policy: policy.Name, kind: KindMessageExpression, paths: messagePaths}
	}
	return upstream.NewValidator(validationFilter, matcher, annotationFilter, messageFilter, failurePolicy, nil)
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
