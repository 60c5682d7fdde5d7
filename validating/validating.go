// Package validating is kube-apiserver's ValidatingAdmissionPolicy plugin as
// a chain.Stage (Evaluator), read top to bottom as its dispatcher runs one
// request (k8s.io/apiserver v0.37.1 pkg/admission/plugin/policy/validating,
// dispatcher.go Dispatch): each policy whose matchConstraints select the
// request, each of its bindings whose matchResources do, each param of the
// binding; the matchConditions, validations, messageExpressions and
// auditAnnotations compiled by mutatis' compiler (Compiler) and evaluated as
// upstream's Validator evaluates them (validate: its filters, budgets,
// fallbacks and texts), the request, namespaceObject and objects built once
// per request for every policy; the binding's validationActions applied to
// the decisions; the refusal,
// warnings and audit annotations exactly as kube-apiserver words them.
// Matching and params are mutatis' shared matching and params packages.
package validating

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/cel-go/common/types/ref"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission"
	admissionauthorizer "k8s.io/apiserver/pkg/admission/plugin/authorizer"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	upstream "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/cel/common"

	"github.com/mutatis-dev/mutatis/binding"
	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/params"
	"github.com/mutatis-dev/mutatis/scheme"
)

// PluginName is the name of kube-apiserver's ValidatingAdmissionPolicy
// plugin: the Evaluator's Name.
const PluginName = upstream.PluginName

// ValidationFailureAnnotation is the audit annotation of the validations
// that failed in bindings with the Audit action (its value: a JSON list of
// upstream's ValidationFailureValue).
const ValidationFailureAnnotation = "validation.policy.admission.k8s.io/validation_failure"

// Bounds kube-apiserver's dispatcher puts on what it publishes (its
// maxValidationFailures and maxAuditAnnotationValueLength, unexported).
const (
	maxValidationFailures         = 50
	maxAuditAnnotationValueLength = 10 * 1024
)

// Config is what an Evaluator needs besides its policies: the simulated
// cluster's collaborators.
type Config struct {
	// Matcher matches policies and bindings; its namespace getter also
	// gives namespaceObject.
	Matcher *matching.Matcher
	// Params resolves the bindings' params.
	Params *params.Collector
	// Scheme converts the objects of built-in kinds to the version a
	// policy matched (matchPolicy Equivalent); nil: no conversion.
	Scheme *scheme.Scheme
	// Authorizer backs the CEL authorizer variables; nil denies every
	// check.
	Authorizer authorizer.Authorizer
}

// Hook is one compiled policy with its bindings, in evaluation order.
type Hook struct {
	Policy   *admissionregistrationv1.ValidatingAdmissionPolicy
	Bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// compiled is the policy's compilation; compileErr, when set, what
	// makes every evaluation an error decision instead.
	compiled   *compiler.ValidatingPolicy
	compileErr error
	// criteria are the policy's matchConstraints and bindingCriteria its
	// bindings' matchResources, by binding index, with their selectors
	// parsed; refs the bindings' paramRefs prepared: once per policy set,
	// not per request.
	criteria        *matching.Criteria
	bindingCriteria []*matching.Criteria
	refs            []*params.Ref
	// paramValues remembers each param object as bound for this policy
	// (paramOf), by object.
	paramValues *params.Memo
	// collections remember, by binding index, the binding's last
	// collection of params (collect): what the next request that finds the
	// same param objects is answered.
	collections []atomic.Pointer[collection]
	// usesRequest, usesNamespace and usesAuthorizer tell whether an
	// expression refers to request, namespaceObject, authorizer (or
	// authorizer.requestResource): what none refers to is not built for
	// the policy.
	usesRequest, usesNamespace, usesAuthorizer bool
	// share are the keys of the expressions the policy shares with others
	// (share.go).
	share shareKeys
	// paramKeys are the keys of the expressions over params alone among
	// a param's results (paramResults), paramKeyCount their number.
	paramKeys     shareKeys
	paramKeyCount int
	// prefixes are the messageExpressions made from a literal and a
	// shared sub-expression (share.go), by validation; nil for none.
	prefixes []*prefixed
	// derived are the validations made from their messageExpression's
	// sub-expression (derive.go), by validation; nil for none.
	derived []*derived
	// disjunctions are the validations made from their operands
	// (disjunction.go), by validation; nil for none.
	disjunctions []*disjunction
}

