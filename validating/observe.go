package validating

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/common/types/ref"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// Observer is told about the evaluations of the expressions of the
// policies a Compiler created with NewObservedCompiler compiles: each
// validation, messageExpression and auditAnnotation each time the
// evaluation of a policy (upstream's Validator's) evaluates it, each
// variable when its lazy evaluation runs, and the matchConditions'
// results. It observes the evaluations themselves (their results, passed
// through unchanged), so the decisions are those of an unobserved
// Compiler. ObserveValidating is called on the evaluating
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
// evaluations (coverage). Its policies decide as NewCompiler's do.
func NewObservedCompiler(o Observer) *Compiler {
	return newCompiler(o)
}

// compileError tells an evaluation result that carries its expression's
// compilation error (upstream's activation.Evaluate): such an expression
// was never evaluated.
func compileError(err error) bool {
	var e *apiservercel.Error
	return errors.As(err, &e) && e.Type == apiservercel.ErrorTypeInvalid && strings.HasPrefix(e.Detail, "compilation error")
}

func matchConditionPath(i int) string { return fmt.Sprintf("spec.matchConditions[%d].expression", i) }
