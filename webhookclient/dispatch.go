package webhookclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"time"

	evanphx "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/rest"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme"
)

// Options are what a Dispatcher needs besides its configurations.
type Options struct {
	// Matcher matches webhooks against requests (namespaces, the table of
	// resources and their equivalents). Required.
	Matcher *matching.Matcher
	// Scheme converts, decodes and defaults objects as kube-apiserver
	// does. Required.
	Scheme *scheme.Scheme
	// Authorizer backs the authorizer variable of matchConditions; nil
	// makes expressions that use it fail (under the failurePolicy).
	Authorizer authorizer.Authorizer
	// ServiceURLs maps clientConfig.service to reachable addresses.
	ServiceURLs ServiceURLs
	// MaxResponseBytes bounds a webhook's answer; 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Metrics, when set, records kube-apiserver's webhook metrics.
	Metrics *Metrics
	// Previous, when set, is the Dispatcher this one replaces: the HTTP
	// clients of the configurations whose generation did not change are
	// taken over (with their connections and TLS sessions).
	Previous *Dispatcher
}

// hook is one webhook of one configuration, in dispatch order.
type hook struct {
	// uid is kube-apiserver's identity of the webhook for reinvocation:
	// configuration/webhook/occurrence of the name.
	uid           string
	configuration string
	webhook       *admissionregistrationv1.MutatingWebhook
	matcher       matchconditions.Matcher
	clients       *clients
}

// Dispatcher runs the MutatingAdmissionWebhook plugin's pass over a set
// of MutatingWebhookConfigurations. It is safe for concurrent use; build
// a new one (with Options.Previous) when the configurations change.
type Dispatcher struct {
	hooks   []hook
	opts    Options
	clients map[string]*clients
	// typ is the plugin's type in metrics: "admit".
	typ string
}

// NewDispatcher builds the dispatcher of configs (validated, as Load
// returns them): configurations in name order, webhooks in list order,
// each webhook's matchConditions compiled in kube-apiserver's webhook CEL
// environment (object, oldObject, request, authorizer; no params,
// namespaceObject or variables).
func NewDispatcher(configs []*admissionregistrationv1.MutatingWebhookConfiguration, opts Options) (*Dispatcher, error) {
	list := make([]configuration, len(configs))
	for i, c := range configs {
		list[i] = configuration{name: c.Name, generation: generationOf(c.UID, c.Generation, c.Webhooks)}
		for j := range c.Webhooks {
			list[i].webhooks = append(list[i].webhooks, c.Webhooks[j].DeepCopy())
		}
	}
	return newDispatcher(list, opts, opts.Previous, "admit")
}

// configuration is a webhook configuration of either kind as a
// dispatcher takes it: its webhooks as MutatingWebhooks (a
// ValidatingWebhook's fields are a MutatingWebhook's but
// reinvocationPolicy).
type configuration struct {
	name, generation string
	webhooks         []*admissionregistrationv1.MutatingWebhook
}

