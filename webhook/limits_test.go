package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
)

// The tests of this file drive a real Server (NewServer, as `mutatis serve`
// builds it) over TLS on 127.0.0.1 with the attacks of the review of the
// webhook's defaults: bounded connection counts, and every loop stops by
// itself within seconds.

// protocols are the two HTTP versions kube-apiserver and attackers speak.
var protocols = []struct {
	name   string
	client func(f *tlsFixture) *http.Client
}{
	{"HTTP/1.1", func(f *tlsFixture) *http.Client {
		return &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: f.roots},
			// A non-nil empty map turns HTTP/2 off.
			TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
			MaxIdleConnsPerHost: 1000,
		}}
	}},
	{"HTTP/2", func(f *tlsFixture) *http.Client {
		return &http.Client{Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: f.roots},
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 1000,
		}}
	}},
}

// passThroughServer is a Server that admits every review unchanged, with
// adjust applied to its options.
func passThroughServer(t *testing.T, f *tlsFixture, adjust func(*Options)) *Server {
	t.Helper()
	return newServer(t, nil, f, func(o *Options) {
		o.Admitter = passThrough
		adjust(o)
	})
}

// stalls are n requests that announce contentLength bytes, send prefix and
// wait for ctx: a client that stops sending its body.
type stalls struct {
	answered atomic.Int32
	mu       sync.Mutex
	codes    map[int]int
	wg       sync.WaitGroup
}

func startStalls(ctx context.Context, c *http.Client, url string, n int, contentLength int64, prefix []byte) *stalls {
	s := &stalls{codes: map[int]int{}}
	s.add(ctx, c, url, n, contentLength, prefix)
	return s
}

// add starts n more stalls.
func (s *stalls) add(ctx context.Context, c *http.Client, url string, n int, contentLength int64, prefix []byte) {
	for range n {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			pr, pw := io.Pipe()
			go func() {
				_, _ = pw.Write(prefix)
				<-ctx.Done()
				pw.CloseWithError(ctx.Err())
			}()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, pr)
			if err != nil {
				return
			}
			req.ContentLength = contentLength
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			s.answered.Add(1)
			s.mu.Lock()
			s.codes[resp.StatusCode]++
			s.mu.Unlock()
		}()
	}
}

func (s *stalls) code(c int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.codes[c]
}

// waitFor polls cond every 5ms for at most two minutes: the bound only
// ends a test that would otherwise hang; under -race on a loaded machine
// hundreds of TLS handshakes took 11s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// validReview posts minimalReview and checks that it is admitted; it
// returns how long the answer took.
func validReview(t *testing.T, c *http.Client, url string) time.Duration {
	t.Helper()
	began := time.Now()
	code, body := post(t, c, url+PathMutate+"?timeout=10s", []byte(minimalReview))
	took := time.Since(began)
	if code != http.StatusOK {
		t.Fatalf("a valid review during the attack: HTTP %d %s, want 200", code, body)
	}
	var rv admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &rv); err != nil || rv.Response == nil || !rv.Response.Allowed || rv.Response.UID != "u1" {
		t.Fatalf("a valid review during the attack: %s (%v)", body, err)
	}
	return took
}

