package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mutatis-dev/mutatis/chain"
)

// Paths of the endpoints.
const (
	PathMutate = "/mutate"
	// PathMutateFail and PathMutateIgnore evaluate only the policies with
	// that failurePolicy (an unset one is Fail).
	PathMutateFail   = "/mutate/fail"
	PathMutateIgnore = "/mutate/ignore"
	PathHealthz      = "/healthz"
	PathReadyz       = "/readyz"
	PathMetrics      = "/metrics"
	// PathStatusz serves Options.Status as JSON.
	PathStatusz = "/statusz"
)

// DefaultMaxVariableBytes is the default of Options.MaxVariableBytes: no
// real policy's variables hold a fraction of it, and it bounds what a
// policy whose variables double a string builds (1 GiB at a runtime cost
// of about 200 without it).
const DefaultMaxVariableBytes = 32 << 20

// DefaultShutdownTimeout bounds how long a shutdown waits for in-flight
// reviews (kube-apiserver's longest webhook timeout is 30s).
const DefaultShutdownTimeout = 30 * time.Second

// FailurePolicySplitter is a chain.Admitter that can also evaluate only the
// policies of one failure policy; *source.Engine is one. The server then
// also serves PathMutateFail and PathMutateIgnore.
type FailurePolicySplitter interface {
	Only(fp admissionregistrationv1.FailurePolicyType) chain.Admitter
}

// Options configure a Server.
type Options struct {
	// Admitter evaluates the reviews (required).
	Admitter chain.Admitter
	// Ready tells whether the policy sources are synced and every policy
	// compiled; nil means always ready. /readyz and /mutate consult it.
	Ready func() error
	// GetCertificate gives the serving certificate (required), e.g.
	// (*Keypair).GetCertificate.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// ClientCAs, when set, authenticate the API server: /mutate requires a
	// client certificate they verify. The probes and /metrics do not (the
	// kubelet presents no certificate); a certificate that is presented
	// must verify on every path.
	ClientCAs *x509.CertPool
	// MaxRequestBytes limits a review's body; zero means
	// DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// ExplainDryRun summarizes the trace of dry-run requests in warnings.
	ExplainDryRun bool
	// ShutdownTimeout bounds the wait for in-flight reviews at shutdown;
	// zero means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Metrics, nil for new ones. Give the same Metrics to the Evaluators'
	// engine.Config so that the MAP metrics are exported.
	Metrics *Metrics
	// Log receives server events; nil discards them.
	Log *slog.Logger
	// MaxInFlight bounds the reviews evaluated at once over all review
	// paths; more get HTTP 429 at once. Zero means no bound.
	MaxInFlight int
	// BodyReadTimeout bounds the time from a review's headers to the last
	// byte of its body (408 past it); zero means DefaultBodyReadTimeout,
	// negative no bound.
	BodyReadTimeout time.Duration
	// MaxBodyBytesInFlight bounds the bytes of reviews held at once: the
	// buffers of bodies being read, and the ReviewCharge of a review read
	// and not yet answered; a review that would take them past it gets
	// HTTP 429, one whose charge alone exceeds it HTTP 413. Zero means
	// DefaultBodyBudgetFactor times MaxRequestBytes, negative no bound.
	// Less than that refuses the most costly reviews of the largest size.
	MaxBodyBytesInFlight int64
	// MaxVariableBytes bounds the bytes the variables' values of one
	// policy's evaluation hold, and apart the bytes of the strings and
	// bytes its calls build (compiler.WithVariableBytesLimit); a variable
	// or expression past it fails to evaluate. Zero means
	// DefaultMaxVariableBytes, negative no bound.
	MaxVariableBytes int64
	// MaxReviewTimeout is the deadline of a review without ?timeout and
	// the largest a ?timeout may ask for; zero means
	// DefaultMaxReviewTimeout.
	MaxReviewTimeout time.Duration
	// DrainPeriod is how long a shutdown drains before it stops accepting
	// connections: /readyz answers 503 so that the pod leaves the Service,
	// and every HTTP/1.1 answer carries Connection: close so that no
	// client is left with a keep-alive connection that Shutdown would
	// close under a request it just sent. Zero skips the drain.
	DrainPeriod time.Duration
	// Status, when set, is served as JSON on /statusz: what the policy
	// sources have put into the Admitter (controller.Status in informer
	// mode), so that a client can wait until a change it made is in
	// effect. It returns nil until there is something to report (then
	// /statusz answers 503).
	Status func() any
}

