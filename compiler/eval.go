package compiler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/lazy"
	"k8s.io/apiserver/pkg/cel/library"
)

// Input is what one evaluation of a policy's expressions sees.
type Input struct {
	// Object and OldObject are the unstructured contents of the object under
	// admission and of the old object; nil binds null.
	Object, OldObject map[string]any
	// Params is the param object (its unstructured content); nil binds null.
	Params map[string]any
	// ParamsValue, when set, is bound as params instead of Params: the
	// value a caller converted itself (a ValidatingAdmissionPolicy's custom
	// resource param, which kube-apiserver's plugin converts through its
	// JSON encoding).
	ParamsValue ref.Val
	// Request is the AdmissionRequest presented as "request" (without
	// object/oldObject, as kube-apiserver presents it).
	Request *admissionv1.AdmissionRequest
	// Namespace is the namespace of a namespaced request; nil binds null.
	Namespace *corev1.Namespace
	// Authorizer backs "authorizer" and "authorizer.requestResource"; when
	// nil, neither is bound.
	Authorizer authorizer.UnconditionalAuthorizer
	// Attributes describe the request to the authorizer (user and resource).
	// Required when Authorizer is set.
	Attributes admission.Attributes
}

// Activation binds one Input for the expressions of one policy. Variables
// are evaluated lazily, at most once per Activation, and their cost is
// charged to the expression that first uses them. An Activation is not safe
// for concurrent use: create one per evaluation (per mutation, or one for all
// matchConditions), as kube-apiserver does, and Release it once done.
type Activation struct {
	policy *Policy
	ctx    context.Context
	// in is bound lazily: object, oldObject and params are their Go maps
	// (unstructuredOrNull); request and namespace are converted to their
	// CEL values the first time an expression resolves them, and kept.
	in Input

	request, namespace          ref.Val
	authorizer, requestResource ref.Val
	authorizerBound             bool
	// variables is the variables map of the current use (varsMap, or
	// lazy.MapValue: lazyVars); nil until an expression resolves it.
	variables ref.Val
	// getters are the lazy callbacks of the policy's variables, made once
	// for this activation and kept across the reuses Release allows. Each
	// serves only the lazy map of the current use (a.variables).
	getters []lazy.GetFieldFunc

	variableCost int64
	// variableBytes is what the variables' values evaluated hold, bounded
	// by variableBytesLimit when positive (memory.go).
	variableBytes, variableBytesLimit int64
	// builtBytes is what the strings and bytes the calls returned hold,
	// bounded by variableBytesLimit too (memory.go).
	builtBytes int64

	// observing is set only when the policy has an observer (never in a
	// shadow activation). One pointer keeps the default Activation as small
	// as it was.
	observing *observing
}

// observing is the observation state of an Activation.
type observing struct {
	observer Observer
	// shadow is the twin instrumented evaluations use, created on first use.
	shadow *Activation
}

// NewActivation binds in for evaluating p's expressions. ctx bounds every
// evaluation made through the activation. Binding is lazy: a variable's CEL
// value is built when an expression first resolves it.
func (p *Policy) NewActivation(ctx context.Context, in Input) *Activation {
	if p.observer == nil {
		if a, _ := p.activations.Get().(*Activation); a != nil {
			a.ctx, a.in, a.variableBytesLimit = ctx, in, variableBytesLimit(ctx)
			return a
		}
	}
	a := &Activation{policy: p, ctx: ctx, in: in, variableBytesLimit: variableBytesLimit(ctx)}
	if p.observer != nil {
		a.observing = &observing{observer: p.observer}
	}
	return a
}

// Release gives the activation back to its policy, for a later
// NewActivation to reuse; a must not be used after. Call it once nothing
// holds a value its evaluations returned that can still resolve a variable:
// the policy's variables map (an expression's value can be the map itself,
// or hold it), whose variables not yet evaluated are evaluated against the
// activation. Such a map left over from a released activation resolves
// those as an error instead (evalVariable's getter), never against another
// Input. An activation of a policy with an observer (explain, whose
// records keep values) is not reused. Releasing is optional: an activation
// never released is left to the collector.
func (a *Activation) Release() {
	if a == nil || a.observing != nil {
		return
	}
	p := a.policy
	*a = Activation{policy: p, getters: a.getters}
	if p.poisonReleased != nil {
		// Tests: a released activation then binds a poisoned Input and is
		// not reused, so that whatever still resolves through it shows.
		a.in = *p.poisonReleased
		return
	}
	p.activations.Put(a)
}

