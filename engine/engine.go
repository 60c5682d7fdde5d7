// Package engine evaluates MutatingAdmissionPolicies for admission requests
// with the algorithm of kube-apiserver 1.37 (k8s.io/apiserver
// pkg/admission/plugin/policy/{generic,mutating}), written to be read top to
// bottom: match, collect params, matchConditions, mutate, reinvoke, respond.
package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	celtypes "github.com/google/cel-go/common/types"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/binding"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/params"
)

// Hook is one compiled policy with its bindings, in evaluation order.
type Hook struct {
	Policy   *admissionregistrationv1.MutatingAdmissionPolicy
	Compiled *compiler.Policy
	Bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
}

// NewHooks compiles policies and groups their bindings (binding.Group order:
// policy name, then binding name).
func NewHooks(c *compiler.Compiler, policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) ([]Hook, error) {
	var hooks []Hook
	for _, g := range binding.Group(policies, bindings) {
		cp, err := c.Compile(g.Policy)
		if err != nil {
			return nil, err
		}
		hooks = append(hooks, Hook{Policy: g.Policy, Compiled: cp, Bindings: g.Bindings})
	}
	return hooks, nil
}

// Config is what an Evaluator needs besides the hooks: what lives as long
// as the process or the simulated cluster (the sources of namespaces and
// params, the schemas and the scheme with their per-kind plans, the
// authorizer, the metrics hooks), shared by every policy set swapped into
// an Engine. Each collaborator is given once: the namespaces are the
// Matcher's, and the params are presented with the Patcher's scheme
// unless the Collector has its own.
type Config struct {
	// Matcher matches policies and bindings; its namespace getter also
	// gives namespaceObject.
	Matcher *matching.Matcher
	// Params resolves the bindings' params.
	Params *params.Collector
	// Patcher applies mutations.
	Patcher *Patcher
	// Metrics, when set, observes every evaluated mutation.
	Metrics Metrics
	// Authorizer backs the CEL authorizer variables; nil denies every check.
	Authorizer authorizer.Authorizer
}

// complete fills in what cfg leaves to its defaults: an authorizer that
// denies, and the Patcher's scheme for presenting params.
func (cfg Config) complete() Config {
	if cfg.Authorizer == nil {
		cfg.Authorizer = authorizerfactory.NewAlwaysDenyAuthorizer()
	}
	if cfg.Params != nil && cfg.Params.Scheme == nil && cfg.Patcher != nil && cfg.Patcher.Scheme != nil {
		p := *cfg.Params
		p.Scheme = cfg.Patcher.Scheme
		cfg.Params = &p
	}
	return cfg
}

// Evaluator runs one admission request through a fixed set of hooks.
type Evaluator struct {
	cfg   Config
	hooks []Hook
	// index finds the hooks whose rules can match a request, so a request
	// for a resource no policy names costs O(1) in the number of policies.
	index *matching.Index[int]
	// bruteForce makes every hook a candidate (tests prove the index never
	// changes a result).
	bruteForce bool
	// only, when set, keeps the hooks whose policy has that failure policy
	// (an unset one is Fail) and drops the others from the candidates: a
	// view of the same hooks and index (subset).
	only admissionregistrationv1.FailurePolicyType
}

// NewEvaluator returns an Evaluator over hooks. It is safe for concurrent
// use. Where policy sets follow each other over the same collaborators
// (a webhook, a controller), an Engine holds them (New, Engine.Swap).
func NewEvaluator(cfg Config, hooks []Hook) *Evaluator {
	return evaluatorOver(cfg.complete(), hooks)
}

// evaluatorOver is NewEvaluator over a completed cfg: the policy set's own
// part, its candidate index.
func evaluatorOver(cfg Config, hooks []Hook) *Evaluator {
	ix := matching.NewIndex[int](cfg.Matcher.Table())
	for i := range hooks {
		ix.Add(matching.SelectorForPolicy(hooks[i].Policy), i)
	}
	return &Evaluator{cfg: cfg, hooks: hooks, index: ix}
}

// candidates returns the indexes of the hooks that may match a, in order.
func (e *Evaluator) candidates(a *matching.Attributes) []int {
	var out []int
	if e.bruteForce {
		for i := range e.hooks {
			if e.keeps(i) {
				out = append(out, i)
			}
		}
		return out
	}
	e.index.Lookup(a.Operation, a.Resource, func(i int) bool {
		if e.keeps(i) {
			out = append(out, i)
		}
		return true
	})
	return out
}

// anyCandidate tells whether any hook may match a (candidates would not be
// empty), without allocating.
func (e *Evaluator) anyCandidate(a *matching.Attributes) bool {
	found := false
	if e.bruteForce {
		for i := range e.hooks {
			if found = e.keeps(i); found {
				break
			}
		}
		return found
	}
	e.index.Lookup(a.Operation, a.Resource, func(i int) bool {
		found = e.keeps(i)
		return !found
	})
	return found
}

