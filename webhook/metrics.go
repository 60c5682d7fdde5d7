package webhook

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mutatis-dev/mutatis/engine"
)

// Metrics are the Prometheus metrics of one server, in a registry of its
// own (no global state: two servers in one process, as in tests, do not
// share counters).
//
// The MAP metrics have kube-apiserver's names, labels and buckets, so that
// dashboards written for the in-tree plugin work unchanged:
//
//	apiserver_mutating_admission_policy_check_total{policy,policy_binding,error_type}
//	apiserver_mutating_admission_policy_check_duration_seconds{policy,policy_binding,error_type}
//
// The HTTP metrics of /mutate are
//
//	mutatis_webhook_requests_total{path,code}
//	mutatis_webhook_request_duration_seconds
//	mutatis_webhook_requests_in_flight
//
// plus the Go runtime and process collectors.
type Metrics struct {
	registry *prometheus.Registry

	policyCheck   *prometheus.CounterVec
	policyLatency *prometheus.HistogramVec

	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec // no labels: promhttp wants a vector
	inFlight prometheus.Gauge
}

var _ engine.Metrics = (*Metrics)(nil)

// NewMetrics returns Metrics registered in a new registry.
func NewMetrics() *Metrics {
	labels := []string{"policy", "policy_binding", "error_type"}
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		policyCheck: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "apiserver",
			Subsystem: "mutating_admission_policy",
			Name:      "check_total",
			Help:      "Mutation admission policy check total, labeled by policy and further identified by binding.",
		}, labels),
		policyLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "apiserver",
			Subsystem: "mutating_admission_policy",
			Name:      "check_duration_seconds",
			Help:      "Mutation admission latency for individual mutation expressions in seconds, labeled by policy and binding.",
			// kube-apiserver's buckets.
			Buckets: []float64{0.0000005, 0.001, 0.01, 0.1, 1.0},
		}, labels),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mutatis",
			Subsystem: "webhook",
			Name:      "requests_total",
			Help:      "AdmissionReview requests by path (/mutate, /mutate/fail, /mutate/ignore) and HTTP status code.",
		}, []string{"path", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "mutatis",
			Subsystem: "webhook",
			Name:      "request_duration_seconds",
			Help:      "Latency of /mutate requests in seconds, from the request headers to the response written.",
			Buckets:   []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, nil),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "mutatis",
			Subsystem: "webhook",
			Name:      "requests_in_flight",
			Help:      "/mutate requests being served.",
		}),
	}
	m.registry.MustRegister(m.policyCheck, m.policyLatency, m.requests, m.latency, m.inFlight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveMutation implements engine.Metrics.
func (m *Metrics) ObserveMutation(_ context.Context, elapsed time.Duration, policy, binding, errorType string) {
	m.policyCheck.WithLabelValues(policy, binding, errorType).Inc()
	m.policyLatency.WithLabelValues(policy, binding, errorType).Observe(elapsed.Seconds())
}

// Registry is the registry holding the metrics (to add collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// instrument wraps the review handler of path with the HTTP metrics.
func (m *Metrics) instrument(path string, h http.Handler) http.Handler {
	return promhttp.InstrumentHandlerInFlight(m.inFlight,
		promhttp.InstrumentHandlerDuration(m.latency,
			promhttp.InstrumentHandlerCounter(m.requests.MustCurryWith(prometheus.Labels{"path": path}), h)))
}