// vars returns the map of the policy's variables (varsMap, or the
// reference lazy.MapValue for a policy of more than 64), creating it on
// first use.
func (a *Activation) vars() ref.Val {
	if a.variables == nil {
		if t := a.policy.varsOf(); t != nil {
			a.variables = newVarsMap(a, t)
		} else {
			a.variables = a.lazyVars()
		}
	}
	return a.variables
}

// bindAuthorizer builds the authorizer values on first use.
func (a *Activation) bindAuthorizer() {
	if a.authorizerBound {
		return
	}
	a.authorizerBound = true
	if a.in.Authorizer != nil && a.in.Attributes != nil {
		a.authorizer = library.NewAuthorizerVal(a.in.Attributes.GetUserInfo(), a.in.Authorizer)
		a.requestResource = library.NewResourceAuthorizerVal(a.in.Attributes.GetUserInfo(), a.in.Authorizer, a.in.Attributes)
	}
}

// unstructuredOrNull is how object, oldObject and params are bound: their
// Go maps themselves, null when nil. cel-go reads the fields an expression
// selects (object.spec.containers) straight from the Go maps
// (interpreter.stringQualifier) and presents only the value it arrives at
// with its type adapter, as it would present the whole map
// (types.NewStringInterfaceMap) and select from that: the same values
// and errors (the map's Find and a missing key's error are the same
// lookup and the same missingKey), without a CEL map built for every map
// on the way, at every read. Whatever the expression does with the whole
// variable (object == oldObject, a function of it) sees the adapter's
// value of the whole map, as before.
func unstructuredOrNull(m map[string]any) any {
	if m == nil {
		return celtypes.NullValue
	}
	return m
}

