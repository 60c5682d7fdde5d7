package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/webhook"
)

// BenchmarkHandler measures what the webhook spends on one review of the
// load fixture (testdata/pod.yaml against the 20 policies of
// testdata/policies) without the network: decoding the AdmissionReview,
// the engine, the response patch and its check, encoding. `make load`
// measures the same work over loopback TLS and HTTP/2 at fixed rates; the
// difference is the transport.
//
//	go test -run='^$' -bench=Handler -benchmem -cpuprofile cpu.out ./test/load
func BenchmarkHandler(b *testing.B) {
	ctx := context.Background()
	h, reviews := fixtureReviews(ctx, b)
	send := func(seq int) *httptest.ResponseRecorder {
		return postReview(ctx, h, reviews.Body(reviews.UID(seq)))
	}
	if rec := send(0); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"patch":`) {
		b.Fatalf("HTTP %d: %s", rec.Code, rec.Body.String())
	}
	b.ReportAllocs()
	seq := 0
	for b.Loop() {
		seq++
		send(seq)
	}
}

// fixtureHandler is the webhook handler of a server of the 20 policies of
// testdata/policies (no TLS, no network) and the load fixture's pod
// (testdata/pod.yaml).
func fixtureHandler(ctx context.Context, tb testing.TB) (http.Handler, *unstructured.Unstructured) {
	tb.Helper()
	noCert := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, errors.New("no TLS here") }
	srv, _, err := newServer(ctx, ServerOptions{Policies: []string{"testdata/policies"}}, slog.New(slog.DiscardHandler), noCert)
	if err != nil {
		tb.Fatal(err)
	}
	obj, err := ReadObject(ctx, "testdata/pod.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	return srv.Handler(), obj
}

// fixtureReviews is fixtureHandler's handler and the Reviews of its pod.
func fixtureReviews(ctx context.Context, tb testing.TB) (http.Handler, *Reviews) {
	tb.Helper()
	h, obj := fixtureHandler(ctx, tb)
	reviews, err := NewReviews(obj, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return h, reviews
}

// postReview sends one AdmissionReview body to h's mutate path and
// returns the recorded answer.
func postReview(ctx context.Context, h http.Handler, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, webhook.PathMutate+"?timeout=10s", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// BenchmarkVerifyAnswer measures the generator's check of the webhook's
// real answer to the load fixture (a 6 KB AdmissionReview): in full
// (Expect.Verify, what every answer cost before) and through answers,
// which accepts an answer equal but for the uid to one it verified.
//
//	go test -run='^$' -bench=VerifyAnswer -benchmem ./test/load
func BenchmarkVerifyAnswer(b *testing.B) {
	ctx := context.Background()
	h, reviews := fixtureReviews(ctx, b)
	const n = 64
	bodies, uids := make([][]byte, n), make([]string, n)
	for i := range n {
		uids[i] = reviews.UID(i)
		rec := postReview(ctx, h, reviews.Body(uids[i]))
		bodies[i] = rec.Body.Bytes()
	}
	e := Expect{Policies: 20}
	b.Run("check=verify", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := e.Verify(bodies[i%n], uids[i%n]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("check=answers", func(b *testing.B) {
		var a answers
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := a.verify(e, bodies[i%n], uids[i%n]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkServe measures a review over the webhook's transport as
// kube-apiserver calls it: the in-process server of testdata/policies
// (StartServer: TLS, HTTP/2, the server's limits and metrics) and
// NewClient's HTTP/2 client in the same process, eight reviews
// outstanding on one connection, every answer verified (Target.Send).
// The time per review is the inverse of the throughput of the two
// cores the server and the client share; against BenchmarkHandler it
// prices the transport (TLS, HTTP/2 framing, the body read, the
// handoffs between the handler and the connection's goroutines).
//
//	go test -run='^$' -bench='Serve$' -benchmem ./test/load
func BenchmarkServe(b *testing.B) {
	ctx := context.Background()
	target, _ := inProcessTarget(ctx, b, time.Minute)
	if _, err := target.Probe(ctx); err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(4)
	cpu0, cpuErr := ProcessCPU(os.Getpid())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := target.Send(ctx, int(seq.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	// The CPU the process (server and client) spent per review: on a
	// machine shared with other work, the wall time per review measures
	// the share of the cores this process got as much as the review.
	if cpu1, err := ProcessCPU(os.Getpid()); err == nil && cpuErr == nil {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// inProcessTarget starts the in-process server of testdata/policies
// (StartServer) and returns it with a Target sending it the load
// fixture's pod (testdata/pod.yaml) over NewClient's HTTP/2, every answer
// checked for the 20 invocations; both are closed when tb ends.
func inProcessTarget(ctx context.Context, tb testing.TB, timeout time.Duration) (*Target, *Server) {
	tb.Helper()
	srv, err := StartServer(ctx, ServerOptions{Policies: []string{"testdata/policies"}, CertDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := srv.Close(); err != nil {
			tb.Error(err)
		}
	})
	obj, err := ReadObject(ctx, "testdata/pod.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	reviews, err := NewReviews(obj, nil)
	if err != nil {
		tb.Fatal(err)
	}
	client := NewClient(srv.Roots, timeout)
	tb.Cleanup(client.CloseIdleConnections)
	return &Target{URL: srv.URL, Client: client, Reviews: reviews, Expect: Expect{Policies: 20}, Timeout: timeout}, srv
}