// keeps tells whether hook i is one of the evaluator's (only).
func (e *Evaluator) keeps(i int) bool {
	if e.only == "" {
		return true
	}
	fp := admissionregistrationv1.Fail
	if p := e.hooks[i].Policy.Spec.FailurePolicy; p != nil {
		fp = *p
	}
	return fp == e.only
}

// Invocation records one policy × binding × param evaluation.
type Invocation struct {
	Policy, Binding string
	// Param is "namespace/name" of the param, or "" for none.
	Param string
	// Pass is 1 or 2 (reinvocation).
	Pass int
	// Skipped tells why the invocation did not run its mutations
	// (NotSkipped if it ran).
	Skipped SkipReason
	// Condition names the matchCondition that was false
	// (SkipMatchConditionFalse).
	Condition string
	// Mutations are the outcomes of the mutations that ran, in order.
	Mutations []MutationOutcome
	// Err is the invocation's error, if any (before the failure policy).
	Err error
}

// Ran tells whether the invocation ran its mutations.
func (inv Invocation) Ran() bool { return inv.Skipped == NotSkipped }

// SkipMessage is why the invocation did not run its mutations, in words
// ("matchCondition NAME is false"), or "" if it ran. Words are for people;
// code reads Skipped and Condition.
func (inv Invocation) SkipMessage() string {
	if inv.Skipped == SkipMatchConditionFalse {
		return "matchCondition " + inv.Condition + " is false"
	}
	return inv.Skipped.String()
}

// SkipReason tells why an invocation did not run its mutations.
type SkipReason uint8

// The reasons, in the order the evaluator meets them.
const (
	// NotSkipped: the invocation ran its mutations.
	NotSkipped SkipReason = iota
	// SkipPolicyConfigError: the policy cannot be evaluated (it does not
	// compile, or its paramKind is not served); Err says why.
	SkipPolicyConfigError
	// SkipPolicyNotSelected: the policy's matchConstraints do not select
	// the request.
	SkipPolicyNotSelected
	// SkipParamKindInactive: the policy's paramKind cannot be resolved;
	// Err says why.
	SkipParamKindInactive
	// SkipBindingConfigError: the binding cannot be evaluated; Err says
	// why.
	SkipBindingConfigError
	// SkipBindingNotSelected: the binding's matchResources do not select
	// the request.
	SkipBindingNotSelected
	// SkipConversion: the objects could not be converted to the kind the
	// policy matched (matchPolicy Equivalent); Err says why.
	SkipConversion
	// SkipParams: the binding's params could not be resolved; Err says
	// why.
	SkipParams
	// SkipNoParams: no params were found under parameterNotFoundAction
	// Allow.
	SkipNoParams
	// SkipMatchConditionsError: evaluating the matchConditions failed
	// under failurePolicy Fail; Err says why.
	SkipMatchConditionsError
	// SkipMatchConditionsErrorIgnored: evaluating the matchConditions
	// failed under failurePolicy Ignore; Err says why (Result.Ignored has
	// it too).
	SkipMatchConditionsErrorIgnored
	// SkipMatchConditionFalse: the matchCondition named by
	// Invocation.Condition is false.
	SkipMatchConditionFalse
	// SkipNotReinvoked: a second pass, and the invocation is not to be
	// reinvoked.
	SkipNotReinvoked
)

var skipReasons = [...]string{
	NotSkipped:                      "",
	SkipPolicyConfigError:           "policy configuration error",
	SkipPolicyNotSelected:           "policy matchConstraints do not select the request",
	SkipParamKindInactive:           "policy inactive: paramKind",
	SkipBindingConfigError:          "binding configuration error",
	SkipBindingNotSelected:          "binding matchResources do not select the request",
	SkipConversion:                  "conversion to the matched kind",
	SkipParams:                      "params",
	SkipNoParams:                    "no params found (parameterNotFoundAction Allow)",
	SkipMatchConditionsError:        "matchConditions error",
	SkipMatchConditionsErrorIgnored: "matchConditions error ignored",
	SkipMatchConditionFalse:         "a matchCondition is false",
	SkipNotReinvoked:                "not reinvoked",
}

// String is the reason in words ("" for NotSkipped); for a false
// matchCondition Invocation.SkipMessage names it.
func (r SkipReason) String() string {
	if int(r) < len(skipReasons) {
		return skipReasons[r]
	}
	return "skip reason " + strconv.Itoa(int(r))
}

// Result is the outcome of one admission request.
type Result struct {
	// Object is the final object (nil for requests without one). It may
	// share maps with the request's object (all of them when nothing
	// changed it): treat both as read-only.
	Object map[string]any
	// Denied is the Status kube-apiserver would answer with, or nil.
	Denied *apierrors.StatusError
	// Invocations is the trace, in evaluation order.
	Invocations []Invocation
	// Reinvoke tells that the whole admission chain would be reinvoked
	// (a policy changed the object in the last pass).
	Reinvoke bool
	// Ignored are the errors that failurePolicy Ignore dropped, in the
	// order they were met. kube-apiserver admits such a request as if the
	// failing part had not run and tells nobody; a tool shows them.
	Ignored []IgnoredError
}