// Evaluator is the ValidatingAdmissionPolicy stage of a validating chain
// over a fixed set of policies and bindings. It keeps no state across
// requests and is safe for concurrent use.
type Evaluator struct {
	cfg      Config
	observer Observer
	hooks    []Hook
	// index finds the hooks whose rules can match a request.
	index *matching.Index[int]
	// shareCount is the number of expressions the hooks share (share.go);
	// noShare turns sharing off (tests).
	shareCount int
	noShare    bool
	// keepsParamResults tells whether a hook keeps results per param
	// (share.go's paramResults).
	keepsParamResults bool
	// replays, when set, counts the shared results used instead of an
	// evaluation (tests).
	replays *atomic.Int64
	// scratches are the requests' scratch, reused from one request to
	// the next.
	scratches sync.Pool
}

// NewEvaluator compiles policies with comp (nil: a new Compiler) and groups
// their bindings in kube-apiserver's grouping, in mutatis' documented order
// (policy name, then binding name: binding.GroupValidating). The policies'
// and bindings' label selectors are parsed here, once (matching.Criteria,
// params.Ref): a changed policy or binding is a new Evaluator, which does
// not follow changes made to the objects after it is built.
func NewEvaluator(cfg Config, comp *Compiler, policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) *Evaluator {
	if comp == nil {
		comp = NewCompiler()
	}
	if cfg.Authorizer == nil {
		cfg.Authorizer = authorizerfactory.NewAlwaysDenyAuthorizer()
	}
	if cfg.Params != nil {
		// The Evaluator's own collector: with the scheme, and presenting
		// each param once (params.Memo), not on every request.
		p := *cfg.Params
		if p.Scheme == nil {
			p.Scheme = cfg.Scheme
		}
		if p.Memo == nil {
			p.Memo = new(params.Memo)
		}
		cfg.Params = &p
	}
	e := &Evaluator{cfg: cfg, observer: comp.observer, index: matching.NewIndex[int](cfg.Matcher.Table())}
	for _, g := range binding.GroupValidating(policies, bindings) {
		e.index.Add(matching.SelectorForMatchResources(g.Policy.Spec.MatchConstraints), len(e.hooks))
		h := Hook{Policy: g.Policy, Bindings: g.Bindings, paramValues: new(params.Memo)}
		h.compiled, h.compileErr = comp.compile(g.Policy)
		if h.compiled != nil {
			h.usesRequest = references(h.compiled, compiler.RequestVar)
			h.usesNamespace = references(h.compiled, compiler.NamespaceVar)
			h.usesAuthorizer = references(h.compiled, compiler.AuthorizerVar, compiler.RequestResourceAuthorizerVar)
		}
		h.criteria = matching.NewCriteria(g.Policy.Spec.MatchConstraints)
		h.bindingCriteria = make([]*matching.Criteria, len(g.Bindings))
		h.refs = make([]*params.Ref, len(g.Bindings))
		h.collections = make([]atomic.Pointer[collection], len(g.Bindings))
		for j, b := range g.Bindings {
			h.bindingCriteria[j] = matching.NewCriteria(b.Spec.MatchResources)
			h.refs[j] = params.NewRef(b.Spec.ParamRef)
		}
		e.hooks = append(e.hooks, h)
	}
	e.shareCount = assignDisjunctions(e.hooks, comp, assignPrefixed(e.hooks, comp, assignShareKeys(e.hooks)))
	for i := range e.hooks {
		assignParamKeys(&e.hooks[i])
		e.keepsParamResults = e.keepsParamResults || e.hooks[i].paramKeyCount > 0
	}
	// The policy set is built: comp keeps its compilations and drops
	// those of sets gone by (Compiler).
	comp.endSet()
	return e
}

// Name is the plugin's name in kube-apiserver.
func (e *Evaluator) Name() string { return PluginName }

