package webhookclient

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mutatis-dev/mutatis/chain"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"

	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme"
	"github.com/mutatis-dev/mutatis/test/webhookserver"
)

// fixture is a test server and what a Dispatcher needs around it.
type fixture struct {
	srv     *webhookserver.Server
	matcher *matching.Matcher
	scheme  *scheme.Scheme
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv, err := webhookserver.Start(t.TempDir(), "labels.hooks.svc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ns := map[string]*corev1.Namespace{"default": {ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"env": "prod"}}}}
	matcher := matching.NewMatcher(matching.NamespaceGetterFunc(func(_ context.Context, name string) (*corev1.Namespace, error) {
		if n, ok := ns[name]; ok {
			return n, nil
		}
		return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
	}), matching.DefaultTable())
	return &fixture{srv: srv, matcher: matcher, scheme: scheme.New()}
}

func (f *fixture) hook(name, path string, opts ...func(*admissionregistrationv1.MutatingWebhook)) admissionregistrationv1.MutatingWebhook {
	return f.srv.Webhook(name, path, append([]func(*admissionregistrationv1.MutatingWebhook){func(h *admissionregistrationv1.MutatingWebhook) {
		h.Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	}}, opts...)...)
}

func (f *fixture) dispatcher(t *testing.T, opts Options, hooks ...admissionregistrationv1.MutatingWebhook) *Dispatcher {
	t.Helper()
	opts.Matcher, opts.Scheme = f.matcher, f.scheme
	d, err := NewDispatcher([]*admissionregistrationv1.MutatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: hooks}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(nil) })
	return d
}

func podAttributes(t *testing.T, labels map[string]string) *matching.Attributes {
	t.Helper()
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		t.Fatal(err)
	}
	return &matching.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Resource: corev1.SchemeGroupVersion.WithResource("pods"),
		Name: "web", Namespace: "default", Object: &unstructured.Unstructured{Object: m}, UserInfo: &user.DefaultInfo{Name: "alice"}}
}

func ignorePolicy(h *admissionregistrationv1.MutatingWebhook) {
	h.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
}

func TestCallRecords(t *testing.T) {
	f := newFixture(t)
	d := f.dispatcher(t, Options{},
		f.hook("ns.example.com", webhookserver.PathLabels, func(h *admissionregistrationv1.MutatingWebhook) {
			h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}
		}),
		f.hook("obj.example.com", webhookserver.PathLabels, func(h *admissionregistrationv1.MutatingWebhook) {
			h.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "true"}}
		}),
		f.hook("rules.example.com", webhookserver.PathLabels, func(h *admissionregistrationv1.MutatingWebhook) {
			h.Rules[0].Resources = []string{"services"}
		}),
		f.hook("cond.example.com", webhookserver.PathLabels, func(h *admissionregistrationv1.MutatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "always", Expression: "true"}, {Name: "never", Expression: "false"}}
		}),
		f.hook("broken.example.com", webhookserver.PathBroken, ignorePolicy),
		f.hook("labels.example.com", webhookserver.PathLabels, func(h *admissionregistrationv1.MutatingWebhook) {
			h.AdmissionReviewVersions = []string{"v1beta1", "v1"}
		}),
	)
	res, err := d.pass(context.Background(), podAttributes(t, nil), &reinvocation{}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		skip    chain.Skip
		outcome chain.CallOutcome
	}{{chain.SkipNamespaceSelector, chain.NotCalled}, {chain.SkipObjectSelector, chain.NotCalled}, {chain.SkipRules, chain.NotCalled}, {chain.SkipMatchConditionFalse, chain.NotCalled}, {chain.NotSkipped, chain.FailedOpen}, {chain.NotSkipped, chain.Admitted}}
	if len(res.Calls) != len(want) {
		t.Fatalf("%d calls, want %d", len(res.Calls), len(want))
	}
	for i, w := range want {
		c := res.Calls[i]
		if c.Skip != w.skip || c.Outcome != w.outcome {
			t.Errorf("call %d (%s): %v/%v, want %v/%v", i, c.Hook, c.Skip, c.Outcome, w.skip, w.outcome)
		}
	}
	if c := res.Calls[3]; c.Condition != "never" {
		t.Errorf("failed condition %q, want never", c.Condition)
	}
	if c := res.Calls[4]; c.Err == nil || !strings.Contains(c.Err.Error(), `failed calling webhook "broken.example.com": failed to call webhook`) {
		t.Errorf("failed-open error: %v", c.Err)
	}
	last := res.Calls[5]
	if last.Version != "v1beta1" || !last.Changed || last.PatchType != "JSONPatch" || !strings.Contains(string(last.Patch), "stamped-by") || last.Latency <= 0 {
		t.Errorf("last call %+v", last)
	}
	if !res.Changed || res.AuditAnnotations["failed-open.mutation.webhook.admission.k8s.io/round_0_index_4"] != "broken.example.com" {
		t.Errorf("changed %v annotations %v", res.Changed, res.AuditAnnotations)
	}
	if got := res.Object["metadata"].(map[string]any)["labels"].(map[string]any)["stamped-by"]; got != "webhook" {
		t.Errorf("label = %v", got)
	}
}

