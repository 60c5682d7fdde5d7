package webhookclient

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// DefaultMaxResponseBytes bounds the body of a webhook's answer when
// Options.MaxResponseBytes is zero. kube-apiserver reads a webhook's
// answer without a bound; mutatis, which calls webhooks from a laptop or
// a CI job, refuses one larger than this (as a failure to call the
// webhook, under its failurePolicy).
const DefaultMaxResponseBytes = 16 << 20

// ErrResponseTooLarge is wrapped by the error of an answer whose body is
// over the limit.
var ErrResponseTooLarge = errors.New("webhook response body too large")

// clients holds the HTTP clients of one generation of one webhook
// configuration (mutating or validating: one client for both kinds): one REST client per distinct clientConfig
// (as kube-apiserver's ClientManager caches them, by clientConfig without
// the webhook's name), each over its own transport so that connections
// and TLS sessions are reused between calls and never between
// generations.
type clients struct {
	generation string
	services   ServiceURLs
	maxBytes   int64
	codec      runtime.NegotiatedSerializer

	mu         sync.Mutex
	byConfig   map[string]*rest.RESTClient
	transports []*http.Transport
}

// generationOf identifies the generation of a configuration: its uid and
// generation when it came from a cluster, a hash of its webhooks
// otherwise.
func generationOf(uid types.UID, generation int64, webhooks any) string {
	if uid != "" && generation != 0 {
		return string(uid) + "/" + strconv.FormatInt(generation, 10)
	}
	js, _ := json.Marshal(webhooks)
	sum := sha256.Sum256(js)
	return hex.EncodeToString(sum[:])
}

// reviewCodec is the codec kube-apiserver's webhook ClientManager encodes
// AdmissionReviews with and decodes answers with: admission.k8s.io v1
// and v1beta1, JSON.
func reviewCodec() (runtime.NegotiatedSerializer, error) {
	s := runtime.NewScheme()
	if err := admissionv1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := admissionv1beta1.AddToScheme(s); err != nil {
		return nil, err
	}
	return serializer.NegotiatedSerializerWrapper(runtime.SerializerInfo{
		Serializer: serializer.NewCodecFactory(s).LegacyCodec(admissionv1.SchemeGroupVersion, admissionv1beta1.SchemeGroupVersion),
	}), nil
}

// client returns the REST client for cc, building it on first use as
// kube-apiserver's ClientManager.hookClientConfig does. Its errors are
// *callError values without a status, as upstream's.
func (c *clients) client(cc admissionregistrationv1.WebhookClientConfig, webhook string) (*rest.RESTClient, error) {
	key, err := json.Marshal(cc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if rc, ok := c.byConfig[string(key)]; ok {
		return rc, nil
	}
	cfg, dial, err := c.restConfig(cc, webhook)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tlsConfig.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	t := utilnet.SetTransportDefaults(&http.Transport{TLSClientConfig: tlsConfig, DialContext: dial})
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.NextProtos = nil
	cfg.Transport = &limitedBody{next: t, max: c.maxBytes}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.CloseIdleConnections()
		return nil, err
	}
	// A fresh client (cfg.Transport is set): its redirect rule is mutatis's.
	hc = &http.Client{Transport: hc.Transport, Timeout: hc.Timeout, CheckRedirect: sameOrigin}
	rc, err := rest.UnversionedRESTClientForConfigAndClient(cfg, hc)
	if err != nil {
		t.CloseIdleConnections()
		return nil, err
	}
	c.byConfig[string(key)] = rc
	c.transports = append(c.transports, t)
	return rc, nil
}