// decision is a denying decision with the policy and binding that made it
// (upstream's policyDecisionWithMetadata).
type decision struct {
	upstream.PolicyDecision
	policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// Admit runs the ValidatingAdmissionPolicy plugin once for a (chain.Stage):
// its Object is what the registry would store (nil for DELETE and
// CONNECT, whose OldObject the policies see). The object is not changed.
// A refusal is Outcome.Denied, with kube-apiserver's status, code and
// message; the Warn action's warnings are Outcome.Warnings, the Audit
// action's failures and the policies' auditAnnotations
// Outcome.AuditAnnotations; every evaluation is in Outcome.Validations.
func (e *Evaluator) Admit(ctx context.Context, a *matching.Attributes, _ *chain.Context) (chain.Outcome, error) {
	var out chain.Outcome
	if a.Object != nil {
		out.Object = a.Object.Object
	}
	switch a.Operation {
	case admission.Create, admission.Update, admission.Delete, admission.Connect:
	default:
		return out, nil
	}
	if matching.PolicyExempt(a) {
		return out, nil
	}
	var candBuf [32]int
	cands := candBuf[:0]
	e.index.Lookup(a.Operation, a.Resource, func(i int) bool {
		cands = append(cands, i)
		return true
	})
	if len(cands) == 0 {
		return out, nil
	}
	err := e.dispatch(ctx, a, cands, &out)
	return out, err
}

// dispatch is upstream's dispatcher.Dispatch over the candidate hooks.
func (e *Evaluator) dispatch(ctx context.Context, a *matching.Attributes, cands []int, out *chain.Outcome) error {
	// denied is the first denying decision (the refusal's), refused
	// whether there is one.
	var denied decision
	refused := false
	deny := func(d decision) {
		if !refused {
			denied, refused = d, true
		}
	}
	var failures []upstream.ValidationFailureValue
	// addConfigError: a configuration error denies under failurePolicy
	// Fail (the API defaults and validates it) and is dropped under Ignore.
	addConfigError := func(err error, p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		fp := admissionregistrationv1.Fail
		if p.Spec.FailurePolicy != nil {
			fp = *p.Spec.FailurePolicy
		}
		switch fp {
		case admissionregistrationv1.Ignore:
			return
		case admissionregistrationv1.Fail:
			msg := fmt.Errorf("failed to configure policy: %w", err).Error()
			if b != nil {
				msg = fmt.Errorf("failed to configure binding: %w", err).Error()
			}
			deny(decision{PolicyDecision: upstream.PolicyDecision{Action: upstream.ActionDeny, Message: msg}, policy: p, binding: b})
		default:
			deny(decision{PolicyDecision: upstream.PolicyDecision{Action: upstream.ActionDeny, Message: fmt.Errorf("unrecognized failure policy: '%v'", fp).Error()}, policy: p, binding: b})
		}
	}
	record := func(v chain.Validation) { out.Validations = append(out.Validations, v) }
	out.Validations = slices.Grow(out.Validations, len(cands))
	buf := e.getScratch()
	defer e.putScratch(buf)
	// The records' decisions are cut from one slab (a few when params
	// multiply the evaluations), each with its own capacity.
	decisions := decisionSlab{next: e.decisionsHint(cands)}

	ctx, release := compiler.WithSharedFrame(ctx)
	defer release()
	// The request's admission attributes and caching authorizer (one for
	// every policy, as upstream's dispatcher shares it), made when a
	// policy refers to the authorizer or a refusal needs the attributes.
	var attrs admission.Attributes
	attributes := func() admission.Attributes {
		if attrs == nil {
			attrs = a.AdmissionAttributes()
		}
		return attrs
	}
	var authz authorizer.UnconditionalAuthorizer
	// The namespace, looked up once (for the first binding that needs it;
	// its error ends the admission, as upstream's), and its trimmed copy
	// for the first policy that refers to namespaceObject.
	var namespace, namespaceObject *corev1.Namespace
	namespaceLooked := false
	shared := e.shared(ctx, buf)
	for _, i := range cands {
		h := &e.hooks[i]
		p := h.Policy
		m, err := e.cfg.Matcher.CriteriaDefinitionMatches(ctx, a, h.criteria)
		if err != nil {
			addConfigError(err, p, nil)
			record(chain.Validation{Record: chain.Record{Configuration: p.Name, Skip: chain.SkipPolicyConfigError, Err: err}})
			continue
		}
		if !m.Matches {
			record(chain.Validation{Record: chain.Record{Configuration: p.Name, Skip: chain.SkipPolicyNotSelected}})
			continue
		}
		// The policy source's configuration error: a paramKind that is not
		// served (one whose apiVersion does not parse never becomes a hook).
		if skip, err := e.cfg.Params.CheckKind(p.Spec.ParamKind); skip {
			record(chain.Validation{Record: chain.Record{Configuration: p.Name, Skip: chain.SkipParamKindInactive, Err: err}})
			continue
		} else if err != nil {
			addConfigError(err, p, nil)
			record(chain.Validation{Record: chain.Record{Configuration: p.Name, Skip: chain.SkipPolicyConfigError, Err: err}})
			continue
		}
		var annotations auditAnnotationCollector
		for j, b := range h.Bindings {
			rec := chain.Validation{Record: chain.Record{Configuration: p.Name, Hook: b.Name}, Actions: b.Spec.ValidationActions}
			ok, err := e.cfg.Matcher.CriteriaBindingMatches(ctx, a, h.bindingCriteria[j])
			if err != nil {
				addConfigError(err, p, b)
				rec.Skip, rec.Err = chain.SkipBindingConfigError, err
				record(rec)
				continue
			}
			if !ok {
				rec.Skip = chain.SkipBindingNotSelected
				record(rec)
				continue
			}
			// Without a paramKind or paramRef, one evaluation with params
			// null (what CollectRef answers, without its allocation).
			ps, err := noParams[:], error(nil)
			var col *collection
			if params.Bound(p.Spec.ParamKind, b.Spec.ParamRef) {
				if col, err = e.collect(ctx, h, j, a.Namespace); col != nil {
					ps = col.params
				}
			}
			if err != nil {
				addConfigError(err, p, b)
				rec.Skip, rec.Err = chain.SkipParams, err
				record(rec)
				continue
			}
			if len(ps) == 0 {
				rec.Skip = chain.SkipNoParams
				record(rec)
				continue
			}
			v, err := e.viewOf(&buf.views, a, m.Kind)
			if err != nil {
				err = fmt.Errorf("failed to convert object version: %w", err)
				addConfigError(err, p, b)
				rec.Skip, rec.Err = chain.SkipConversion, err
				record(rec)
				continue
			}
			if !namespaceLooked {
				if namespace, err = e.namespaceObject(ctx, a); err != nil {
					return err
				}
				namespaceLooked = true
			}
			in := input{object: v.object, oldObject: v.oldObject, namespace: namespace, view: v, shared: shared}
			if h.usesRequest {
				in.request, in.conditionsRequest = v.request(a, m.Resource), v.request(a, a.Resource)
			}
			if h.usesNamespace {
				if namespaceObject == nil && namespace != nil {
					namespaceObject = plugincel.CreateNamespaceObject(namespace)
				}
				in.namespaceObject = namespaceObject
			}
			if h.usesAuthorizer {
				if authz == nil {
					authz = admissionauthorizer.NewCachingAuthorizer(e.cfg.Authorizer)
				}
				in.authz, in.attrs = authz, attributes()
			}
			// One record per param (the slice grown once, not by doubling).
			out.Validations = slices.Grow(out.Validations, len(ps))
			for k, param := range ps {
				prec := rec
				in.params, in.paramsValue, in.paramResults = nil, nil, nil
				if param.Object != nil {
					if col != nil {
						bp := &col.bound[k]
						prec.Param = bp.key
						in.params, in.paramsValue, in.paramResults = bp.params, bp.value, bp.results
					} else {
						prec.Param = param.Namespace + "/" + param.Name
						in.params, in.paramsValue, in.paramResults = h.paramOf(param)
					}
				}
				result := h.validate(ctx, &in, e.observer, buf)
				if len(result.Decisions) == 0 && len(result.AuditAnnotations) == 0 {
					// Validate answers nothing only when a matchCondition is
					// false (a policy has validations or auditAnnotations).
					prec.Skip = chain.SkipMatchConditionFalse
				}
				prec.Decisions = decisions.take(len(result.Decisions))
				for i, d := range result.Decisions {
					prec.Decisions = append(prec.Decisions, chain.Decision{
						Action: chain.DecisionAction(d.Action), Error: d.Evaluation == upstream.EvalError,
						Message: d.Message, Reason: d.Reason, Elapsed: d.Elapsed,
					})
					switch d.Action {
					case upstream.ActionAdmit:
					case upstream.ActionDeny:
						for _, action := range b.Spec.ValidationActions {
							switch action {
							case admissionregistrationv1.Deny:
								deny(decision{PolicyDecision: d, policy: p, binding: b})
							case admissionregistrationv1.Audit:
								failures = append(failures, upstream.ValidationFailureValue{
									ExpressionIndex: i, Message: d.Message, ValidationActions: b.Spec.ValidationActions,
									Binding: b.Name, Policy: b.Spec.PolicyName,
								})
							case admissionregistrationv1.Warn:
								// upstream's fmt.Sprintf("Validation failed for
								// ValidatingAdmissionPolicy '%s' with binding '%s': %s", …)
								// of strings.
								out.Warnings = appendWarning(out.Warnings, "Validation failed for ValidatingAdmissionPolicy '"+p.Name+"' with binding '"+b.Name+"': "+d.Message)
							}
						}
					default:
						return fmt.Errorf("unrecognized evaluation decision '%s' for ValidatingAdmissionPolicyBinding '%s' with ValidatingAdmissionPolicy '%s'", d.Action, b.Name, p.Name)
					}
				}
				for _, aa := range result.AuditAnnotations {
					switch aa.Action {
					case upstream.AuditAnnotationActionPublish:
						value := aa.Value
						if len(value) > maxAuditAnnotationValueLength {
							value = value[:maxAuditAnnotationValueLength]
						}
						annotations.add(aa.Key, value)
						if prec.AuditAnnotations == nil {
							prec.AuditAnnotations = map[string]string{}
						}
						prec.AuditAnnotations[aa.Key] = value
					case upstream.AuditAnnotationActionError:
						// Under failurePolicy Fail an auditAnnotation's error
						// denies.
						d := upstream.PolicyDecision{Action: upstream.ActionDeny, Evaluation: upstream.EvalError, Message: aa.Error, Elapsed: aa.Elapsed}
						deny(decision{PolicyDecision: d, policy: p, binding: b})
						prec.Decisions = append(prec.Decisions, chain.Decision{Action: chain.DecisionDeny, Error: true, Message: aa.Error, Elapsed: aa.Elapsed})
					case upstream.AuditAnnotationActionExclude:
					default:
						return fmt.Errorf("unsupported AuditAnnotation Action: %s", aa.Action)
					}
				}
				record(prec)
			}
		}
		annotations.publish(p.Name, out)
	}
	if e.replays != nil && shared != nil {
		e.replays.Add(int64(shared.replayed))
	}
	if len(failures) > 0 {
		publishValidationFailures(failures, out)
	}
	if refused {
		out.Denied = refusal(a, denied)
	}
	return nil
}

// noParams is the params of a binding without paramKind or paramRef: one
// evaluation, params null (read only).
var noParams = [1]params.Param{{}}

// decisionSlab hands out the records' decision slices from one backing
// array: each taken slice is empty with its own capacity, so that an
// append past it reallocates instead of running into the next.
type decisionSlab struct {
	free []chain.Decision
	// next is the size of the next backing array.
	next int
}

// take returns an empty slice with capacity n.
func (s *decisionSlab) take(n int) []chain.Decision {
	if n == 0 {
		return nil
	}
	if cap(s.free) < n {
		size := max(n, s.next)
		s.free = make([]chain.Decision, size)
		s.next = 2 * size
	}
	out := s.free[:0:n]
	s.free = s.free[n:]
	return out
}

// decisionsHint is how many decisions the candidate hooks make when every
// binding evaluates once: the first slab's size.
func (e *Evaluator) decisionsHint(cands []int) int {
	n := 0
	for _, i := range cands {
		h := &e.hooks[i]
		n += len(h.Policy.Spec.Validations) * len(h.Bindings)
	}
	return n
}

// refusal is kube-apiserver's answer to the first denying decision: the
// Forbidden status admission.NewForbidden builds, with the decision's
// reason (Invalid unless the validation says) and its code.
// TestRefusalIsNewForbiddens holds it to admission.NewForbidden over the
// request's AttributesRecord.
func refusal(a *matching.Attributes, d decision) *apierrors.StatusError {
	// admission.NewForbidden: the name as its extractResourceName finds
	// it, the message as apierrors.NewForbidden words it (%q is
	// strconv.Quote) around upstream's fmt.Sprintf("ValidatingAdmissionPolicy
	// '%s' with binding '%s' denied request: %s", …) of strings. Both texts
	// are built in one buffer: the message is the end of the forbidden
	// text.
	resource, name := a.Resource.GroupResource(), refusedName(a)
	n := len(d.policy.Name) + len(d.Message) + len(name) + len(resource.Group) + len(resource.Resource) + 96
	if d.binding != nil {
		n += len(d.binding.Name)
	}
	var b strings.Builder
	b.Grow(n)
	switch {
	case resource.Empty():
		b.WriteString("forbidden: ")
	case name == "":
		writeGroupResource(&b, resource)
		b.WriteString(" is forbidden: ")
	default:
		writeGroupResource(&b, resource)
		b.WriteByte(' ')
		var quoted [64]byte
		b.Write(strconv.AppendQuote(quoted[:0], name))
		b.WriteString(" is forbidden: ")
	}
	start := b.Len()
	b.WriteString("ValidatingAdmissionPolicy '")
	b.WriteString(d.policy.Name)
	if d.binding != nil {
		b.WriteString("' with binding '")
		b.WriteString(d.binding.Name)
	}
	b.WriteString("' denied request: ")
	b.WriteString(d.Message)
	forbidden := b.String()
	message := forbidden[start:]
	reason := d.Reason
	if reason == "" {
		reason = metav1.StatusReasonInvalid
	}
	// The status, its details and its cause in one allocation.
	r := &struct {
		err     apierrors.StatusError
		details metav1.StatusDetails
		causes  [1]metav1.StatusCause
	}{}
	r.causes[0].Message = message
	r.details = metav1.StatusDetails{Group: resource.Group, Kind: resource.Resource, Name: name, Causes: r.causes[:]}
	r.err.ErrStatus = metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    reasonToCode(reason),
		Reason:  reason,
		Details: &r.details,
		Message: forbidden,
	}
	return &r.err
}

