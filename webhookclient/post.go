package webhookclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
)

// dryRunCheck is both dispatchers' check of a dry-run request before
// calling w: a webhook with side effects refuses it (400), a webhook
// without sideEffects fails under its failurePolicy.
func dryRunCheck(w *admissionregistrationv1.MutatingWebhook, a *matching.Attributes) error {
	if !a.DryRun {
		return nil
	}
	if w.SideEffects == nil {
		return &callError{webhook: w.Name, reason: errors.New("Webhook SideEffects is nil"), status: apierrors.NewBadRequest("Webhook SideEffects is nil")}
	}
	if se := *w.SideEffects; se != admissionregistrationv1.SideEffectClassNone && se != admissionregistrationv1.SideEffectClassNoneOnDryRun {
		return dryRunUnsupported(w.Name)
	}
	return nil
}

// post sends inv's AdmissionReview to h's webhook and returns its answer
// decoded (not yet checked) with the uid it was sent with: both of
// kube-apiserver's dispatchers' callHook up to VerifyAdmissionResponse.
// It sets call.Version and call.Latency. Its errors are *callError (under
// the failurePolicy).
func (h *hook) post(ctx context.Context, inv *invocation, call *chain.Call) (types.UID, runtime.Object, error) {
	w := h.webhook
	uid := types.UID(uuid.NewUUID())
	request, answer, version, err := newReview(uid, inv, w.AdmissionReviewVersions)
	if err != nil {
		return uid, nil, &callError{webhook: w.Name, reason: fmt.Errorf("could not create admission objects: %w", err), status: apierrors.NewBadRequest("error creating admission objects")}
	}
	call.Version = version
	client, err := h.clients.client(w.ClientConfig, w.Name)
	if err != nil {
		return uid, nil, &callError{webhook: w.Name, reason: fmt.Errorf("could not get REST client: %w", err), status: apierrors.NewInternalError(err)}
	}
	if w.TimeoutSeconds != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*w.TimeoutSeconds)*time.Second)
		defer cancel()
	}
	r := client.Post().Body(request)
	if deadline, ok := ctx.Deadline(); ok {
		if timeout := time.Until(deadline); timeout > 0 {
			// Whole seconds, rounded up, as kube-apiserver tells the webhook.
			if truncated := timeout.Truncate(time.Second); truncated != timeout {
				timeout = truncated + time.Second
			}
			r.Timeout(timeout)
		}
	}
	start := time.Now()
	err = r.Do(ctx).Into(answer)
	call.Latency = time.Since(start)
	if err != nil {
		var status *apierrors.StatusError
		if !errors.As(err, &status) || status != err {
			status = apierrors.NewServiceUnavailable("error calling webhook")
		}
		return uid, nil, &callError{webhook: w.Name, reason: fmt.Errorf("failed to call webhook: %w", err), status: status}
	}
	return uid, answer, nil
}
