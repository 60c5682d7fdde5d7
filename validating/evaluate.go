package validating

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	upstream "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/mutatis-dev/mutatis/compiler"
)

// input is what one evaluation of a policy for a binding and a param sees
// (upstream's Validate arguments): the objects in the kind the policy
// matched, the param, the requests, the namespace and the authorizer.
type input struct {
	object, oldObject map[string]any
	// params is the param's content; nil binds null. paramsValue, when
	// set, is bound instead (paramOf).
	params      map[string]any
	paramsValue ref.Val
	// request is the request the validations, messageExpressions and
	// auditAnnotations see (the matched resource and kind);
	// conditionsRequest the one the matchConditions see (the request's
	// resource, the matched kind: upstream's matcher builds it from the
	// versioned attributes). Both are nil when no expression of the
	// policy refers to request (Hook.usesRequest).
	request, conditionsRequest *admissionv1.AdmissionRequest
	// namespace is the namespace as the lister holds it (what the
	// auditAnnotations see); namespaceObject its trimmed copy
	// (CreateNamespaceObject: what the validations and messageExpressions
	// see). The matchConditions see null.
	namespace, namespaceObject *corev1.Namespace
	authz                      authorizer.UnconditionalAuthorizer
	attrs                      admission.Attributes
	// view is the view object and oldObject come from, shared the
	// request's results of the expressions the policies share (share.go);
	// nil shares nothing.
	view   *view
	shared *sharedResults
	// paramResults are the param's results of the policy's expressions
	// over params alone (share.go); nil keeps none.
	paramResults *paramResults
}

// sharing is what the filter of keys (and of paramKeys among the param's
// results) shares its evaluations through.
func (in *input) sharing(keys, paramKeys []int32) sharing {
	return sharing{keys: keys, results: in.shared, view: in.view, paramKeys: paramKeys, paramResults: in.paramResults}
}

// validate is upstream's validator.Validate (validator.go) over the
// policy as mutatis' compiler compiled it: the matchConditions as
// upstream's matchconditions.Matcher evaluates them, then the validations
// under the runtime budget, every messageExpression under what they left,
// the auditAnnotations under a budget of their own; each of the four
// filters with an activation of its own (upstream's ForInput: variables
// evaluated again, lazily, in each), and the decisions and annotations
// worded as upstream words them.
func (h *Hook) validate(ctx context.Context, in *input, o Observer, buf *scratch) upstream.ValidateResult {
	f := admissionregistrationv1.Fail
	if fp := h.Policy.Spec.FailurePolicy; fp != nil {
		f = *fp
	}
	errorResult := func(msg string) upstream.ValidateResult {
		return upstream.ValidateResult{Decisions: []upstream.PolicyDecision{{Action: decisionForError(f), Evaluation: upstream.EvalError, Message: msg}}}
	}
	if h.compileErr != nil {
		return errorResult(h.compileErr.Error())
	}
	vp := h.compiled
	if len(vp.MatchConditions) > 0 {
		matches, err := h.matchConditions(ctx, in, f, o, buf)
		if err != nil {
			return errorResult(err.Error())
		}
		if !matches {
			return upstream.ValidateResult{}
		}
	}

	base := compiler.Input{Object: in.object, OldObject: in.oldObject, Params: in.params, ParamsValue: in.paramsValue, Request: in.request, Namespace: in.namespaceObject, Attributes: in.attrs}
	budget := int64(celconfig.RuntimeCELCostBudget)
	evalSharing := in.sharing(h.share.validations, h.paramKeys.validations)
	evalSharing.derived = h.derived
	evalSharing.disjunctions = h.disjunctions
	evals, budget, err := h.evalObserved(ctx, o, vp.Validations, withAuthorizer(base, in.authz), budget, &buf.evals, evalSharing)
	if err != nil {
		return errorResult(err.Error())
	}
	// Every messageExpression, whatever its validation decided, under the
	// budget the validations left.
	msgSharing := in.sharing(h.share.messages, h.paramKeys.messages)
	msgSharing.prefixes = h.prefixes
	messages, _, msgErr := h.evalObserved(ctx, o, vp.MessageExpressions, base, budget, &buf.messages, msgSharing)
	decisions := resize(&buf.decisions, len(evals))
	for i, r := range evals {
		d := &decisions[i]
		d.Elapsed = r.Elapsed
		v := &h.Policy.Spec.Validations[i]
		switch {
		case r.Err != nil:
			d.Action, d.Evaluation, d.Message = decisionForError(f), upstream.EvalError, r.Err.Error()
		case msgErr != nil && (errors.Is(msgErr, apiservercel.ErrInternal) || errors.Is(msgErr, apiservercel.ErrOutOfBudget)):
			d.Action, d.Evaluation, d.Message = decisionForError(f), upstream.EvalError, fmt.Sprintf("failed messageExpression: %s", msgErr)
		case r.Value != celtypes.True:
			d.Action, d.Evaluation = upstream.ActionDeny, upstream.EvalDeny
			d.Reason = metav1.StatusReasonInvalid
			if v.Reason != nil {
				d.Reason = *v.Reason
			}
			var message string
			if i < len(messages) && messages[i].Err == nil && messages[i].Value != nil {
				// A non-string (null included), a blank, an excessively
				// long or a multi-line message falls back.
				if s, ok := messages[i].Value.Value().(string); ok {
					message = strings.TrimSpace(s)
					if len(message) > celconfig.MaxEvaluatedMessageExpressionSizeBytes || strings.ContainsAny(message, "\n") {
						message = ""
					}
				}
			}
			if message == "" && len(v.Message) > 0 {
				message = strings.TrimSpace(v.Message)
			}
			if message == "" {
				message = "failed expression: " + strings.TrimSpace(v.Expression)
			}
			d.Message = message
		default:
			d.Action, d.Evaluation = upstream.ActionAdmit, upstream.EvalAdmit
		}
	}
	if len(vp.AuditAnnotations) == 0 {
		return upstream.ValidateResult{Decisions: decisions}
	}

	// The auditAnnotations: a budget of their own, the namespace as the
	// lister holds it and no authorizer, as upstream binds them.
	aa := base
	aa.Namespace = in.namespace
	annotations, _, err := h.evalObserved(ctx, o, vp.AuditAnnotations, aa, int64(celconfig.RuntimeCELCostBudget), &buf.annotations, in.sharing(h.share.annotations, h.paramKeys.annotations))
	if err != nil {
		return errorResult(err.Error())
	}
	results := resize(&buf.auditResults, len(annotations))
	for i, r := range annotations {
		res := &results[i]
		res.Elapsed = r.Elapsed
		a := &h.Policy.Spec.AuditAnnotations[i]
		res.Key = a.Key
		if r.Err != nil {
			res.Action, res.Error = annotationForError(f), r.Err.Error()
			continue
		}
		switch r.Value.Type() {
		case celtypes.StringType:
			if value := strings.TrimSpace(r.Value.Value().(string)); value == "" {
				res.Action = upstream.AuditAnnotationActionExclude
			} else {
				res.Action, res.Value = upstream.AuditAnnotationActionPublish, value
			}
		case celtypes.NullType:
			res.Action = upstream.AuditAnnotationActionExclude
		default:
			res.Action = upstream.AuditAnnotationActionError
			res.Error = fmt.Sprintf("valueExpression '%v' resulted in unsupported return type: %v. "+
				"Return type must be either string or null.", a.ValueExpression, r.Value.Type())
		}
	}
	return upstream.ValidateResult{Decisions: decisions, AuditAnnotations: results}
}