// IgnoredError is an error of a policy whose failurePolicy is Ignore: a
// mutation that failed, matchConditions that could not be evaluated, or a
// policy or binding that cannot be configured.
type IgnoredError struct {
	Policy string
	// Binding is "" for an error of the policy itself.
	Binding string
	// Pass is the pass (1, or 2 for reinvocation) that met the error.
	Pass int
	// Mutation is the index of the mutation that failed, or -1 when the
	// error is not a mutation's.
	Mutation int
	// Message is the error as a denial would have worded it under
	// failurePolicy Fail ("policy 'p' with binding 'b' denied request: …").
	Message string
	// Err is the error itself.
	Err error
}

type invocationKey struct{ policy, binding, param string }

type policyError struct {
	policy   *admissionregistrationv1.MutatingAdmissionPolicy
	binding  string // "" for policy-level errors
	err      error
	reason   metav1.StatusReason
	mutation int // the failing mutation's index + 1; 0 when not a mutation's
}

func (e policyError) message() string {
	if e.binding != "" {
		return fmt.Sprintf("policy '%s' with binding '%s' denied request: %s", e.policy.Name, e.binding, e.err.Error())
	}
	return fmt.Sprintf("policy %q denied request: %s", e.policy.Name, e.err.Error())
}

// Admit evaluates the request a. MutatingAdmissionPolicies handle CREATE,
// UPDATE and CONNECT; other operations and exempt resources pass unchanged.
// The returned error is for failures of the evaluator itself; denials are in
// Result.Denied.
//
// Admit is the MAP plugin alone inside kube-apiserver's reinvoker: a
// first round and, when a policy changed the object, a second one (what
// `serve` answers, kube-apiserver owning the rest of the chain). A
// simulated chain of several plugins runs Dispatch once per round instead.
func (e *Evaluator) Admit(ctx context.Context, a *matching.Attributes) (res Result, err error) {
	defer recoverDenial(&res)
	if res.Object, err = e.requestObject(a); err != nil {
		return res, err
	}
	if !e.handles(a) {
		return res, nil
	}
	st := &ReinvocationState{}
	for round := 1; round <= 2; round++ {
		if round == 2 {
			if !st.ShouldReinvoke {
				break
			}
			st.Reinvoke, st.ShouldReinvoke = true, false
		}
		if res.Denied = e.round(ctx, a, st, &res); res.Denied != nil {
			return res, nil
		}
	}
	res.Reinvoke = st.ShouldReinvoke
	return res, nil
}

// Dispatch runs one round of the MutatingAdmissionPolicy plugin for a,
// whose Object is the object as the plugins before it left it, with the
// reinvocation state st of the request's admission chain (one per
// request, kept across rounds by the caller, as kube-apiserver's
// ReinvocationContext): the first round with st.Reinvoke false, the
// reinvocation round with it true. Result.Reinvoke (and st.ShouldReinvoke)
// tell that a policy asked for the chain's reinvocation; in the second
// round only the invocations to reinvoke run, and all of them that ran
// with reinvocationPolicy IfNeeded when the object changed since the
// policies last ran (IsOutputChangedSinceLastPolicyInvocation: the other
// plugins changed it). Denials are in Result.Denied, as Admit's.
func (e *Evaluator) Dispatch(ctx context.Context, a *matching.Attributes, st *ReinvocationState) (res Result, err error) {
	defer recoverDenial(&res)
	if res.Object, err = e.requestObject(a); err != nil {
		return res, err
	}
	if !e.handles(a) {
		return res, nil
	}
	res.Denied = e.round(ctx, a, st, &res)
	res.Reinvoke = st.ShouldReinvoke
	return res, nil
}

// recoverDenial turns a panic outside a mutation (mutations recover their
// own, under the failure policy) into a failure of the request instead of
// the process.
func recoverDenial(res *Result) {
	if r := recover(); r != nil {
		res.Denied = apierrors.NewInternalError(fmt.Errorf("panic evaluating MutatingAdmissionPolicies: %v", r))
	}
}

// handles tells whether any policy can apply to a. That depends on the
// operation and resource only: it is looked up first, so that a request no
// policy names costs the index lookup and the presentation of its object,
// which allocates nothing for an object already in its Go type's form.
func (e *Evaluator) handles(a *matching.Attributes) bool {
	switch a.Operation {
	case admission.Create, admission.Update, admission.Connect:
		return !matching.PolicyExempt(a) && e.anyCandidate(a)
	}
	return false
}