// TestStalledBodiesDoNotStarveReviews: 400 requests (the default
// --max-in-flight) announce 11 bytes and send 10, over 400 HTTP/1.1
// connections or as 400 streams of HTTP/2. A body being read holds no
// in-flight slot, so a valid review is answered (not 429) while they stall,
// before their body timeout.
func TestStalledBodiesDoNotStarveReviews(t *testing.T) {
	const n = DefaultMaxInFlight
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			f := newTLS(t)
			s := passThroughServer(t, f, func(o *Options) {
				o.MaxInFlight = DefaultMaxInFlight
				// Longer than the 400 handshakes take on a loaded machine
				// under -race (11s seen) and waitFor's bound: the stalls
				// must outlast them. The test ends them itself.
				o.BodyReadTimeout = 10 * time.Minute
			})
			srv := start(t, s)
			ctx, cancel := context.WithCancel(context.Background())
			attacker := proto.client(f)
			began := time.Now()
			st := &stalls{codes: map[int]int{}}
			t.Cleanup(func() {
				cancel()
				st.wg.Wait()
				attacker.CloseIdleConnections()
			})
			// Started a batch at a time: 400 TLS handshakes at once, each
			// timed from its connection's accept, outlast the server's
			// handshake timeout (ReadHeaderTimeout, 10s) under -race on a
			// loaded machine, and a stall whose handshake fails never
			// reaches the server. Every stalled body of a batch has
			// reserved its 12-byte buffer before the next batch starts.
			const batch = 20
			for started := batch; started <= n; started += batch {
				st.add(ctx, attacker, srv.url+PathMutate, batch, 11, []byte(`{"apiVersi`))
				waitFor(t, "the stalled bodies to reach the server", func() bool { return s.budget.used.Load() == int64(started)*12 })
			}
			t.Logf("%d stalled requests in %v", n, time.Since(began))

			took := validReview(t, f.client(), srv.url)
			t.Logf("a valid review was answered in %v during the stall", took)
			// Answered before the stalls' body timeout: none of them has
			// been answered yet.
			if a := st.answered.Load(); a != 0 {
				t.Fatalf("%d stalled requests answered (after %v), want the valid review answered while all stall", a, time.Since(began))
			}
			text := scrape(t, s)
			for _, want := range []string{
				"mutatis_webhook_evaluations_in_flight 0",
				"mutatis_webhook_evaluation_slots 400",
				"mutatis_webhook_body_bytes_in_use 4800",
				"mutatis_webhook_requests_in_flight 400",
			} {
				if !strings.Contains(text, want+"\n") {
					t.Errorf("/metrics lacks %q", want)
				}
			}
		})
	}
}

// scrape returns /metrics of s.
func scrape(t *testing.T, s *Server) string {
	t.Helper()
	rec := serveOnce(s.Handler(), http.MethodGet, PathMetrics, "", nil)
	return rec.Body.String()
}

// TestStalledBodyTimesOut: a body that stops arriving is answered 408 once
// --body-read-timeout passed since its headers, and counted.
func TestStalledBodyTimesOut(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			f := newTLS(t)
			s := passThroughServer(t, f, func(o *Options) {
				o.BodyReadTimeout = 200 * time.Millisecond
			})
			srv := start(t, s)
			// The stalls end at the body timeout; ctx only stops them if
			// the server does not, long after waitFor gave up.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			c := proto.client(f)
			defer c.CloseIdleConnections()
			st := startStalls(ctx, c, srv.url+PathMutate, 5, 11, []byte("{}"))
			waitFor(t, "the stalled bodies to be answered", func() bool { return st.answered.Load() == 5 })
			if got := st.code(http.StatusRequestTimeout); got != 5 {
				t.Errorf("%v, want 5 answered 408", st.codes)
			}
			if text := scrape(t, s); !strings.Contains(text, `mutatis_webhook_body_reads_rejected_total{reason="timeout"} 5`) {
				t.Errorf("/metrics lacks 5 timed-out bodies:\n%s", text)
			}
			waitFor(t, "the budget to be released", func() bool { return s.budget.used.Load() == 0 })
		})
	}
}

