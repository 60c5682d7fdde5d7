// Package webhookserver serves realistic mutating and validating
// admission webhooks over TLS, for the tests of the webhook client and of the admission chain:
// the same server answers kube-apiserver's own webhook plugin (the
// oracle) and mutatis's client, so both see the same webhooks.
//
// Each webhook is a path (see Paths); every answer is computed from the
// AdmissionReview received (v1 or v1beta1, answered in the same version),
// and every call is counted per path (Calls).
package webhookserver

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mutatis-dev/mutatis/webhook/certs"
)

// The webhooks, by path.
const (
	// PathSidecar injects a "sidecar" container and an "istio-envoy"
	// emptyDir volume into Pods that lack them, and annotates them.
	PathSidecar = "/sidecar"
	// PathLabels stamps the label stamped-by=webhook on any object that
	// lacks it (idempotent: no patch when present).
	PathLabels = "/labels"
	// PathCounter increments the annotation counter.example.com/NAME on
	// every call (NAME: the path's next segment, /counter/NAME): it
	// changes the object every time.
	PathCounter = "/counter"
	// PathReadsPolicy copies the annotation policy.example.com/tier
	// (what a policy wrote) to the label tier, when present and
	// different.
	PathReadsPolicy = "/reads-policy"
	// PathSlow waits for the duration of the path's next segment
	// (/slow/2s), or until the request is cancelled, then admits without
	// a patch. (kube-apiserver drops a webhook URL's query.)
	PathSlow = "/slow"
	// PathBroken answers with a body that is not JSON.
	PathBroken = "/broken"
	// PathBadUID answers with a uid other than the request's.
	PathBadUID = "/bad-uid"
	// PathMergePatch answers with a patch of type JSONMergePatch.
	PathMergePatch = "/merge-patch"
	// PathDeny denies with code 403 and a message.
	PathDeny = "/deny"
	// PathDenyBare denies without any status.
	PathDenyBare = "/deny-bare"
	// PathServerError answers HTTP 500 with a text body.
	PathServerError = "/server-error"
	// PathHuge answers with a valid review padded with a warning of
	// the size in bytes the path's next segment gives (/huge/100000).
	PathHuge = "/huge"
	// PathBadPatch answers a patch that does not apply (removes a
	// missing field).
	PathBadPatch = "/bad-patch"
	// PathWarn admits with two warnings and an audit annotation.
	PathWarn = "/warn"
	// PathNoop admits with an empty JSON patch ("[]").
	PathNoop = "/noop"
	// PathUnknownField adds a field no Go type has (dropped by decoding).
	PathUnknownField = "/unknown-field"
	// PathRequireLabel is a validating webhook: it denies (403) an
	// object, or a DELETE's old object, without the label the path's
	// next segment names (/require-label/team), e.g. one a policy sets,
	// and admits with a warning naming the label otherwise.
	PathRequireLabel = "/require-label"
	// PathBarrier admits once as many calls to it as the path's last
	// segment says are in flight together (/barrier/NAME/2: two calls of
	// barrier NAME), waiting for them until the request is cancelled (a
	// timeout): called one after the other, the first call never returns
	// in time; called concurrently, all are admitted.
	PathBarrier = "/barrier"
	// PathInserts answers a JSON patch of as many operations as the
	// path's next segment says (/inserts/150000): an empty
	// metadata.finalizers, then strings inserted at its front, one
	// operation each — a patch whose application takes minutes in
	// evanphx/json-patch. Not in Paths: a chain test calling every path
	// must not pay it.
	PathInserts = "/inserts"
)

// Paths are every webhook the server serves.
var Paths = []string{PathSidecar, PathLabels, PathCounter, PathReadsPolicy, PathSlow, PathBroken, PathBadUID,
	PathMergePatch, PathDeny, PathDenyBare, PathServerError, PathHuge, PathBadPatch, PathWarn, PathNoop, PathUnknownField, PathRequireLabel, PathBarrier}

