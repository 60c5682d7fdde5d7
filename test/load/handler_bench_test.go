package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
	noCert := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, errors.New("no TLS here") }
	srv, _, err := newServer(ctx, ServerOptions{Policies: []string{"testdata/policies"}}, slog.New(slog.DiscardHandler), noCert)
	if err != nil {
		b.Fatal(err)
	}
	obj, err := ReadObject(ctx, "testdata/pod.yaml")
	if err != nil {
		b.Fatal(err)
	}
	reviews, err := NewReviews(obj, nil)
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	send := func(seq int) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, webhook.PathMutate+"?timeout=10s", bytes.NewReader(reviews.Body(reviews.UID(seq))))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
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
