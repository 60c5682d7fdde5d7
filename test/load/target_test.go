package load

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// fakeWebhook answers every review with status, or with an allowed patch
// for the request's uid when status is 200.
func fakeWebhook(t *testing.T, status int, http2 bool) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	return editingWebhook(t, status, http2, nil)
}

// editingWebhook is fakeWebhook whose answers edit changes, when set,
// before they are sent.
func editingWebhook(t *testing.T, status int, http2 bool, edit func(*admissionv1.AdmissionResponse)) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.URL.Query().Get("timeout"); got != "10s" {
			t.Errorf("?timeout=%q, want 10s", got)
		}
		if status != http.StatusOK {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","message":"not ready"}`)
			return
		}
		var rv admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&rv); err != nil || rv.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		pt := admissionv1.PatchTypeJSONPatch
		rv.Response = &admissionv1.AdmissionResponse{UID: rv.Request.UID, Allowed: true, PatchType: &pt, Patch: []byte(`[{"op":"add","path":"/x","value":1}]`)}
		rv.Request = nil
		if edit != nil {
			edit(rv.Response)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&rv)
	}))
	srv.EnableHTTP2 = http2
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake of the wrong-CA case
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return srv, roots
}

func testTarget(t *testing.T, url string, roots *x509.CertPool) *Target {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "default"},
	}}
	r, err := NewReviews(obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := NewClient(roots, 10*time.Second)
	t.Cleanup(client.CloseIdleConnections)
	return &Target{URL: url, Client: client, Reviews: r}
}

func TestSendVerifiesTheAnswerOverHTTP2(t *testing.T) {
	srv, roots := fakeWebhook(t, http.StatusOK, true)
	target := testTarget(t, srv.URL, roots)
	x, err := target.Probe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if x.Proto != "HTTP/2.0" || x.PatchOperations != 1 || x.TLSVersion == "" || x.RequestBytes != target.Reviews.Size() {
		t.Errorf("exchange %+v", x)
	}
	for seq := range 3 {
		if err := target.Send(context.Background(), seq); err != nil {
			t.Errorf("request %d: %v", seq, err)
		}
	}
}

func TestSendCountsOtherAnswersAsFailures(t *testing.T) {
	t.Run("an HTTP error is a failure of that status", func(t *testing.T) {
		srv, roots := fakeWebhook(t, http.StatusServiceUnavailable, true)
		err := testTarget(t, srv.URL, roots).Send(context.Background(), 0)
		if KindOf(err) != "HTTP 503" || !strings.Contains(err.Error(), "not ready") {
			t.Errorf("Send = %v, want an HTTP 503 failure with the status message", err)
		}
	})
	t.Run("an answer over HTTP/1.1 is a failure unless allowed", func(t *testing.T) {
		srv, roots := fakeWebhook(t, http.StatusOK, false)
		target := testTarget(t, srv.URL, roots)
		if err := target.Send(context.Background(), 0); KindOf(err) != KindNotHTTP2 {
			t.Errorf("Send = %v, want %s", err, KindNotHTTP2)
		}
		target.AllowHTTP1 = true
		if err := target.Send(context.Background(), 1); err != nil {
			t.Errorf("Send with AllowHTTP1: %v", err)
		}
	})
	t.Run("a certificate the CA did not sign is a transport failure", func(t *testing.T) {
		srv, _ := fakeWebhook(t, http.StatusOK, true)
		err := testTarget(t, srv.URL, x509.NewCertPool()).Send(context.Background(), 0)
		if KindOf(err) != KindTransport {
			t.Errorf("Send = %v, want %s", err, KindTransport)
		}
	})
	t.Run("a URL that is not https is refused", func(t *testing.T) {
		err := testTarget(t, "http://127.0.0.1:1/mutate", x509.NewCertPool()).Send(context.Background(), 0)
		if err == nil || !strings.Contains(err.Error(), "want https") {
			t.Errorf("Send = %v", err)
		}
	})
}

func TestSendStillFailsAWrongAnswerAfterRightOnes(t *testing.T) {
	// The webhook answers right until wrong is set, then echoes the uid
	// of the first request it saw or leaves the patch out.
	var mu sync.Mutex
	var wrong string
	var first types.UID
	srv, roots := editingWebhook(t, http.StatusOK, true, func(resp *admissionv1.AdmissionResponse) {
		mu.Lock()
		defer mu.Unlock()
		if first == "" {
			first = resp.UID
		}
		switch wrong {
		case "uid":
			resp.UID = first
		case "patch":
			resp.Patch = []byte(`[]`)
		}
	})
	target := testTarget(t, srv.URL, roots)
	seq := 0
	for _, tc := range []struct{ wrong, kind string }{{"uid", KindUIDEchoed}, {"patch", KindNoPatch}} {
		mu.Lock()
		wrong = ""
		mu.Unlock()
		for range 3 {
			if err := target.Send(context.Background(), seq); err != nil {
				t.Fatalf("request %d: %v", seq, err)
			}
			seq++
		}
		mu.Lock()
		wrong = tc.wrong
		mu.Unlock()
		if err := target.Send(context.Background(), seq); KindOf(err) != tc.kind {
			t.Errorf("a wrong %s after right answers: Send = %v, want %s", tc.wrong, err, tc.kind)
		}
		seq++
	}
}

// TestCountDials: after a first request, NewClient's requests share its
// HTTP/2 connection, dialed once and counted once (requests sent at once
// before any connection is up dial one each, which is why loadgen probes
// first); a transport CountDials does not know is not counted.
func TestCountDials(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c := NewClient(roots, time.Minute)
	defer c.CloseIdleConnections()
	dials := CountDials(c)
	get := func() {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); string(b) != "HTTP/2.0" {
			t.Errorf("answered over %q, want HTTP/2.0", b)
		}
	}
	get()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(get)
	}
	wg.Wait()
	if got := dials.Load(); got != 1 {
		t.Errorf("%d connections dialed, want 1", got)
	}
	if CountDials(&http.Client{Transport: roundTripper(nil)}) != nil {
		t.Error("counted the dials of a transport that is not an *http.Transport")
	}
}

// roundTripper is an http.RoundTripper that is not an *http.Transport.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
