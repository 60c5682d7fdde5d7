package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/mutatis-dev/mutatis/binding"
	"github.com/mutatis-dev/mutatis/engine"
)

// Event reasons.
const (
	ReasonInvalid      = "Invalid"
	ReasonCompileError = "CompileError"
	ReasonCompiled     = "Compiled"
)

// sync rebuilds the policy set from the caches and swaps it into the engine;
// the leader also brings the cluster in line (webhook configurations,
// status conditions, Events).
func (c *Controller) sync(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	var term uint64
	c.writeCtx, term = c.writeContext()
	if c.writeCtx != nil && term != c.term {
		// A new leader reports what is wrong as a restarted controller
		// would: the previous leader's Events are not known here.
		c.term = term
		c.reported = map[string]string{}
	}
	seen := map[string]bool{} // revision keys still alive
	c.alive = map[string]bool{}
	defer func() {
		for k := range c.reported {
			if !c.alive[k] {
				delete(c.reported, k)
			}
		}
	}()

	var policies []*admissionregistrationv1.MutatingAdmissionPolicy
	policyObjects := map[string]*unstructured.Unstructured{}
	st := Status{Policies: map[string]string{}, Bindings: map[string]string{}}
	for _, u := range listUnstructured(c.policyInformer) {
		conv := c.convertCached(u, seen)
		if conv.err != nil || conv.policy == nil {
			c.report(ctx, u, conv.err, nil)
			continue
		}
		policies = append(policies, conv.policy)
		policyObjects[conv.policy.Name] = u
		st.Policies[conv.policy.Name] = conv.policy.ResourceVersion
	}
	var bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for _, u := range listUnstructured(c.bindingInformer) {
		conv := c.convertCached(u, seen)
		if conv.err != nil || conv.binding == nil {
			c.report(ctx, u, conv.err, nil)
			continue
		}
		c.report(ctx, u, nil, nil)
		bindings = append(bindings, conv.binding)
		st.Bindings[conv.binding.Name] = conv.binding.ResourceVersion
	}
	for k := range c.converted {
		if !seen[k] {
			delete(c.converted, k)
		}
	}

	// Deleted policies leave the compiler's cache.
	names := map[string]bool{}
	for _, p := range policies {
		names[p.Name] = true
	}
	for n := range c.compiled {
		if !names[n] {
			c.compiler.Forget(n)
		}
	}
	c.compiled = names

	// Every policy is compiled (cached by revision) so that its problems are
	// reported even before a binding selects it.
	compiled := map[string]engine.Hook{}
	for _, p := range policies {
		cp, err := c.compiler.Compile(p)
		if err != nil {
			// An internal failure of one policy never blocks the others.
			c.report(ctx, policyObjects[p.Name], fmt.Errorf("compiling: %w", err), nil)
			delete(st.Policies, p.Name)
			continue
		}
		var problems []string
		for _, fe := range cp.Errors() {
			problems = append(problems, fe.Error())
		}
		c.report(ctx, policyObjects[p.Name], nil, problems)
		compiled[p.Name] = engine.Hook{Policy: p, Compiled: cp}
	}

	var hooks []engine.Hook
	var bound []*admissionregistrationv1.MutatingAdmissionPolicy
	paramKinds := map[schema.GroupVersionResource]bool{}
	for _, g := range binding.Group(policies, bindings) {
		h, ok := compiled[g.Policy.Name]
		if !ok {
			continue
		}
		h.Bindings = g.Bindings
		hooks = append(hooks, h)
		bound = append(bound, g.Policy)
		if pk := g.Policy.Spec.ParamKind; pk != nil {
			if gv, err := schema.ParseGroupVersion(pk.APIVersion); err == nil {
				if gvr, ok := c.params.resource(gv.WithKind(pk.Kind)); ok {
					paramKinds[gvr] = true
				}
			}
		}
	}

	// Param informers of the new set run and have synced (within the
	// timeout; lookups go to the API server until they have) before it is
	// swapped in; informers no policy needs any more are stopped.
	if started := c.params.ensure(ctx, paramKinds); len(started) > 0 {
		wctx, cancel := context.WithTimeout(ctx, c.cfg.ParamSyncTimeout)
		if !cache.WaitForCacheSync(wctx.Done(), started...) {
			logger.Info("param informers have not synced yet; params are read from the API server meanwhile")
		}
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	st.ParamKinds = c.params.resources()

	// The engine knows the new set before kube-apiserver is told to call
	// for it; the status (and readiness) follow both.
	c.engine.Swap(hooks)
	var err error
	if c.cfg.Webhook.managed() && c.writeCtx != nil {
		fail, ignore := WebhookConfigurations(bound, c.cfg.Webhook)
		wctx, cancel := context.WithTimeout(c.writeCtx, c.cfg.WriteTimeout)
		err = applyWebhookConfigurations(wctx, c.clients.Kube, c.cfg.Webhook.Name, fail, ignore)
		cancel()
		if err != nil && c.writeCtx.Err() != nil && ctx.Err() == nil {
			// The lease was lost during the sync: the next leader writes.
			logger.V(2).Info("lost the lease while writing webhook configurations", "error", err)
			err = nil
		}
	}
	c.publish(st)
	logger.V(2).Info("policy set swapped in", "policies", len(policies), "bound", len(hooks), "bindings", len(bindings))
	return err
}

// convertCached converts u, reusing the conversion of the same revision.
// In shadow mode a policy is also validated as kube-apiserver validates it
// on create (refused below).
func (c *Controller) convertCached(u *unstructured.Unstructured, seen map[string]bool) convertedObject {
	key := revisionKey(u)
	seen[key] = true
	if conv, ok := c.converted[key]; ok {
		return conv
	}
	conv := convert(u)
	if conv.policy != nil && c.cfg.Source == SourceShadow {
		conv = c.refuseInvalid(conv)
	}
	c.converted[key] = conv
	return conv
}

// refuseInvalid leaves out a shadow policy that kube-apiserver would refuse
// to create (HTTP 422: compiler.Validate, the create-time compilation of its
// expressions, as cluster.ValidatePolicies for files): natively it would
// never exist, so it joins no policy set and is reported Invalid with the
// refusal's field errors. A policy that passes and yet fails the
// admission-time compilation (Compile) stays in, as kube-apiserver keeps a
// stored policy, and fails under its failurePolicy. Native policies were
// validated by the API server itself (and a stored one is never validated
// again), so they are not checked here.
func (c *Controller) refuseInvalid(conv convertedObject) convertedObject {
	errs, err := c.compiler.Validate(conv.policy)
	if err != nil {
		// An internal failure refuses this policy only.
		return convertedObject{err: fmt.Errorf("validating: %w", err)}
	}
	if len(errs) == 0 {
		return conv
	}
	lines := make([]string, 0, len(errs))
	for _, fe := range errs {
		lines = append(lines, fe.Error())
	}
	return convertedObject{err: errors.New(strings.Join(lines, "; "))}
}

// listUnstructured lists an informer's objects in name order.
func listUnstructured(inf cache.SharedIndexInformer) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range inf.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

// report tells the object's owner what became of it: an Event when the
// outcome of a revision is new, and in shadow mode the Ready condition of
// policies. invalid is a conversion or validation error, in shadow mode also
// a create-time CEL compilation error (the object is left out); problems are
// admission-time CEL compilation errors (the policy stays in). Only the
// leader reports.
func (c *Controller) report(ctx context.Context, u *unstructured.Unstructured, invalid error, problems []string) {
	if u == nil || c.writeCtx == nil {
		return // followers leave reporting to the leader
	}
	reason, message, eventType := ReasonCompiled, "", corev1.EventTypeNormal
	switch {
	case invalid != nil:
		reason, eventType = ReasonInvalid, corev1.EventTypeWarning
		message = "ignored: " + invalid.Error()
	case len(problems) > 0:
		reason, eventType = ReasonCompileError, corev1.EventTypeWarning
		message = "compilation failed, requests this policy matches fail under its failurePolicy: " + strings.Join(problems, "; ")
	case u.GetKind() == "MutatingAdmissionPolicy":
		message = "compiled"
	default:
		message = "accepted"
	}
	key := u.GetKind() + "/" + u.GetName()
	c.alive[key] = true
	outcome := revisionKey(u) + "\x00" + reason + "\x00" + message
	if c.reported[key] != outcome {
		previous, known := c.reported[key]
		c.reported[key] = outcome
		// Success is only worth an Event when it ends a problem.
		if eventType == corev1.EventTypeWarning || (known && !strings.Contains(previous, "\x00"+ReasonCompiled+"\x00")) {
			c.recorder.Event(u, eventType, reason, message)
		}
	}
	if c.cfg.Source == SourceShadow && u.GetKind() == "MutatingAdmissionPolicy" {
		wctx, cancel := context.WithTimeout(c.writeCtx, c.cfg.WriteTimeout)
		err := c.setReadyCondition(wctx, u, reason, message)
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			klog.FromContext(ctx).Error(err, "updating status", "policy", u.GetName())
		}
	}
}