// ResolveName implements interpreter.Activation.
func (a *Activation) ResolveName(name string) (any, bool) {
	switch name {
	case ObjectVar:
		return unstructuredOrNull(a.in.Object), true
	case OldObjectVar:
		return unstructuredOrNull(a.in.OldObject), true
	case ParamsVar:
		if a.in.ParamsValue != nil {
			return a.in.ParamsValue, true
		}
		return unstructuredOrNull(a.in.Params), true
	case RequestVar:
		if a.request == nil {
			a.request = common.SchemalessTypedToVal(a.in.Request)
		}
		return a.request, true
	case NamespaceVar:
		if a.namespace == nil {
			a.namespace = common.SchemalessTypedToVal(a.in.Namespace)
		}
		return a.namespace, true
	case AuthorizerVar:
		a.bindAuthorizer()
		return a.authorizer, a.authorizer != nil
	case RequestResourceAuthorizerVar:
		a.bindAuthorizer()
		return a.requestResource, a.requestResource != nil
	case VariablesVar:
		return a.vars(), true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *Activation) Parent() interpreter.Activation { return nil }

// evalVariable is the lazy callback of one variable, with upstream's error
// texts (k8s.io/apiserver/pkg/admission/plugin/cel/composition.go).
func (a *Activation) evalVariable(v *Expression) ref.Val {
	if v.Err != nil {
		return celtypes.NewErr("composited variable %q fails to compile: %v", v.Name, v.Err)
	}
	program, bp, progErr := a.program(v)
	defer v.release(bp)
	if progErr != nil {
		return celtypes.NewErr("composited variable %q fails to compile: %v", v.Name, progErr)
	}
	if program == nil {
		return celtypes.NewErr("composited variable %q fails to compile: %v", v.Name, missingProgram())
	}
	val, details, err := a.run(program)
	if a.observing == nil {
		return a.chargeVariableBytes(v, a.chargeVariable(v, val, details, err))
	}
	out := a.chargeVariableBytes(v, a.chargeVariable(v, val, details, err))
	var cost int64
	if details != nil && details.ActualCost() != nil {
		cost = int64(min(*details.ActualCost(), math.MaxInt64))
	}
	if e, ok := out.(*celtypes.Err); ok {
		a.observe(v, nil, e, cost, err)
	} else {
		a.observe(v, out, nil, cost, err)
	}
	return out
}

// chargeVariable adds the cost of a variable's evaluation to the
// activation and returns its value or error.
func (a *Activation) chargeVariable(v *Expression, val ref.Val, details *cel.EvalDetails, err error) ref.Val {
	if details == nil {
		return celtypes.NewErr("unable to get evaluation details of variable %q", v.Name)
	}
	costPtr := details.ActualCost()
	if costPtr == nil {
		return celtypes.NewErr("unable to calculate cost of variable %q", v.Name)
	}
	cost := int64(*costPtr)
	if *costPtr > math.MaxInt64 {
		cost = math.MaxInt64
	}
	a.variableCost += cost
	if err != nil {
		return celtypes.NewErr("composited variable %q fails to evaluate: %v", v.Name, err)
	}
	return val
}

// run evaluates program against the activation. With a context that can
// never be cancelled (no Done channel), cel-go's ContextEval would only add
// a cancellable context that nothing cancels: Eval gives the same result.
// Under a context from WithSharedFrame, the evaluation reuses its frame.
func (a *Activation) run(program cel.Program) (ref.Val, *cel.EvalDetails, error) {
	done := a.ctx.Done()
	if done == nil {
		return program.Eval(a)
	}
	if val, det, ok, err := a.evalShared(program, done); ok {
		return val, det, err
	}
	return program.ContextEval(a.ctx, a)
}

// Result is the outcome of evaluating one expression.
type Result struct {
	// Value is the result; nil when Err is set.
	Value ref.Val
	// Err is an evaluation error of the expression itself (compile error,
	// runtime error, per-call limit), already formatted as kube-apiserver
	// formats it. Evaluation of other expressions may continue.
	Err error
	// Cost is the runtime cost charged: the expression's own cost plus the
	// cost of the variables it evaluated first.
	Cost int64
	// Elapsed is the wall time of the evaluation.
	Elapsed time.Duration
}

// ErrOutOfBudget is wrapped by the error Eval returns when the budget is
// exhausted.
var ErrOutOfBudget = apiservercel.ErrOutOfBudget

// Eval evaluates e against the activation, charging its cost to budget. It
// returns the result and the remaining budget. A non-nil error means the
// evaluation cannot go on (the budget is exhausted): kube-apiserver stops
// evaluating the policy's remaining expressions then. The texts match
// k8s.io/apiserver/pkg/admission/plugin/cel/activation.go.
func (a *Activation) Eval(e *Expression, budget int64) (Result, int64, error) {
	var res Result
	if e.Err != nil {
		// As upstream's activation.Evaluate. Mutation patchers report the
		// bare compile error instead: callers check e.Err first for those.
		res.Err = &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid,
			Detail: fmt.Sprintf("compilation error: %v", e.Err), Cause: e.Err}
		return res, budget, nil
	}
	program, bp, progErr := a.program(e)
	defer e.release(bp)
	if progErr != nil {
		// As if compiling had failed, which building the program does in
		// kube-apiserver. Compiling has established that it cannot.
		res.Err = &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid,
			Detail: fmt.Sprintf("compilation error: %v", progErr), Cause: progErr}
		return res, budget, nil
	}
	if program == nil {
		res.Err = missingProgram()
		return res, budget, nil
	}
	if a.observing == nil {
		res, remaining, _, err := a.eval(e, program, budget)
		return res, remaining, err
	}
	res, remaining, evalErr, err := a.eval(e, program, budget)
	resErr := res.Err
	if resErr == nil {
		resErr = err
	}
	a.observe(e, res.Value, resErr, res.Cost, evalErr)
	return res, remaining, err
}