// round is one round of the plugin on res.Object, which it updates; the
// invocations and ignored errors go to res.
func (e *Evaluator) round(ctx context.Context, a *matching.Attributes, st *ReinvocationState, res *Result) *apierrors.StatusError {
	pass := 1
	if st.Reinvoke {
		pass = 2
	}
	var denied *apierrors.StatusError
	res.Object, denied = e.dispatch(ctx, a, res.Object, pass, st, res)
	return denied
}

// requestObject is the request's object as kube-apiserver presents it to
// admission: decoded into the kind's Go type (built-in kinds), or nil.
func (e *Evaluator) requestObject(a *matching.Attributes) (map[string]any, error) {
	if a.Object == nil {
		return nil, nil
	}
	obj, err := e.cfg.Patcher.NormalizeRequest(a.Object.Object, a.Kind)
	if err != nil {
		return nil, decodingError(a.Kind, err)
	}
	return obj, nil
}

// decodingError is the answer to a request whose object does not decode:
// the decoder's own status (kube-apiserver's 400), or a 400 naming it.
func decodingError(kind schema.GroupVersionKind, err error) error {
	var status *apierrors.StatusError
	if errors.As(err, &status) {
		return status
	}
	return apierrors.NewBadRequest(fmt.Sprintf("decoding %s: %v", kind.Kind, err))
}

// ReinvocationState carries the MutatingAdmissionPolicy plugin's state
// across the rounds of one request in an admission chain (upstream's
// policyReinvokeContext, and the part of the chain's ReinvocationContext
// the plugin touches). Use one per request; the zero value is the state
// before the first round.
type ReinvocationState struct {
	// Reinvoke is set by the chain before its reinvocation round
	// (upstream's IsReinvoke).
	Reinvoke bool
	// ShouldReinvoke is set by Dispatch when a policy changed the object
	// (upstream's SetShouldReinvoke): the chain then runs one
	// reinvocation round of every plugin.
	ShouldReinvoke bool

	// lastOutput is the object as the policies last left it
	// (lastPolicyOutput); hasRun tells it is set.
	lastOutput map[string]any
	hasRun     bool
	previous   map[invocationKey]bool // reinvocable invocations since the last change
	reinvoke   map[invocationKey]bool // invocations to run in the reinvocation round
	// typed is the typed value of the last merged object, for the next
	// mutation of that object (Patcher.mutate).
	typed *applyconfig.Merged
}

func (s *ReinvocationState) requireReinvokingPrevious() {
	if len(s.previous) == 0 {
		return
	}
	if s.reinvoke == nil {
		s.reinvoke = map[invocationKey]bool{}
	}
	for k := range s.previous {
		s.reinvoke[k] = true
	}
	clear(s.previous)
}

func (s *ReinvocationState) addPrevious(k invocationKey) {
	if s.previous == nil {
		s.previous = map[invocationKey]bool{}
	}
	s.previous[k] = true
}

type invocation struct {
	hook     *Hook
	binding  *admissionregistrationv1.MutatingAdmissionPolicyBinding
	param    params.Param
	resource schema.GroupVersionResource
	kind     schema.GroupVersionKind
}

// dispatch is one pass of the MAP plugin (generic Dispatch + mutating
// dispatchInvocations).
func (e *Evaluator) dispatch(ctx context.Context, a *matching.Attributes, object map[string]any, pass int, st *ReinvocationState, res *Result) (map[string]any, *apierrors.StatusError) {
	cur := *a
	if object != nil {
		cur.Object = &unstructured.Unstructured{Object: object}
	}
	views := map[schema.GroupVersionKind]*versionedView{}
	invocations, errs := e.collect(ctx, &cur, pass, res, views)

	if len(invocations) > 0 {
		var statusErr *apierrors.StatusError
		var more []policyError
		object, more, statusErr = e.invoke(ctx, &cur, object, invocations, pass, st, res, views)
		if statusErr != nil {
			return object, statusErr
		}
		errs = append(errs, more...)
	}
	return object, e.deny(&cur, errs, pass, res)
}

