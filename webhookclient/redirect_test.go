package webhookclient

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/webhook/certs"
)

// TestRedirects checks the redirect rule of webhook calls, for mutating
// and validating webhooks, URLs and --service-url mappings: a 307 or 308
// to the configured scheme and host is followed with the review; a 301,
// 302 or 303, another host (another port, localhost for 127.0.0.1, a
// service's other name), plain http from https, and an endless loop fail
// the call (issue 31, defect 2: mutatis sent the review wherever the
// webhook pointed it).
func TestRedirects(t *testing.T) {
	f := newFixture(t)
	out, err := certs.Generate(t.TempDir(), certs.Options{Hosts: append(certs.DefaultHosts(), "redir.hooks.svc", "other.hooks.svc")})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(out.Paths.Cert, out.Paths.Key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(out.Paths.CACert)
	if err != nil {
		t.Fatal(err)
	}
	start := func(h http.Handler, plain bool) *httptest.Server {
		srv := httptest.NewUnstartedServer(h)
		if plain {
			srv.Start()
		} else {
			srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
			srv.StartTLS()
		}
		t.Cleanup(srv.Close)
		return srv
	}
	// target stamps the label it was reached at: which server answered.
	// (for a path ending in /v, as a warning: a validating webhook's).
	stamp := func(who string) http.Handler {
		mutating := peer(t, peerAnswer{patch: []map[string]any{{"op": "add", "path": "/metadata/labels", "value": map[string]any{"reached": who}}}})
		validating := peer(t, peerAnswer{warnings: []string{"reached " + who}})
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/v") {
				validating(w, r)
				return
			}
			mutating(w, r)
		})
	}
	other := start(stamp("other"), false)
	plain := start(stamp("plain"), true)
	var origin *httptest.Server
	origin = start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, suffix := strings.CutSuffix(r.URL.Path, "/v")
		if path == "/final" {
			stamp("origin").ServeHTTP(w, r)
			return
		}
		code, to := 307, "/final"
		switch path {
		case "/308":
			code = 308
		case "/301", "/302", "/303":
			code = map[string]int{"/301": 301, "/302": 302, "/303": 303}[path]
		case "/other-port":
			to = other.URL + "/final"
		case "/localhost":
			to = strings.Replace(origin.URL, "127.0.0.1", "localhost", 1) + "/final"
		case "/http":
			to = plain.URL + "/final"
		case "/loop":
			to = r.URL.Path
			suffix = false
		case "/other-service":
			to = "https://other.hooks.svc/final"
		case "/absolute":
			to = "https://redir.hooks.svc:443/final"
		}
		if suffix {
			to += "/v"
		}
		http.Redirect(w, r, to, code)
	}), false)
	originURL, _ := url.Parse(origin.URL)
	services := ServiceURLs{{Namespace: "hooks", Name: "redir"}: originURL, {Namespace: "hooks", Name: "other"}: mustURL(t, other.URL)}
	viaURL := func(path string) func(*admissionregistrationv1.MutatingWebhook) {
		return func(h *admissionregistrationv1.MutatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(origin.URL + path), CABundle: ca}
		}
	}
	viaService := func(path string) func(*admissionregistrationv1.MutatingWebhook) {
		return func(h *admissionregistrationv1.MutatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "hooks", Name: "redir", Path: ptr.To(path)}, CABundle: ca}
		}
	}
	for _, tc := range []struct {
		name   string
		client func(string) func(*admissionregistrationv1.MutatingWebhook)
		path   string
		refuse string // in the error; "" when followed
	}{
		{"url 307 same host", viaURL, "/307", ""},
		{"url 308 same host", viaURL, "/308", ""},
		{"url 301", viaURL, "/301", "a 301 would turn the review's POST into a GET"},
		{"url 302", viaURL, "/302", "a 302 would turn"},
		{"url 303", viaURL, "/303", "a 303 would turn"},
		{"url other port", viaURL, "/other-port", "not the configured"},
		{"url localhost", viaURL, "/localhost", "not the configured"},
		{"url https to http", viaURL, "/http", "from https to http"},
		{"url loop", viaURL, "/loop", "stopped after 10 redirects"},
		{"service 307 same service", viaService, "/307", ""},
		{"service 308 absolute same service", viaService, "/absolute", ""},
		{"service other service", viaService, "/other-service", `to host "other.hooks.svc", not the configured "redir.hooks.svc:443"`},
		{"service to its mapped address", viaService, "/other-port", "not the configured"},
		{"service 302", viaService, "/302", "a 302 would turn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{ServiceURLs: services}
			d := f.dispatcher(t, opts, f.hook("redirect.example.com", "", tc.client(tc.path)))
			res, err := d.pass(context.Background(), podAttributes(t, nil), nil, false)
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("mutating: %v", err)
				}
				if got := res.Object["metadata"].(map[string]any)["labels"].(map[string]any)["reached"]; got != "origin" {
					t.Errorf("reached %v, want origin", got)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tc.refuse) {
					t.Fatalf("mutating: error %v, want one with %q", err, tc.refuse)
				}
				if !errors.Is(res.Calls[0].Err, ErrRedirectRefused) {
					t.Errorf("call error %v does not wrap ErrRedirectRefused", res.Calls[0].Err)
				}
			}
			v := f.validating(t, opts, f.srv.ValidatingWebhook("redirect.example.com", "", tc.client(tc.path+"/v")))
			vres, err := new(chain.Runner).RunOnce(context.Background(), podAttributes(t, nil), v)
			if err != nil {
				t.Fatal(err)
			}
			if (vres.Denied == nil) != (tc.refuse == "") || (vres.Denied != nil && !strings.Contains(vres.Denied.Error(), tc.refuse)) {
				t.Errorf("validating: refusal %v, want one with %q", vres.Denied, tc.refuse)
			}
			if tc.refuse == "" && (len(vres.Warnings) != 1 || vres.Warnings[0] != "reached origin") {
				t.Errorf("validating: warnings %q, want the origin's", vres.Warnings)
			}
		})
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// FuzzSameOrigin holds the redirect rule to its promise for any
// configured URL and Location: a redirect it lets through is a 307 or 308
// to the same scheme and host:port, within the bound of hops.
func FuzzSameOrigin(f *testing.F) {
	f.Add("https://10.0.0.1:8443/hook", "https://10.0.0.1:8443/other", 307, 1)
	f.Add("https://svc.ns.svc:443/", "https://svc.ns.svc/x", 308, 2)
	f.Add("https://a/", "http://a/", 307, 1)
	f.Add("https://a/", "https://A:443/", 302, 1)
	f.Fuzz(func(t *testing.T, from, to string, code, hops int) {
		first, err1 := url.Parse(from)
		next, err2 := url.Parse(to)
		if err1 != nil || err2 != nil || hops < 1 || hops > 20 {
			return
		}
		via := make([]*http.Request, hops)
		for i := range via {
			via[i] = &http.Request{Method: http.MethodPost, URL: first}
		}
		req := &http.Request{Method: http.MethodPost, URL: next, Response: &http.Response{StatusCode: code}}
		err := sameOrigin(req, via)
		if err != nil {
			if !errors.Is(err, ErrRedirectRefused) {
				t.Fatalf("error %v does not wrap ErrRedirectRefused", err)
			}
			return
		}
		if (code != 307 && code != 308) || hops >= maxRedirects || !strings.EqualFold(first.Scheme, next.Scheme) || !strings.EqualFold(hostPort(first), hostPort(next)) {
			t.Fatalf("followed %d from %q to %q after %d hops", code, from, to, hops)
		}
	})
}
