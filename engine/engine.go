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
	"sync"

	celtypes "github.com/google/cel-go/common/types"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/params"
)

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
	// alwaysNormalize presents the reinvocation round's object through
	// requestObject even when it is the policies' own output (tests prove
	// passObject's shortcut never changes a result).
	alwaysNormalize bool
	// fresh makes every pass build its CEL frame and AdmissionRequests
	// anew instead of carrying the first round's into the reinvocation
	// round, and compare every invocation's object with its input (tests
	// prove carrying them, and leaving out the comparisons that cannot
	// change the reinvocation state, never changes a result).
	fresh bool
	// states recycles the reinvocation states of finished requests.
	states *sync.Pool
	// criteria are the hooks' matchConstraints and their bindings'
	// matchResources with their selectors parsed, by hook index: once per
	// policy set, not per request.
	criteria []hookCriteria
}

// hookCriteria are the prepared criteria of one hook, and its bindings'
// prepared paramRefs.
type hookCriteria struct {
	policy   *matching.Criteria
	bindings []*matching.Criteria
	// params are the bindings' paramRefs prepared, by binding index.
	params []*params.Ref
}

// newHookCriteria prepares the criteria of h; a nil policy or binding has
// none (its matching fails as Matcher.PolicyMatches' and
// PolicyBindingMatches' do).
func newHookCriteria(h *Hook) hookCriteria {
	var c hookCriteria
	if h.Policy != nil {
		c.policy = matching.NewCriteria(h.Policy.Spec.MatchConstraints)
	}
	c.bindings = make([]*matching.Criteria, len(h.Bindings))
	c.params = make([]*params.Ref, len(h.Bindings))
	for i, b := range h.Bindings {
		if b != nil {
			c.bindings[i] = matching.NewCriteria(b.Spec.MatchResources)
			c.params[i] = params.NewRef(b.Spec.ParamRef)
		}
	}
	return c
}

// policyMatches is Matcher.PolicyMatches of hook i's policy, with its
// prepared criteria.
func (e *Evaluator) policyMatches(ctx context.Context, a *matching.Attributes, i int) (matching.Result, error) {
	if c := e.criteria[i].policy; c != nil {
		return e.cfg.Matcher.CriteriaDefinitionMatches(ctx, a, c)
	}
	return e.cfg.Matcher.PolicyMatches(ctx, a, e.hooks[i].Policy)
}

// bindingMatches is Matcher.PolicyBindingMatches of binding j of hook i,
// with its prepared criteria.
func (e *Evaluator) bindingMatches(ctx context.Context, a *matching.Attributes, i, j int) (bool, error) {
	if c := e.criteria[i].bindings[j]; c != nil {
		return e.cfg.Matcher.CriteriaBindingMatches(ctx, a, c)
	}
	return e.cfg.Matcher.PolicyBindingMatches(ctx, a, e.hooks[i].Bindings[j])
}

// NewEvaluator returns an Evaluator over hooks. It is safe for concurrent
// use. Only what belongs to the policy set is built: its candidate index
// and the hooks' criteria with their selectors parsed (a changed policy or
// binding is a new policy set: the Evaluator does not follow changes made
// to hooks' objects after it is built).
// Where policy sets follow each other over the same collaborators (serve),
// webhook.Engine swaps their Evaluators.
func NewEvaluator(cfg Config, hooks []Hook) *Evaluator {
	cfg = cfg.complete()
	ix := matching.NewIndex[int](cfg.Matcher.Table())
	criteria := make([]hookCriteria, len(hooks))
	for i := range hooks {
		ix.Add(matching.SelectorForPolicy(hooks[i].Policy), i)
		criteria[i] = newHookCriteria(&hooks[i])
	}
	return &Evaluator{cfg: cfg, hooks: hooks, index: ix, states: &sync.Pool{}, criteria: criteria}
}