// minHTTP2Streams is the least HTTP/2 stream limit Serve advertises
// (net/http's default is 250 per connection): more than kube-apiserver's default concurrency (APF's 600 seats,
// --max-requests-inflight 400 and --max-mutating-requests-inflight 200;
// each request waits on one webhook call at a time), and than the load
// generator's default --max-in-flight of 1,000.
const minHTTP2Streams = 1000

// http2Streams is the HTTP/2 stream limit of a connection of a server
// evaluating at most maxInFlight reviews at once (0: no bound):
// minHTTP2Streams, or maxInFlight when that is more. A client with more
// requests outstanding than the limit dials another connection, and
// net/http's transport (kube-apiserver's, the load generator's) dials one
// for each request waiting for a stream: under overload a storm of TLS
// handshakes, each about a millisecond of the server's CPU and its own
// buffers, just when the reviews queue. A stream past the in-flight bound
// costs a goroutine and its body, both bounded (the body-bytes budget and
// the connection's flow-control window), and is answered 429 at once.
func http2Streams(maxInFlight int) int {
	return max(maxInFlight, minHTTP2Streams)
}

// Server is the HTTPS webhook server.
type Server struct {
	opts    Options
	metrics *Metrics
	log     *slog.Logger
	handler http.Handler
	// budget holds the bytes of review bodies (MaxBodyBytesInFlight).
	budget *byteBudget
	// draining is set as a shutdown's drain begins.
	draining atomic.Bool
	// onShutdown, when set, is called as shutdown begins (tests).
	onShutdown func()
	// handshakeLogInterval: DefaultHandshakeLogInterval when zero (tests).
	handshakeLogInterval time.Duration
}