// newDispatcher builds the dispatcher of configs, taking over previous's
// HTTP clients; typ is the plugin's type ("admit", "validating") in
// metrics.
func newDispatcher(configs []configuration, opts Options, previous *Dispatcher, typ string) (*Dispatcher, error) {
	if opts.Matcher == nil || opts.Scheme == nil {
		return nil, errors.New("webhookclient: Options.Matcher and Options.Scheme are required")
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	codec, err := reviewCodec()
	if err != nil {
		return nil, err
	}
	sorted := append([]configuration(nil), configs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	compiler := plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	d := &Dispatcher{opts: opts, clients: map[string]*clients{}, typ: typ}
	for _, c := range sorted {
		cl := (*clients)(nil)
		if previous != nil {
			if old, ok := previous.clients[c.name]; ok && old.generation == c.generation {
				cl = old
			}
		}
		if cl == nil {
			cl = &clients{generation: c.generation, services: opts.ServiceURLs, maxBytes: opts.MaxResponseBytes, codec: codec, byConfig: map[string]*rest.RESTClient{}}
		}
		d.clients[c.name] = cl
		names := map[string]int{}
		for _, w := range c.webhooks {
			h := hook{uid: fmt.Sprintf("%s/%s/%d", c.name, w.Name, names[w.Name]), configuration: c.name, webhook: w, clients: cl}
			names[w.Name]++
			if len(w.MatchConditions) > 0 {
				exprs := make([]plugincel.ExpressionAccessor, len(w.MatchConditions))
				for j := range w.MatchConditions {
					exprs[j] = (*matchconditions.MatchCondition)(&w.MatchConditions[j])
				}
				h.matcher = matchconditions.NewMatcher(compiler.CompileCondition(exprs,
					plugincel.OptionalVariableDeclarations{HasParams: false, HasAuthorizer: true},
					environment.StoredExpressions), w.FailurePolicy, "webhook", typ, w.Name)
			}
			d.hooks = append(d.hooks, h)
		}
	}
	return d, nil
}

// Close drops the idle connections of the clients this dispatcher does
// not share with a successor. Call it on the Dispatcher a new one
// replaced, after building the new one.
func (d *Dispatcher) Close(successor *Dispatcher) {
	for name, c := range d.clients {
		if successor != nil && successor.clients[name] == c {
			continue
		}
		c.close()
	}
}

// reinvocation is the MutatingAdmissionWebhook plugin's state across the
// rounds of one request (kube-apiserver's webhookReinvokeContext), kept in
// the request's chain.Context under the Dispatcher.
type reinvocation struct {
	hasLastOutput     bool
	lastOutput        map[string]any
	previouslyInvoked map[string]bool
	reinvokeWebhooks  map[string]bool
}

func (s *reinvocation) requireReinvokingPreviouslyInvoked() {
	if len(s.previouslyInvoked) == 0 {
		return
	}
	if s.reinvokeWebhooks == nil {
		s.reinvokeWebhooks = map[string]bool{}
	}
	maps.Copy(s.reinvokeWebhooks, s.previouslyInvoked)
	s.previouslyInvoked = map[string]bool{}
}

// refused records call in out as refused by err, which it returns.
func refused(out *chain.Outcome, call chain.Call, err error) error {
	call.Outcome, call.Err = chain.Refused, err
	out.Calls = append(out.Calls, call)
	return err
}

// skipped records call in out as skipped for reason.
func skipped(out *chain.Outcome, call chain.Call, reason chain.Skip) {
	call.Skip = reason
	out.Calls = append(out.Calls, call)
}

// result is one round of the plugin: the stage's outcome, and whether a
// webhook changed the object.
type result struct {
	chain.Outcome
	// Changed reports whether any webhook changed the object in this
	// round.
	Changed bool
}

// versioned is upstream's versionedAttributeAccessor: the request's
// objects as the last matched webhook saw them, converted on demand.
type versioned struct {
	set         bool
	kind        schema.GroupVersionKind
	object, old map[string]any
	dirty       bool
	// objectKind is the kind of object when a webhook's patch changed its
	// apiVersion or kind (upstream's VersionedObject is then of another
	// Go type than VersionedKind); zero otherwise.
	objectKind schema.GroupVersionKind
}

// kindChanged reports whether a webhook's patch gave the object another
// apiVersion or kind than the one it is presented in.
func (v *versioned) kindChanged() bool {
	return !v.objectKind.Empty() && v.objectKind != v.kind
}

// crossKindError is kube-apiserver's answer when the object a webhook's
// patch turned into another kind cannot be converted back into the
// request's internal object: the dispatcher returns the scheme's error as
// it is, which the API server's handler answers as a 500 of reason
// Unknown with the error's text (responsewriters.ErrorToAPIStatus).
func crossKindError(err error) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonUnknown, Message: err.Error()}}
}

// PluginName is the name of kube-apiserver's MutatingAdmissionWebhook
// plugin.
const PluginName = "MutatingAdmissionWebhook"

// Name is the plugin's name in kube-apiserver: the Dispatcher is the
// MutatingAdmissionWebhook stage of an admission chain.
func (d *Dispatcher) Name() string { return PluginName }

