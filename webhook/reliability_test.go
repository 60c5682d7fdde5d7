package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// infoLogger logs at Info, as `mutatis serve` does.
func infoLogger() (*slog.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo})), buf
}

// TestPanicIsAnsweredNotDropped: a panic while answering a review is
// recovered: HTTP 500 with a Status (kube-apiserver applies the
// failurePolicy), logged with its stack at Error, counted; the connection
// is not dropped.
func TestPanicIsAnsweredNotDropped(t *testing.T) {
	f := newTLS(t)
	log, buf := infoLogger()
	s := newServer(t, nil, f, func(o *Options) {
		o.Admitter = fakeAdmitter(func(context.Context, *matching.Attributes) (chain.Result, error) {
			panic("boom in the engine")
		})
		o.Log = log
	})
	srv := start(t, s)
	resp, err := f.client().Post(srv.url+PathMutate, "application/json", strings.NewReader(minimalReview))
	if err != nil {
		t.Fatalf("the connection was dropped: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), `"reason":"InternalError"`) || !strings.Contains(string(body), "boom in the engine") {
		t.Errorf("HTTP %d %s, want 500 InternalError", resp.StatusCode, body)
	}
	logged := buf.String()
	if !strings.Contains(logged, "level=ERROR") || !strings.Contains(logged, "panic answering a review") || !strings.Contains(logged, "goroutine ") {
		t.Errorf("the panic is not logged at Error with its stack:\n%s", logged)
	}
	if text := scrape(t, s); !strings.Contains(text, "mutatis_webhook_panics_total 1\n") || !strings.Contains(text, "mutatis_webhook_evaluations_in_flight 0\n") {
		t.Error("/metrics does not count the panic (or the slot was not given back)")
	}
}

// TestServerErrorsAreLogged: net/http's own errors reach a logger at Info:
// a failed TLS handshake at Warn, once per interval with the count of the
// ones suppressed.
func TestServerErrorsAreLogged(t *testing.T) {
	f := newTLS(t)
	log, buf := infoLogger()
	s := passThroughServer(t, f, func(o *Options) {
		o.Log = log
	})
	s.handshakeLogInterval = time.Hour
	srv := start(t, s)
	addr := strings.TrimPrefix(srv.url, "https://")
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")) // not TLS
		_, _ = io.ReadAll(c)
		c.Close()
	}
	// Each failure is counted before it is logged (serverErrorLog.Write),
	// on the server's goroutine of its connection: the count reaching 3
	// does not mean the one line logged is written yet.
	waitFor(t, "three failed handshakes, counted and logged", func() bool {
		return strings.Contains(scrape(t, s), "mutatis_webhook_tls_handshake_errors_total 3\n") && strings.Contains(buf.String(), "TLS handshake failed")
	})
	if logged := buf.String(); strings.Count(logged, "TLS handshake failed") != 1 || !strings.Contains(logged, "level=WARN") || !strings.Contains(logged, "client sent an HTTP request to an HTTPS server") {
		t.Errorf("want one Warn line for three handshake failures in an interval:\n%s", logged)
	}
}

func TestHandshakeLogSuppression(t *testing.T) {
	log, buf := infoLogger()
	now := time.Unix(0, 0)
	l := &serverErrorLog{log: log, interval: 10 * time.Second, now: func() time.Time { return now }}
	line := []byte("http: TLS handshake error from 10.0.0.1:5555: EOF\n")
	for range 5 {
		_, _ = l.Write(line)
		now = now.Add(time.Second)
	}
	now = now.Add(10 * time.Second)
	_, _ = l.Write(line)
	_, _ = l.Write([]byte("http2: server: error reading preface from client 10.0.0.1:5555: bogus greeting\n"))
	logged := buf.String()
	if n := strings.Count(logged, "TLS handshake failed"); n != 2 || !strings.Contains(logged, "suppressed=4") {
		t.Errorf("want 2 lines, the second with suppressed=4:\n%s", logged)
	}
	if !strings.Contains(logged, `level=WARN msg="HTTP server error" error="http2: server: error reading preface`) {
		t.Errorf("other server errors are not logged at Warn:\n%s", logged)
	}
}