// collect returns the invocations (policy × binding × param) whose policy
// and binding match cur, and the configuration errors met on the way; the
// trace records why the others were skipped.
func (e *Evaluator) collect(ctx context.Context, cur *matching.Attributes, pass int, res *Result, views map[schema.GroupVersionKind]*versionedView) ([]invocation, []policyError) {
	var errs []policyError
	cands := e.candidates(cur)
	invocations := make([]invocation, 0, len(cands))
	for _, i := range cands {
		h := &e.hooks[i]
		m, err := e.cfg.Matcher.PolicyMatches(ctx, cur, h.Policy)
		if err != nil {
			errs = append(errs, policyError{policy: h.Policy, err: fmt.Errorf("failed to configure policy: %w", err)})
			res.Invocations = append(res.Invocations, Invocation{Policy: h.Policy.Name, Pass: pass, Skipped: SkipPolicyConfigError, Err: err})
			continue
		}
		if !m.Matches {
			res.Invocations = append(res.Invocations, Invocation{Policy: h.Policy.Name, Pass: pass, Skipped: SkipPolicyNotSelected})
			continue
		}
		if skip, err := e.cfg.Params.CheckKind(h.Policy.Spec.ParamKind); skip {
			res.Invocations = append(res.Invocations, Invocation{Policy: h.Policy.Name, Pass: pass, Skipped: SkipParamKindInactive, Err: err})
			continue
		} else if err != nil {
			errs = append(errs, policyError{policy: h.Policy, err: fmt.Errorf("failed to configure policy: %w", err)})
			res.Invocations = append(res.Invocations, Invocation{Policy: h.Policy.Name, Pass: pass, Skipped: SkipPolicyConfigError, Err: err})
			continue
		}
		for _, b := range h.Bindings {
			ok, err := e.cfg.Matcher.PolicyBindingMatches(ctx, cur, b)
			if err != nil {
				errs = append(errs, policyError{policy: h.Policy, binding: b.Name, err: fmt.Errorf("failed to configure binding: %w", err)})
				res.Invocations = append(res.Invocations, Invocation{Policy: h.Policy.Name, Binding: b.Name, Pass: pass, Skipped: SkipBindingConfigError, Err: err})
				continue
			}
			if !ok {
				res.Invocations = append(res.Invocations, Invocation{Policy: h.Policy.Name, Binding: b.Name, Pass: pass, Skipped: SkipBindingNotSelected})
				continue
			}
			// Upstream converts the request's objects to the matched kind
			// here, once per kind and pass (generic Dispatch:
			// versionedAttrAccessor.VersionedAttribute(matchGVK)), before
			// any mutation: every view starts from the pass's object.
			if err := e.view(cur, m.Kind, views); err != nil {
				errs = append(errs, policyError{policy: h.Policy, err: fmt.Errorf("failed to configure policy: %w", err)})
				res.Invocations = append(res.Invocations, Invocation{Policy: h.Policy.Name, Binding: b.Name, Pass: pass, Skipped: SkipConversion, Err: err})
				continue
			}
			ps, err := e.cfg.Params.Collect(ctx, h.Policy.Spec.ParamKind, b.Spec.ParamRef, cur.Namespace)
			if err != nil {
				errs = append(errs, policyError{policy: h.Policy, binding: b.Name, err: fmt.Errorf("failed to configure binding: %w", err)})
				res.Invocations = append(res.Invocations, Invocation{Policy: h.Policy.Name, Binding: b.Name, Pass: pass, Skipped: SkipParams, Err: err})
				continue
			}
			if len(ps) == 0 {
				res.Invocations = append(res.Invocations, Invocation{Policy: h.Policy.Name, Binding: b.Name, Pass: pass, Skipped: SkipNoParams})
			}
			for _, p := range ps {
				invocations = append(invocations, invocation{hook: h, binding: b, param: p, resource: m.Resource, kind: m.Kind})
			}
		}
	}
	return invocations, errs
}

// namespaceObject is the "namespaceObject" of a request: its namespace,
// or nil for cluster-scoped requests and for Namespaces themselves.
func (e *Evaluator) namespaceObject(ctx context.Context, a *matching.Attributes) (*corev1.Namespace, *apierrors.StatusError) {
	nsName := a.Namespace
	if a.Kind.Group == "" && a.Kind.Version == "v1" && a.Kind.Kind == "Namespace" {
		nsName = ""
	}
	if nsName == "" {
		return nil, nil
	}
	ns, err := e.cfg.Matcher.Namespace(ctx, nsName)
	if err != nil {
		var se *apierrors.StatusError
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, nsName)
	}
	return ns, nil
}

// deny applies failure policies and builds kube-apiserver's Status; the
// errors of Ignore policies go to res.Ignored.
func (e *Evaluator) deny(a *matching.Attributes, errs []policyError, pass int, res *Result) *apierrors.StatusError {
	var failing []policyError
	for _, pe := range errs {
		if fp := pe.policy.Spec.FailurePolicy; fp != nil && *fp == admissionregistrationv1.Ignore {
			res.Ignored = append(res.Ignored, IgnoredError{
				Policy: pe.policy.Name, Binding: pe.binding, Pass: pass, Mutation: pe.mutation - 1,
				Message: pe.message(), Err: pe.err,
			})
			continue
		}
		failing = append(failing, pe)
	}
	if len(failing) == 0 {
		return nil
	}
	forbidden := admission.NewForbidden(a.AdmissionAttributes(), errors.New("admission request denied by policy"))
	var status *apierrors.StatusError
	if !errors.As(forbidden, &status) {
		return apierrors.NewInternalError(errors.New("failed to create status error"))
	}
	status.ErrStatus.Message = ""
	for _, pe := range failing {
		msg := pe.message()
		if status.ErrStatus.Message == "" {
			status.ErrStatus.Message = msg
			if pe.reason != "" {
				status.ErrStatus.Reason = pe.reason
			}
		}
		status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, metav1.StatusCause{Message: msg})
	}
	return status
}