// NewServer checks o and returns a Server.
func NewServer(o Options) (*Server, error) {
	if o.Admitter == nil {
		return nil, errors.New("webhook: no Admitter")
	}
	if o.GetCertificate == nil {
		return nil, errors.New("webhook: no serving certificate")
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.BodyReadTimeout == 0 {
		o.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if o.MaxBodyBytesInFlight == 0 {
		o.MaxBodyBytesInFlight = DefaultBodyBudgetFactor * o.MaxRequestBytes
	}
	if o.MaxReviewTimeout <= 0 {
		o.MaxReviewTimeout = DefaultMaxReviewTimeout
	}
	if o.MaxVariableBytes == 0 {
		o.MaxVariableBytes = DefaultMaxVariableBytes
	}
	s := &Server{opts: o, metrics: o.Metrics, log: o.Log}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	var inFlight chan struct{}
	if o.MaxInFlight > 0 {
		inFlight = make(chan struct{}, o.MaxInFlight)
	}
	s.metrics.slots.Set(float64(o.MaxInFlight))
	if o.MaxBodyBytesInFlight > 0 {
		s.budget = newByteBudget(o.MaxBodyBytesInFlight, func(n int64) { s.metrics.bodyBytes.Set(float64(n)) })
		s.metrics.bodyBudget.Set(float64(o.MaxBodyBytesInFlight))
	}
	bodyTimeout := max(o.BodyReadTimeout, 0)
	handler := func(path string, a chain.Admitter) http.Handler {
		return s.metrics.instrument(path, &gate{
			h: &Handler{
				Admitter:          a,
				Ready:             o.Ready,
				MaxRequestBytes:   o.MaxRequestBytes,
				ExplainDryRun:     o.ExplainDryRun,
				RequireClientCert: o.ClientCAs != nil,
				InFlight:          inFlight,
				MaxTimeout:        o.MaxReviewTimeout,
				MaxVariableBytes:  o.MaxVariableBytes,
				Log:               s.log,
				metrics:           s.metrics,
			},
			limit:   o.MaxRequestBytes,
			timeout: bodyTimeout,
			budget:  s.budget,
			metrics: s.metrics,
		})
	}
	mux.Handle(PathMutate, handler(PathMutate, o.Admitter))
	// One webhook registration per failure policy (controller/) calls
	// these, so that each policy runs once per request.
	if split, ok := o.Admitter.(FailurePolicySplitter); ok {
		mux.Handle(PathMutateFail, handler(PathMutateFail, split.Only(admissionregistrationv1.Fail)))
		mux.Handle(PathMutateIgnore, handler(PathMutateIgnore, split.Only(admissionregistrationv1.Ignore)))
	}
	mux.HandleFunc(PathHealthz, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc(PathReadyz, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if s.draining.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: shutting down\n"))
			return
		}
		if o.Ready != nil {
			if err := o.Ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = fmt.Fprintf(w, "not ready: %v\n", err)
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle(PathMetrics, s.metrics.Handler())
	if o.Status != nil {
		mux.HandleFunc(PathStatusz, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
				return
			}
			st := o.Status()
			if st == nil {
				http.Error(w, "no status yet", http.StatusServiceUnavailable)
				return
			}
			body, err := json.Marshal(st)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(append(body, '\n'))
		})
	}
	s.handler = s.closeWhenDraining(mux)
	return s, nil
}

// Metrics returns the server's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Handler returns the endpoints without TLS (for embedding and tests).
func (s *Server) Handler() http.Handler { return s.handler }

// TLSConfig is the server's TLS configuration: TLS 1.2 or later, HTTP/2
// and HTTP/1.1, the certificate from GetCertificate, and client
// certificates verified against ClientCAs when set.
func (s *Server) TLSConfig() *tls.Config {
	cfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: s.opts.GetCertificate,
		NextProtos:     []string{"h2", "http/1.1"},
	}
	if s.opts.ClientCAs != nil {
		cfg.ClientCAs = s.opts.ClientCAs
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg
}

// ListenAndServe listens on addr and calls Serve.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// readHeaderTimeout bounds the time to read a request's headers.
const readHeaderTimeout = 10 * time.Second

// Serve serves HTTPS on ln until ctx is done, then shuts down gracefully:
// it drains for DrainPeriod (readiness down, HTTP/1.1 keep-alives ended
// answer by answer), then stops accepting connections (after those the
// listener's backlog holds), waits for every HTTP/1.1 request already on
// its way to reach a handler, and waits for the reviews in flight to be
// answered, the two waits together up to ShutdownTimeout. It returns nil
// after a graceful shutdown. ln is closed on return.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		TLSConfig:         s.TLSConfig(),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          newServerErrorLog(s.log, s.metrics, s.handshakeLogInterval),
		// Request contexts do not derive from ctx: cancelling ctx must let
		// in-flight reviews finish.
	}
	// One connection carries as many reviews as the server evaluates at
	// once and more (http2Streams): Go's default is 250 streams.
	srv.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: http2Streams(s.opts.MaxInFlight)}
	if s.opts.BodyReadTimeout > 0 {
		// The review paths bound their bodies themselves (gate); this
		// bounds the other paths' (the server discards up to 256 KiB of a
		// body its handler left unread).
		srv.ReadTimeout = readHeaderTimeout + s.opts.BodyReadTimeout
	}
	if s.onShutdown != nil {
		srv.RegisterOnShutdown(s.onShutdown)
	}
	pending := &unanswered{}
	srv.ConnState = pending.connState
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	srv.Handler = pending.reached(srv.Handler)
	fl := &finishingListener{Listener: ln, closed: make(chan struct{})}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(fl, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	deadline := time.Now().Add(s.opts.ShutdownTimeout)
	if d := s.opts.DrainPeriod; d > 0 {
		s.draining.Store(true)
		s.log.Info("shutting down: draining (readiness down, HTTP/1.1 keep-alives closed after each answer)", "drain", d.String())
		select {
		case <-time.After(d):
		case err := <-errc:
			return err
		}
		deadline = time.Now().Add(s.opts.ShutdownTimeout)
		// net/http's Shutdown drops a request it reads after it began
		// (it closes the connection unanswered): stop accepting first,
		// taking in the connections the kernel has queued, and let the
		// connections accepted bring their requests in.
		fl.finish(backlogQuiet, backlogMax)
		pending.settle(deadline)
	}
	s.log.Info("shutting down: waiting for in-flight reviews", "timeout", s.opts.ShutdownTimeout.String())
	sctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serveErr := <-errc; !errors.Is(serveErr, http.ErrServerClosed) && !errors.Is(serveErr, net.ErrClosed) && serveErr != nil && err == nil {
		err = serveErr
	}
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}

