package webhook

import (
	"context"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
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
// and those of saturation and server errors:
//
//	mutatis_webhook_evaluations_in_flight, mutatis_webhook_evaluation_slots
//	mutatis_webhook_body_bytes_in_use, mutatis_webhook_body_bytes_budget
//	mutatis_webhook_body_reads_rejected_total{reason}
//	mutatis_webhook_panics_total
//	mutatis_webhook_tls_handshake_errors_total
//
// plus the Go runtime and process collectors; the runtime's live heap
// after the last GC (go_gc_heap_live_bytes) is added to the default set,
// as the memory a leak would grow.
type Metrics struct {
	registry *prometheus.Registry

	policyCheck   *prometheus.CounterVec
	policyLatency *prometheus.HistogramVec
	// policies are the children of policyCheck and policyLatency by their
	// labels, looked up once (ObserveMutation is called per mutation): a
	// map never written once published, read without a lock (concurrent
	// reviews write no shared memory to find their series), replaced by a
	// copy with the new series under policiesMu.
	policiesMu sync.Mutex
	policies   atomic.Pointer[map[policyLabels]policySeries]

	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec // no labels: promhttp wants a vector
	inFlight prometheus.Gauge

	evaluations     prometheus.Gauge
	slots           prometheus.Gauge
	bodyBytes       prometheus.Gauge
	bodyBudget      prometheus.Gauge
	bodiesRejected  *prometheus.CounterVec
	panics          prometheus.Counter
	handshakeErrors prometheus.Counter
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
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "mutatis", Subsystem: "webhook", Name: name, Help: help})
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "mutatis", Subsystem: "webhook", Name: name, Help: help})
	}
	m.evaluations = gauge("evaluations_in_flight", "Reviews holding an in-flight slot (--max-in-flight): decoded, evaluated or encoded; bodies being read hold none.")
	m.slots = gauge("evaluation_slots", "In-flight slots (--max-in-flight; 0: no bound).")
	m.bodyBytes = gauge("body_bytes_in_use", "Bytes of request body buffers held, reserved from the body-bytes budget.")
	m.bodyBudget = gauge("body_bytes_budget", "The body-bytes budget (--max-body-bytes-in-flight).")
	m.bodiesRejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "mutatis",
		Subsystem: "webhook",
		Name:      "body_reads_rejected_total",
		Help:      "Review bodies not read to the end, by reason: too_large (413, or 400 past the limit, or a review whose charge exceeds the budget), timeout (408, --body-read-timeout), budget (429, --max-body-bytes-in-flight), error.",
	}, []string{"reason"})
	for _, reason := range []string{"too_large", "timeout", "budget", "error"} {
		m.bodiesRejected.WithLabelValues(reason)
	}
	m.panics = counter("panics_total", "Panics recovered while answering a review (answered with HTTP 500).")
	m.handshakeErrors = counter("tls_handshake_errors_total", "TLS handshakes that failed.")
	m.registry.MustRegister(m.policyCheck, m.policyLatency, m.requests, m.latency, m.inFlight,
		m.evaluations, m.slots, m.bodyBytes, m.bodyBudget, m.bodiesRejected, m.panics, m.handshakeErrors,
		// go_gc_heap_live_bytes: the heap marked live by the last GC.
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// policyLabels are the labels of the MAP metrics' series.
type policyLabels struct{ policy, binding, errorType string }

// policySeries are the MAP metrics' series of one policyLabels.
type policySeries struct {
	check   prometheus.Counter
	latency prometheus.Observer
}

// ObserveMutation implements engine.Metrics.
func (m *Metrics) ObserveMutation(_ context.Context, elapsed time.Duration, policy, binding, errorType string) {
	s := m.policySeries(policyLabels{policy, binding, errorType})
	s.check.Inc()
	s.latency.Observe(elapsed.Seconds())
}

// policySeries are the children of policyCheck and policyLatency with the
// labels l, from the vectors the first time (the vectors keep them: none
// is ever deleted).
func (m *Metrics) policySeries(l policyLabels) policySeries {
	if known := m.policies.Load(); known != nil {
		if s, ok := (*known)[l]; ok {
			return s
		}
	}
	m.policiesMu.Lock()
	defer m.policiesMu.Unlock()
	var known map[policyLabels]policySeries
	if p := m.policies.Load(); p != nil {
		known = *p
	}
	if s, ok := known[l]; ok {
		return s // published while this one waited for the lock
	}
	s := policySeries{
		check:   m.policyCheck.WithLabelValues(l.policy, l.binding, l.errorType),
		latency: m.policyLatency.WithLabelValues(l.policy, l.binding, l.errorType),
	}
	next := make(map[policyLabels]policySeries, len(known)+1)
	maps.Copy(next, known)
	next[l] = s
	m.policies.Store(&next)
	return s
}

// Registry is the registry holding the metrics (to add collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// instrument wraps the review handler of path with the HTTP metrics: what
// instrumentReference (promhttp's in-flight, duration and counter
// middlewares chained) counts and observes, without their two label maps
// and series lookups per request. The series of an answer 200 on path and
// the latency's one series are looked up at the first request that needs
// them (before it, as with promhttp, neither is exported); those of other
// codes at each request, as promhttp does.
func (m *Metrics) instrument(path string, h http.Handler) http.Handler {
	return &instrumented{next: h, path: path, requests: m.requests, latency: m.latency, inFlight: m.inFlight}
}

// instrumentReference wraps h with promhttp's middlewares, the reference
// instrument is held equal to (TestInstrumentIsPromhttps).
func (m *Metrics) instrumentReference(path string, h http.Handler) http.Handler {
	return promhttp.InstrumentHandlerInFlight(m.inFlight,
		promhttp.InstrumentHandlerDuration(m.latency,
			promhttp.InstrumentHandlerCounter(m.requests.MustCurryWith(prometheus.Labels{"path": path}), h)))
}

// instrumented is the handler instrument returns.
type instrumented struct {
	next     http.Handler
	path     string
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inFlight prometheus.Gauge
	// ok and observer hold the series of code 200 on path and of the
	// latency once looked up (a lookup that races another finds the same
	// child: the vectors keep their children).
	ok       atomic.Pointer[prometheus.Counter]
	observer atomic.Pointer[prometheus.Observer]
}

func (i *instrumented) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// As promhttp's: the gauge is taken down also when next panics; the
	// counter and the histogram count only the requests it returns from.
	i.inFlight.Inc()
	defer i.inFlight.Dec()
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	i.next.ServeHTTP(sw, r)
	i.counter(sw.status).Inc()
	i.observe().Observe(time.Since(start).Seconds())
}

