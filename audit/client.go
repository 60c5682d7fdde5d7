package audit

import (
	"fmt"
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
}

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
// objects.
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
	return dynamic.New(rc), nil
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
