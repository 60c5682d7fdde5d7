package webhook

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/webhook/certs"
)

func TestHTTP2(t *testing.T) {
	f := newTLS(t)
	srv := start(t, newServer(t, nil, f, func(o *Options) { o.Admitter = passThrough }))
	resp, err := f.client().Get(srv.url + PathHealthz)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Errorf("protocol %s, want HTTP/2", resp.Proto)
	}
}

// servedSerial is the serial number of the certificate a new connection
// sees.
func servedSerial(t *testing.T, f *tlsFixture, url string) string {
	t.Helper()
	c := f.client()
	defer c.CloseIdleConnections()
	resp, err := c.Get(url + PathHealthz)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.TLS.PeerCertificates[0].SerialNumber.String()
}

func TestCertificateReload(t *testing.T) {
	f := newTLS(t)
	srv := start(t, newServer(t, nil, f, func(o *Options) { o.Admitter = passThrough }))
	first := servedSerial(t, f, srv.url)
	if again := servedSerial(t, f, srv.url); again != first {
		t.Fatalf("the certificate changed without a change of files: %s, %s", first, again)
	}

	// A rotation as `mutatis certs` does it: same CA, new serving pair.
	out, err := certs.Generate(f.dir, certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out.NewCA {
		t.Fatal("the CA should have been reused")
	}
	second := servedSerial(t, f, srv.url)
	if second == first {
		t.Fatalf("still serving certificate %s after the files changed", first)
	}

	// A broken pair (certificate of another key) leaves the last good
	// one in service.
	other := t.TempDir()
	if _, err := certs.Generate(other, certs.Options{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(other, certs.CertFile))
	if err != nil {
		t.Fatal(err)
	}
	tmp := f.paths.Cert + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.paths.Cert); err != nil {
		t.Fatal(err)
	}
	if third := servedSerial(t, f, srv.url); third != second {
		t.Errorf("serving %s, want the last good certificate %s", third, second)
	}
}

func TestClientCertificates(t *testing.T) {
	f := newTLS(t)
	pool, err := certs.LoadPool(f.paths.CACert)
	if err != nil {
		t.Fatal(err)
	}
	srv := start(t, newServer(t, nil, f, func(o *Options) {
		o.Admitter = passThrough
		o.ClientCAs = pool
	}))
	certPEM, keyPEM, err := certs.ClientCertificate(f.dir, "kube-apiserver", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	good, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	stranger := t.TempDir()
	if _, err := certs.Generate(stranger, certs.Options{}); err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err = certs.ClientCertificate(stranger, "mallory", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name      string
		cert      []tls.Certificate
		path      string
		wantCode  int
		wantError bool
	}{
		{name: "the API server's certificate is accepted", cert: []tls.Certificate{good}, path: PathMutate, wantCode: 200},
		{name: "a client without certificate is refused on /mutate", path: PathMutate, wantCode: 401},
		{name: "a client without certificate may probe /readyz", path: PathReadyz, wantCode: 200},
		{name: "a certificate of another CA fails the handshake", cert: []tls.Certificate{bad}, path: PathHealthz, wantError: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := f.client(tc.cert...)
			defer c.CloseIdleConnections()
			resp, err := c.Post(srv.url+tc.path, "application/json", strings.NewReader(minimalReview))
			if tc.wantError {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("HTTP %d, want a TLS error", resp.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Errorf("HTTP %d, want %d", resp.StatusCode, tc.wantCode)
			}
		})
	}
}

func TestGracefulShutdownFinishesInFlightReviews(t *testing.T) {
	f := newTLS(t)
	entered, release := make(chan struct{}), make(chan struct{})
	blocking := fakeAdmitter(func(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
		close(entered)
		<-release
		return chain.Result{}, ctx.Err()
	})
	s := newServer(t, nil, f, func(o *Options) { o.Admitter = blocking })
	shutdownStarted := make(chan struct{})
	s.onShutdown = func() { close(shutdownStarted) }

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()

	type result struct {
		code int
		body string
		err  error
	}
	answered := make(chan result, 1)
	go func() {
		resp, err := f.client().Post("https://"+ln.Addr().String()+PathMutate, "application/json", strings.NewReader(minimalReview))
		if err != nil {
			answered <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- result{code: resp.StatusCode, body: string(b), err: err}
	}()

	<-entered
	cancel()
	<-shutdownStarted
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) while a review was in flight", err)
	default:
	}
	close(release)
	// Allowed: the review's context was not cancelled by the shutdown.
	if r := <-answered; r.err != nil || r.code != http.StatusOK || !strings.Contains(r.body, `"allowed":true`) {
		t.Fatalf("in-flight review: HTTP %d %s, %v; want 200 and allowed", r.code, r.body, r.err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := f.client().Get("https://" + ln.Addr().String() + PathHealthz); err == nil {
		t.Error("the server still accepts connections after shutdown")
	}
}

// splitAdmitter records which part of the policy set each request reached.
type splitAdmitter struct{ calls chan string }

func (s splitAdmitter) Admit(_ context.Context, a *matching.Attributes) (chain.Result, error) {
	s.calls <- "all"
	return chain.Result{Object: a.Object.Object}, nil
}

func (s splitAdmitter) Only(fp admissionregistrationv1.FailurePolicyType) chain.Admitter {
	return fakeAdmitter(func(_ context.Context, a *matching.Attributes) (chain.Result, error) {
		s.calls <- string(fp)
		return chain.Result{Object: a.Object.Object}, nil
	})
}

func TestFailurePolicyEndpoints(t *testing.T) {
	f := newTLS(t)
	split := splitAdmitter{calls: make(chan string, 1)}
	r := start(t, newServer(t, nil, f, func(o *Options) { o.Admitter = split }))
	for _, tc := range []struct{ path, want string }{
		{PathMutate, "all"},
		{PathMutateFail, "Fail"},
		{PathMutateIgnore, "Ignore"},
	} {
		code, body := post(t, f.client(), r.url+tc.path, []byte(minimalReview))
		if code != http.StatusOK {
			t.Fatalf("%s: HTTP %d: %s", tc.path, code, body)
		}
		if got := <-split.calls; got != tc.want {
			t.Errorf("%s evaluated %q, want %q", tc.path, got, tc.want)
		}
	}
	// An chain.Admitter that cannot split serves /mutate only.
	plain := newServer(t, nil, f, func(o *Options) {
		o.Admitter = fakeAdmitter(func(_ context.Context, a *matching.Attributes) (chain.Result, error) {
			return chain.Result{Object: a.Object.Object}, nil
		})
	})
	rp := start(t, plain)
	if code, _ := post(t, f.client(), rp.url+PathMutateFail, []byte(minimalReview)); code != http.StatusNotFound {
		t.Errorf("%s without a splitting Admitter: HTTP %d, want 404", PathMutateFail, code)
	}
}
