package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	apiserverwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/source"
	"github.com/mutatis-dev/mutatis/webhook/certs"
)

// world is the engine of testdata/ with its simulated cluster.
type world struct {
	engine  *source.Engine
	cluster *cluster.Cluster
	metrics *Metrics
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldOf(t, "testdata/policies.yaml", "testdata/resources.yaml")
}

// newWorldOf is the engine of files with their simulated cluster.
func newWorldOf(t *testing.T, files ...string) *world {
	t.Helper()
	ctx := context.Background()
	set, err := manifest.Load(ctx, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.New(set.Objects, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var policies []*admissionregistrationv1.MutatingAdmissionPolicy
	var bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for _, p := range set.Policies {
		policies = append(policies, p.Policy)
	}
	for _, b := range set.Bindings {
		bindings = append(bindings, b.Binding)
	}
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := engine.NewHooks(comp, policies, bindings)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics()
	cfg := c.Config()
	cfg.Metrics = m
	eng := source.NewEngine(cfg)
	eng.Swap(hooks)
	return &world{engine: eng, cluster: c, metrics: m}
}

// tlsFixture is a certificate directory and a client trusting its CA.
type tlsFixture struct {
	dir   string
	paths certs.Paths
	roots *x509.CertPool
}

func newTLS(t *testing.T) *tlsFixture {
	t.Helper()
	dir := t.TempDir()
	out, err := certs.Generate(dir, certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	roots, err := certs.LoadPool(out.Paths.CACert)
	if err != nil {
		t.Fatal(err)
	}
	return &tlsFixture{dir: dir, paths: out.Paths, roots: roots}
}

func (f *tlsFixture) client(clientCert ...tls.Certificate) *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: f.roots, Certificates: clientCert},
		ForceAttemptHTTP2: true,
	}}
}

// running is a Server serving on a loopback port.
type running struct {
	url    string
	cancel context.CancelFunc
	done   chan error
}

// start serves s on 127.0.0.1 until the test ends (or stop).
func start(t *testing.T, s *Server) *running {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{url: "https://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-r.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return r
}

// newServer builds a Server with the world's engine and the fixture's
// certificate; opts may adjust the options.
func newServer(t *testing.T, w *world, f *tlsFixture, adjust func(*Options)) *Server {
	t.Helper()
	kp, err := NewKeypair(f.paths.Cert, f.paths.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{GetCertificate: kp.GetCertificate}
	if w != nil {
		o.Admitter, o.Metrics = w.engine, w.metrics
	}
	if adjust != nil {
		adjust(&o)
	}
	s, err := NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func post(t *testing.T, c *http.Client, url string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// request describes an admission request the way kube-apiserver sees it.
type request struct {
	op             admission.Operation
	object, old    string // YAML
	subresource    string
	dryRun         bool
	user           user.Info
	reviewVersions []string // default v1
}

// review builds the AdmissionReview kube-apiserver would send for r, with
// k8s.io/apiserver's own code, and returns its uid, JSON and the empty
// review to decode the answer into. It also returns the attributes the
// engine would see natively.
func (w *world) review(t *testing.T, r request) (uidOf string, body []byte, into runtime.Object, attrs admission.Attributes) {
	t.Helper()
	obj := yamlObject(t, r.object)
	var old *unstructured.Unstructured
	if r.old != "" {
		old = yamlObject(t, r.old)
	}
	u := r.user
	if u == nil {
		u = &user.DefaultInfo{Name: "alice", UID: "u-1", Groups: []string{"dev", "system:authenticated"}, Extra: map[string][]string{"scopes": {"a", "b"}}}
	}
	a, err := w.cluster.Attributes(cluster.Request{Object: obj, OldObject: old, Operation: r.op, Subresource: r.subresource, DryRun: r.dryRun, User: u})
	if err != nil {
		t.Fatal(err)
	}
	if r.op == admission.Delete {
		a.Object = nil
	}
	attrs = a.AdmissionAttributes()
	// kube-apiserver holds built-in objects typed and sends their JSON.
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: a.Kind}
	if a.Object != nil {
		va.VersionedObject = admission.NewLazyObject(typed(t, a.Object))
	}
	if a.OldObject != nil {
		va.VersionedOldObject = admission.NewLazyObject(typed(t, a.OldObject))
	}
	versions := r.reviewVersions
	if versions == nil {
		versions = []string{"v1"}
	}
	hook := apiserverwebhook.NewMutatingWebhookAccessor("uid", "mutatis", &admissionregistrationv1.MutatingWebhook{Name: "mutatis.mutatis.dev", AdmissionReviewVersions: versions})
	inv := &generic.WebhookInvocation{Webhook: hook, Resource: a.Resource, Subresource: a.Subresource, Kind: a.Kind}
	uid, req, resp, err := webhookrequest.CreateAdmissionObjects(va, inv)
	if err != nil {
		t.Fatal(err)
	}
	// kube-apiserver's REST client sets apiVersion and kind when encoding.
	switch req.(type) {
	case *admissionv1.AdmissionReview:
		req.GetObjectKind().SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("AdmissionReview"))
	case *admissionv1beta1.AdmissionReview:
		req.GetObjectKind().SetGroupVersionKind(admissionv1beta1.SchemeGroupVersion.WithKind("AdmissionReview"))
	}
	body, err = json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return string(uid), body, resp, attrs
}

func yamlObject(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	set, err := manifest.Parse("object.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Objects) != 1 {
		t.Fatalf("want one object in %q", y)
	}
	return set.Objects[0].Object
}

// typed is u as its Go type, as kube-apiserver holds it.
func typed(t *testing.T, u *unstructured.Unstructured) runtime.Object {
	t.Helper()
	obj, err := scheme.Scheme.New(u.GroupVersionKind())
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(u.GroupVersionKind())
	return obj
}

// fakeAdmitter answers with its function.
type fakeAdmitter func(ctx context.Context, a *matching.Attributes) (chain.Result, error)

func (f fakeAdmitter) Admit(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
	return f(ctx, a)
}
