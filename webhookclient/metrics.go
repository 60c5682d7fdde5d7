package webhookclient

import (
	"context"
	"errors"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are kube-apiserver's admission webhook metrics, with its names,
// labels and buckets, registered on a registry the caller owns (never the
// global one). Type is "admit" for the mutating webhooks, "validating"
// for the validating ones, as upstream labels them.
type Metrics struct {
	duration  *prometheus.HistogramVec
	rejection *prometheus.CounterVec
	request   *prometheus.CounterVec
	failOpen  *prometheus.CounterVec
}

// Rejection error types, the error_type label of
// apiserver_admission_webhook_rejection_count.
const (
	rejectionCallingWebhookError    = "calling_webhook_error"
	rejectionAPIServerInternalError = "apiserver_internal_error"
	rejectionNoError                = "no_error"
)

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "webhook_admission_duration_seconds",
			Help:    "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
			Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25},
		}, []string{"name", "type", "operation", "rejected"}),
		rejection: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "webhook_rejection_count",
			Help: "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
		}, []string{"name", "type", "operation", "error_type", "rejection_code"}),
		request: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "webhook_request_total",
			Help: "Admission webhook request total, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
		}, []string{"name", "type", "operation", "code", "rejected"}),
		failOpen: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "webhook_fail_open_count",
			Help: "Admission webhook fail open count, identified by name and broken out for each admission type (validating or admit).",
		}, []string{"name", "type"}),
	}
	for _, c := range []prometheus.Collector{m.duration, m.rejection, m.request, m.failOpen} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func truncCode(code int) string {
	if code > 600 {
		code = 600
	}
	return strconv.Itoa(code)
}

// observe is upstream's ObserveWebhook.
func (m *Metrics) observe(typ, name, operation string, elapsed time.Duration, rejected bool, code int) {
	if m == nil {
		return
	}
	r := strconv.FormatBool(rejected)
	m.request.WithLabelValues(name, typ, operation, truncCode(code), r).Inc()
	m.duration.WithLabelValues(name, typ, operation, r).Observe(elapsed.Seconds())
}

// observeRejection is upstream's ObserveWebhookRejection.
func (m *Metrics) observeRejection(typ, name, operation, errorType string, code int) {
	if m == nil {
		return
	}
	m.rejection.WithLabelValues(name, typ, operation, errorType, truncCode(code)).Inc()
}

func (m *Metrics) observeFailOpen(typ, name string) {
	if m == nil {
		return
	}
	m.failOpen.WithLabelValues(name, typ).Inc()
}

// observeCall records one call to webhook (of type typ) that took
// elapsed and ended with err (nil, a *callError under failurePolicy
// Ignore when ignore is set, the webhook's denial when denied is set,
// another refusal), as both of upstream's dispatchers record it.
func (m *Metrics) observeCall(typ, webhook, op string, elapsed time.Duration, err error, ignore, denied bool) {
	var ce *callError
	var rejection *apierrors.StatusError
	switch {
	case err == nil:
		m.observe(typ, webhook, op, elapsed, false, 200)
	case errors.As(err, &ce):
		if !ignore && !errors.Is(ce.reason, context.Canceled) {
			m.observeRejection(typ, webhook, op, rejectionCallingWebhookError, ce.code())
		}
		m.observe(typ, webhook, op, elapsed, !ignore, ce.code())
	case denied && errors.As(err, &rejection):
		m.observeRejection(typ, webhook, op, rejectionNoError, int(rejection.ErrStatus.Code))
		m.observe(typ, webhook, op, elapsed, true, int(rejection.ErrStatus.Code))
	default:
		m.observeRejection(typ, webhook, op, rejectionAPIServerInternalError, 0)
		m.observe(typ, webhook, op, elapsed, true, 0)
	}
}
