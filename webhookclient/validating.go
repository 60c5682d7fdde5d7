package webhookclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
)

// ValidatingPluginName is the name of kube-apiserver's
// ValidatingAdmissionWebhook plugin.
const ValidatingPluginName = "ValidatingAdmissionWebhook"

// The prefixes of the validating webhooks' own audit annotations
// (k8s.io/apiserver plugin/webhook/validating).
const (
	validatingAnnotationPrefix           = "validating.webhook.admission.k8s.io/"
	validatingFailedOpenAnnotationPrefix = "failed-open." + validatingAnnotationPrefix
)

// ValidatingDispatcher runs the ValidatingAdmissionWebhook plugin over a
// set of ValidatingWebhookConfigurations: the chain.Stage of a validating
// list (chain.Runner.RunOnce). It shares the mutating Dispatcher's
// matching, matchConditions, AdmissionReviews and HTTP clients; what
// differs is upstream's validating dispatcher's: the matching webhooks
// are called concurrently, their answers may not carry a patch, nothing
// is reinvoked. It is safe for concurrent use.
type ValidatingDispatcher struct {
	d *Dispatcher
}

// NewValidatingDispatcher builds the dispatcher of configs (validated, as
// Load returns them): configurations in name order, webhooks in list
// order, matchConditions compiled as NewDispatcher compiles them. previous,
// when not nil, is the ValidatingDispatcher this one replaces, whose HTTP
// clients of unchanged configurations are taken over (Options.Previous is
// the mutating one's and is not read).
func NewValidatingDispatcher(configs []*admissionregistrationv1.ValidatingWebhookConfiguration, opts Options, previous *ValidatingDispatcher) (*ValidatingDispatcher, error) {
	list := make([]configuration, len(configs))
	for i, c := range configs {
		list[i] = configuration{name: c.Name, generation: generationOf(c.UID, c.Generation, c.Webhooks)}
		for j := range c.Webhooks {
			list[i].webhooks = append(list[i].webhooks, asMutating(&c.Webhooks[j]))
		}
	}
	var prev *Dispatcher
	if previous != nil {
		prev = previous.d
	}
	opts.Previous = nil
	d, err := newDispatcher(list, opts, prev, "validating")
	if err != nil {
		return nil, err
	}
	return &ValidatingDispatcher{d: d}, nil
}