// Admit runs one round of the MutatingAdmissionWebhook plugin for the
// request a (its Object, in a.Kind, is the object as the earlier stages
// left it): every webhook in order, kube-apiserver's matching,
// matchConditions, dry-run and reinvocation rules, the call, the checks
// of the answer and its patch, defaulting after each patch (chain.Stage).
// The plugin's state across rounds is its own, in rc; a webhook that
// changed the object asks for the reinvocation round
// (rc.SetShouldReinvoke).
//
// Outcome.Denied is kube-apiserver's refusal of the request (with its
// message and code); the Outcome holds what happened up to it. The error
// is for failures of mutatis itself.
func (d *Dispatcher) Admit(ctx context.Context, a *matching.Attributes, rc *chain.Context) (chain.Outcome, error) {
	st, ok := rc.Value(d).(*reinvocation)
	if !ok {
		st = &reinvocation{}
		rc.SetValue(d, st)
	}
	res, err := d.pass(ctx, a, st, rc.IsReinvoke())
	if res.Changed {
		rc.SetShouldReinvoke()
	}
	if err != nil {
		var status *apierrors.StatusError
		if !errors.As(err, &status) {
			return res.Outcome, fmt.Errorf("%s: %w", PluginName, err)
		}
		res.Denied = status
	}
	return res.Outcome, nil
}

// pass is one round of the plugin (the reinvocation round when reinvoke
// is set) with the state st (nil: a new one). The error, when not nil,
// is kube-apiserver's refusal of the request (an *apierrors.StatusError),
// or a failure of mutatis.
func (d *Dispatcher) pass(ctx context.Context, a *matching.Attributes, state *reinvocation, reinvoke bool) (res *result, err error) {
	res = &result{}
	res.AuditAnnotations = map[string]string{}
	defer func() {
		// kube-apiserver's handler turns a panic into a 500 of the request.
		if r := recover(); r != nil {
			err = apierrors.NewInternalError(fmt.Errorf("panic while calling mutating webhooks: %v", r))
		}
	}()
	if a.Object != nil {
		res.Object = a.Object.Object
	}
	if state == nil {
		state = &reinvocation{}
	}
	round := 0
	if reinvoke {
		round = 1
	}
	if matching.WebhookExempt(a) {
		for i, h := range d.hooks {
			res.Calls = append(res.Calls, chain.Call{Record: chain.Record{Configuration: h.configuration, Hook: h.webhook.Name, Round: round, Skip: chain.SkipExempt}, Index: i})
		}
		return res, nil
	}
	if reinvoke && !jsonvalue.SemanticEqual(state.lastOutput, res.Object) {
		// The in-tree plugins changed the object since the webhooks last
		// ran: every reinvocable webhook that ran runs again.
		state.requireReinvokingPreviouslyInvoked()
	}
	v := &versioned{}
	err = d.dispatch(ctx, a, state, round, v, res)
	if err == nil && v.set && v.object != nil && v.dirty {
		if v.kindChanged() {
			// Convert of the versioned object into the request's internal one.
			if res.Object, err = d.opts.Scheme.ConvertAcrossKinds(v.object, v.objectKind, a.Kind); err != nil {
				err = crossKindError(err)
			}
		} else if res.Object, err = d.opts.Scheme.ConvertToGVK(v.object, v.kind, a.Kind); err != nil {
			err = apierrors.NewInternalError(err)
		}
	}
	if err == nil {
		state.lastOutput = res.Object
	} else if a.Object != nil {
		state.lastOutput = a.Object.Object
	} else {
		state.lastOutput = nil
	}
	return res, err
}

