package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NewClient is an HTTP/2 client over TLS 1.2 or later that trusts roots
// only, as kube-apiserver calls a webhook with the caBundle of its
// configuration. All requests share one connection while the server's
// stream limit allows (HTTP/2 multiplexing), as kube-apiserver's do.
func NewClient(roots *x509.CertPool, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 100,
			IdleConnTimeout:     90 * time.Second,
		},
	}
}

// CountDials makes c's transport (an *http.Transport, as NewClient's)
// count the connections it dials, and returns the count; nil for another
// transport. A request that finds no HTTP/2 stream free on the
// connections open dials another, as kube-apiserver's transport does.
func CountDials(c *http.Client) *atomic.Int64 {
	t, ok := c.Transport.(*http.Transport)
	if !ok {
		return nil
	}
	n := &atomic.Int64{}
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		return dial(ctx, network, addr)
	}
	return n
}

// Target sends the reviews of a run to a webhook.
type Target struct {
	// URL is the webhook's /mutate endpoint; Send adds ?timeout= as
	// kube-apiserver does.
	URL string
	// Client is the HTTP client, e.g. NewClient's.
	Client *http.Client
	// Reviews are the bodies.
	Reviews *Reviews
	// Expect checks the answers.
	Expect Expect
	// AllowHTTP1 accepts answers over HTTP/1.1; otherwise they are
	// failures (kube-apiserver speaks HTTP/2 to webhooks).
	AllowHTTP1 bool
	// Timeout is sent as the review's deadline (?timeout=); zero: 10s,
	// kube-apiserver's default timeoutSeconds.
	Timeout time.Duration

	once   sync.Once
	url    string // URL with ?timeout=
	urlErr error
	// answers shortens Expect.Verify for answers equal but for the uid
	// to one it accepted.
	answers answers
	// bodies holds *bytes.Buffer for reading answers.
	bodies sync.Pool
}

// Send posts review seq and verifies the answer; it is a Sender.
func (t *Target) Send(ctx context.Context, seq int) error {
	return t.send(ctx, seq, nil)
}

// Exchange describes one request and its answer (Probe).
type Exchange struct {
	// Proto and TLSVersion are the answer's ("HTTP/2.0", "TLS 1.3").
	Proto, TLSVersion string
	// RequestBytes and AnswerBytes are the bodies' sizes.
	RequestBytes, AnswerBytes int
	// PatchOperations counts the answer's JSON patch operations.
	PatchOperations int
	// Policies counts the invocations in the "policies" audit annotation.
	Policies int
}

// Probe sends one review, verifies the answer as Send does, and describes
// the exchange.
func (t *Target) Probe(ctx context.Context) (Exchange, error) {
	var x Exchange
	err := t.send(ctx, 0, &x)
	return x, err
}

func (t *Target) send(ctx context.Context, seq int, x *Exchange) error {
	endpoint, err := t.endpoint()
	if err != nil {
		return &Failure{Kind: KindTransport, Err: err}
	}
	uid := t.Reviews.UID(seq)
	reqBody := t.Reviews.Body(uid)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(reqBody))
	if err != nil {
		return &Failure{Kind: KindTransport, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := t.Client.Do(req)
	if err != nil {
		return &Failure{Kind: transportKind(err), Err: err}
	}
	defer resp.Body.Close()
	buf := t.buffer()
	defer t.bodies.Put(buf)
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, maxAnswerBytes))
	body := buf.Bytes()
	if err != nil {
		return &Failure{Kind: transportKind(err), Detail: "reading the answer", Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return &Failure{Kind: fmt.Sprintf("HTTP %d", resp.StatusCode), Detail: statusMessage(body)}
	}
	if resp.ProtoMajor != 2 && !t.AllowHTTP1 {
		return &Failure{Kind: KindNotHTTP2, Detail: resp.Proto}
	}
	if x != nil {
		*x = Exchange{Proto: resp.Proto, RequestBytes: len(reqBody), AnswerBytes: len(body)}
		if resp.TLS != nil {
			x.TLSVersion = tls.VersionName(resp.TLS.Version)
		}
		var rv admissionv1.AdmissionReview
		if json.Unmarshal(body, &rv) == nil && rv.Response != nil {
			var ops []json.RawMessage
			_ = json.Unmarshal(rv.Response.Patch, &ops)
			x.PatchOperations = len(ops)
			x.Policies = CountPolicies(rv.Response.AuditAnnotations)
		}
	}
	return t.answers.verify(t.Expect, body, uid)
}

// maxAnswerBytes bounds the answer read.
const maxAnswerBytes = 64 << 20

// buffer is an empty buffer for an answer, reused across sends: nothing
// keeps an answer's bytes past its send.
func (t *Target) buffer() *bytes.Buffer {
	if b, ok := t.bodies.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

// endpoint is URL with the timeout parameter, computed at the first
// send.
func (t *Target) endpoint() (string, error) {
	t.once.Do(func() { t.url, t.urlErr = t.endpointURL() })
	return t.url, t.urlErr
}

func (t *Target) endpointURL() (string, error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return "", fmt.Errorf("load: webhook URL: %w", err)
	}
	if u.Scheme != "https" {
		return "", fmt.Errorf("load: webhook URL %q: want https", t.URL)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/mutate"
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	q := u.Query()
	q.Set("timeout", timeout.String())
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// transportKind tells a deadline (the client's timeout or the context's)
// from other transport errors.
func transportKind(err error) string {
	var ne interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return KindTimeout
	}
	return KindTransport
}

// statusMessage is the message of a metav1.Status body, or the body.
func statusMessage(body []byte) string {
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err == nil && st.Message != "" {
		return st.Message
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}