// Server is a running test webhook server.
type Server struct {
	// URL is https://127.0.0.1:PORT.
	URL string
	// CABundle is the PEM of the CA that signed the serving certificate,
	// valid for 127.0.0.1, localhost and the Hosts given to Start.
	CABundle []byte

	srv     *httptest.Server
	mu      sync.Mutex
	calls   map[string]int
	protos  []string
	conns   int
	resumed int
	// barriers are PathBarrier's, by name.
	barriers map[string]*barrier
}

// barrier is one PathBarrier: the calls that arrived, and a channel closed
// when enough have.
type barrier struct {
	arrived int
	open    chan struct{}
}

// arrive counts a call at barrier name, which opens at n calls, and
// returns the channel that is closed when it opens.
func (s *Server) arrive(name string, n int) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.barriers == nil {
		s.barriers = map[string]*barrier{}
	}
	b := s.barriers[name]
	if b == nil {
		b = &barrier{open: make(chan struct{})}
		s.barriers[name] = b
	}
	b.arrived++
	if b.arrived == n {
		close(b.open)
	}
	return b.open
}

// Start serves the webhooks on a new TLS server whose certificate is
// issued by a fresh CA in dir (webhook/certs) for 127.0.0.1, localhost
// and hosts (e.g. "sidecar.hooks.svc", a service's server name).
func Start(dir string, hosts ...string) (*Server, error) {
	out, err := certs.Generate(dir, certs.Options{Hosts: append(certs.DefaultHosts(), hosts...)})
	if err != nil {
		return nil, err
	}
	return StartFiles(out.Paths.Cert, out.Paths.Key, out.Paths.CACert)
}

// StartFiles is StartWith with the serving certificate and key and the
// CA's certificate read from PEM files (a fixture's).
func StartFiles(certFile, keyFile, caFile string) (*Server, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	return StartWith(cert, ca)
}

// StartWith serves the webhooks on a new TLS server with the serving
// certificate cert, issued by the CA whose PEM is ca (a fixture's, e.g.
// an example's committed caBundle).
func StartWith(cert tls.Certificate, ca []byte) (*Server, error) {
	s := &Server{CABundle: ca, calls: map[string]int{}}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	s.srv.EnableHTTP2 = true
	s.srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	s.srv.StartTLS()
	s.URL = s.srv.URL
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.srv.Listener.Addr().(*net.TCPAddr).String() }

// Calls is the number of calls to path (one of Paths, whatever the
// segments after it) so far.
func (s *Server) Calls(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

// ResetCalls sets every count back to zero.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.calls)
	clear(s.barriers)
	s.protos = nil
	s.conns = 0
	s.resumed = 0
}

// Resumed is the number of calls so far made over a TLS session the
// client resumed.
func (s *Server) Resumed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumed
}

// Protocols are the HTTP versions of the calls so far ("HTTP/2.0",
// "HTTP/1.1"), in order.
func (s *Server) Protocols() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.protos...)
}

// Connections is the number of connections accepted so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// Webhook is a MutatingWebhook named name that calls path on this
// server (its URL and caBundle), for Pods in CREATE, UPDATE and DELETE,
// with every field kube-apiserver defaults in v1 set to its default and
// sideEffects None; opts change it.
func (s *Server) Webhook(name, path string, opts ...func(*admissionregistrationv1.MutatingWebhook)) admissionregistrationv1.MutatingWebhook {
	h := admissionregistrationv1.MutatingWebhook{
		Name:         name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(s.URL + path), CABundle: s.CABundle},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: ptr.To(admissionregistrationv1.AllScopes)},
		}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:       &metav1.LabelSelector{},
		ObjectSelector:          &metav1.LabelSelector{},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To[int32](10),
		AdmissionReviewVersions: []string{"v1"},
		ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
	}
	for _, o := range opts {
		o(&h)
	}
	return h
}