// writeGroupResource writes gr.String() to b.
func writeGroupResource(b *strings.Builder, gr schema.GroupResource) {
	b.WriteString(gr.Resource)
	if gr.Group != "" {
		b.WriteByte('.')
		b.WriteString(gr.Group)
	}
}

// refusedName is the name admission.NewForbidden's extractResourceName
// gives the request: its name, else its object's name or generateName,
// else "Unknown".
func refusedName(a *matching.Attributes) string {
	if a.Name != "" {
		return a.Name
	}
	if a.Object != nil {
		if n := a.Object.GetName(); n != "" {
			return n
		}
		if n := a.Object.GetGenerateName(); n != "" {
			return n
		}
	}
	return "Unknown"
}

// reasonToCode is upstream's unexported reasonToCode (policy_decision.go):
// the HTTP code of the reasons the API allows a validation to give.
func reasonToCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden
	case metav1.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	case metav1.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusUnprocessableEntity
}

// publishValidationFailures is upstream's publishValidationFailureAnnotations:
// the first 50 failures as JSON under ValidationFailureAnnotation.
func publishValidationFailures(failures []upstream.ValidationFailureValue, out *chain.Outcome) {
	if len(failures) > maxValidationFailures {
		failures = failures[:maxValidationFailures]
	}
	value, err := utiljson.Marshal(failures)
	if err != nil {
		return // upstream logs it and publishes nothing
	}
	addAnnotation(out, ValidationFailureAnnotation, string(value))
}