// TestResponseBound checks a webhook's answer is read up to the limit and
// no further, and that going over is a failure to call it.
func TestResponseBound(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		size   int
		refuse bool
	}{{size: 1000}, {size: 20000, refuse: true}} {
		d := f.dispatcher(t, Options{MaxResponseBytes: 8000}, f.hook("huge.example.com", webhookserver.PathHuge+"/"+strconv.Itoa(tc.size)))
		res, err := d.pass(context.Background(), podAttributes(t, nil), nil, false)
		if !tc.refuse {
			if err != nil {
				t.Errorf("size %d: %v", tc.size, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), `failed calling webhook "huge.example.com"`) || !strings.Contains(err.Error(), ErrResponseTooLarge.Error()) {
			t.Fatalf("size %d: error %v", tc.size, err)
		}
		if !errors.Is(res.Calls[0].Err, ErrResponseTooLarge) {
			t.Errorf("call error %v does not wrap ErrResponseTooLarge", res.Calls[0].Err)
		}
	}
}

// TestRequestDeadline checks the request's own deadline bounds a slow
// webhook, and that kube-apiserver's 504 ends the pass under Ignore. The
// webhook would answer after a minute and its own timeout is 30s: a pass
// ended within 20s was ended by the request's 300ms, with room for a
// process starved under -race on a loaded machine.
func TestRequestDeadline(t *testing.T) {
	f := newFixture(t)
	d := f.dispatcher(t, Options{}, f.hook("slow.example.com", webhookserver.PathSlow+"/60s", ignorePolicy, timeout(30)), f.hook("labels.example.com", webhookserver.PathLabels))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := d.pass(ctx, podAttributes(t, nil), nil, false)
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("took %v", elapsed)
	}
	var status *apierrors.StatusError
	if !errors.As(err, &status) || status.ErrStatus.Code != 504 || status.ErrStatus.Message != "Timeout: request did not complete within requested timeout" {
		t.Fatalf("error %v", err)
	}
	if f.srv.Calls(webhookserver.PathLabels) != 0 {
		t.Error("the next webhook was called after the deadline")
	}
}