func (d *Dispatcher) dispatch(ctx context.Context, a *matching.Attributes, state *reinvocation, round int, v *versioned, res *result) error {
	for i := range d.hooks {
		h := &d.hooks[i]
		w := h.webhook
		call := chain.Call{Record: chain.Record{Configuration: h.configuration, Hook: w.Name, Round: round}, Index: i,
			Reinvocable: w.ReinvocationPolicy != nil && *w.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy}
		inv, skip, err := d.shouldCall(ctx, h, a, v, &call)
		if err != nil {
			return refused(&res.Outcome, call, err)
		}
		if inv == nil {
			skipped(&res.Outcome, call, skip)
			continue
		}
		call.Resource, call.Kind = inv.resource, inv.kind
		if round == 1 && !state.reinvokeWebhooks[h.uid] {
			skipped(&res.Outcome, call, chain.SkipNotReinvoked)
			continue
		}
		if err := d.versionedFor(a, v, inv.kind); err != nil {
			return refused(&res.Outcome, call, err)
		}
		inv.object, inv.old = v.object, v.old

		start := time.Now()
		changed, err := d.call(ctx, h, inv, v, &call, res)
		elapsed := time.Since(start)
		ignore := w.FailurePolicy != nil && *w.FailurePolicy == admissionregistrationv1.Ignore
		var ce *callError
		errors.As(err, &ce)
		d.opts.Metrics.observeCall(d.typ, w.Name, string(a.Operation), elapsed, err, ignore, call.Outcome == chain.Denied)
		if changed {
			// Every reinvocable webhook that ran before this change runs
			// again, and the chain runs a reinvocation round.
			state.requireReinvokingPreviouslyInvoked()
			res.Changed = true
		}
		if call.Reinvocable {
			if state.previouslyInvoked == nil {
				state.previouslyInvoked = map[string]bool{}
			}
			state.previouslyInvoked[h.uid] = true
		}
		if err == nil {
			call.Outcome = chain.Admitted
			res.Calls = append(res.Calls, call)
			continue
		}
		call.Err = err
		if ce != nil {
			if ignore {
				call.Outcome = chain.FailedOpen
				res.Calls = append(res.Calls, call)
				if !errors.Is(ce.reason, context.Canceled) {
					d.opts.Metrics.observeFailOpen(d.typ, w.Name)
					res.AuditAnnotations[fmt.Sprintf("failed-open.mutation.webhook.admission.k8s.io/round_%d_index_%d", call.Round, i)] = w.Name
				}
				if ctx.Err() != nil {
					// The request's own deadline passed: no point going on.
					return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
				}
				continue
			}
			call.Outcome = chain.FailedClosed
			res.Calls = append(res.Calls, call)
			return apierrors.NewInternalError(ce)
		}
		if call.Outcome != chain.Denied {
			call.Outcome = chain.Refused
		}
		res.Calls = append(res.Calls, call)
		return err
	}
	return nil
}

// shouldCall is kube-apiserver's ShouldCallHook: selectors and rules
// (matching.Matcher), then matchConditions on the request seen in the
// webhook's kind. A nil invocation with no error means skip.
func (d *Dispatcher) shouldCall(ctx context.Context, h *hook, a *matching.Attributes, v *versioned, call *chain.Call) (*invocation, chain.Skip, error) {
	check := a
	if v.set {
		// Later webhooks see the object as earlier ones left it.
		c := *a
		c.Object, c.OldObject = wrap(v.object), wrap(v.old)
		check = &c
	}
	m, err := d.opts.Matcher.MutatingWebhookMatches(ctx, check, h.webhook)
	if err != nil {
		return nil, chain.NotSkipped, err
	}
	if !m.Matches {
		return nil, d.whyNot(ctx, check, h.webhook), nil
	}
	inv := &invocation{resource: m.Resource, kind: m.Kind, attrs: a}
	if h.matcher == nil {
		return inv, chain.NotSkipped, nil
	}
	if err := d.versionedFor(a, v, inv.kind); err != nil {
		return nil, chain.NotSkipped, err
	}
	va := d.versionedAttributes(a, v)
	mr := h.matcher.Match(ctx, va, nil, d.opts.Authorizer)
	switch {
	case mr.Error != nil:
		return nil, chain.NotSkipped, apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, mr.Error)
	case !mr.Matches && mr.FailedConditionName != "":
		call.Condition = mr.FailedConditionName
		return nil, chain.SkipMatchConditionFalse, nil
	case !mr.Matches:
		return nil, chain.SkipMatchConditionFailedOpen, nil
	}
	return inv, chain.NotSkipped, nil
}

// whyNot tells which of the namespaceSelector, objectSelector and rules
// kept a webhook from matching, in the order kube-apiserver checks them.
func (d *Dispatcher) whyNot(ctx context.Context, a *matching.Attributes, w *admissionregistrationv1.MutatingWebhook) chain.Skip {
	everything := &metav1.LabelSelector{}
	probe := w.DeepCopy()
	probe.ObjectSelector = everything
	if m, err := d.opts.Matcher.MutatingWebhookMatches(ctx, a, probe); err == nil && !m.Matches {
		probe.NamespaceSelector = everything
		if m, err := d.opts.Matcher.MutatingWebhookMatches(ctx, a, probe); err == nil && !m.Matches {
			return chain.SkipRules
		}
		return chain.SkipNamespaceSelector
	}
	return chain.SkipObjectSelector
}