// asMutating is w with the fields of a MutatingWebhook (all of a
// ValidatingWebhook's), as the dispatchers' shared code takes webhooks.
func asMutating(w *admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.MutatingWebhook {
	c := w.DeepCopy()
	return &admissionregistrationv1.MutatingWebhook{
		Name: c.Name, ClientConfig: c.ClientConfig, Rules: c.Rules, FailurePolicy: c.FailurePolicy,
		MatchPolicy: c.MatchPolicy, NamespaceSelector: c.NamespaceSelector, ObjectSelector: c.ObjectSelector,
		SideEffects: c.SideEffects, TimeoutSeconds: c.TimeoutSeconds, AdmissionReviewVersions: c.AdmissionReviewVersions,
		MatchConditions: c.MatchConditions,
	}
}

// Close drops the idle connections of the clients this dispatcher does
// not share with successor (nil: all of them).
func (v *ValidatingDispatcher) Close(successor *ValidatingDispatcher) {
	var next *Dispatcher
	if successor != nil {
		next = successor.d
	}
	v.d.Close(next)
}

// Name is the plugin's name in kube-apiserver.
func (v *ValidatingDispatcher) Name() string { return ValidatingPluginName }

// Admit runs the ValidatingAdmissionWebhook plugin for the request a (its
// Object, in a.Kind, the object the registry would store; nil for a
// DELETE or a CONNECT, whose OldObject the webhooks see) as k8s.io/apiserver
// v0.37.1's validating dispatcher does (chain.Stage):
//
//   - the webhooks matched in order (configurations by name, webhooks in
//     list order) as the mutating ones, each presented the request in
//     the kind it registered for (matchPolicy Equivalent), converted from
//     the request's own; a matchCondition that fails under failurePolicy
//     Fail refuses the request (403) before any call;
//   - the matching webhooks called concurrently, each checked for dry
//     run against its sideEffects, its answer checked as upstream's
//     VerifyAdmissionResponse checks a validating webhook's (a patch or a
//     patchType is an invalid answer);
//   - a failure to call or an invalid answer under failurePolicy Fail is
//     the 500 `failed calling webhook "NAME": …`; under Ignore the
//     request goes on, with the audit annotation
//     failed-open.validating.webhook.admission.k8s.io/round_0_index_I (I
//     the webhook's index among the matching ones);
//   - a denial is the webhook's Status (`admission webhook "NAME" denied
//     the request: …`); when several webhooks refuse, the refusal that
//     arrived first is the request's, as upstream's error channel gives
//     it;
//   - warnings and the webhooks' audit annotations ("NAME/key") in the
//     order the answers arrived.
//
// The Outcome's Calls hold one record per webhook in dispatch order
// (Round 0); the object is never changed. The error is for failures of
// mutatis itself.
func (v *ValidatingDispatcher) Admit(ctx context.Context, a *matching.Attributes, _ *chain.Context) (chain.Outcome, error) {
	var out chain.Outcome
	if a.Object != nil {
		out.Object = a.Object.Object
	}
	out.AuditAnnotations = map[string]string{}
	err := v.dispatch(ctx, a, &out)
	if len(out.AuditAnnotations) == 0 {
		out.AuditAnnotations = nil
	}
	if err != nil {
		var status *apierrors.StatusError
		if !errors.As(err, &status) {
			return out, fmt.Errorf("%s: %w", ValidatingPluginName, err)
		}
		out.Denied = status
	}
	return out, nil
}

// relevant is a webhook to call: its hook, its invocation and where its
// record is among the Outcome's Calls.
type relevant struct {
	h    *hook
	inv  *invocation
	call int
}

// answer is what one concurrent call left.
type answer struct {
	call        chain.Call
	warnings    []string
	annotations [][2]string
	err         error
	ignore      bool
	rel         int
}

func (v *ValidatingDispatcher) dispatch(ctx context.Context, a *matching.Attributes, out *chain.Outcome) (err error) {
	defer func() {
		// kube-apiserver's handler turns a panic into a 500 of the request.
		if r := recover(); r != nil {
			err = apierrors.NewInternalError(fmt.Errorf("panic while calling validating webhooks: %v", r))
		}
	}()
	d := v.d
	if matching.WebhookExempt(a) {
		for i, h := range d.hooks {
			out.Calls = append(out.Calls, chain.Call{Record: chain.Record{Configuration: h.configuration, Hook: h.webhook.Name, Skip: chain.SkipExempt}, Index: i})
		}
		return nil
	}
	// The request in each kind a webhook registered for, converted from
	// the request's own (upstream's versionedAttributeAccessor).
	versions := map[schema.GroupVersionKind]*versioned{}
	var hooks []relevant
	for i := range d.hooks {
		h := &d.hooks[i]
		call := chain.Call{Record: chain.Record{Configuration: h.configuration, Hook: h.webhook.Name}, Index: i}
		fresh := &versioned{}
		inv, skip, err := d.shouldCall(ctx, h, a, fresh, &call)
		if err == nil && inv != nil {
			call.Resource, call.Kind = inv.resource, inv.kind
			pv, ok := versions[inv.kind]
			if !ok {
				pv = fresh
				if !pv.set {
					err = d.versionedFor(a, pv, inv.kind)
				}
				versions[inv.kind] = pv
			}
			inv.object, inv.old = pv.object, pv.old
		}
		if err != nil {
			return refused(out, call, err)
		}
		if inv == nil {
			skipped(out, call, skip)
			continue
		}
		hooks = append(hooks, relevant{h: h, inv: inv, call: len(out.Calls)})
		out.Calls = append(out.Calls, call)
	}
	if len(hooks) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		// The request's own deadline passed before any call.
		return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
	}
	answers := make(chan answer, len(hooks))
	for j, r := range hooks {
		go func() {
			answers <- v.callHook(ctx, r, j, out.Calls[r.call])
		}()
	}
	var first error
	for range hooks {
		an := <-answers
		out.Calls[hooks[an.rel].call] = an.call
		out.Warnings = append(out.Warnings, an.warnings...)
		for _, kv := range an.annotations {
			if _, ok := out.AuditAnnotations[kv[0]]; !ok {
				out.AuditAnnotations[kv[0]] = kv[1]
			}
		}
		if an.err != nil && first == nil {
			first = an.err
		}
	}
	return first
}