// closeWhenDraining makes every HTTP/1.x answer written during a drain
// carry Connection: close, also of requests that began before it: the
// server then closes the connection after the answer, and the client opens
// a new one for its next request instead of sending it on a connection
// Shutdown closes as idle (net/http clients do not retry a POST).
// SetKeepAlivesEnabled(false) would close the idle connections at once,
// under requests already on their way. HTTP/2 needs none of it: Shutdown
// sends GOAWAY, which tells clients which streams were not served.
func (s *Server) closeWhenDraining(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 1 {
			w = &drainWriter{ResponseWriter: w, draining: &s.draining}
		}
		h.ServeHTTP(w, r)
	})
}

// drainWriter adds Connection: close to an answer written while draining.
type drainWriter struct {
	http.ResponseWriter
	draining *atomic.Bool
	written  bool
}

func (d *drainWriter) header() {
	if !d.written {
		d.written = true
		if d.draining.Load() {
			d.ResponseWriter.Header().Set("Connection", "close")
		}
	}
}

func (d *drainWriter) WriteHeader(code int) {
	d.header()
	d.ResponseWriter.WriteHeader(code)
}

func (d *drainWriter) Write(b []byte) (int, error) {
	d.header()
	return d.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (d *drainWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// silentAfter is how long, at the end of a drain, a connection's client
// may have sent nothing while the server waited to read before the
// connection is no longer waited for: a client sends its TLS ClientHello
// as soon as it is connected and its request right after the handshake,
// and one that sends nothing must not hold the shutdown for
// ReadHeaderTimeout. A connection whose bytes are being read or that the
// server has not yet come to read (hundreds of TLS handshakes queued on a
// loaded machine take seconds) is waited for, up to the ShutdownTimeout;
// so is an idle keep-alive connection for the first silentAfter of its
// idleness, for a request its client may just have sent.
const silentAfter = time.Second

// backlogQuiet and backlogMax bound the accepting of the listener's backlog
// at the end of a drain: it goes on until no connection has been queued for
// backlogQuiet, at most backlogMax. Closing a listening socket resets the
// connections the kernel queued on it; over TLS their clients learn it in
// the handshake, before they have sent a request, but they are refused.
const (
	backlogQuiet = 50 * time.Millisecond
	backlogMax   = time.Second
)

type connKey struct{}

// unanswered tracks the HTTP/1.x connections whose request may have been
// read but has not reached a handler: accepted and not yet through their
// first request, active with a request being read, or idle (their next
// request may be on its way). HTTP/2 connections
// are not tracked: Shutdown's GOAWAY tells their clients which streams it
// did not serve.
type unanswered struct {
	conns sync.Map // net.Conn → *watchedConn (nil when the listener did not give one)
}

func (u *unanswered) connState(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		u.conns.Store(c, watched(c))
	case http.StateActive, http.StateIdle:
		if tc, ok := c.(*tls.Conn); ok && tc.ConnectionState().NegotiatedProtocol == "h2" {
			u.conns.Delete(c)
			return
		}
		u.conns.Store(c, watched(c))
	default:
		u.conns.Delete(c)
	}
}

// watched is the *watchedConn under c, nil if there is none.
func watched(c net.Conn) *watchedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	w, _ := c.(*watchedConn)
	return w
}

