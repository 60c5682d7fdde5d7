package audit

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// ClientOptions protect the API server from an audit: a client-side rate
// limit and a user agent that names the tool, so that operators can see
// (and API Priority and Fairness can classify) its requests.
type ClientOptions struct {
	// QPS and Burst are the client-side rate limit (client-go's token
	// bucket); 0 keeps DefaultQPS and DefaultBurst.
	QPS   float32
	Burst int
	// UserAgent replaces the client's; "" keeps DefaultUserAgent.
	UserAgent string
	// DisableCompression asks the API server for uncompressed answers
	// (no Accept-Encoding: gzip): for a cluster on the same machine or a
	// fast network, where compressing every page costs the API server CPU
	// and saves no time (kubectl's --disable-compression).
	DisableCompression bool
	// MaxPageBytes bounds the body of each answer, decompressed (0:
	// DefaultMaxPageBytes; negative: none). An answer over it fails with
	// ErrPageTooLarge before more of it is read; the Lister then asks
	// for the same page in halves.
	MaxPageBytes int64
}

// DefaultMaxPageBytes bounds one page of a list: 64 MiB, 128 KiB an
// object in pages of 500 (kube-apiserver's request limit is 3 MiB an
// object; etcd's default 1.5 MiB).
const DefaultMaxPageBytes = 64 << 20

// ErrPageTooLarge is wrapped by the error of an answer whose body is over
// ClientOptions.MaxPageBytes.
var ErrPageTooLarge = errors.New("answer over the page size bound")

// The defaults of ClientOptions: well under what one client may send to a
// kube-apiserver under the default FlowSchemas without queuing others.
const (
	DefaultQPS       = 20
	DefaultBurst     = 40
	DefaultUserAgent = "mutatis-audit (read-only)"
)

// NewClient returns a dynamic client over cfg (which is not modified) that
// can only read: every request other than GET or HEAD fails before it
// leaves the process (ReadOnlyTransport). It is client-go's dynamic client
// whose JSON lists are decoded in one pass (listDecoder), to the same
// objects; a Lister over it reads each page's items as they arrive
// (streamPage) instead of holding the page.
func NewClient(cfg *rest.Config, o ClientOptions) (dynamic.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst, c.UserAgent = o.QPS, o.Burst, o.UserAgent
	c.DisableCompression = c.DisableCompression || o.DisableCompression
	if c.QPS == 0 {
		c.QPS = DefaultQPS
	}
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	c.Wrap(ReadOnlyTransport)
	max := o.MaxPageBytes
	if max == 0 {
		max = DefaultMaxPageBytes
	}
	if max > 0 {
		c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return boundedBody{next: rt, max: max} })
	}
	// dynamic.NewForConfig, with the lists' JSON decoded in one pass
	// (listDecoder): its configuration, then its REST client.
	c = dynamic.ConfigFor(c)
	c.NegotiatedSerializer = listSerializer{c.NegotiatedSerializer}
	c.GroupVersion = nil
	c.APIPath = "/if-you-see-this-search-for-the-break"
	h, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, err
	}
	rc, err := rest.UnversionedRESTClientForConfigAndClient(c, h)
	if err != nil {
		return nil, err
	}
	return streamingClient{Interface: dynamic.New(rc), rest: rc}, nil
}

// ReadOnlyTransport wraps rt so that it refuses every request that is not
// a GET or a HEAD: the audit reads the cluster and never writes to it,
// whatever the code above the transport asks.
func ReadOnlyTransport(rt http.RoundTripper) http.RoundTripper {
	return readOnly{rt}
}

type readOnly struct{ next http.RoundTripper }

// ErrWrite is the error of a request the read-only transport refuses.
type ErrWrite struct {
	Method, URL string
}

func (e *ErrWrite) Error() string {
	return fmt.Sprintf("mutatis audit is read-only: refusing %s %s", e.Method, e.URL)
}

func (r readOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		return r.next.RoundTrip(req)
	}
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, &ErrWrite{Method: req.Method, URL: req.URL.Redacted()}
}

// boundedBody fails the reading of an answer's body past max bytes.
type boundedBody struct {
	next http.RoundTripper
	max  int64
}

func (b boundedBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > b.max && resp.Header.Get("Content-Encoding") == "" {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%w: Content-Length %d is over %d bytes (--max-page-bytes)", ErrPageTooLarge, resp.ContentLength, b.max)
	}
	resp.Body = &boundedReader{r: resp.Body, left: b.max, max: b.max}
	return resp, nil
}

type boundedReader struct {
	r         io.ReadCloser
	left, max int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the bound from a longer one.
		var one [1]byte
		if n, err := b.r.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%w: more than %d bytes (--max-page-bytes)", ErrPageTooLarge, b.max)
		} else {
			return 0, err
		}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedReader) Close() error { return b.r.Close() }