// TestDefaultAndMaximumDeadline: a review served by a Server is evaluated
// under a deadline also when kube-apiserver sends no ?timeout, and a
// ?timeout over 30s is clamped.
func TestDefaultAndMaximumDeadline(t *testing.T) {
	deadlines := make(chan time.Duration, 1)
	s := newServer(t, nil, newTLS(t), func(o *Options) {
		o.Admitter = fakeAdmitter(func(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
			d, ok := ctx.Deadline()
			if !ok {
				return chain.Result{}, errors.New("no deadline")
			}
			deadlines <- time.Until(d)
			return passThrough(ctx, a)
		})
	})
	for _, tc := range []struct {
		query string
		want  time.Duration
	}{
		{"", DefaultMaxReviewTimeout},
		{"?timeout=1h", DefaultMaxReviewTimeout},
		{"?timeout=2s", 2 * time.Second},
	} {
		rec := serveOnce(s.Handler(), http.MethodPost, PathMutate+tc.query, "application/json", []byte(minimalReview))
		if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "no deadline") {
			t.Fatalf("%q: HTTP %d %s", tc.query, rec.Code, rec.Body)
		}
		if d := <-deadlines; d > tc.want || d < tc.want-5*time.Second {
			t.Errorf("%q: deadline in %v, want %v", tc.query, d, tc.want)
		}
	}
}

