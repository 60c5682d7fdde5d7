package compiler

import (
	"context"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/environment"
)

// ValidatingPolicy is the compiled form of a ValidatingAdmissionPolicy, as
// kube-apiserver's ValidatingAdmissionPolicy plugin compiles it
// (k8s.io/apiserver v0.37.1 pkg/admission/plugin/policy/validating,
// plugin.go compilePolicy): its variables, matchConditions, validations and
// auditAnnotations in the environment of stored expressions with params
// (when it has a paramKind), the authorizer and every variable; its
// messageExpressions in the same environment without the authorizer.
// Validations must be bool, messageExpressions string, auditAnnotations
// string or null, with upstream's texts when they are not. Activations
// come from the embedded Policy (its Variables and MatchConditions; it has
// no Mutations). It is immutable and safe for concurrent use.
type ValidatingPolicy struct {
	*Policy
	// Validations are spec.validations[i].expression, in order.
	Validations []*Expression
	// MessageExpressions are spec.validations[i].messageExpression, the
	// same length as Validations: nil where a validation has none.
	MessageExpressions []*Expression
	// AuditAnnotations are spec.auditAnnotations[i].valueExpression.
	AuditAnnotations []*Expression
}

// The result types of a ValidatingAdmissionPolicy's expressions
// (ValidationCondition, MessageExpressionCondition and
// AuditAnnotationCondition's ReturnTypes).
var (
	validationTypes      = []*cel.Type{cel.BoolType}
	messageTypes         = []*cel.Type{cel.StringType}
	auditAnnotationTypes = []*cel.Type{cel.StringType, cel.NullType}
)

// CompileValidating returns the compiled form of p, from the cache when
// the same revision was compiled before. As Compile, it fails only when an
// environment cannot be built; an expression's compilation error stays on
// the expression, to come out when the policy is evaluated.
func (c *Compiler) CompileValidating(p *admissionregistrationv1.ValidatingAdmissionPolicy) (*ValidatingPolicy, error) {
	key := RevisionKey(&p.ObjectMeta, &p.Spec)
	c.mu.Lock()
	if cached, ok := c.vcache[p.Name]; ok && cached.Key == key {
		c.mu.Unlock()
		return cached, nil
	}
	c.mu.Unlock()
	vp, err := c.compileValidating(p, key)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.vcache[p.Name] = vp
	c.mu.Unlock()
	return vp, nil
}

// ForgetValidating drops the cached compilation of the named
// ValidatingAdmissionPolicy (Forget drops a MutatingAdmissionPolicy's).
func (c *Compiler) ForgetValidating(name string) {
	c.mu.Lock()
	delete(c.vcache, name)
	c.mu.Unlock()
}

// CachedValidating returns the number of ValidatingAdmissionPolicy
// compilations the cache holds (what ForgetValidating bounds).
func (c *Compiler) CachedValidating() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.vcache)
}

func (c *Compiler) compileValidating(p *admissionregistrationv1.ValidatingAdmissionPolicy, key string) (*ValidatingPolicy, error) {
	hasParams := p.Spec.ParamKind != nil
	out := &ValidatingPolicy{Policy: &Policy{Name: p.Name, Key: key, HasParams: hasParams, observer: c.observer}}
	detail := compileFull
	if c.observer != nil {
		detail = compileObserved
	}
	mode := environment.StoredExpressions
	spec := field.NewPath("spec")
	vars, err := c.compileVariables(out.Policy, p.Spec.Variables, envKey{hasParams: hasParams}, mode, detail)
	if err != nil {
		return nil, err
	}
	plainEnv, _, err := vars.complete()
	if err != nil {
		return nil, err
	}
	out.varType = plainEnv.varType
	// The messageExpressions see the same variables, without the
	// authorizer (upstream's expressionOptionalVars).
	messageEnv, err := c.envs.get(envSig{envKey: envKey{hasParams: hasParams, noAuthorizer: true}, mode: mode, vars: sigKey(vars.decls)}, vars.decls)
	if err != nil {
		return nil, err
	}
	for i, m := range p.Spec.MatchConditions {
		e := &Expression{Kind: KindMatchCondition, Name: m.Name, Index: i, Source: m.Expression,
			Path: spec.Child("matchConditions").Index(i).Child("expression")}
		c.compileExpression(plainEnv, e, validationTypes, detail)
		out.MatchConditions = append(out.MatchConditions, e)
	}
	out.MessageExpressions = make([]*Expression, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		vp := spec.Child("validations").Index(i)
		e := &Expression{Kind: KindValidation, Index: i, Source: v.Expression, Path: vp.Child("expression")}
		c.compileExpression(plainEnv, e, validationTypes, detail)
		out.Validations = append(out.Validations, e)
		if v.MessageExpression != "" {
			m := &Expression{Kind: KindMessageExpression, Index: i, Source: v.MessageExpression, Path: vp.Child("messageExpression")}
			c.compileExpression(messageEnv, m, messageTypes, detail)
			out.MessageExpressions[i] = m
		}
	}
	for i, a := range p.Spec.AuditAnnotations {
		e := &Expression{Kind: KindAuditAnnotation, Name: a.Key, Index: i, Source: a.ValueExpression,
			Path: spec.Child("auditAnnotations").Index(i).Child("valueExpression")}
		c.compileExpression(plainEnv, e, auditAnnotationTypes, detail)
		out.AuditAnnotations = append(out.AuditAnnotations, e)
	}
	planCELValues(out.Variables, out.MatchConditions, out.Validations, out.MessageExpressions, out.AuditAnnotations)
	return out, nil
}

// BoundsBytes tells whether the activations made with ctx bound the bytes
// their evaluations build (WithVariableBytesLimit): such a bound adds up
// over an activation's evaluations, so that the result of one evaluation
// depends on the evaluations before it in the same activation.
func BoundsBytes(ctx context.Context) bool { return variableBytesLimit(ctx) > 0 }