// ValidatingWebhook is Webhook as a ValidatingWebhook (the same fields
// but reinvocationPolicy), opts changing the MutatingWebhook first.
func (s *Server) ValidatingWebhook(name, path string, opts ...func(*admissionregistrationv1.MutatingWebhook)) admissionregistrationv1.ValidatingWebhook {
	m := s.Webhook(name, path, opts...)
	return admissionregistrationv1.ValidatingWebhook{
		Name: m.Name, ClientConfig: m.ClientConfig, Rules: m.Rules, FailurePolicy: m.FailurePolicy,
		MatchPolicy: m.MatchPolicy, NamespaceSelector: m.NamespaceSelector, ObjectSelector: m.ObjectSelector,
		SideEffects: m.SideEffects, TimeoutSeconds: m.TimeoutSeconds, AdmissionReviewVersions: m.AdmissionReviewVersions,
		MatchConditions: m.MatchConditions,
	}
}

// review is the part of an AdmissionReview (v1 or v1beta1, which share
// their JSON) the mutators read and write.
type review struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Request    *request  `json:"request,omitempty"`
	Response   *response `json:"response,omitempty"`
}

type request struct {
	UID       string         `json:"uid"`
	Operation string         `json:"operation"`
	DryRun    *bool          `json:"dryRun,omitempty"`
	Kind      map[string]any `json:"kind"`
	Object    map[string]any `json:"object"`
	OldObject map[string]any `json:"oldObject"`
}

type response struct {
	UID              string            `json:"uid"`
	Allowed          bool              `json:"allowed"`
	Result           map[string]any    `json:"status,omitempty"`
	Patch            []byte            `json:"patch,omitempty"`
	PatchType        *string           `json:"patchType,omitempty"`
	Warnings         []string          `json:"warnings,omitempty"`
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
}