// addAnnotation sets an audit annotation as admission.Attributes'
// AddAnnotation does: a key already set to another value keeps its value
// (upstream logs the error).
func addAnnotation(out *chain.Outcome, key, value string) {
	if out.AuditAnnotations == nil {
		out.AuditAnnotations = map[string]string{}
	}
	if _, ok := out.AuditAnnotations[key]; !ok {
		out.AuditAnnotations[key] = value
	}
}

// auditAnnotationCollector is upstream's: a policy's auditAnnotations over
// all its bindings and params, each key's distinct values in order.
type auditAnnotationCollector struct {
	keys   []string
	values map[string][]string
}

// add keeps value among key's values (the collector's zero value is
// empty).
func (c *auditAnnotationCollector) add(key, value string) {
	if c.values == nil {
		c.values = map[string][]string{}
	}
	vs, seen := c.values[key]
	for _, v := range vs {
		if v == value {
			return
		}
	}
	if !seen {
		c.keys = append(c.keys, key)
	}
	c.values[key] = append(vs, value)
}

// publish adds the policy's annotations as POLICY/KEY, several distinct
// values of a key joined by ", ".
func (c *auditAnnotationCollector) publish(policy string, out *chain.Outcome) {
	for _, k := range c.keys {
		addAnnotation(out, policy+"/"+k, strings.Join(c.values[k], ", "))
	}
}