// TestStalledBodiesStayWithinTheBudget: 40 requests announce a body of
// the limit and send all of it but its last byte, then stall. The bytes
// the server holds for them stay within --max-body-bytes-in-flight: the
// bodies that do not fit are answered 429 at once, and a valid review
// still fits.
func TestStalledBodiesStayWithinTheBudget(t *testing.T) {
	const (
		n      = 40
		limit  = 256 << 10
		budget = 2 << 20
	)
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			f := newTLS(t)
			s := passThroughServer(t, f, func(o *Options) {
				o.MaxRequestBytes = limit
				o.MaxBodyBytesInFlight = budget
				// The held bodies must stall until the valid review is
				// answered, however long 40 handshakes take under -race on a
				// loaded machine: one timed out would be answered 408, not
				// 429. The test ends them itself.
				o.BodyReadTimeout = 10 * time.Minute
			})
			srv := start(t, s)
			ctx, cancel := context.WithCancel(context.Background())
			attacker := proto.client(f)
			st := startStalls(ctx, attacker, srv.url+PathMutate, n, limit, bytes.Repeat([]byte(" "), limit-1))
			t.Cleanup(func() {
				cancel()
				st.wg.Wait()
				attacker.CloseIdleConnections()
			})
			// Settled: every request is either refused or holds a whole
			// buffer (limit+1 bytes).
			held := func() int64 { return s.budget.used.Load() / (limit + 1) }
			waitFor(t, "the stalls to settle", func() bool {
				used := s.budget.used.Load()
				return used%(limit+1) == 0 && int64(st.answered.Load())+used/(limit+1) == n
			})
			if peak := s.budget.peak.Load(); peak > budget {
				t.Errorf("body bytes peaked at %d, over the budget of %d", peak, budget)
			}
			if got := st.code(http.StatusTooManyRequests); got != n-int(held()) || got == 0 {
				t.Errorf("%v answered, %d held; want every body that does not fit refused with 429", st.codes, held())
			}
			t.Logf("%d bodies held (%d bytes, peak %d, budget %d), %d refused", held(), s.budget.used.Load(), s.budget.peak.Load(), budget, st.code(http.StatusTooManyRequests))
			took := validReview(t, f.client(), srv.url)
			t.Logf("a valid review was answered in %v", took)
			text := scrape(t, s)
			for _, want := range []string{
				`mutatis_webhook_body_bytes_budget 2.097152e+06`,
				`mutatis_webhook_body_reads_rejected_total{reason="budget"}`,
			} {
				if !strings.Contains(text, want) {
					t.Errorf("/metrics lacks %q", want)
				}
			}
		})
	}
}

// TestAnnouncedBodyOverTheLimit: a Content-Length over --max-request-bytes
// is refused with 413 before a byte of the body is read.
func TestAnnouncedBodyOverTheLimit(t *testing.T) {
	s := passThroughServer(t, newTLS(t), func(o *Options) {
		o.MaxRequestBytes = 1024
	})
	var read atomic.Int64
	body := readCounter{r: strings.NewReader(strings.Repeat(" ", 2048)), n: &read}
	req, err := http.NewRequest(http.MethodPost, PathMutate, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 2048
	req.Header.Set("Content-Type", "application/json")
	rec := httptestRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), `"reason":"RequestEntityTooLarge"`) || !strings.Contains(rec.Body.String(), "larger than 1024 bytes (--max-request-bytes)") {
		t.Errorf("HTTP %d %s, want 413", rec.Code, rec.Body)
	}
	if n := read.Load(); n != 0 {
		t.Errorf("%d bytes of the body were read", n)
	}
	if text := scrape(t, s); !strings.Contains(text, `mutatis_webhook_body_reads_rejected_total{reason="too_large"} 1`) {
		t.Error("/metrics does not count the body refused")
	}
}

type readCounter struct {
	r io.Reader
	n *atomic.Int64
}