// TestEvaluationStopsAtTheDefaultDeadline: without ?timeout, an evaluation
// that would not end is stopped at the server's deadline, as ?timeout
// stops it.
func TestEvaluationStopsAtTheDefaultDeadline(t *testing.T) {
	s := newServer(t, nil, newTLS(t), func(o *Options) {
		o.Admitter = fakeAdmitter(func(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
			<-ctx.Done()
			return chain.Result{}, ctx.Err()
		})
		o.MaxReviewTimeout = 50 * time.Millisecond
	})
	done := make(chan int, 1)
	go func() {
		done <- serveOnce(s.Handler(), http.MethodPost, PathMutate, "application/json", []byte(minimalReview)).Code
	}()
	select {
	case code := <-done:
		if code != http.StatusOK {
			t.Errorf("HTTP %d, want 200 with a denial", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the evaluation was not stopped")
	}
}

// TestGracefulShutdownLosesNoRequests: clients post reviews back to back
// over keep-alive connections while the server shuts down. Over HTTP/1.1
// the server used to close connections it saw idle under requests already
// sent (the client gets EOF: a POST is not retried). With the drain, every
// request sent is answered; the only errors are refused connections after
// the listener closed.
func TestGracefulShutdownLosesNoRequests(t *testing.T) {
	const clients = 16
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			f := newTLS(t)
			s := passThroughServer(t, f, func(o *Options) {
				o.DrainPeriod = 300 * time.Millisecond
				o.ShutdownTimeout = 10 * time.Second
			})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			url := "https://" + ln.Addr().String()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			served := make(chan error, 1)
			go func() { served <- s.Serve(ctx, ln) }()

			c := proto.client(f)
			defer c.CloseIdleConnections()
			var ok, refused, lost atomic.Int32
			var lostErrs sync.Map
			var cancelled atomic.Int64 // UnixNano of the cancel, read by the clients
			cancelled.Store(time.Now().Add(time.Hour).UnixNano())
			// Every client stops by itself: at the first request not sent
			// after the listener closed, or (should that never come) here.
			stop := time.Now().Add(3 * time.Minute)
			var wg sync.WaitGroup
			for range clients {
				wg.Go(func() {
					for time.Now().Before(stop) {
						// Lost is a request written and not answered; one that
						// fails before it is written (the dial, or the TLS
						// handshake of a connection the closing listener
						// reset) was never sent.
						resp, wrote, err := postTraced(c, url+PathMutate)
						if err != nil {
							var op *net.OpError
							if !wrote || errors.As(err, &op) && op.Op == "dial" {
								refused.Add(1) // nothing was sent: the server is gone
								return
							}
							lost.Add(1)
							lostErrs.Store(err.Error()+" at "+time.Since(time.Unix(0, cancelled.Load())).String(), true)
							continue
						}
						body, err := io.ReadAll(resp.Body)
						resp.Body.Close()
						if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"allowed":true`)) {
							lost.Add(1)
							lostErrs.Store(resp.Status+" "+string(body), true)
							continue
						}
						ok.Add(1)
					}
				})
			}
			waitFor(t, "load", func() bool { return ok.Load() > 200 })
			cancelled.Store(time.Now().UnixNano())
			cancel()
			// Readiness goes down first, and stays down. Asked of the
			// server's handler, not over a new TLS connection: one probe's
			// handshake under -race on a loaded machine may outlast the
			// 300ms drain, after which the listener refuses it.
			waitFor(t, "/readyz to fail", func() bool {
				return serveOnce(s.Handler(), http.MethodGet, PathReadyz, "", nil).Code == http.StatusServiceUnavailable
			})
			wg.Wait()
			if err := <-served; err != nil {
				t.Fatalf("Serve: %v", err)
			}
			t.Logf("%d answered, %d not sent after the listener closed, %d lost", ok.Load(), refused.Load(), lost.Load())
			if lost.Load() != 0 {
				lostErrs.Range(func(k, _ any) bool { t.Errorf("lost: %v", k); return true })
			}
		})
	}
}

// postTraced posts minimalReview to url and tells whether the request was
// written: an error before it was (the dial, or the TLS handshake of a
// connection a closing listener reset) means nothing was sent.
func postTraced(c *http.Client, url string) (resp *http.Response, wrote bool, err error) {
	var w atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { w.Store(true) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost, url, strings.NewReader(minimalReview))
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err = c.Do(req)
	return resp, w.Load(), err
}

// TestShutdownAnswersEveryHTTP1RequestRead: 400 HTTP/1.1 clients, each on
// its own keep-alive connections as kube-apiserver's webhook client is,
// post reviews back to back while the server shuts down. A request written
// and not answered is lost: kube-apiserver does not retry a POST. The
// server used to give the connections it had accepted one second to bring
// their requests in before Shutdown, which drops a request it reads after
// it began; with hundreds of TLS handshakes queued on a loaded machine
// that second was not enough (up to 117 lost per run): here every
// handshake from the shutdown on takes longer than it. It also closed the
// keep-alive connections it saw idle as their clients sent on them.
func TestShutdownAnswersEveryHTTP1RequestRead(t *testing.T) {
	const clients = 150
	f := newTLS(t)
	var shuttingDown atomic.Bool
	s := passThroughServer(t, f, func(o *Options) {
		o.DrainPeriod = 200 * time.Millisecond
		o.ShutdownTimeout = 20 * time.Second
		getCertificate := o.GetCertificate
		o.GetCertificate = func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if shuttingDown.Load() {
				time.Sleep(2 * time.Second)
			}
			return getCertificate(h)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + ln.Addr().String() + PathMutate
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()

	var ok, notSent, lost atomic.Int32
	var lostErrs sync.Map
	// Every client stops by itself: at the first request not sent after
	// the listener closed, or (should that never come) here.
	stop := time.Now().Add(3 * time.Minute)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			c := &http.Client{Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: f.roots},
				// HTTP/1.1 only, as kube-apiserver calls a Service webhook.
				ForceAttemptHTTP2: false,
				TLSNextProto:      map[string]func(string, *tls.Conn) http.RoundTripper{},
			}}
			defer c.CloseIdleConnections()
			for time.Now().Before(stop) {
				resp, wrote, err := postTraced(c, url)
				if err != nil {
					if !wrote {
						notSent.Add(1) // refused, or reset in the TLS handshake: the server is gone
						return
					}
					lost.Add(1)
					lostErrs.Store(err.Error(), true)
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"allowed":true`)) {
					lost.Add(1)
					lostErrs.Store(fmt.Sprintf("%s %s %v", resp.Status, body, err), true)
					continue
				}
				ok.Add(1)
			}
		})
	}
	began := time.Now()
	waitFor(t, "every client to be answered", func() bool { return ok.Load() >= clients })
	loaded := time.Now()
	shuttingDown.Store(true)
	cancel()
	wg.Wait()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	t.Logf("%d answered, %d not sent after the listener closed, %d written and not answered; load %v, shutdown %v", ok.Load(), notSent.Load(), lost.Load(), loaded.Sub(began).Round(time.Millisecond), time.Since(loaded).Round(time.Millisecond))
	if lost.Load() != 0 {
		lostErrs.Range(func(k, _ any) bool { t.Errorf("lost: %v", k); return true })
	}
}

// TestFinishTakesTheBacklogIn: at the end of a drain the connections the
// kernel has queued on the listener are accepted, not reset by its close;
// then the listener is closed.
func TestFinishTakesTheBacklogIn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &finishingListener{Listener: ln, closed: make(chan struct{})}
	const queued = 5
	for range queued {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	finished := make(chan struct{})
	go func() {
		fl.finish(backlogQuiet, 5*time.Second)
		close(finished)
	}()
	waitFor(t, "finish to begin", func() bool { return fl.stopBy.Load() != 0 })
	accepted := 0
	for {
		c, err := fl.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Accept: %v, want net.ErrClosed once the backlog is in", err)
			}
			break
		}
		if _, ok := c.(*watchedConn); !ok {
			t.Errorf("Accept gave a %T, want a *watchedConn", c)
		}
		c.Close()
		accepted++
	}
	<-finished
	if accepted != queued {
		t.Errorf("accepted %d of the %d connections queued", accepted, queued)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts connections after finish")
	}
}