func wrap(obj map[string]any) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	return &unstructured.Unstructured{Object: obj}
}

// versionedFor presents the request's objects in kind: the first time
// from the request (a.Kind), later from the version the last webhook saw
// (through the internal version, as ConvertVersionedAttributes does), with
// the scheme's presenter every stage shares (scheme.Scheme.ConvertToGVK).
func (d *Dispatcher) versionedFor(a *matching.Attributes, v *versioned, kind schema.GroupVersionKind) error {
	if !v.set {
		v.set, v.kind = true, kind
		var obj, old map[string]any
		if a.Object != nil {
			obj = a.Object.Object
		}
		if a.OldObject != nil {
			old = a.OldObject.Object
		}
		var err error
		if v.object, err = d.opts.Scheme.ConvertToGVK(obj, a.Kind, kind); err != nil {
			return apierrors.NewInternalError(err)
		}
		if v.old, err = d.opts.Scheme.ConvertToGVK(old, a.Kind, kind); err != nil {
			return apierrors.NewInternalError(err)
		}
		return nil
	}
	if v.kind == kind {
		return nil
	}
	var obj map[string]any
	var err error
	if v.dirty && v.kindChanged() {
		// ConvertVersionedAttributes: Convert into the request's internal
		// object, then to kind; its error wrapped by VersionedAttribute and
		// again by the dispatcher.
		if obj, err = d.opts.Scheme.ConvertAcrossKinds(v.object, v.objectKind, a.Kind); err != nil {
			return apierrors.NewInternalError(apierrors.NewInternalError(err))
		}
		if obj, err = d.opts.Scheme.ConvertToGVK(obj, a.Kind, kind); err != nil {
			return apierrors.NewInternalError(err)
		}
		v.objectKind = schema.GroupVersionKind{}
	} else if obj, err = d.opts.Scheme.ConvertToGVK(v.object, v.kind, kind); err != nil {
		return apierrors.NewInternalError(err)
	}
	var old map[string]any
	if a.OldObject != nil {
		if old, err = d.opts.Scheme.ConvertToGVK(a.OldObject.Object, a.Kind, kind); err != nil {
			return apierrors.NewInternalError(err)
		}
	}
	v.object, v.old, v.kind = obj, old, kind
	return nil
}

// versionedAttributes is the request as k8s.io/apiserver's matchConditions
// matcher takes it.
func (d *Dispatcher) versionedAttributes(a *matching.Attributes, v *versioned) *admission.VersionedAttributes {
	var u user.Info = a.UserInfo
	if u == nil {
		u = &user.DefaultInfo{}
	}
	attrs := admission.NewAttributesRecord(obj(v.object), obj(v.old), a.Kind, a.Namespace, a.Name, a.Resource, a.Subresource, a.Operation, obj(optionsOf(a)), a.DryRun, u)
	return &admission.VersionedAttributes{Attributes: attrs, VersionedKind: v.kind, VersionedObject: admission.NewLazyObject(obj(v.object)), VersionedOldObject: admission.NewLazyObject(obj(v.old))}
}

func optionsOf(a *matching.Attributes) map[string]any {
	if a.Options == nil {
		return nil
	}
	return a.Options.Object
}

// obj is m as a runtime.Object whose nil is a nil interface.
func obj(m map[string]any) runtime.Object {
	if m == nil {
		return nil
	}
	return &unstructured.Unstructured{Object: m}
}

