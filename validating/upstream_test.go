package validating

import (
	"fmt"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	upstream "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/mutatis-dev/mutatis/compiler"
)

// Compiler compiles ValidatingAdmissionPolicies into k8s.io/apiserver's own
// validating.Validator, exactly as its plugin's (unexported) compilePolicy
// builds one, and keeps each compilation by policy name and revision: an
// unchanged policy is compiled once. It is safe for concurrent use; the zero
// value is not ready, use NewCompiler.
type Compiler struct {
	// env is the base environment set of kube-apiserver's plugin
	// (getCompositionEnvTemplateWithStrictCost), built on first use.
	env func() *environment.EnvSet

	mu    sync.Mutex
	cache map[string]compiled // policy name → latest compilation

	// observer, when set, is told about the evaluations of the policies'
	// expressions (NewObservedCompiler).
	observer Observer
}

type compiled struct {
	key       string
	validator upstream.Validator
}

// NewCompiler returns an empty Compiler.
func NewCompiler() *Compiler {
	return &Compiler{
		env: sync.OnceValue(func() *environment.EnvSet {
			return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
		}),
		cache: map[string]compiled{},
	}
}

// Compile returns p's Validator, from the cache when the same revision was
// compiled before. Compilation problems are the Validator's: as in
// kube-apiserver, they come out when the policy is evaluated (an error
// decision under its failurePolicy).
func (c *Compiler) Compile(p *admissionregistrationv1.ValidatingAdmissionPolicy) upstream.Validator {
	key := compiler.RevisionKey(&p.ObjectMeta, &p.Spec)
	c.mu.Lock()
	if cp, ok := c.cache[p.Name]; ok && cp.key == key {
		c.mu.Unlock()
		return cp.validator
	}
	c.mu.Unlock()
	v := compilePolicy(c.env(), p, c.observer)
	c.mu.Lock()
	c.cache[p.Name] = compiled{key: key, validator: v}
	c.mu.Unlock()
	return v
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