// versionedView is the request's object and old object as the policies
// matched through one kind see them: upstream's admission.VersionedAttributes
// of that kind, one per kind and pass.
type versionedView struct {
	// kind is the matched kind (VersionedKind).
	kind schema.GroupVersionKind
	// object is the current object of the view, of kind objectKind, and
	// oldObject the old object (of kind kind, never mutated).
	object, oldObject map[string]any
	objectKind        schema.GroupVersionKind
	// dirty tells a mutation changed object since the view was made.
	dirty bool
}

// view makes the view of cur's objects in kind, unless it exists
// (admission.NewVersionedAttributes: both objects converted with
// ConvertToGVK).
func (e *Evaluator) view(cur *matching.Attributes, kind schema.GroupVersionKind, views map[schema.GroupVersionKind]*versionedView) error {
	if _, ok := views[kind]; ok {
		return nil
	}
	v := &versionedView{kind: kind, objectKind: kind}
	var err error
	if cur.OldObject != nil {
		if v.oldObject, err = e.toVersion(cur.OldObject.Object, cur.Kind, kind); err != nil {
			return err
		}
	}
	if cur.Object != nil {
		if v.object, err = e.toVersion(cur.Object.Object, cur.Kind, kind); err != nil {
			return err
		}
	}
	views[kind] = v
	return nil
}

// invoke runs matched invocations in order (dispatchInvocations). Each
// invocation sees and mutates the view of its matched kind; at the end, the
// view of the last invocation that ran mutations becomes the request's
// object if a mutation changed it, as upstream converts
// lastVersionedAttr's object into the request's. (With every invocation
// matched in the request's kind, that is the object threaded through all
// of them.)
func (e *Evaluator) invoke(ctx context.Context, a *matching.Attributes, object map[string]any, invs []invocation, pass int, st *ReinvocationState, res *Result, views map[schema.GroupVersionKind]*versionedView) (out map[string]any, _ []policyError, _ *apierrors.StatusError) {
	if st.Reinvoke && (!st.hasRun || !jsonvalue.SemanticEqual(st.lastOutput, object)) {
		// The plugins after the policies, or those before them in this
		// round, changed the object since the policies last ran: every
		// reinvocable invocation that ran is reinvoked.
		st.requireReinvokingPrevious()
	}
	defer func() {
		// SetLastPolicyInvocationOutput: the object as the policies leave
		// it (unchanged when a status error ends the round).
		st.lastOutput, st.hasRun = out, true
	}()
	var errs []policyError
	namespace, statusErr := e.namespaceObject(ctx, a)
	if statusErr != nil {
		return object, nil, statusErr
	}
	admissionAttrs := a.AdmissionAttributes()
	var last *versionedView
	res.Invocations = slices.Grow(res.Invocations, len(invs))
	var request *admissionv1.AdmissionRequest
	for _, inv := range invs {
		key := invocationKey{policy: inv.hook.Policy.Name, binding: inv.binding.Name}
		if inv.param.Object != nil {
			key.param = inv.param.Namespace + "/" + inv.param.Name
		}
		trace := Invocation{Policy: key.policy, Binding: key.binding, Param: key.param, Pass: pass}
		// The policy sees the objects in the kind its rules matched
		// (matchPolicy Equivalent), as kube-apiserver converts them.
		view := views[inv.kind]
		if view == nil {
			return object, nil, apierrors.NewInternalError(fmt.Errorf("no versioned attributes for %s", inv.kind))
		}
		in := compiler.Input{
			Object: view.object, OldObject: view.oldObject, Params: inv.param.Object,
			Authorizer: e.cfg.Authorizer, Attributes: admissionAttrs,
		}
		if matched, condition, err := e.matchConditions(ctx, inv, a, in); matched != NotSkipped {
			trace.Skipped, trace.Condition, trace.Err = matched, condition, err
			if err != nil {
				// Under failurePolicy Ignore, deny drops it (Result.Ignored).
				errs = append(errs, policyError{policy: inv.hook.Policy, binding: inv.binding.Name, err: err, reason: metav1.StatusReasonInvalid})
			}
			res.Invocations = append(res.Invocations, trace)
			continue
		}
		if pass == 2 && !st.reinvoke[key] {
			trace.Skipped = SkipNotReinvoked
			res.Invocations = append(res.Invocations, trace)
			continue
		}
		before := view.object
		if request == nil || request.Resource != metav1.GroupVersionResource(inv.resource) || request.Kind != metav1.GroupVersionKind(inv.kind) {
			// Invocations matched through the same resource and kind see
			// the same request (read-only): build it once.
			request = AdmissionRequest(a, inv.resource, inv.kind)
		}
		in.Request = request
		in.Namespace = namespace
		if n := len(inv.hook.Compiled.Mutations); n > 0 {
			trace.Mutations = make([]MutationOutcome, 0, n)
		}
		for i, m := range inv.hook.Compiled.Mutations {
			last = view
			if view.object == nil {
				continue
			}
			in.Object = view.object
			out, outcome, err := e.cfg.Patcher.mutate(ctx, inv.hook.Compiled, m, in, view.objectKind, &st.typed)
			outKind := view.objectKind
			if err == nil {
				out, outKind, err = e.backToRequestVersion(out, view.objectKind, a.Kind)
			}
			outcome.Err = err
			trace.Mutations = append(trace.Mutations, outcome)
			if e.cfg.Metrics != nil {
				e.cfg.Metrics.ObserveMutation(ctx, outcome.Elapsed, inv.hook.Policy.Name, inv.binding.Name, ErrorType(err))
			}
			if err != nil {
				var se *apierrors.StatusError
				if errors.As(err, &se) {
					res.Invocations = append(res.Invocations, trace)
					return object, nil, se
				}
				if trace.Err == nil {
					// The first error, as the denial names the first; every
					// mutation's is in its MutationOutcome.
					trace.Err = fmt.Errorf("mutation %d: %w", i, err)
				}
				errs = append(errs, policyError{policy: inv.hook.Policy, binding: inv.binding.Name, err: err, reason: metav1.StatusReasonInvalid, mutation: i + 1})
				continue
			}
			view.object, view.objectKind, view.dirty = out, outKind, true
		}
		res.Invocations = append(res.Invocations, trace)
		if !jsonvalue.SemanticEqual(before, view.object) {
			st.requireReinvokingPrevious()
			st.ShouldReinvoke = true
		}
		if inv.hook.Policy.Spec.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
			st.addPrevious(key)
		}
	}
	if last != nil && last.object != nil && last.dirty {
		// Upstream marks the object dirty after any successful mutation,
		// even one that changed nothing.
		st.requireReinvokingPrevious()
		st.ShouldReinvoke = true
		out, err := e.toVersion(last.object, last.objectKind, a.Kind)
		if err != nil {
			return object, nil, apierrors.NewInternalError(fmt.Errorf("failed to convert object: %w", err))
		}
		object = out
	}
	return object, errs, nil
}