func TestMetrics(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	d := f.dispatcher(t, Options{Metrics: m}, f.hook("labels.example.com", webhookserver.PathLabels), f.hook("deny.example.com", webhookserver.PathDeny))
	if _, err := d.pass(context.Background(), podAttributes(t, nil), nil, false); err == nil {
		t.Fatal("no denial")
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, fam := range families {
		for _, metric := range fam.GetMetric() {
			var parts []string
			for _, l := range metric.GetLabel() {
				parts = append(parts, l.GetName()+"="+l.GetValue())
			}
			got[fam.GetName()] = append(got[fam.GetName()], strings.Join(parts, ","))
		}
	}
	want := map[string][]string{
		"apiserver_admission_webhook_admission_duration_seconds": {"name=deny.example.com,operation=CREATE,rejected=true,type=admit", "name=labels.example.com,operation=CREATE,rejected=false,type=admit"},
		"apiserver_admission_webhook_request_total":              {"code=200,name=labels.example.com,operation=CREATE,rejected=false,type=admit", "code=403,name=deny.example.com,operation=CREATE,rejected=true,type=admit"},
		"apiserver_admission_webhook_rejection_count":            {"error_type=no_error,name=deny.example.com,operation=CREATE,rejection_code=403,type=admit"},
	}
	for name, w := range want {
		if strings.Join(got[name], " ") != strings.Join(w, " ") {
			t.Errorf("%s: %v, want %v", name, got[name], w)
		}
	}
}

// TestTransport checks HTTP/2 to a local URL, HTTP/1.1 to a service (as
// kube-apiserver negotiates), connection reuse between calls, TLS session
// resumption on new connections, and the
// clients kept across dispatchers for an unchanged configuration.
func TestTransport(t *testing.T) {
	f := newFixture(t)
	u, _ := url.Parse("https://" + f.srv.Addr())
	svc := f.hook("svc.example.com", "", func(h *admissionregistrationv1.MutatingWebhook) {
		h.ClientConfig.URL = nil
		h.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "hooks", Name: "labels", Path: ptr.To(webhookserver.PathNoop)}
	})
	opts := Options{ServiceURLs: ServiceURLs{{Namespace: "hooks", Name: "labels"}: u}}
	d := f.dispatcher(t, opts, f.hook("local.example.com", webhookserver.PathNoop), svc)
	for range 3 {
		if _, err := d.pass(context.Background(), podAttributes(t, nil), nil, false); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(f.srv.Protocols(), " "); got != "HTTP/2.0 HTTP/1.1 HTTP/2.0 HTTP/1.1 HTTP/2.0 HTTP/1.1" {
		t.Errorf("protocols %s", got)
	}
	if n := f.srv.Connections(); n != 2 {
		t.Errorf("%d connections for 6 calls to 2 clients, want 2", n)
	}
	// New connections resume the TLS sessions of the old ones.
	d.Close(nil)
	if _, err := d.pass(context.Background(), podAttributes(t, nil), nil, false); err != nil {
		t.Fatal(err)
	}
	if n, r := f.srv.Connections(), f.srv.Resumed(); n != 4 || r != 2 {
		t.Errorf("after closing idle connections: %d connections, %d calls on resumed sessions; want 4 and 2", n, r)
	}
	opts.Previous = d
	opts.Matcher, opts.Scheme = f.matcher, f.scheme
	same, err := NewDispatcher([]*admissionregistrationv1.MutatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: d.hooksOf("c")}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if same.clients["c"] != d.clients["c"] {
		t.Error("an unchanged configuration got new clients")
	}
	changed := d.hooksOf("c")
	changed[0].TimeoutSeconds = ptr.To[int32](5)
	next, err := NewDispatcher([]*admissionregistrationv1.MutatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: changed}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if next.clients["c"] == d.clients["c"] {
		t.Error("a new generation kept the old clients")
	}
}

// hooksOf is the webhooks of configuration name, copied.
func (d *Dispatcher) hooksOf(name string) []admissionregistrationv1.MutatingWebhook {
	var out []admissionregistrationv1.MutatingWebhook
	for _, h := range d.hooks {
		if h.configuration == name {
			out = append(out, *h.webhook.DeepCopy())
		}
	}
	return out
}

func TestParseServiceURL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		svc  Service
		host string
		err  string
	}{
		{in: "hooks/labels=https://127.0.0.1:8443", svc: Service{Namespace: "hooks", Name: "labels"}, host: "127.0.0.1:8443"},
		{in: "hooks/labels:8443=https://localhost:9443/", svc: Service{Namespace: "hooks", Name: "labels", Port: 8443}, host: "localhost:9443"},
		{in: "hooks/labels", err: "want NS/NAME[:PORT]=URL"},
		{in: "labels=https://x", err: "want NS/NAME[:PORT]=URL"},
		{in: "hooks/labels:0=https://x", err: "port \"0\" is not a number in 1-65535"},
		{in: "hooks/labels=http://x", err: "must be https"},
		{in: "hooks/labels=https://x/path", err: "may only name a host and port"},
		{in: "hooks/labels=https://", err: "has no host"},
	} {
		svc, u, err := ParseServiceURL(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || svc != tc.svc || u.Host != tc.host {
			t.Errorf("%s: %v %v %v", tc.in, svc, u, err)
		}
	}
	m := ServiceURLs{}
	if err := m.Add("a/b=https://h:1"); err != nil {
		t.Fatal(err)
	}
	if err := m.Add("a/b=https://h:2"); err == nil || !strings.Contains(err.Error(), "mapped twice") {
		t.Errorf("second mapping: %v", err)
	}
	if host, ok := m.resolve("a", "b", 443); !ok || host != "h:1" {
		t.Errorf("resolve: %s %v", host, ok)
	}
}