// withAuthorizer is in with the authorizer bound.
func withAuthorizer(in compiler.Input, authz authorizer.UnconditionalAuthorizer) compiler.Input {
	in.Authorizer = authz
	return in
}

// scratch holds the results of one request's evaluations, reused from
// one policy to the next (each filter's are read before the next policy's
// evaluation), and the decisions and audit annotations validate returns
// (read, and copied where kept, before the next validate).
type scratch struct {
	conditions, evals, messages, annotations []compiler.Result
	decisions                                []upstream.PolicyDecision
	auditResults                             []upstream.PolicyAuditAnnotation
	// views are the request's views (viewOf), shared its shared results
	// (share.go).
	views  []*view
	shared sharedResults
}

// getScratch returns a scratch for one request, from the Evaluator's pool
// when it holds one.
func (e *Evaluator) getScratch() *scratch {
	if s, ok := e.scratches.Get().(*scratch); ok {
		return s
	}
	return new(scratch)
}

// putScratch gives s back to the pool, without the values and objects of
// its request.
func (e *Evaluator) putScratch(s *scratch) {
	for _, b := range [][]compiler.Result{s.conditions, s.evals, s.messages, s.annotations} {
		clear(b[:cap(b)])
	}
	clear(s.decisions[:cap(s.decisions)])
	clear(s.auditResults[:cap(s.auditResults)])
	for _, v := range s.views[:cap(s.views)] {
		if v != nil {
			v.reset()
		}
	}
	clear(s.shared.slots[:cap(s.shared.slots)])
	s.views, s.shared.replayed = s.views[:0], 0
	e.scratches.Put(s)
}

// resize returns *buf with length n, zeroed, growing it when needed.
func resize[T any](buf *[]T, n int) []T {
	s := slices.Grow((*buf)[:0], n)[:n]
	clear(s)
	*buf = s
	return s
}

// evalObserved is evalAll with the results told to o when the filter's
// evaluation did not end in an error.
func (h *Hook) evalObserved(ctx context.Context, o Observer, exprs []*compiler.Expression, in compiler.Input, budget int64, buf *[]compiler.Result, sh sharing) ([]compiler.Result, int64, error) {
	results, budget, err := evalAll(ctx, h.compiled.Policy, exprs, in, budget, buf, sh)
	if err == nil {
		h.observe(o, exprs, results)
	}
	return results, budget, err
}