// reached marks the connection of a request that got to a handler: net/http
// answers it also once Shutdown began.
func (u *unanswered) reached(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(net.Conn); ok && r.ProtoMajor == 1 {
			u.conns.Delete(c)
		}
		h.ServeHTTP(w, r)
	})
}

// settle waits until every tracked connection has brought its request to a
// handler or closed, or been silent for silentAfter, at most until
// deadline.
func (u *unanswered) settle(deadline time.Time) {
	for time.Now().Before(deadline) {
		waiting := false
		u.conns.Range(func(_, v any) bool {
			w, _ := v.(*watchedConn)
			if w == nil || !w.silent(silentAfter) {
				waiting = true
				return false
			}
			return true
		})
		if !waiting {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// watchedConn is an accepted connection that records how long the server
// has been waiting to read from it.
type watchedConn struct {
	net.Conn
	// readingSince is the UnixNano at which the Read under way began, 0
	// when none is.
	readingSince atomic.Int64
}

func (w *watchedConn) Read(b []byte) (int, error) {
	w.readingSince.Store(time.Now().UnixNano())
	defer w.readingSince.Store(0)
	return w.Conn.Read(b)
}

// silent tells whether a Read has been waiting for the client for d.
func (w *watchedConn) silent(d time.Duration) bool {
	since := w.readingSince.Load()
	return since != 0 && time.Since(time.Unix(0, since)) >= d
}

// finishingListener is a listener that can be closed before Shutdown closes
// it, after the connections its backlog holds have been accepted.
type finishingListener struct {
	net.Listener
	// stopBy, when not zero, is the UnixNano after which no connection is
	// accepted (finish was called).
	stopBy atomic.Int64
	once   sync.Once
	err    error
	closed chan struct{} // closed with the listener
}

type deadliner interface{ SetDeadline(time.Time) error }

// Accept accepts a connection; after finish, only one the backlog holds.
func (l *finishingListener) Accept() (net.Conn, error) {
	dl, canWait := l.Listener.(deadliner)
	if stop := l.stopBy.Load(); stop != 0 {
		if !canWait || time.Now().UnixNano() >= stop {
			_ = l.Close()
			return nil, net.ErrClosed
		}
		_ = dl.SetDeadline(time.Unix(0, min(time.Now().Add(backlogQuiet).UnixNano(), stop)))
	}
	c, err := l.Listener.Accept()
	if err != nil {
		if l.stopBy.Load() != 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			_ = l.Close()
			return nil, net.ErrClosed
		}
		return nil, err
	}
	return &watchedConn{Conn: c}, nil
}

// finish makes Accept take in the connections queued until none has been
// for quiet, at most for max, and then close the listener; it returns when
// the listener is closed.
func (l *finishingListener) finish(quiet, max time.Duration) {
	l.stopBy.Store(time.Now().Add(max).UnixNano())
	dl, ok := l.Listener.(deadliner)
	if !ok {
		_ = l.Close()
		return
	}
	// Wakes an Accept waiting without a deadline.
	_ = dl.SetDeadline(time.Now().Add(quiet))
	select {
	case <-l.closed:
	case <-time.After(max + quiet):
		_ = l.Close() // the server no longer accepts
	}
}

func (l *finishingListener) Close() error {
	l.once.Do(func() {
		l.err = l.Listener.Close()
		close(l.closed)
	})
	return l.err
}
