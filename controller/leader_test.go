package controller

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	admissionregistrationv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

const haNamespace = "mutatis-system"

// writeLog records the cluster writes of one replica, in order, each once
// its call has returned: what a logged write did is visible to the test.
type writeLog struct {
	mu      sync.Mutex
	writes  []string
	changed chan struct{}
}

func newWriteLog() *writeLog { return &writeLog{changed: make(chan struct{})} }

func (l *writeLog) add(w string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = append(l.writes, w)
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *writeLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.writes)
}

// waitFor waits until the replica has made write w.
func (l *writeLog) waitFor(t *testing.T, ctx context.Context, w string) {
	t.Helper()
	for {
		l.mu.Lock()
		found, ch := slices.Contains(l.writes, w), l.changed
		l.mu.Unlock()
		if found {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("no write %q (writes: %v)", w, l.all())
		}
	}
}

// The clients of a replica: the cluster's shared fakes, with the writes the
// controller guards by leadership recorded in the replica's log.
type kubeWrites struct {
	kubernetes.Interface
	log *writeLog
}

// IsWatchListSemanticsUnSupported forwards the fake's answer: informers
// must list and watch it, not stream a watch list.
func (k kubeWrites) IsWatchListSemanticsUnSupported() bool { return true }

func (k kubeWrites) AdmissionregistrationV1() admissionregistrationv1client.AdmissionregistrationV1Interface {
	return admissionWrites{k.Interface.AdmissionregistrationV1(), k.log}
}

type admissionWrites struct {
	admissionregistrationv1client.AdmissionregistrationV1Interface
	log *writeLog
}

func (a admissionWrites) MutatingWebhookConfigurations() admissionregistrationv1client.MutatingWebhookConfigurationInterface {
	return webhookConfigurationWrites{a.AdmissionregistrationV1Interface.MutatingWebhookConfigurations(), a.log}
}

type webhookConfigurationWrites struct {
	admissionregistrationv1client.MutatingWebhookConfigurationInterface
	log *writeLog
}

func (w webhookConfigurationWrites) Create(ctx context.Context, o *admissionregistrationv1.MutatingWebhookConfiguration, opts metav1.CreateOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	out, err := w.MutatingWebhookConfigurationInterface.Create(ctx, o, opts)
	w.log.add("create mutatingwebhookconfigurations " + o.Name)
	return out, err
}

func (w webhookConfigurationWrites) Update(ctx context.Context, o *admissionregistrationv1.MutatingWebhookConfiguration, opts metav1.UpdateOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	out, err := w.MutatingWebhookConfigurationInterface.Update(ctx, o, opts)
	w.log.add("update mutatingwebhookconfigurations " + o.Name)
	return out, err
}

func (w webhookConfigurationWrites) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	err := w.MutatingWebhookConfigurationInterface.Delete(ctx, name, opts)
	w.log.add("delete mutatingwebhookconfigurations " + name)
	return err
}

type dynamicWrites struct {
	dynamic.Interface
	log *writeLog
}

// IsWatchListSemanticsUnSupported: see kubeWrites.
func (d dynamicWrites) IsWatchListSemanticsUnSupported() bool { return true }

func (d dynamicWrites) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return resourceWrites{d.Interface.Resource(gvr), gvr.Resource, d.log}
}

type resourceWrites struct {
	dynamic.NamespaceableResourceInterface
	resource string
	log      *writeLog
}

func (r resourceWrites) UpdateStatus(ctx context.Context, u *unstructured.Unstructured, opts metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	out, err := r.NamespaceableResourceInterface.UpdateStatus(ctx, u, opts)
	r.log.add("update " + r.resource + "/status " + u.GetName())
	return out, err
}

// haCluster is a fake cluster that several replicas share.
type haCluster struct {
	t    *testing.T
	ctx  context.Context // bounds every wait of the test
	kube *kubefake.Clientset
	dyn  *dynamicfake.FakeDynamicClient
	ext  *apiextensionsfake.Clientset
}