// toVersion presents obj, of kind from, in the version of kind to, as
// upstream's ConvertToGVK does. Built-in kinds convert through their
// internal version with kube-apiserver's own conversions (scheme.Convert);
// custom resources convert as the CRD "None" strategy does (only
// apiVersion changes).
func (e *Evaluator) toVersion(obj map[string]any, from, to schema.GroupVersionKind) (map[string]any, error) {
	if obj == nil || from == to {
		return obj, nil
	}
	if s := e.cfg.Patcher.Scheme; s != nil && s.Recognizes(from) {
		return s.Convert(obj, from, to)
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	out["apiVersion"] = to.GroupVersion().String()
	return out, nil
}

// backToRequestVersion is what upstream's dispatchOne does to the result of
// a mutation of a built-in kind before defaulting it:
// ObjectConvertor.ConvertToVersion to the group/version of the request's
// kind. For a view in another kind (an Equivalent match) kube-apiserver's
// scheme has no conversion between two external versions and answers its
// own error (docs/fidelity.md), which is the policy's error. Custom
// resources are not converted there.
func (e *Evaluator) backToRequestVersion(obj map[string]any, kind, request schema.GroupVersionKind) (map[string]any, schema.GroupVersionKind, error) {
	s := e.cfg.Patcher.Scheme
	if obj == nil || kind == request || s == nil || !s.Recognizes(kind) {
		return obj, kind, nil
	}
	return s.ConvertToVersion(obj, kind, request.GroupVersion())
}

// matchConditions evaluates a policy's matchConditions as upstream's
// matchconditions.Matcher: one activation, one 2,500,000 budget,
// namespaceObject null. It returns why the invocation is skipped
// (NotSkipped: it is not) with the name of the first false condition, or
// the error under SkipMatchConditionsError (failurePolicy Fail) and
// SkipMatchConditionsErrorIgnored (Ignore).
func (e *Evaluator) matchConditions(ctx context.Context, inv invocation, a *matching.Attributes, in compiler.Input) (SkipReason, string, error) {
	conds := inv.hook.Compiled.MatchConditions
	if len(conds) == 0 {
		return NotSkipped, "", nil
	}
	fail := inv.hook.Policy.Spec.FailurePolicy == nil || *inv.hook.Policy.Spec.FailurePolicy == admissionregistrationv1.Fail
	in.Request = AdmissionRequest(a, a.Resource, inv.kind)
	act := inv.hook.Compiled.NewActivation(ctx, in)
	budget := int64(compiler.MatchConditionsBudget)
	results := make([]compiler.Result, len(conds))
	for i, c := range conds {
		r, remaining, err := act.Eval(c, budget)
		if err != nil {
			if fail {
				return SkipMatchConditionsError, "", err
			}
			return SkipMatchConditionsErrorIgnored, "", err
		}
		budget = remaining
		results[i] = r
	}
	var errs []error
	for i, r := range results {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
		if r.Value == celtypes.False {
			return SkipMatchConditionFalse, conds[i].Name, nil
		}
	}
	if len(errs) > 0 {
		if fail {
			return SkipMatchConditionsError, "", utilerrors.NewAggregate(errs)
		}
		return SkipMatchConditionsErrorIgnored, "", utilerrors.NewAggregate(errs)
	}
	return NotSkipped, "", nil
}

// AdmissionRequest builds the AdmissionRequest of a (without uid,
// object and oldObject) for the matched resource and kind, as upstream's
// CreateAdmissionRequest does; it is the CEL "request" variable
// (matching.Attributes.AdmissionRequest, which webhook calls share).
func AdmissionRequest(a *matching.Attributes, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) *admissionv1.AdmissionRequest {
	return a.AdmissionRequest(gvr, gvk)
}

// Admitter evaluates admission requests; *Engine, *Evaluator and the views
// of Engine.Only are Admitters.
type Admitter interface {
	Admit(ctx context.Context, a *matching.Attributes) (Result, error)
}

// Engine serves admission requests with the policy set most recently
// swapped in, over collaborators built once for the life of the process
// (New). Swapping in a new policy set is atomic: in-flight admissions
// finish with the set they started with, new ones use the new one, and
// nothing blocks.
type Engine struct {
	// mu serializes Swap and Replace; Admit only loads current.
	mu      sync.Mutex
	cfg     Config
	current atomic.Pointer[engineState]
}

// engineState is one policy set: all of it, and its policies split by
// failure policy (for webhooks registered once per failure policy).
type engineState struct {
	all, fail, ignore *Evaluator
}

// New returns an Engine over cfg, which lives as long as the Engine: its
// sources, schemas, scheme (and their per-kind plans and caches), authorizer
// and metrics serve every policy set swapped in. It holds no policy set yet:
// Admit answers 503 until the first Swap.
func New(cfg Config) *Engine {
	return &Engine{cfg: cfg.complete()}
}

// Swap installs hooks, a compiled policy set (nil or empty: no policy),
// for every admission that starts from now on. Only what belongs to the
// set is built: its candidate index.
func (e *Engine) Swap(hooks []Hook) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.install(evaluatorOver(e.cfg, hooks))
}