// callHook is one goroutine of upstream's Dispatch: the call of the j-th
// matching webhook r, the failurePolicy applied to its failure, the
// metrics, and a panic turned into the request's 500 (or a failure open).
func (v *ValidatingDispatcher) callHook(ctx context.Context, r relevant, j int, call chain.Call) (an answer) {
	d, w := v.d, r.h.webhook
	an.rel, an.call = j, call
	an.ignore = w.FailurePolicy != nil && *w.FailurePolicy == admissionregistrationv1.Ignore
	failOpen := func() {
		d.opts.Metrics.observeFailOpen(d.typ, w.Name)
		an.annotations = append(an.annotations, [2]string{fmt.Sprintf("%sround_0_index_%d", validatingFailedOpenAnnotationPrefix, j), w.Name})
	}
	defer func() {
		if p := recover(); p != nil {
			if an.ignore {
				an.call.Outcome, an.err = chain.FailedOpen, nil
				an.call.Err = fmt.Errorf("panic: %v", p)
				failOpen()
				return
			}
			an.err = apierrors.NewInternalError(fmt.Errorf("%s/%v has panicked: %v", ValidatingPluginName, w.Name, p))
			an.call.Outcome, an.call.Err = chain.FailedClosed, an.err
		}
	}()
	start := time.Now()
	err := v.callOnce(ctx, r, &an)
	denied := an.call.Outcome == chain.Denied
	d.opts.Metrics.observeCall(d.typ, w.Name, string(r.inv.attrs.Operation), time.Since(start), err, an.ignore, denied)
	if err == nil {
		an.call.Outcome = chain.Admitted
		return an
	}
	an.call.Err = err
	var ce *callError
	switch {
	case errors.As(err, &ce) && an.ignore:
		an.call.Outcome = chain.FailedOpen
		if !errors.Is(ce.reason, context.Canceled) {
			failOpen()
		}
	case ce != nil:
		an.call.Outcome = chain.FailedClosed
		an.err = apierrors.NewInternalError(ce)
	default:
		if !denied {
			an.call.Outcome = chain.Refused
		}
		an.err = err
	}
	return an
}

// callOnce is upstream's validating callHook: the dry-run check, the
// call, the answer's checks, its audit annotations and warnings (into
// an), and the denial. Errors are *callError (under the failurePolicy) or
// the refusal's *apierrors.StatusError.
func (v *ValidatingDispatcher) callOnce(ctx context.Context, r relevant, an *answer) error {
	w := r.h.webhook
	if err := dryRunCheck(w, r.inv.attrs); err != nil {
		return err
	}
	uid, review, err := r.h.post(ctx, r.inv, &an.call)
	if err != nil {
		return err
	}
	resp, err := webhookrequest.VerifyAdmissionResponse(uid, false, review)
	if err != nil {
		return &callError{webhook: w.Name, reason: fmt.Errorf("received invalid webhook response: %w", err), status: apierrors.NewServiceUnavailable("error validating webhook response")}
	}
	for k, val := range resp.AuditAnnotations {
		an.annotations = append(an.annotations, [2]string{w.Name + "/" + k, val})
	}
	an.warnings = append(an.warnings, resp.Warnings...)
	if resp.Allowed {
		return nil
	}
	an.call.Outcome = chain.Denied
	return denied(w.Name, resp.Result)
}