// eval is Eval of a compiled expression. It also returns the error of the
// program's own evaluation (before formatting), which observing needs.
func (a *Activation) eval(e *Expression, program cel.Program, budget int64) (res Result, remaining int64, evalErr, err error) {
	start := time.Now()
	val, details, evalErr := a.run(program)
	variableCost := a.variableCost
	a.variableCost = 0
	if variableCost > budget {
		return res, -1, evalErr, outOfBudget()
	}
	budget -= variableCost
	res.Elapsed = time.Since(start)
	res.Cost = variableCost
	if details == nil {
		return res, -1, evalErr, &apiservercel.Error{Type: apiservercel.ErrorTypeInternal,
			Detail: fmt.Sprintf("runtime cost could not be calculated for expression: %v, no further expression will be run", e.Source)}
	}
	rtCost := details.ActualCost()
	if rtCost == nil {
		return res, -1, evalErr, &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid,
			Detail: fmt.Sprintf("runtime cost could not be calculated for expression: %v, no further expression will be run", e.Source),
			Cause:  apiservercel.ErrOutOfBudget}
	}
	if *rtCost > math.MaxInt64 || int64(*rtCost) > budget {
		return res, -1, evalErr, outOfBudget()
	}
	budget -= int64(*rtCost)
	res.Cost += int64(*rtCost)
	if evalErr != nil {
		res.Err = &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid,
			Detail: fmt.Sprintf("expression '%v' resulted in error: %v", e.Source, evalErr)}
		return res, budget, evalErr, nil
	}
	res.Value = val
	return res, budget, nil, nil
}

// program returns the program to evaluate e with and, when it is a
// counting program, the one to give back with e.release once the
// evaluation is done (no closure: this runs for every evaluation). Under
// a bound of bytes (WithVariableBytesLimit) it is one that counts the
// bytes its calls build (memory.go), and the shared program is not built.
func (a *Activation) program(e *Expression) (cel.Program, *boundedProgram, *apiservercel.Error) {
	if a.variableBytesLimit > 0 {
		if bp := e.boundedProgram(a); bp != nil {
			return bp.prog, bp, nil
		}
	}
	p, err := e.program()
	return p, nil, err
}

// missingProgram is the error of evaluating an expression that has neither
// a compile error nor a program (one not made by a Compiler).
func missingProgram() *apiservercel.Error {
	return &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: "unexpected internal error compiling expression"}
}

func outOfBudget() error {
	return &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid,
		Detail: "validation failed due to running out of cost budget, no further validation rules will be run",
		Cause:  apiservercel.ErrOutOfBudget}
}

// IsOutOfBudget reports whether err is a budget exhaustion.
func IsOutOfBudget(err error) bool { return errors.Is(err, apiservercel.ErrOutOfBudget) }

// declTypeOf converts a checked CEL type to the DeclType recorded for a
// variable, as upstream's convertCelTypeToDeclType does, so that later
// expressions type-check against variables exactly as in kube-apiserver.
func declTypeOf(t *cel.Type) *apiservercel.DeclType {
	if t == nil {
		return apiservercel.DynType
	}
	switch t {
	case cel.AnyType:
		return apiservercel.AnyType
	case cel.BoolType:
		return apiservercel.BoolType
	case cel.BytesType:
		return apiservercel.BytesType
	case cel.DoubleType:
		return apiservercel.DoubleType
	case cel.DurationType:
		return apiservercel.DurationType
	case cel.IntType:
		return apiservercel.IntType
	case cel.NullType:
		return apiservercel.NullType
	case cel.StringType:
		return apiservercel.StringType
	case cel.TimestampType:
		return apiservercel.TimestampType
	case cel.UintType:
		return apiservercel.UintType
	}
	if t.HasTrait(traits.ContainerType) && t.HasTrait(traits.IndexerType) {
		params := t.Parameters()
		switch len(params) {
		case 1:
			return apiservercel.NewListType(declTypeOf(params[0]), -1)
		case 2:
			return apiservercel.NewMapType(declTypeOf(params[0]), declTypeOf(params[1]), -1)
		}
	}
	return apiservercel.DynType
}