func (c readCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestReadBodyWithinBudget: the buffer's capacity is reserved before it is
// allocated, at most twice the bytes received beyond the presized buffer,
// and a read that does not fit fails with errBodyBudget holding what it
// reserved.
func TestReadBodyWithinBudget(t *testing.T) {
	body := strings.Repeat("x", 300<<10)
	b := newByteBudget(1<<20, nil)
	got, reserved, err := readBodyWithin(strings.NewReader(body), int64(len(body)), 1<<20, b)
	if err != nil || string(got) != body {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if reserved != int64(cap(got)) || reserved != b.used.Load() || reserved != int64(len(body))+1 {
		t.Errorf("reserved %d, in use %d, capacity %d; want the announced length + 1 (%d)", reserved, b.used.Load(), cap(got), len(body)+1)
	}
	b.release(reserved)

	small := newByteBudget(100<<10, nil)
	_, reserved, err = readBodyWithin(strings.NewReader(body), int64(len(body)), 1<<20, small)
	if !errors.Is(err, errBodyBudget) || reserved > 100<<10 || reserved != small.used.Load() {
		t.Errorf("over the budget: reserved %d (in use %d), %v; want errBodyBudget within 100 KiB", reserved, small.used.Load(), err)
	}
	// Announced and never sent: the presized buffer only.
	b = newByteBudget(1<<30, nil)
	_, reserved, _ = readBodyWithin(iotestTimeout{}, 3<<20, 3<<20, b)
	if reserved != presizeLimit+1 {
		t.Errorf("a body announced and not sent holds %d bytes, want %d", reserved, presizeLimit+1)
	}
}

// iotestTimeout fails its reads as a connection past its read deadline.
type iotestTimeout struct{}

func (iotestTimeout) Read([]byte) (int, error) { return 0, errors.New("i/o timeout") }

func httptestRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

// TestEvaluationHoldsItsWeight: a review read and being evaluated holds
// its ReviewCharge of the budget, until it is answered; one whose charge
// does not fit is refused with 429 before it is decoded, and one whose
// charge exceeds the whole budget with 413.
func TestEvaluationHoldsItsWeight(t *testing.T) {
	body := []byte(minimalReview)
	weight := ReviewCharge(body)
	held := make(chan int64, 1)
	var s *Server
	s = newServer(t, nil, newTLS(t), func(o *Options) {
		o.Admitter = fakeAdmitter(func(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
			held <- s.budget.used.Load()
			return passThrough(ctx, a)
		})
		o.MaxRequestBytes = 1 << 20
		o.MaxBodyBytesInFlight = weight
	})
	if rec := serveOnce(s.Handler(), http.MethodPost, PathMutate, "application/json", body); rec.Code != http.StatusOK {
		t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
	}
	if got := <-held; got != weight {
		t.Errorf("the review held %d bytes while evaluated, want %d", got, weight)
	}
	if used := s.budget.used.Load(); used != 0 {
		t.Errorf("%d bytes still held after the answer", used)
	}
	// One byte held by another review: the review is read but not
	// evaluated.
	s.budget.used.Store(1)
	rec := serveOnce(s.Handler(), http.MethodPost, PathMutate, "application/json", body)
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "--max-body-bytes-in-flight") || len(held) != 0 {
		t.Errorf("HTTP %d %s, want 429 without evaluation", rec.Code, rec.Body)
	}
	// Held by nothing else, a review whose charge exceeds the budget would
	// never fit: 413, not "retry".
	s.budget.used.Store(0)
	s.budget.max = weight - 1
	rec = serveOnce(s.Handler(), http.MethodPost, PathMutate, "application/json", body)
	if want := fmt.Sprintf("the review would hold %d bytes while evaluated (7 objects and arrays, 16 values, 0 containers without kube-apiserver's defaults, %d bytes), more than the whole body-bytes budget of %d bytes (--max-body-bytes-in-flight)", weight, len(body), weight-1); rec.Code != http.StatusRequestEntityTooLarge || statusBody(t, rec).Message != want || len(held) != 0 {
		t.Errorf("HTTP %d %s, want 413 %q", rec.Code, rec.Body, want)
	}
}

// TestEvaluationOutlastsTheBodyTimeout: the body read's deadline bounds
// the body only. An evaluation that lasts well past it is answered 200,
// its context not cancelled, over HTTP/1.1 and over HTTP/2, where the
// gate leaves the stream's deadline set once the body has been read to its
// end.
func TestEvaluationOutlastsTheBodyTimeout(t *testing.T) {
	const timeout = 50 * time.Millisecond
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			f := newTLS(t)
			s := newServer(t, nil, f, func(o *Options) {
				o.BodyReadTimeout = timeout
				o.Admitter = fakeAdmitter(func(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
					// Several body timeouts, so that the deadline has fired.
					time.Sleep(6 * timeout)
					if err := ctx.Err(); err != nil {
						return chain.Result{}, fmt.Errorf("the review's context ended during the evaluation: %w", err)
					}
					return passThrough(ctx, a)
				})
			})
			srv := start(t, s)
			c := proto.client(f)
			defer c.CloseIdleConnections()
			for range 3 {
				validReview(t, c, srv.url)
			}
		})
	}
}