// appendWarning adds a warning unless the same text is already there, as
// kube-apiserver's warning recorder keeps one of each text.
func appendWarning(warnings []string, text string) []string {
	for _, w := range warnings {
		if w == text {
			return warnings
		}
	}
	return append(warnings, text)
}

// namespaceObject is the request's namespace for namespaceObject, or nil
// for cluster-scoped requests and Namespaces themselves.
func (e *Evaluator) namespaceObject(ctx context.Context, a *matching.Attributes) (*corev1.Namespace, error) {
	name := a.Namespace
	if a.Kind.Group == "" && a.Kind.Version == "v1" && a.Kind.Kind == "Namespace" {
		name = ""
	}
	if name == "" {
		return nil, nil
	}
	return e.cfg.Matcher.Namespace(ctx, name)
}

// boundParam is a param as paramOf binds it, with the results of the
// policy's expressions over it alone (paramResults).
type boundParam struct {
	params  map[string]any
	value   ref.Val
	results *paramResults
	// key is the param's record key (namespace/name), in a collection.
	key string
}

// paramOf is paramOf of the param's content, remembered by its object (a
// param's binding depends on the object and the policy's paramKind
// alone).
func (h *Hook) paramOf(p params.Param) (map[string]any, ref.Val, *paramResults) {
	if p.Source == nil {
		m, val := paramOf(p.Object, h.Policy.Spec.ParamKind)
		return m, val, nil
	}
	v, _ := h.paramValues.Get(p.Source, func() (any, error) {
		m, val := paramOf(p.Object, h.Policy.Spec.ParamKind)
		return boundParam{params: m, value: val, results: newParamResults(h.paramKeyCount)}, nil
	})
	b := v.(boundParam)
	return b.params, b.value, b.results
}