// appendCandidates appends to out the indexes of the hooks that may match
// a, in order.
func (e *Evaluator) appendCandidates(out []int, a *matching.Attributes) []int {
	if e.bruteForce {
		for i := range e.hooks {
			out = append(out, i)
		}
		return out
	}
	e.index.Lookup(a.Operation, a.Resource, func(i int) bool {
		out = append(out, i)
		return true
	})
	return out
}

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

// Name is the plugin's name in kube-apiserver: the Evaluator is the
// MutatingAdmissionPolicy stage of an admission chain.
func (e *Evaluator) Name() string { return PluginName }

// PluginName is the name of kube-apiserver's MutatingAdmissionPolicy
// plugin.
const PluginName = "MutatingAdmissionPolicy"

// Admit runs one round of the MutatingAdmissionPolicy plugin for a, whose
// Object is the object as the stages before it left it (chain.Stage).
// MutatingAdmissionPolicies handle CREATE, UPDATE and CONNECT; other
// operations and exempt resources pass unchanged. The plugin's state
// across rounds is its own, in rc (reinvocation.go): in the reinvocation
// round only the invocations to reinvoke run, and all of them that ran
// with reinvocationPolicy IfNeeded when the object changed since the
// policies last ran (IsOutputChangedSinceLastPolicyInvocation: the other
// stages changed it). A policy that changed the object asks for the
// reinvocation round (rc.SetShouldReinvoke, Outcome.Reinvoke). Denials
// are in Outcome.Denied; the returned error is for failures of the
// evaluator itself (and a request whose object does not decode).
//
// The MAP plugin alone inside kube-apiserver's reinvoker (what `serve`
// answers, kube-apiserver owning the rest of the chain) is
// a chain.Runner's Run(ctx, a, e).
func (e *Evaluator) Admit(ctx context.Context, a *matching.Attributes, rc *chain.Context) (out chain.Outcome, err error) {
	defer recoverDenial(&out)
	if out.Object, err = e.passObject(a, rc); err != nil {
		return out, err
	}
	// The hooks that may match, looked up once for the pass (handles and
	// collect ask the same index the same question), into room on the
	// stack for a policy set's usual number of candidates (the 20 policies
	// of test/load all name Pods).
	var buf [32]int
	cands := buf[:0]
	if e.handlesOperation(a) {
		cands = e.appendCandidates(cands, a)
	}
	if len(cands) == 0 {
		return out, nil
	}
	st := stateOf(rc, e)
	st.changed, st.rc = false, rc
	pass := 1
	if rc.IsReinvoke() {
		pass = 2
	}
	// The pass's records, about one a candidate, written in the run's
	// array; the first pass makes room for the reinvocation round's too
	// when a candidate may be reinvoked.
	extra := 0
	if pass == 1 && e.anyReinvocable(cands) {
		extra = len(cands)
	}
	out.Invocations = rc.InvocationRoom(len(cands), extra)
	out.Object, out.Denied = e.dispatch(ctx, a, out.Object, cands, pass, st, &out)
	if st.changed {
		rc.SetShouldReinvoke()
		out.Reinvoke = true
	}
	if pass == 2 || !st.changed || out.Denied != nil {
		// No reinvocation round of the policies to share the frame with
		// (another stage's may still come: it makes its own).
		st.dropFrame()
	}
	return out, nil
}

// anyReinvocable tells whether a hook among cands has reinvocationPolicy
// IfNeeded.
func (e *Evaluator) anyReinvocable(cands []int) bool {
	for _, i := range cands {
		if e.hooks[i].Policy.Spec.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
			return true
		}
	}
	return false
}

// recoverDenial turns a panic outside a mutation (mutations recover their
// own, under the failure policy) into a failure of the request instead of
// the process.
func recoverDenial(res *chain.Outcome) {
	if r := recover(); r != nil {
		res.Denied = apierrors.NewInternalError(fmt.Errorf("panic evaluating MutatingAdmissionPolicies: %v", r))
	}
}