type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path, arg := r.URL.Path, ""
	if i := strings.Index(path[1:], "/"); i >= 0 {
		path, arg = path[:i+1], path[i+2:]
	}
	s.mu.Lock()
	s.calls[path]++
	s.protos = append(s.protos, r.Proto)
	if r.TLS != nil && r.TLS.DidResume {
		s.resumed++
	}
	s.mu.Unlock()
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in review
	if err := json.Unmarshal(body, &in); err != nil || in.Request == nil {
		http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	out := review{APIVersion: in.APIVersion, Kind: "AdmissionReview", Response: &response{UID: in.Request.UID, Allowed: true}}
	resp := out.Response
	obj := in.Request.Object
	switch path {
	case PathSidecar:
		resp.patchJSON(sidecar(obj))
	case PathLabels:
		if label(obj, "stamped-by") != "webhook" {
			resp.patchJSON(setMapEntry(obj, "labels", "stamped-by", "webhook"))
		}
	case PathCounter:
		key := "counter.example.com/" + arg
		n, _ := strconv.Atoi(annotation(obj, key))
		resp.patchJSON(setMapEntry(obj, "annotations", key, strconv.Itoa(n+1)))
	case PathReadsPolicy:
		if tier := annotation(obj, "policy.example.com/tier"); tier != "" && label(obj, "tier") != tier {
			resp.patchJSON(setMapEntry(obj, "labels", "tier", tier))
		}
	case PathSlow:
		d, _ := time.ParseDuration(arg)
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	case PathBroken:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {`)
		return
	case PathBadUID:
		resp.UID = "not-" + in.Request.UID
	case PathMergePatch:
		pt := "JSONMergePatch"
		resp.Patch, resp.PatchType = []byte(`{"metadata":{"labels":{"merged":"true"}}}`), &pt
	case PathDeny:
		resp.Allowed = false
		resp.Result = map[string]any{"code": 403, "message": "pods may not run as root", "reason": "Forbidden"}
	case PathDenyBare:
		resp.Allowed = false
	case PathServerError:
		http.Error(w, "webhook exploded", http.StatusInternalServerError)
		return
	case PathHuge:
		n, _ := strconv.Atoi(arg)
		resp.Warnings = []string{strings.Repeat("x", n)}
	case PathBadPatch:
		resp.patchJSON([]op{{Op: "remove", Path: "/metadata/nonexistent"}})
	case PathWarn:
		resp.Warnings = []string{"first warning", "second warning"}
		resp.AuditAnnotations = map[string]string{"decision": "allowed"}
	case PathNoop:
		resp.patchJSON([]op{})
	case PathUnknownField:
		resp.patchJSON([]op{{Op: "add", Path: "/spec/notAField", Value: "x"}})
	case PathBarrier:
		name, count, _ := strings.Cut(arg, "/")
		n, _ := strconv.Atoi(count)
		select {
		case <-s.arrive(name, n):
		case <-r.Context().Done():
			return
		}
	case PathInserts:
		n, _ := strconv.Atoi(arg)
		ops := make([]op, 0, n)
		for i := range n {
			if i == 0 {
				ops = append(ops, op{Op: "add", Path: "/metadata/finalizers", Value: []string{}})
				continue
			}
			ops = append(ops, op{Op: "add", Path: "/metadata/finalizers/0", Value: "f" + strconv.Itoa(i)})
		}
		resp.patchJSON(ops)
	case PathRequireLabel:
		target := obj
		if target == nil {
			target = in.Request.OldObject
		}
		if v := label(target, arg); v == "" {
			resp.Allowed = false
			resp.Result = map[string]any{"code": 403, "reason": "Forbidden", "message": fmt.Sprintf("%s %s: the label %s is required", in.Request.Operation, in.Request.Kind["kind"], arg)}
		} else {
			resp.Warnings = []string{fmt.Sprintf("label %s=%s checked", arg, v)}
			resp.AuditAnnotations = map[string]string{"checked": arg}
		}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// patchJSON sets a JSONPatch answer of ops (nil: no patch).
func (r *response) patchJSON(ops []op) {
	if ops == nil {
		return
	}
	js, _ := json.Marshal(ops)
	pt := "JSONPatch"
	r.Patch, r.PatchType = js, &pt
}

func meta(obj map[string]any) map[string]any {
	m, _ := obj["metadata"].(map[string]any)
	return m
}

func label(obj map[string]any, key string) string {
	l, _ := meta(obj)["labels"].(map[string]any)
	v, _ := l[key].(string)
	return v
}

func annotation(obj map[string]any, key string) string {
	a, _ := meta(obj)["annotations"].(map[string]any)
	v, _ := a[key].(string)
	return v
}

// setMapEntry is the patch that sets metadata.<field>[key] = value.
func setMapEntry(obj map[string]any, field, key, value string) []op {
	if _, ok := meta(obj)[field].(map[string]any); !ok {
		return []op{{Op: "add", Path: "/metadata/" + field, Value: map[string]any{key: value}}}
	}
	return []op{{Op: "add", Path: "/metadata/" + field + "/" + escape(key), Value: value}}
}

func escape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// sidecar is the patch of the sidecar injector for a Pod (nil when it
// already has the sidecar).
func sidecar(obj map[string]any) []op {
	spec, _ := obj["spec"].(map[string]any)
	containers, _ := spec["containers"].([]any)
	for _, c := range containers {
		if m, _ := c.(map[string]any); m["name"] == "sidecar" {
			return nil
		}
	}
	ops := []op{{Op: "add", Path: "/spec/containers/-", Value: map[string]any{
		"name": "sidecar", "image": "envoyproxy/envoy:v1.31.0",
		"volumeMounts": []any{map[string]any{"name": "istio-envoy", "mountPath": "/etc/istio/proxy"}},
	}}}
	vol := map[string]any{"name": "istio-envoy", "emptyDir": map[string]any{}}
	if _, ok := spec["volumes"].([]any); ok {
		ops = append(ops, op{Op: "add", Path: "/spec/volumes/-", Value: vol})
	} else {
		ops = append(ops, op{Op: "add", Path: "/spec/volumes", Value: []any{vol}})
	}
	return append(ops, setMapEntry(obj, "annotations", "sidecar.example.com/injected", "true")...)
}