// restConfig is upstream's hookClientConfig with mutatis's service
// mapping in place of kube-apiserver's service resolver.
func (c *clients) restConfig(cc admissionregistrationv1.WebhookClientConfig, webhook string) (*rest.Config, func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	var d net.Dialer
	dial := d.DialContext
	cfg := &rest.Config{}
	if cc.Service != nil {
		port := int32(443)
		if cc.Service.Port != nil && *cc.Service.Port != 0 {
			port = *cc.Service.Port
		}
		// Use http/1.1 instead of http/2, as kube-apiserver does for
		// services (https://issue.k8s.io/75791).
		cfg.NextProtos = []string{"http/1.1"}
		serverName := cc.Service.Name + "." + cc.Service.Namespace + ".svc"
		host := net.JoinHostPort(serverName, strconv.Itoa(int(port)))
		cfg.Host = "https://" + host
		if cc.Service.Path != nil {
			cfg.APIPath = *cc.Service.Path
		}
		cfg.TLSClientConfig.ServerName = serverName
		if target, ok := c.services.resolve(cc.Service.Namespace, cc.Service.Name, port); ok {
			dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr == host {
					addr = target
				}
				return d.DialContext(ctx, network, addr)
			}
		}
	} else {
		if cc.URL == nil || *cc.URL == "" {
			return nil, nil, &callError{webhook: webhook, reason: errors.New("webhook configuration must have either service or URL")}
		}
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return nil, nil, &callError{webhook: webhook, reason: fmt.Errorf("Unparsable URL: %v", err)}
		}
		cfg.Host = u.Scheme + "://" + u.Host
		cfg.APIPath = u.Path
		if !isLocalHost(u) {
			cfg.NextProtos = []string{"http/1.1"}
		}
	}
	// Avoid client-side rate limiting, as kube-apiserver does.
	cfg.QPS = -1
	cfg.TLSClientConfig.CAData = append(cfg.TLSClientConfig.CAData, cc.CABundle...)
	cfg.ContentConfig.NegotiatedSerializer = c.codec
	cfg.ContentConfig.ContentType = runtime.ContentTypeJSON
	cfg.WarningHandler = rest.NoWarnings{}
	return cfg, dial, nil
}

// maxRedirects is Go's own bound on the redirects of one request, which
// kube-apiserver's webhook client keeps (it sets no CheckRedirect).
const maxRedirects = 10

// ErrRedirectRefused is wrapped by the error of a call whose webhook
// answered with a redirect mutatis does not follow.
var ErrRedirectRefused = errors.New("webhook redirect refused")

// sameOrigin is the redirect rule of webhook calls. kube-apiserver's
// client follows any redirect as Go's http.Client does (up to 10, to any
// host and scheme, a 301/302/303 turning the POST into a GET without its
// body). mutatis follows a redirect only where the configuration already
// sends the review: a 307 or 308 (the POST repeated with its body) to the
// same scheme and host:port as the URL or service the configuration
// names (a --service-url mapping applies to that host, as to the first
// request); anything else fails the call, under the webhook's
// failurePolicy, with an error wrapping ErrRedirectRefused. A 301, 302 or
// 303 would have the review dropped and the webhook asked a GET it
// cannot answer with the request's uid, so kube-apiserver fails that
// call too (a wrong uid), with another message. docs/fidelity.md has the
// difference.
func sameOrigin(req *http.Request, via []*http.Request) error {
	first := via[0]
	code := 0
	if req.Response != nil {
		code = req.Response.StatusCode
	}
	switch {
	case len(via) >= maxRedirects:
		return fmt.Errorf("%w: stopped after %d redirects", ErrRedirectRefused, maxRedirects)
	case code != http.StatusTemporaryRedirect && code != http.StatusPermanentRedirect:
		return fmt.Errorf("%w: a %d would turn the review's %s into a %s without its body (only 307 and 308 are followed)", ErrRedirectRefused, code, first.Method, req.Method)
	case !strings.EqualFold(req.URL.Scheme, first.URL.Scheme):
		return fmt.Errorf("%w: from %s to %s (the scheme of the configured endpoint is kept)", ErrRedirectRefused, first.URL.Scheme, req.URL.Scheme)
	case !strings.EqualFold(hostPort(req.URL), hostPort(first.URL)):
		return fmt.Errorf("%w: to host %q, not the configured %q", ErrRedirectRefused, req.URL.Host, first.URL.Host)
	}
	return nil
}

// hostPort is u's host and port, the scheme's port when u names none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "443"
	if strings.EqualFold(u.Scheme, "http") {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// isLocalHost is kube-apiserver's test for a URL webhook on the same
// host, the only kind it lets negotiate HTTP/2.
func isLocalHost(u *url.URL) bool {
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// close drops the idle connections of every transport.
func (c *clients) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.transports {
		t.CloseIdleConnections()
	}
}

// limitedBody bounds the body of every answer to max bytes: reading past
// it fails with ErrResponseTooLarge.
type limitedBody struct {
	next http.RoundTripper
	max  int64
}

func (l *limitedBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > l.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: Content-Length %d is over the limit of %d bytes", ErrResponseTooLarge, resp.ContentLength, l.max)
	}
	resp.Body = &limitedReader{r: resp.Body, left: l.max}
	return resp, nil
}

type limitedReader struct {
	r    io.ReadCloser
	left int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: over the limit", ErrResponseTooLarge)
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limitedReader) Close() error { return l.r.Close() }