// call is kube-apiserver's callAttrMutatingHook: it reports whether the
// webhook's patch changed the object. Errors are *callError (under the
// failurePolicy) or an *apierrors.StatusError (the request is refused).
func (d *Dispatcher) call(ctx context.Context, h *hook, inv *invocation, v *versioned, call *chain.Call, res *result) (changed bool, err error) {
	w := h.webhook
	annotate := func(key, value string) {
		if _, ok := res.AuditAnnotations[key]; !ok {
			res.AuditAnnotations[key] = value
		}
	}
	defer func() {
		if js, merr := utiljson.Marshal(mutationAnnotation{Configuration: h.configuration, Webhook: w.Name, Mutated: changed}); merr == nil {
			annotate(fmt.Sprintf("mutation.webhook.admission.k8s.io/round_%d_index_%d", call.Round, call.Index), string(js))
		}
	}()
	if err := dryRunCheck(w, inv.attrs); err != nil {
		return false, err
	}
	uid, answer, err := h.post(ctx, inv, call)
	if err != nil {
		return false, err
	}
	resp, err := verifyResponse(uid, answer)
	if err != nil {
		return false, &callError{webhook: w.Name, reason: fmt.Errorf("received invalid webhook response: %w", err), status: apierrors.NewServiceUnavailable("error validating webhook response")}
	}
	for k, val := range resp.auditAnnotations {
		annotate(w.Name+"/"+k, val)
	}
	res.Warnings = append(res.Warnings, resp.warnings...)
	if !resp.allowed {
		call.Outcome = chain.Denied
		return false, denied(w.Name, resp.result)
	}
	if len(resp.patch) == 0 {
		return false, nil
	}
	call.Patch, call.PatchType = resp.patch, string(resp.patchType)
	patch, err := evanphx.DecodePatch(resp.patch)
	if err != nil {
		return false, &callError{webhook: w.Name, reason: fmt.Errorf("received undecodable patch in webhook response: %w", err), status: apierrors.NewServiceUnavailable("error decoding patch in webhook response")}
	}
	if len(patch) == 0 {
		return false, nil
	}
	if v.object == nil {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", w.Name))
	}
	if resp.patchType != admissionv1.PatchTypeJSONPatch {
		return false, &callError{webhook: w.Name, reason: fmt.Errorf("unsupported patch type %q", resp.patchType), status: denied(w.Name, resp.result)}
	}
	// The application is bounded by the request's deadline, not the
	// webhook's timeoutSeconds (spent on the HTTP exchange): a patch
	// still being applied when the request ends fails the call as a
	// timeout of the webhook does, under its failurePolicy. kube-apiserver
	// has no such bound (docs/fidelity.md).
	patched, kind, err := ApplyPatch(ctx, d.opts.Scheme, v.object, v.kind, patch)
	if interrupted := (*PatchInterrupted)(nil); errors.As(err, &interrupted) {
		return false, &callError{webhook: w.Name, reason: interrupted, status: apierrors.NewTimeoutError(interrupted.Error(), 0)}
	}
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	current := v.kind
	if !v.objectKind.Empty() {
		current = v.objectKind
	}
	// kube-apiserver compares the typed objects before and after.
	before, err := d.opts.Scheme.Normalize(v.object, current)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	changed = !jsonvalue.SemanticEqual(before, patched)
	if js, merr := utiljson.Marshal(patchAnnotation{Configuration: h.configuration, Webhook: w.Name, Patch: patch, PatchType: string(admissionv1.PatchTypeJSONPatch)}); merr == nil {
		res.AuditAnnotations[fmt.Sprintf("patch.webhook.admission.k8s.io/round_%d_index_%d", call.Round, call.Index)] = string(js)
	}
	defaulted, err := d.opts.Scheme.Default(patched, kind)
	if err != nil {
		return changed, apierrors.NewInternalError(err)
	}
	v.object, v.dirty = defaulted, true
	// The object keeps the Go type the patch's apiVersion and kind decoded
	// it into (upstream's UpdateObject), VersionedKind stays.
	v.objectKind = schema.GroupVersionKind{}
	if kind != v.kind {
		v.objectKind = kind
	}
	call.Changed = changed
	return changed, nil
}

// mutationAnnotation and patchAnnotation are the values of
// kube-apiserver's mutation.webhook.admission.k8s.io and
// patch.webhook.admission.k8s.io audit annotations.
type mutationAnnotation struct {
	Configuration string `json:"configuration"`
	Webhook       string `json:"webhook"`
	Mutated       bool   `json:"mutated"`
}

type patchAnnotation struct {
	Configuration string `json:"configuration"`
	Webhook       string `json:"webhook"`
	Patch         any    `json:"patch,omitempty"`
	PatchType     string `json:"patchType,omitempty"`
}
