package webhookclient

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// callError is a failure to call a webhook or to use its answer (the
// webhook did not decide): kube-apiserver's webhookutil.ErrCallingWebhook,
// which the webhook's failurePolicy applies to.
type callError struct {
	webhook string
	reason  error
	status  *apierrors.StatusError
}

func (e *callError) Error() string {
	if e.reason != nil {
		return fmt.Sprintf("failed calling webhook %q: %v", e.webhook, e.reason)
	}
	return fmt.Sprintf("failed calling webhook %q; no further details available", e.webhook)
}

func (e *callError) Unwrap() error { return e.reason }

// code is the HTTP code of the call's status, 0 without one.
func (e *callError) code() int {
	if e.status == nil {
		return 0
	}
	return int(e.status.ErrStatus.Code)
}

// denied is kube-apiserver's ToStatusErr: the Status of a webhook that
// did not allow the request, with at least 400 for its code, Failure for
// its status and the webhook named in its message.
func denied(webhook string, result *metav1.Status) *apierrors.StatusError {
	deniedBy := fmt.Sprintf("admission webhook %q denied the request", webhook)
	if result == nil {
		result = &metav1.Status{Status: metav1.StatusFailure}
	} else {
		result = result.DeepCopy()
	}
	if result.Code < http.StatusBadRequest {
		result.Code = http.StatusBadRequest
	}
	if result.Status == "" || result.Status == metav1.StatusSuccess {
		result.Status = metav1.StatusFailure
	}
	switch {
	case len(result.Message) > 0:
		result.Message = fmt.Sprintf("%s: %s", deniedBy, result.Message)
	case len(result.Reason) > 0:
		result.Message = fmt.Sprintf("%s: %s", deniedBy, result.Reason)
	default:
		result.Message = fmt.Sprintf("%s without explanation", deniedBy)
	}
	return &apierrors.StatusError{ErrStatus: *result}
}

// dryRunUnsupported is kube-apiserver's 400 for a dry-run request that
// reaches a webhook with side effects.
func dryRunUnsupported(webhook string) *apierrors.StatusError {
	return apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", webhook))
}