// evalAll evaluates exprs in one activation (upstream's ForInput), in
// order, under budget, into buf: a nil expression (a validation without
// messageExpression) has an empty result, and when all are nil nothing is
// evaluated (no result; upstream's are all empty). It stops at the first
// error that ends the evaluation (the budget exhausted) and returns it.
// A shared expression's result kept for the view is used, and its cost
// charged, instead of evaluating it again (share.go); the activation is
// made for the first expression evaluated.
func evalAll(ctx context.Context, p *compiler.Policy, exprs []*compiler.Expression, in compiler.Input, budget int64, buf *[]compiler.Result, sh sharing) ([]compiler.Result, int64, error) {
	if !slices.ContainsFunc(exprs, func(e *compiler.Expression) bool { return e != nil }) {
		return nil, budget, nil
	}
	results := resize(buf, len(exprs))
	var act *compiler.Activation
	for i, e := range exprs {
		if e == nil {
			continue
		}
		k, pk := sh.key(i), sh.paramKey(i)
		if r, ok := sh.kept(ctx, i, k, pk, in, budget); ok {
			results[i], budget = r, budget-r.Cost
			continue
		}
		if act == nil {
			act = p.NewActivation(ctx, in)
		}
		r, remaining, err := act.Eval(e, budget)
		if err != nil {
			act.Release()
			return nil, -1, err
		}
		if k >= 0 {
			sh.put(k, r)
		}
		if pk >= 0 {
			sh.putParamResult(ctx, pk, r)
		}
		results[i], budget = r, remaining
	}
	if act != nil && slices.ContainsFunc(results, holdsActivation) {
		return results, budget, nil
	}
	act.Release()
	return results, budget, nil
}

// holdsActivation tells whether r's value may resolve something through
// the activation it came from (the policy's lazy variables map, or a value
// holding it): anything but nothing and the values of the scalar types,
// which do not (compiler.Activation.Release). An activation whose results
// all are such is released once the filter is evaluated.
func holdsActivation(r compiler.Result) bool {
	if r.Value == nil {
		return false
	}
	switch r.Value.(type) {
	case celtypes.Bool, celtypes.String, celtypes.Int, celtypes.Uint, celtypes.Double, celtypes.Null:
		return false
	}
	return true
}

// matchConditions is upstream's matchconditions.Matcher.Match: every
// condition in one activation under the matchConditions' budget,
// namespaceObject null; a false condition does not match, errors (when no
// condition before them was false) fail under failurePolicy Fail and do
// not match under Ignore.
func (h *Hook) matchConditions(ctx context.Context, in *input, f admissionregistrationv1.FailurePolicyType, o Observer, buf *scratch) (bool, error) {
	conds := h.compiled.MatchConditions
	ci := compiler.Input{Object: in.object, OldObject: in.oldObject, Params: in.params, ParamsValue: in.paramsValue, Request: in.conditionsRequest, Authorizer: in.authz, Attributes: in.attrs}
	results, _, err := evalAll(ctx, h.compiled.Policy, conds, ci, int64(celconfig.RuntimeCELCostBudgetMatchConditions), &buf.conditions, in.sharing(h.share.conditions, h.paramKeys.conditions))
	if err != nil {
		switch f {
		case admissionregistrationv1.Fail:
			return false, err
		case admissionregistrationv1.Ignore:
			return false, nil
		}
	}
	var errs []error
	for i, r := range results {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
		if r.Value == celtypes.False {
			if o != nil {
				o.ObserveValidating(Observation{Policy: h.Policy.Name, Kind: KindMatchCondition, Path: matchConditionPath(i), Name: conds[i].Name, Value: celtypes.False})
			}
			return false, nil
		}
	}
	if len(errs) > 0 {
		switch f {
		case admissionregistrationv1.Fail:
			return false, utilerrors.NewAggregate(errs)
		case admissionregistrationv1.Ignore:
			return false, nil
		}
	}
	if o != nil {
		for i, c := range conds {
			o.ObserveValidating(Observation{Policy: h.Policy.Name, Kind: KindMatchCondition, Path: matchConditionPath(i), Name: c.Name, Value: celtypes.True})
		}
	}
	return true, nil
}

// observe tells o of the results of a filter's expressions that were
// evaluated: not those without an expression, with a compilation error or
// not reached.
func (h *Hook) observe(o Observer, exprs []*compiler.Expression, results []compiler.Result) {
	if o == nil {
		return
	}
	for i, r := range results {
		e := exprs[i]
		if e == nil || compileError(r.Err) || (r.Value == nil && r.Err == nil) {
			continue
		}
		o.ObserveValidating(Observation{Policy: h.Policy.Name, Kind: kindOf(e.Kind), Path: e.Path.String(), Value: r.Value, Err: r.Err})
	}
}

func decisionForError(f admissionregistrationv1.FailurePolicyType) upstream.PolicyDecisionAction {
	if f == admissionregistrationv1.Ignore {
		return upstream.ActionAdmit
	}
	return upstream.ActionDeny
}

func annotationForError(f admissionregistrationv1.FailurePolicyType) upstream.PolicyAuditAnnotationAction {
	if f == admissionregistrationv1.Ignore {
		return upstream.AuditAnnotationActionExclude
	}
	return upstream.AuditAnnotationActionError
}