// paramOf is a param as the dispatcher hands it to CEL: a typed built-in
// param (which kube-apiserver's informer holds without apiVersion and
// kind) is the map withTypeMeta gives, as CEL gets upstream's wrappedParam's
// content (its ToUnstructured: the map runtime.DefaultUnstructuredConverter
// gives, params.Collector's presentation, as is); a custom resource's, an
// *unstructured.Unstructured in upstream's dynamic informer, is the value
// CEL makes of that (common.SchemalessTypedToVal: its JSON encoding decoded
// again, integral numbers as int64), converted once here.
func paramOf(obj map[string]any, kind *admissionregistrationv1.ParamKind) (map[string]any, ref.Val) {
	if m, typed := withTypeMeta(obj, kind); typed {
		return m, nil
	}
	return nil, common.SchemalessTypedToVal(&unstructured.Unstructured{Object: obj})
}

// withTypeMeta is obj with the paramKind's apiVersion and kind when it has
// neither (a typed built-in param: typed is set), else obj.
func withTypeMeta(obj map[string]any, kind *admissionregistrationv1.ParamKind) (m map[string]any, typed bool) {
	av, _ := obj["apiVersion"].(string)
	k, _ := obj["kind"].(string)
	if (av != "" || k != "") || kind == nil {
		return obj, false
	}
	m = make(map[string]any, len(obj)+2)
	for key, v := range obj {
		m[key] = v
	}
	m["apiVersion"], m["kind"] = kind.APIVersion, kind.Kind
	return m, true
}