// Replace installs hooks together with new collaborators, for a source
// whose whole world is read again with its policies (serve's static
// files: a reload rebuilds the simulated cluster of the resources). Later
// Swaps keep cfg.
func (e *Engine) Replace(cfg Config, hooks []Hook) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cfg = cfg.complete()
	e.install(evaluatorOver(e.cfg, hooks))
}

// install makes ev and its failure-policy views current.
func (e *Engine) install(ev *Evaluator) {
	e.current.Store(&engineState{
		all:    ev,
		fail:   ev.subset(admissionregistrationv1.Fail),
		ignore: ev.subset(admissionregistrationv1.Ignore),
	})
}

// subset is the Evaluator of the hooks whose policy has failure policy fp
// (an unset failurePolicy is Fail): a view sharing e's hooks and index.
func (e *Evaluator) subset(fp admissionregistrationv1.FailurePolicyType) *Evaluator {
	sub := *e
	sub.only = fp
	return &sub
}

// Admit evaluates a with the current policy set.
// Before the first Swap, it answers 503 (the
// policies are not loaded yet), as kube-apiserver does while its policy
// sources sync.
func (e *Engine) Admit(ctx context.Context, a *matching.Attributes) (Result, error) {
	return e.admit(ctx, a, func(s *engineState) *Evaluator { return s.all })
}

// Only returns an Admitter that evaluates only the current policies whose
// failurePolicy is fp (Fail includes an unset one). A webhook registered
// once per failure policy serves each registration with one, so that no
// policy runs twice for a request both registrations match.
func (e *Engine) Only(fp admissionregistrationv1.FailurePolicyType) Admitter {
	if fp == admissionregistrationv1.Ignore {
		return admitterFunc(func(ctx context.Context, a *matching.Attributes) (Result, error) {
			return e.admit(ctx, a, func(s *engineState) *Evaluator { return s.ignore })
		})
	}
	return admitterFunc(func(ctx context.Context, a *matching.Attributes) (Result, error) {
		return e.admit(ctx, a, func(s *engineState) *Evaluator { return s.fail })
	})
}

func (e *Engine) admit(ctx context.Context, a *matching.Attributes, pick func(*engineState) *Evaluator) (Result, error) {
	s := e.current.Load()
	if s == nil {
		return Result{}, apierrors.NewServiceUnavailable("mutating admission policies are not loaded yet")
	}
	return pick(s).Admit(ctx, a)
}

type admitterFunc func(ctx context.Context, a *matching.Attributes) (Result, error)

func (f admitterFunc) Admit(ctx context.Context, a *matching.Attributes) (Result, error) {
	return f(ctx, a)
}