// handlesOperation tells whether a's operation and resource are ones the
// policies can apply to: CREATE, UPDATE and CONNECT of resources that are
// not exempt. With the candidates (appendCandidates) it tells whether any
// policy can apply to a; both depend on the operation and resource only,
// so that a request no policy names costs the index lookup and the
// presentation of its object, which allocates nothing for an object
// already in its Go type's form.
func (e *Evaluator) handlesOperation(a *matching.Attributes) bool {
	switch a.Operation {
	case admission.Create, admission.Update, admission.Connect:
		return !matching.PolicyExempt(a)
	}
	return false
}

// passObject is the object of a as this pass presents it to the policies:
// requestObject, or in the reinvocation round the object the policies
// themselves left in the first (the state's lastOutput, already in the
// form requestObject gives, of which it is a fixed point:
// TestReinvocationObjectNormalized), when the stages after them left it
// unchanged.
func (e *Evaluator) passObject(a *matching.Attributes, rc *chain.Context) (map[string]any, error) {
	if rc.IsReinvoke() && a.Object != nil && !e.alwaysNormalize {
		if st, ok := rc.Value(e).(*reinvocation); ok && st.hasRun && st.lastOutput != nil && jsonvalue.SameMap(a.Object.Object, st.lastOutput) {
			return st.lastOutput, nil
		}
	}
	return e.requestObject(a)
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

type invocation struct {
	hook     *Hook
	binding  *admissionregistrationv1.MutatingAdmissionPolicyBinding
	param    params.Param
	resource schema.GroupVersionResource
	kind     schema.GroupVersionKind
}

// dispatch is one pass of the MAP plugin (generic Dispatch + mutating
// dispatchInvocations).
// cands are the hooks that may match a (appendCandidates).
func (e *Evaluator) dispatch(ctx context.Context, a *matching.Attributes, object map[string]any, cands []int, pass int, st *reinvocation, res *chain.Outcome) (map[string]any, *apierrors.StatusError) {
	cur := *a
	if object != nil && (a.Object == nil || !jsonvalue.SameMap(a.Object.Object, object)) {
		cur.Object = &unstructured.Unstructured{Object: object}
	}
	var views viewSet
	// The invocations of a pass go into the request state's room, which
	// the state keeps when it is recycled (reinvocation.Release).
	invocations, errs := e.collect(ctx, &cur, cands, st.invocations[:0], pass, res, &views)
	defer func() { st.invocations = invocations }()

	if len(invocations) > 0 {
		var statusErr *apierrors.StatusError
		var more []policyError
		object, more, statusErr = e.invoke(ctx, &cur, object, invocations, pass, st, res, &views)
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
// They are appended to invocations.
func (e *Evaluator) collect(ctx context.Context, cur *matching.Attributes, cands []int, invocations []invocation, pass int, res *chain.Outcome, views *viewSet) ([]invocation, []policyError) {
	var errs []policyError
	invocations = slices.Grow(invocations, len(cands))
	for _, i := range cands {
		h := &e.hooks[i]
		m, err := e.policyMatches(ctx, cur, i)
		if err != nil {
			errs = append(errs, policyError{policy: h.Policy, err: fmt.Errorf("failed to configure policy: %w", err)})
			res.Invocations = append(res.Invocations, chain.Invocation{Record: chain.Record{Configuration: h.Policy.Name, Round: pass - 1, Skip: chain.SkipPolicyConfigError, Err: err}})
			continue
		}
		if !m.Matches {
			res.Invocations = append(res.Invocations, chain.Invocation{Record: chain.Record{Configuration: h.Policy.Name, Round: pass - 1, Skip: chain.SkipPolicyNotSelected}})
			continue
		}
		if skip, err := e.cfg.Params.CheckKind(h.Policy.Spec.ParamKind); skip {
			res.Invocations = append(res.Invocations, chain.Invocation{Record: chain.Record{Configuration: h.Policy.Name, Round: pass - 1, Skip: chain.SkipParamKindInactive, Err: err}})
			continue
		} else if err != nil {
			errs = append(errs, policyError{policy: h.Policy, err: fmt.Errorf("failed to configure policy: %w", err)})
			res.Invocations = append(res.Invocations, chain.Invocation{Record: chain.Record{Configuration: h.Policy.Name, Round: pass - 1, Skip: chain.SkipPolicyConfigError, Err: err}})
			continue
		}
		for j, b := range h.Bindings {
			ok, err := e.bindingMatches(ctx, cur, i, j)
			if err != nil {
				errs = append(errs, policyError{policy: h.Policy, binding: b.Name, err: fmt.Errorf("failed to configure binding: %w", err)})
				res.Invocations = append(res.Invocations, chain.Invocation{Record: chain.Record{Configuration: h.Policy.Name, Hook: b.Name, Round: pass - 1, Skip: chain.SkipBindingConfigError, Err: err}})
				continue
			}
			if !ok {
				res.Invocations = append(res.Invocations, chain.Invocation{Record: chain.Record{Configuration: h.Policy.Name, Hook: b.Name, Round: pass - 1, Skip: chain.SkipBindingNotSelected}})
				continue
			}
			// Upstream converts the request's objects to the matched kind
			// here, once per kind and pass (generic Dispatch:
			// versionedAttrAccessor.VersionedAttribute(matchGVK)), before
			// any mutation: every view starts from the pass's object.
			if err := e.view(cur, m.Kind, views); err != nil {
				errs = append(errs, policyError{policy: h.Policy, err: fmt.Errorf("failed to configure policy: %w", err)})
				res.Invocations = append(res.Invocations, chain.Invocation{Record: chain.Record{Configuration: h.Policy.Name, Hook: b.Name, Round: pass - 1, Skip: chain.SkipConversion, Err: err}})
				continue
			}
			if !params.Bound(h.Policy.Spec.ParamKind, b.Spec.ParamRef) {
				// Collect's answer, without a slice per request: params null.
				invocations = append(invocations, invocation{hook: h, binding: b, resource: m.Resource, kind: m.Kind})
				continue
			}
			ps, err := e.cfg.Params.CollectRef(ctx, h.Policy.Spec.ParamKind, e.criteria[i].params[j], cur.Namespace)
			if err != nil {
				errs = append(errs, policyError{policy: h.Policy, binding: b.Name, err: fmt.Errorf("failed to configure binding: %w", err)})
				res.Invocations = append(res.Invocations, chain.Invocation{Record: chain.Record{Configuration: h.Policy.Name, Hook: b.Name, Round: pass - 1, Skip: chain.SkipParams, Err: err}})
				continue
			}
			if len(ps) == 0 {
				res.Invocations = append(res.Invocations, chain.Invocation{Record: chain.Record{Configuration: h.Policy.Name, Hook: b.Name, Round: pass - 1, Skip: chain.SkipNoParams}})
			}
			// One invocation per param: room for them at once, not by
			// doubling (a selector's params are many invocations).
			invocations = slices.Grow(invocations, len(ps))
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
func (e *Evaluator) deny(a *matching.Attributes, errs []policyError, pass int, res *chain.Outcome) *apierrors.StatusError {
	var failing []policyError
	for _, pe := range errs {
		if fp := pe.policy.Spec.FailurePolicy; fp != nil && *fp == admissionregistrationv1.Ignore {
			res.Ignored = append(res.Ignored, chain.IgnoredError{
				Record:   chain.Record{Configuration: pe.policy.Name, Hook: pe.binding, Round: pass - 1, Err: pe.err},
				Mutation: pe.mutation - 1, Message: pe.message(),
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

// invoke runs matched invocations in order (dispatchInvocations). Each
// invocation sees and mutates the view of its matched kind; at the end, the
// view of the last invocation that ran mutations becomes the request's
// object if a mutation changed it, as upstream converts
// lastVersionedAttr's object into the request's. (With every invocation
// matched in the request's kind, that is the object threaded through all
// of them.)
func (e *Evaluator) invoke(ctx context.Context, a *matching.Attributes, object map[string]any, invs []invocation, pass int, st *reinvocation, res *chain.Outcome, views *viewSet) (out map[string]any, _ []policyError, _ *apierrors.StatusError) {
	if pass == 2 && (!st.hasRun || !jsonvalue.SemanticEqual(st.lastOutput, object)) {
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
	// The request's admission.Attributes (what the CEL authorizer
	// variables are bound with), built when an expression first reads
	// them (lazyAttributes): a pass whose expressions do not use the
	// authorizer builds none. Under fresh, built before the first
	// invocation that needs them (their matchConditions or their
	// mutations), as a record of their own.
	var attrs func() admission.Attributes
	if e.fresh {
		var admissionAttrs admission.Attributes
		attrs = func() admission.Attributes {
			if admissionAttrs == nil {
				admissionAttrs = a.AdmissionAttributes()
			}
			return admissionAttrs
		}
	} else {
		st.attrs = lazyAttributes{attrs: *a}
		attrs = func() admission.Attributes { return &st.attrs }
	}
	var last *versionedView
	res.Invocations = slices.Grow(res.Invocations, len(invs))
	if e.fresh {
		st.dropFrame()
		st.hasRequests = false
	}
	// The requests of the first pass serve the reinvocation round too
	// (requestsFor).
	requests := st.requestsFor(a)
	// The CEL evaluations of this pass share one execution frame, made
	// before the first of them (a reinvocation round that evaluates
	// nothing makes none), or the one the first pass made (frameUnder);
	// released when the chain's run is over, or at the end of Admit when
	// no reinvocation round of the policies follows.
	framed := false
	frame := func() {
		if !framed {
			ctx, framed = st.frameUnder(ctx), true
		}
	}
	// The outcomes of every invocation's mutations, in one array: each
	// invocation's trace takes its mutations' share (appending at most one
	// outcome per mutation, within its capacity), made when the first
	// invocation gets to its mutations.
	var outcomes []chain.MutationOutcome
	for k, inv := range invs {
		key := invocationKey{policy: inv.hook.Policy.Name, binding: inv.binding.Name}
		if inv.param.Object != nil {
			key.param = st.paramKey(inv.param.Namespace, inv.param.Name)
		}
		trace := chain.Invocation{Record: chain.Record{Configuration: key.policy, Hook: key.binding, Round: pass - 1}, Param: key.param}
		// The policy sees the objects in the kind its rules matched
		// (matchPolicy Equivalent), as kube-apiserver converts them.
		view := views.get(inv.kind)
		if view == nil {
			return object, nil, apierrors.NewInternalError(fmt.Errorf("no versioned attributes for %s", inv.kind))
		}
		in := compiler.Input{
			Object: view.object, OldObject: view.oldObject, Params: inv.param.Object,
			Authorizer: e.cfg.Authorizer,
		}
		if len(inv.hook.Compiled.MatchConditions) > 0 {
			in.Attributes = attrs()
			frame()
		}
		if matched, condition, err := e.matchConditions(ctx, inv, a, in, requests); matched != chain.NotSkipped {
			trace.Skip, trace.Condition, trace.Err = matched, condition, err
			if err != nil {
				// Under failurePolicy Ignore, deny drops it (Result.Ignored).
				errs = append(errs, policyError{policy: inv.hook.Policy, binding: inv.binding.Name, err: err, reason: metav1.StatusReasonInvalid})
			}
			res.Invocations = append(res.Invocations, trace)
			continue
		}
		if pass == 2 && !st.reinvoke[key] {
			trace.Skip = chain.SkipNotReinvoked
			res.Invocations = append(res.Invocations, trace)
			continue
		}
		before := view.object
		// Invocations matched through the same resource and kind see the
		// same request (read-only): built once.
		in.Request = requests.get(a, inv.resource, inv.kind)
		in.Attributes = attrs()
		in.Namespace = namespace
		frame()
		if n := len(inv.hook.Compiled.Mutations); n > 0 {
			if outcomes == nil {
				outcomes = st.rc.MutationRoom(mutationCount(invs[k:]))
			}
			trace.Mutations, outcomes = outcomes[:0:n], outcomes[n:]
		}
		for i, m := range inv.hook.Compiled.Mutations {
			last = view
			if view.object == nil {
				continue
			}
			in.Object = view.object
			out, outcome, err := st.cache.Mutate(ctx, e.cfg.Patcher, inv.hook.Compiled, m, in, view.objectKind)
			outKind := view.objectKind
			if err == nil {
				out, outKind, err = e.backToRequestVersion(out, view.objectKind, a.Kind, a.Resource)
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
		// Whether the invocation changed the object matters only when a
		// change would change the state: none can once the pass changed
		// the object and no reinvocable invocation is waiting for the next
		// change (requireReinvokingPrevious has nothing to mark), so the
		// comparison is left out then (not under fresh, the reference).
		if (e.fresh || !st.changed || len(st.previous) > 0) && !jsonvalue.SemanticEqual(before, view.object) {
			st.requireReinvokingPrevious()
			st.changed = true
		}
		if inv.hook.Policy.Spec.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
			st.addPrevious(key)
		}
	}
	if last != nil && last.object != nil && last.dirty {
		// Upstream marks the object dirty after any successful mutation,
		// even one that changed nothing.
		st.requireReinvokingPrevious()
		st.changed = true
		out, err := e.cfg.Patcher.Scheme.ConvertToGVK(last.object, last.objectKind, a.Kind)
		if err != nil {
			return object, nil, apierrors.NewInternalError(fmt.Errorf("failed to convert object: %w", err))
		}
		object = out
	}
	return object, errs, nil
}

// mutationCount is the number of mutations of invs' policies.
func mutationCount(invs []invocation) int {
	n := 0
	for _, inv := range invs {
		n += len(inv.hook.Compiled.Mutations)
	}
	return n
}

// matchConditions evaluates a policy's matchConditions as upstream's
// matchconditions.Matcher: one activation, one 2,500,000 budget,
// namespaceObject null. It returns why the invocation is skipped
// (chain.NotSkipped: it is not) with the name of the first false condition, or
// the error under chain.SkipMatchConditionsError (failurePolicy Fail) and
// chain.SkipMatchConditionsErrorIgnored (Ignore). requests holds the
// requests the pass's invocations saw (read-only): invocations matched in
// the same kind see the same one, built once.
func (e *Evaluator) matchConditions(ctx context.Context, inv invocation, a *matching.Attributes, in compiler.Input, requests *requestSet) (chain.Skip, string, error) {
	conds := inv.hook.Compiled.MatchConditions
	if len(conds) == 0 {
		return chain.NotSkipped, "", nil
	}
	fail := inv.hook.Policy.Spec.FailurePolicy == nil || *inv.hook.Policy.Spec.FailurePolicy == admissionregistrationv1.Fail
	in.Request = requests.get(a, a.Resource, inv.kind)
	act := inv.hook.Compiled.NewActivation(ctx, in)
	// The results are bools and errors: nothing holds the activation after.
	defer act.Release()
	budget := int64(compiler.MatchConditionsBudget)
	// A policy has a few conditions (at most 64): their results fit a
	// buffer on the stack.
	var buf [8]compiler.Result
	results := buf[:0]
	if len(conds) > len(buf) {
		results = make([]compiler.Result, 0, len(conds))
	}
	results = results[:len(conds)]
	for i, c := range conds {
		r, remaining, err := act.Eval(c, budget)
		if err != nil {
			if fail {
				return chain.SkipMatchConditionsError, "", err
			}
			return chain.SkipMatchConditionsErrorIgnored, "", err
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
			return chain.SkipMatchConditionFalse, conds[i].Name, nil
		}
	}
	if len(errs) > 0 {
		if fail {
			return chain.SkipMatchConditionsError, "", utilerrors.NewAggregate(errs)
		}
		return chain.SkipMatchConditionsErrorIgnored, "", utilerrors.NewAggregate(errs)
	}
	return chain.NotSkipped, "", nil
}

// requestSet is the AdmissionRequests a pass built (the CEL "request" of
// its matchConditions and mutations), by resource and kind: they depend on
// nothing else of the pass (Attributes.AdmissionRequest), and are read
// only. A pass matches in one resource and kind but for Equivalent
// matches: two have room, the oldest is replaced.
type requestSet struct {
	built [2]*admissionv1.AdmissionRequest
	next  int
}

// get is a's AdmissionRequest for gvr and gvk, built unless s has it.
func (s *requestSet) get(a *matching.Attributes, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) *admissionv1.AdmissionRequest {
	for _, r := range s.built {
		if r != nil && r.Resource == metav1.GroupVersionResource(gvr) && r.Kind == metav1.GroupVersionKind(gvk) {
			return r
		}
	}
	r := a.AdmissionRequest(gvr, gvk)
	s.built[s.next] = r
	s.next = (s.next + 1) % len(s.built)
	return r
}

// lazyAttributes is the admission.Attributes of a pass
// (matching.Attributes.AdmissionAttributes of attrs), built on the first
// call of one of its methods: the compiler binds the authorizer variables
// with them when an expression first reads one (compiler.Input.Attributes).
// It lives in the request's state (reinvocation.attrs), reset at each
// pass.
type lazyAttributes struct {
	attrs matching.Attributes
	built admission.Attributes
}

var _ admission.Attributes = (*lazyAttributes)(nil)

// record is the admission.Attributes, built on first use.
func (l *lazyAttributes) record() admission.Attributes {
	if l.built == nil {
		l.built = l.attrs.AdmissionAttributes()
	}
	return l.built
}

// GetName implements admission.Attributes.
func (l *lazyAttributes) GetName() string { return l.record().GetName() }

// GetNamespace implements admission.Attributes.
func (l *lazyAttributes) GetNamespace() string { return l.record().GetNamespace() }

// GetResource implements admission.Attributes.
func (l *lazyAttributes) GetResource() schema.GroupVersionResource {
	return l.record().GetResource()
}

// GetSubresource implements admission.Attributes.
func (l *lazyAttributes) GetSubresource() string { return l.record().GetSubresource() }

// GetOperation implements admission.Attributes.
func (l *lazyAttributes) GetOperation() admission.Operation { return l.record().GetOperation() }

// GetOperationOptions implements admission.Attributes.
func (l *lazyAttributes) GetOperationOptions() runtime.Object {
	return l.record().GetOperationOptions()
}

// IsDryRun implements admission.Attributes.
func (l *lazyAttributes) IsDryRun() bool { return l.record().IsDryRun() }

// GetObject implements admission.Attributes.
func (l *lazyAttributes) GetObject() runtime.Object { return l.record().GetObject() }

// GetOldObject implements admission.Attributes.
func (l *lazyAttributes) GetOldObject() runtime.Object { return l.record().GetOldObject() }

// GetKind implements admission.Attributes.
func (l *lazyAttributes) GetKind() schema.GroupVersionKind { return l.record().GetKind() }

// GetUserInfo implements admission.Attributes.
func (l *lazyAttributes) GetUserInfo() user.Info { return l.record().GetUserInfo() }

// AddAnnotation implements admission.Attributes.
func (l *lazyAttributes) AddAnnotation(key, value string) error {
	return l.record().AddAnnotation(key, value)
}

// AddAnnotationWithLevel implements admission.Attributes.
func (l *lazyAttributes) AddAnnotationWithLevel(key, value string, level auditinternal.Level) error {
	return l.record().AddAnnotationWithLevel(key, value, level)
}

// GetReinvocationContext implements admission.Attributes.
func (l *lazyAttributes) GetReinvocationContext() admission.ReinvocationContext {
	return l.record().GetReinvocationContext()
}