// counter is the requests counter's series of path and status.
func (i *instrumented) counter(status int) prometheus.Counter {
	code := statusCode(status)
	if code != "200" {
		return i.requests.WithLabelValues(i.path, code)
	}
	if c := i.ok.Load(); c != nil {
		return *c
	}
	c := i.requests.WithLabelValues(i.path, code)
	i.ok.Store(&c)
	return c
}

// observe is the latency's one series.
func (i *instrumented) observe() prometheus.Observer {
	if o := i.observer.Load(); o != nil {
		return *o
	}
	o := i.latency.WithLabelValues()
	i.observer.Store(&o)
	return o
}

// statusCode is the code label promhttp gives a status: 200 for none
// written (0), the number for 100 to 599, "unknown" for any other.
func statusCode(status int) string {
	switch {
	case status == 0 || status == http.StatusOK:
		return "200"
	case status >= 100 && status <= 599:
		return strconv.Itoa(status)
	}
	return "unknown"
}

// statusWriter records the status an answer was given, as promhttp's
// delegator does: the last WriteHeader's, 200 when Write comes first.
// Nothing under it asks its ResponseWriter for more than an
// http.ResponseWriter but through http.ResponseController, which Unwrap
// serves.
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.wroteHeader = true
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if !s.wroteHeader {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// The methods below are no-ops on a nil *Metrics (a Handler used without a
// Server).

func (m *Metrics) evaluationStarted() {
	if m != nil {
		m.evaluations.Inc()
	}
}

func (m *Metrics) evaluationDone() {
	if m != nil {
		m.evaluations.Dec()
	}
}

func (m *Metrics) panicked() {
	if m != nil {
		m.panics.Inc()
	}
}

func (m *Metrics) bodyRejected(reason string) {
	if m != nil {
		m.bodiesRejected.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) handshakeFailed() {
	if m != nil {
		m.handshakeErrors.Inc()
	}
}