func newHACluster(t *testing.T, namespaces []string, objects ...*unstructured.Unstructured) *haCluster {
	t.Helper()
	// Only ends a test that would otherwise hang: a few leader changes at
	// 100ms retries take seconds, more under -race on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	var kubeObjs []runtime.Object
	for _, ns := range namespaces {
		kubeObjs = append(kubeObjs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{corev1.LabelMetadataName: ns}}})
	}
	var objs []runtime.Object
	for _, o := range objects {
		objs = append(objs, o)
	}
	return &haCluster{t: t, ctx: ctx, kube: kubefake.NewClientset(kubeObjs...),
		dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds(), objs...),
		ext: apiextensionsfake.NewClientset()}
}

// replica is one running controller of the cluster.
type replica struct {
	t      *testing.T
	ctx    context.Context
	c      *Controller
	writes *writeLog
	events *record.FakeRecorder
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// start runs a shadow-mode replica managing webhook configurations with
// URL clients, and waits until it is ready.
func (cl *haCluster) start(le LeaderElectionOptions) *replica {
	cl.t.Helper()
	log := newWriteLog()
	events := record.NewFakeRecorder(100)
	c, err := New(Config{
		Clients:        &Clients{Kube: kubeWrites{cl.kube, log}, Dynamic: dynamicWrites{cl.dyn, log}, APIExtensions: cl.ext},
		Source:         SourceShadow,
		Namespace:      haNamespace,
		Recorder:       events,
		Webhook:        WebhookOptions{URL: "https://127.0.0.1:8443/mutate", CABundle: []byte("CA")},
		LeaderElection: le,
	})
	if err != nil {
		cl.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(cl.ctx)
	r := &replica{t: cl.t, ctx: cl.ctx, c: c, writes: log, events: events, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Run(ctx) }()
	cl.t.Cleanup(r.stop)
	select {
	case <-c.ReadyCh():
	case err := <-r.done:
		cl.t.Fatalf("Run returned before ready: %v", err)
	case <-cl.ctx.Done():
		cl.t.Fatal("not ready")
	}
	return r
}

// stop cancels the replica's context and waits for Run to return.
func (r *replica) stop() {
	r.once.Do(func() {
		r.cancel()
		if err := <-r.done; err != nil {
			r.t.Errorf("Run: %v", err)
		}
	})
}

func (r *replica) waitFor(what string, cond func(Status) bool) Status {
	r.t.Helper()
	st, err := r.c.WaitFor(r.ctx, cond)
	if err != nil {
		r.t.Fatalf("waiting for %s: %v (status %+v)", what, err, st)
	}
	return st
}

// warnings drains the Warning events recorded so far.
func (r *replica) warnings() []string {
	var out []string
	for {
		select {
		case e := <-r.events.Events:
			if strings.HasPrefix(e, corev1.EventTypeWarning) {
				out = append(out, e)
			}
		default:
			return out
		}
	}
}

func (cl *haCluster) leaseHolder() string {
	cl.t.Helper()
	l, err := cl.kube.CoordinationV1().Leases(haNamespace).Get(cl.ctx, DefaultWebhookName, metav1.GetOptions{})
	if err != nil {
		cl.t.Fatalf("lease: %v", err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

func (cl *haCluster) create(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	cl.t.Helper()
	if _, err := cl.dyn.Resource(gvr).Create(cl.ctx, u, metav1.CreateOptions{}); err != nil {
		cl.t.Fatal(err)
	}
}

// haObjects are a bound Fail policy and an invalid policy (an Event and a
// Ready=False condition to write).
func haObjects(t *testing.T) []*unstructured.Unstructured {
	const shadow = ShadowGroup + "/" + ShadowVersion
	invalid := policy(t, shadow, "no-reinvocation", "1", "x", "y")
	unstructured.RemoveNestedField(invalid.Object, "spec", "reinvocationPolicy")
	return []*unstructured.Unstructured{
		policy(t, shadow, "add-team", "1", "team", "a"), bindingObject(t, shadow, "add-team", "add-team"), invalid,
	}
}

// ignorePolicy is a bound policy with failurePolicy Ignore: it needs the
// NAME-ignore configuration.
func ignorePolicy(t *testing.T) (*unstructured.Unstructured, *unstructured.Unstructured) {
	const shadow = ShadowGroup + "/" + ShadowVersion
	p := policy(t, shadow, "best-effort", "1", "effort", "best")
	_ = unstructured.SetNestedField(p.Object, "Ignore", "spec", "failurePolicy")
	return p, bindingObject(t, shadow, "best-effort", "best-effort")
}

var shadowGV = schema.GroupVersion{Group: ShadowGroup, Version: ShadowVersion}

// electing are options with quick retries; the lease outlives any stall of
// a test under the race detector on a loaded machine: a leader that could
// not renew for the renew deadline would lose it, and a replica's first
// sync waits for its first attempt up to the renew deadline. No test waits
// for a lease of these options to expire: a leader that stops releases it.
func electing(identity string) LeaderElectionOptions {
	return LeaderElectionOptions{Enabled: true, Identity: identity,
		LeaseDuration: time.Minute, RenewDeadline: 30 * time.Second, RetryPeriod: 100 * time.Millisecond}
}

func TestOnlyTheLeaderWritesAndAFollowerTakesOver(t *testing.T) {
	cl := newHACluster(t, []string{"default", haNamespace}, haObjects(t)...)
	a := cl.start(electing("a"))
	a.waitFor("a to lead", func(s Status) bool { return s.Leader })
	b := cl.start(electing("b"))
	b.waitFor("the policies in b's engine", func(s Status) bool { return s.Policies["add-team"] == "1" })

	t.Run("the first replica leads and writes", func(t *testing.T) {
		if h := cl.leaseHolder(); h != "a" {
			t.Fatalf("lease held by %q, want a", h)
		}
		a.writes.waitFor(t, cl.ctx, "create mutatingwebhookconfigurations mutatis-fail")
		a.writes.waitFor(t, cl.ctx, "update mutatingadmissionpolicies/status no-reinvocation")
		if w := a.warnings(); len(w) != 1 || !strings.Contains(w[0], ReasonInvalid) {
			t.Fatalf("a's warnings %q, want one Invalid", w)
		}
		js, _ := json.Marshal(a.c.Status())
		if !strings.Contains(string(js), `"leader":true`) {
			t.Fatalf("a's status %s", js)
		}
	})
	t.Run("the follower serves every policy and writes nothing", func(t *testing.T) {
		// b's first sync (before ready) and every later one skip the writes.
		if st := b.c.Status(); st.Leader {
			t.Fatalf("b leads too: %+v", st)
		}
		if w := b.writes.all(); len(w) > 0 {
			t.Fatalf("b wrote %v", w)
		}
		if w := b.warnings(); len(w) > 0 {
			t.Fatalf("b recorded %q", w)
		}
		for name, r := range map[string]*replica{"a": a, "b": b} {
			f := &fixture{t: t, ctx: cl.ctx, c: r.c}
			if got := f.admitConfigMap("x")["team"]; got != "a" {
				t.Fatalf("%s's engine: label team = %q, want a", name, got)
			}
		}
	})

	aWrites := len(a.writes.all())
	a.stop() // releases the lease
	t.Run("the follower takes over when the leader stops", func(t *testing.T) {
		b.waitFor("b to lead", func(s Status) bool { return s.Leader })
		if h := cl.leaseHolder(); h != "b" {
			t.Fatalf("lease held by %q, want b", h)
		}
		// The new leader reports what is wrong at once, as a restarted
		// controller would.
		select {
		case e := <-b.events.Events:
			if !strings.Contains(e, ReasonInvalid) {
				t.Fatalf("b's event %q", e)
			}
		case <-cl.ctx.Done():
			t.Fatal("b reported nothing after taking over")
		}
	})
	t.Run("the new leader writes what changes", func(t *testing.T) {
		p, bnd := ignorePolicy(t)
		cl.create(shadowGV.WithResource(PolicyResource), p)
		cl.create(shadowGV.WithResource(BindingResource), bnd)
		b.writes.waitFor(t, cl.ctx, "create mutatingwebhookconfigurations mutatis-ignore")
		b.writes.waitFor(t, cl.ctx, "update mutatingadmissionpolicies/status best-effort")
		if _, err := cl.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(cl.ctx, "mutatis-ignore", metav1.GetOptions{}); err != nil {
			t.Fatalf("%v; b wrote %v", err, b.writes.all())
		}
		if n := len(a.writes.all()); n != aWrites {
			t.Fatalf("the stopped replica wrote %v", a.writes.all()[aWrites:])
		}
	})
}

func TestALeaderThatCannotRenewStopsWritingAndKeepsServing(t *testing.T) {
	cl := newHACluster(t, []string{"default", haNamespace}, haObjects(t)...)
	var failRenewals atomic.Bool
	cl.kube.PrependReactor("update", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		lease := action.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		// Every update but b's fails: a can neither renew nor release.
		if failRenewals.Load() && ptr.Deref(lease.Spec.HolderIdentity, "") != "b" {
			return true, nil, apierrors.NewServiceUnavailable("the API server is unreachable from a")
		}
		return false, nil, nil
	})
	quick := func(id string) LeaderElectionOptions {
		return LeaderElectionOptions{Enabled: true, Identity: id,
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond}
	}
	a := cl.start(quick("a"))
	a.waitFor("a to lead", func(s Status) bool { return s.Leader })
	a.writes.waitFor(t, cl.ctx, "create mutatingwebhookconfigurations mutatis-fail")
	b := cl.start(quick("b"))

	failRenewals.Store(true)
	a.waitFor("a to lose the lease", func(s Status) bool { return !s.Leader })
	aWrites := len(a.writes.all())
	b.waitFor("b to lead", func(s Status) bool { return s.Leader })
	select {
	case err := <-a.done:
		t.Fatalf("a's Run returned after losing the lease: %v", err)
	default:
	}

	p, bnd := ignorePolicy(t)
	cl.create(shadowGV.WithResource(PolicyResource), p)
	cl.create(shadowGV.WithResource(BindingResource), bnd)
	for name, r := range map[string]*replica{"a": a, "b": b} {
		r.waitFor(name+" to serve the new policy", func(s Status) bool { return s.Bindings["best-effort"] == "1" })
	}
	b.writes.waitFor(t, cl.ctx, "create mutatingwebhookconfigurations mutatis-ignore")
	if w := a.writes.all(); len(w) != aWrites {
		t.Fatalf("a wrote %v after losing the lease", w[aWrites:])
	}
}

func TestLeaderElectionWithoutItsNamespaceWritesAlone(t *testing.T) {
	// Out of the cluster (as in test/e2e), mutatis' namespace may not
	// exist: no Lease can live there, and the only replica must still
	// write its configurations.
	cl := newHACluster(t, []string{"default"}, haObjects(t)...)
	r := cl.start(electing("solo"))
	if !r.c.Status().Leader {
		t.Fatal("not the leader")
	}
	if _, err := cl.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(cl.ctx, "mutatis-fail", metav1.GetOptions{}); err != nil {
		t.Fatalf("the configuration is not written by the time the replica is ready: %v", err)
	}
	if _, err := cl.kube.CoordinationV1().Leases(haNamespace).Get(cl.ctx, DefaultWebhookName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("lease: %v, want NotFound", err)
	}
}

func TestALoneReplicaWritesBeforeItIsReady(t *testing.T) {
	// A free Lease is taken at the first try, and the first sync waits for
	// it: by the time /readyz and /statusz answer, the webhook
	// configurations are current (test/e2e relies on it).
	for _, tc := range []struct {
		name  string
		lease *coordinationv1.Lease
	}{
		{name: "no lease yet"},
		{name: "a lease released by a stopped leader", lease: &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: haNamespace, Name: DefaultWebhookName},
			Spec:       coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](1), RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}},
		{name: "a lease of this replica's previous process", lease: &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: haNamespace, Name: DefaultWebhookName},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("mutatis-0"), LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newHACluster(t, []string{"default", haNamespace}, haObjects(t)...)
			if tc.lease != nil {
				if _, err := cl.kube.CoordinationV1().Leases(haNamespace).Create(cl.ctx, tc.lease, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			r := cl.start(electing("mutatis-0"))
			if st := r.c.Status(); !st.Leader {
				t.Fatalf("ready but not the leader: %+v", st)
			}
			if _, err := cl.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(cl.ctx, "mutatis-fail", metav1.GetOptions{}); err != nil {
				t.Fatalf("webhook configuration: %v", err)
			}
			if h := cl.leaseHolder(); h != "mutatis-0" {
				t.Fatalf("lease held by %q", h)
			}
		})
	}
}

func TestANewLeaderWritesWithoutWaitingForAChange(t *testing.T) {
	// Another replica holds the Lease and has not written the
	// configurations (it stopped first): once the Lease is released, the
	// follower writes them although no policy changed.
	cl := newHACluster(t, []string{"default", haNamespace}, haObjects(t)...)
	if _, err := cl.kube.CoordinationV1().Leases(haNamespace).Create(cl.ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: haNamespace, Name: DefaultWebhookName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("gone"), LeaseDurationSeconds: ptr.To[int32](60),
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := cl.start(electing("next"))
	if st := r.c.Status(); st.Leader || len(r.writes.all()) > 0 {
		t.Fatalf("a follower wrote %v (status %+v)", r.writes.all(), st)
	}
	lease, err := cl.kube.CoordinationV1().Leases(haNamespace).Get(cl.ctx, DefaultWebhookName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease.Spec.HolderIdentity = nil // as ReleaseOnCancel leaves it
	if _, err := cl.kube.CoordinationV1().Leases(haNamespace).Update(cl.ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.writes.waitFor(t, cl.ctx, "create mutatingwebhookconfigurations mutatis-fail")
	r.waitFor("the leader flag", func(s Status) bool { return s.Leader })
}

func TestLeaderElectionOptions(t *testing.T) {
	clients := &Clients{Kube: kubefake.NewClientset(), Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), APIExtensions: apiextensionsfake.NewClientset()}
	for _, tc := range []struct {
		name      string
		namespace string
		le        LeaderElectionOptions
		want      string // "" for success
		check     func(t *testing.T, o LeaderElectionOptions)
	}{
		{name: "the defaults are kube-controller-manager's and the lease is named after the webhook configurations",
			namespace: haNamespace, le: LeaderElectionOptions{Enabled: true},
			check: func(t *testing.T, o LeaderElectionOptions) {
				if o.LeaseName != "hooks" || o.LeaseDuration != 15*time.Second || o.RenewDeadline != 10*time.Second || o.RetryPeriod != 2*time.Second {
					t.Fatalf("options %+v", o)
				}
				if host, _, ok := strings.Cut(o.Identity, "_"); !ok || host == "" {
					t.Fatalf("identity %q, want hostname_suffix", o.Identity)
				}
			}},
		{name: "the identity and lease name given are kept", namespace: haNamespace,
			le: LeaderElectionOptions{Enabled: true, Identity: "mutatis-0", LeaseName: "mutatis-lock"},
			check: func(t *testing.T, o LeaderElectionOptions) {
				if o.Identity != "mutatis-0" || o.LeaseName != "mutatis-lock" {
					t.Fatalf("options %+v", o)
				}
			}},
		{name: "leader election needs a namespace for its lease", le: LeaderElectionOptions{Enabled: true}, want: "Config.Namespace"},
		{name: "a lease name that is no object name is refused", namespace: haNamespace, le: LeaderElectionOptions{Enabled: true, LeaseName: "Mutatis!"}, want: "lease name"},
		{name: "a lease shorter than a second is refused", namespace: haNamespace,
			le: LeaderElectionOptions{Enabled: true, LeaseDuration: 500 * time.Millisecond, RenewDeadline: 200 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, want: "at least 1s"},
		{name: "a renew deadline not below the lease duration is refused", namespace: haNamespace,
			le: LeaderElectionOptions{Enabled: true, LeaseDuration: 10 * time.Second, RenewDeadline: 10 * time.Second}, want: "leaseDuration must be greater than renewDeadline"},
		{name: "disabled, nothing is checked", le: LeaderElectionOptions{LeaseName: "Mutatis!"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{Clients: clients, Source: SourceShadow, Namespace: tc.namespace, Recorder: record.NewFakeRecorder(1),
				Webhook: WebhookOptions{Name: "hooks"}, LeaderElection: tc.le})
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			case tc.check != nil:
				tc.check(t, c.cfg.LeaderElection)
			}
		})
	}
}
