package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/mutation"
	"github.com/mutatis-dev/mutatis/params"
	kubescheme "github.com/mutatis-dev/mutatis/scheme"
	"github.com/mutatis-dev/mutatis/source"
)

// The policy sources (Config.Source).
const (
	// SourceNative reads admissionregistration.k8s.io policies; see the
	// package documentation for why it needs
	// Config.AcknowledgeBuiltinPluginDisabled.
	SourceNative = "native"
	// SourceShadow reads the mutatis.dev policies installed by deploy/.
	SourceShadow = "shadow"
)

// ShadowGroup and ShadowVersion are the group/version of the shadow
// CustomResourceDefinitions.
const (
	ShadowGroup   = "mutatis.dev"
	ShadowVersion = "v1"
)

// The resources of policies and bindings, in either group.
const (
	PolicyResource  = "mutatingadmissionpolicies"
	BindingResource = "mutatingadmissionpolicybindings"
)

// Defaults of Config.
const (
	DefaultWebhookName    = "mutatis"
	DefaultTimeoutSeconds = 10
	// kube-apiserver's --authorization-webhook-cache-authorized-ttl and
	// --authorization-webhook-cache-unauthorized-ttl defaults.
	DefaultAuthorizedTTL   = 5 * time.Minute
	DefaultUnauthorizedTTL = 30 * time.Second
	// DefaultWriteTimeout is Config.WriteTimeout's default: the leader
	// election's renew deadline, the time a leader's writes may already
	// take before it loses the Lease.
	DefaultWriteTimeout = DefaultRenewDeadline
)

// ErrBuiltinPluginEnabled is returned by New in native mode without
// AcknowledgeBuiltinPluginDisabled.
var ErrBuiltinPluginEnabled = errors.New("refusing to start in native mode: " +
	"kube-apiserver's built-in MutatingAdmissionPolicy admission plugin applies the cluster's " +
	"admissionregistration.k8s.io MutatingAdmissionPolicies itself, so mutatis applying them again " +
	"from its webhook would mutate every matching object twice (double mutation). " +
	"Use shadow mode (mutatis.dev policies), or disable the plugin " +
	"(kube-apiserver --disable-admission-plugins=MutatingAdmissionPolicy) and acknowledge it " +
	"with --native-plugin-disabled")

// Clients are the API clients the controller uses.
type Clients struct {
	Kube          kubernetes.Interface
	Dynamic       dynamic.Interface
	APIExtensions apiextensionsclient.Interface
}

// Config configures a Controller.
type Config struct {
	// RestConfig builds the clients when Clients is nil.
	RestConfig *rest.Config
	// Clients, when set, are used instead of clients built from RestConfig.
	Clients *Clients

	// Source is SourceNative or SourceShadow.
	Source string
	// AcknowledgeBuiltinPluginDisabled must be true in native mode: it
	// states that kube-apiserver's MutatingAdmissionPolicy admission plugin
	// is disabled (see ErrBuiltinPluginEnabled).
	AcknowledgeBuiltinPluginDisabled bool

	// Compiler compiles policies; nil: New creates one.
	Compiler *compiler.Compiler
	// Metrics observes every mutation the Engine evaluates.
	Metrics engine.Metrics
	// Authorizer backs the CEL authorizer variables. Nil: SubjectAccessReviews
	// through k8s.io/apiserver's webhook authorizer, with kube-apiserver's
	// default cache TTLs.
	Authorizer authorizer.Authorizer
	// Recorder records the Events on policies and bindings. Nil: Events are
	// sent to the API server.
	Recorder record.EventRecorder

	// Namespace is the namespace mutatis runs in; the webhooks never see
	// requests in it (lockout protection).
	Namespace string
	// Webhook says how kube-apiserver reaches mutatis. The controller manages
	// MutatingWebhookConfigurations only when Webhook.Service or Webhook.URL
	// is set.
	Webhook WebhookOptions

	// LeaderElection makes the replicas elect the one that writes to the
	// cluster (see LeaderElectionOptions). Off, this controller writes.
	LeaderElection LeaderElectionOptions

	// WriteTimeout bounds each cluster write of a sync (the webhook
	// configurations; one Ready condition): the single worker that swaps
	// policy sets in must not wait on an API server that does not answer.
	// Zero means DefaultWriteTimeout.
	WriteTimeout time.Duration

	// ParamSyncTimeout bounds the wait for a new param informer to sync
	// before a policy set that uses it is swapped in (lookups go to the API
	// server meanwhile). Zero means 30s.
	ParamSyncTimeout time.Duration
}

// Status is what the Engine currently reflects.
type Status struct {
	// Generation counts the policy sets swapped into the Engine (0: none
	// yet).
	Generation uint64 `json:"generation"`
	// Policies maps the name of every policy in the Engine (bound or not) to
	// the resourceVersion of the revision compiled.
	Policies map[string]string `json:"policies"`
	// Bindings maps the name of every binding in the Engine to its
	// resourceVersion.
	Bindings map[string]string `json:"bindings"`
	// ParamKinds are the resources whose param informers run.
	ParamKinds []schema.GroupVersionResource `json:"paramKinds,omitempty"`
	// Leader tells whether this replica makes the cluster writes (webhook
	// configurations, status conditions, Events): it holds the Lease, or
	// leader election is off. Every replica serves either way.
	Leader bool `json:"leader"`
}

// Controller watches policies, bindings, Namespaces, CRDs and params, and
// keeps an Engine and the webhook configurations current. Create it with New
// and call Run once.
type Controller struct {
	cfg     Config
	clients Clients
	// engine is built once over the controller's caches (engineConfig);
	// every sync swaps its policy set in.
	engine   *source.Engine
	compiler *compiler.Compiler
	table    *matching.Table
	schemas  *applyconfig.Schemas
	scheme   *kubescheme.Scheme
	authz    authorizer.Authorizer
	recorder record.EventRecorder
	events   record.EventBroadcaster // nil when cfg.Recorder was given

	params *paramInformers
	queue  workqueue.TypedRateLimitingInterface[string]

	// Set by Run.
	policyGVR, bindingGVR schema.GroupVersionResource
	policyInformer        cache.SharedIndexInformer
	bindingInformer       cache.SharedIndexInformer
	namespaces            corelisters.NamespaceLister

	// Worker state (one worker).
	converted map[string]convertedObject // cache key → conversion
	reported  map[string]string          // object key → last report
	alive     map[string]bool            // object keys reported in this sync
	compiled  map[string]bool            // policy names in the last set
	writeCtx  context.Context            // the writes of this sync; nil: not the leader
	term      uint64                     // the leadership term reported holds for

	leader leadership

	mu       sync.Mutex
	status   Status
	changed  chan struct{} // closed and replaced on every swap
	ready    chan struct{}
	isReady  bool
	runCalls int
}

// syncKey is the only work-queue key: every change rebuilds the whole set
// from the caches (level-triggered), and bursts collapse into one rebuild.
const syncKey = "sync"

// New validates cfg and builds a Controller. It makes no API calls.
func New(cfg Config) (*Controller, error) {
	switch cfg.Source {
	case SourceNative:
		if !cfg.AcknowledgeBuiltinPluginDisabled {
			return nil, ErrBuiltinPluginEnabled
		}
	case SourceShadow:
	default:
		return nil, fmt.Errorf("source must be %q or %q, not %q", SourceNative, SourceShadow, cfg.Source)
	}
	if cfg.Webhook.Service != nil && cfg.Webhook.URL != "" {
		return nil, errors.New("webhook: set a service reference or a URL, not both")
	}
	if cfg.Webhook.Name == "" {
		cfg.Webhook.Name = DefaultWebhookName
	}
	if cfg.Webhook.TimeoutSeconds == 0 {
		cfg.Webhook.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if cfg.Webhook.TimeoutSeconds < 1 || cfg.Webhook.TimeoutSeconds > 30 {
		return nil, fmt.Errorf("webhook timeoutSeconds must be between 1 and 30, not %d", cfg.Webhook.TimeoutSeconds)
	}
	if cfg.Webhook.Namespace == "" {
		cfg.Webhook.Namespace = cfg.Namespace
	}
	if cfg.ParamSyncTimeout == 0 {
		cfg.ParamSyncTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}

	c := &Controller{
		cfg:       cfg,
		table:     matching.DefaultTable(),
		schemas:   applyconfig.NewSchemas(),
		scheme:    kubescheme.New(),
		converted: map[string]convertedObject{},
		reported:  map[string]string{},
		compiled:  map[string]bool{},
		changed:   make(chan struct{}),
		ready:     make(chan struct{}),
		leader:    leadership{decided: make(chan struct{})},
	}
	if cfg.Clients != nil {
		c.clients = *cfg.Clients
	} else {
		if cfg.RestConfig == nil {
			return nil, errors.New("either RestConfig or Clients is required")
		}
		var err error
		if c.clients.Kube, err = kubernetes.NewForConfig(cfg.RestConfig); err != nil {
			return nil, err
		}
		if c.clients.Dynamic, err = dynamic.NewForConfig(cfg.RestConfig); err != nil {
			return nil, err
		}
		if c.clients.APIExtensions, err = apiextensionsclient.NewForConfig(cfg.RestConfig); err != nil {
			return nil, err
		}
	}
	if c.clients.Kube == nil || c.clients.Dynamic == nil || c.clients.APIExtensions == nil {
		return nil, errors.New("clients: Kube, Dynamic and APIExtensions are all required")
	}

	c.compiler = cfg.Compiler
	if c.compiler == nil {
		var err error
		if c.compiler, err = compiler.New(); err != nil {
			return nil, err
		}
	}
	c.authz = cfg.Authorizer
	if c.authz == nil {
		var err error
		if c.authz, err = newSARAuthorizer(c.clients.Kube); err != nil {
			return nil, err
		}
	}
	c.recorder = cfg.Recorder
	if c.recorder == nil {
		c.events = record.NewBroadcaster()
		c.recorder = c.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "mutatis"})
	}
	c.params = newParamInformers(c.clients.Dynamic, c.table)
	c.engine = source.NewEngine(c.engineConfig())
	// Until the first policy set is in, the engine knows no policy: the
	// webhook must not serve before Ready.
	c.engine.Swap(nil)
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "mutatis-policies"})
	if cfg.LeaderElection.Enabled {
		if err := c.cfg.LeaderElection.setDefaults(cfg.Webhook.Name); err != nil {
			return nil, err
		}
		if err := c.validateLeaderElection(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Engine returns the Engine the controller keeps current: the one a
// webhook serves (built by New over the controller's caches; until the
// first sync it knows no policy).
func (c *Controller) Engine() *source.Engine { return c.engine }

// LoadInitial is the first load of a policy source (source.Source): a
// controller has nothing to read before Run, whose informers bring its
// first policy set (Ready then holds), so it returns nil. New has checked
// the configuration.
func (c *Controller) LoadInitial(context.Context) error { return nil }

// Ready reports whether every informer has synced and the first full policy
// set is in the Engine.
func (c *Controller) Ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.isReady
}

// ReadyCh is closed when Ready becomes true.
func (c *Controller) ReadyCh() <-chan struct{} { return c.ready }

// Status returns what the Engine currently reflects.
func (c *Controller) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// Generation returns the number of policy sets swapped into the Engine.
func (c *Controller) Generation() uint64 { return c.Status().Generation }

// WaitFor blocks until cond holds for the Status (checked now and after every
// swap) and returns that Status, or returns ctx's error.
func (c *Controller) WaitFor(ctx context.Context, cond func(Status) bool) (Status, error) {
	for {
		c.mu.Lock()
		st, ch := c.status, c.changed
		c.mu.Unlock()
		if cond(st) {
			return st, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}

// WaitForGeneration blocks until the Engine reflects generation n or later.
func (c *Controller) WaitForGeneration(ctx context.Context, n uint64) error {
	_, err := c.WaitFor(ctx, func(s Status) bool { return s.Generation >= n })
	return err
}

// Run starts the informers, waits for them to sync, and reconciles until ctx
// is done. It returns nil when ctx is cancelled after a clean start, and an
// error when the controller cannot start (e.g. the cluster serves no
// MutatingAdmissionPolicy API in native mode).
func (c *Controller) Run(ctx context.Context) error {
	c.mu.Lock()
	c.runCalls++
	calls := c.runCalls
	c.mu.Unlock()
	if calls > 1 {
		return errors.New("controller: Run called twice")
	}
	logger := klog.FromContext(ctx).WithValues("controller", "mutatis")
	ctx = klog.NewContext(ctx, logger)
	defer c.queue.ShutDown()
	defer c.params.stopAll()
	if c.events != nil {
		c.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.clients.Kube.CoreV1().Events("")})
		defer c.events.Shutdown()
	}

	if err := c.resolveSource(); err != nil {
		return err
	}
	logger.Info("watching policies", "policies", c.policyGVR.String(), "bindings", c.bindingGVR.String())

	enqueue := func(any) { c.queue.Add(syncKey) }
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, _ any) { c.queue.Add(syncKey) },
		DeleteFunc: enqueue,
	}

	dyn := dynamicinformer.NewDynamicSharedInformerFactory(c.clients.Dynamic, 0)
	c.policyInformer = dyn.ForResource(c.policyGVR).Informer()
	c.bindingInformer = dyn.ForResource(c.bindingGVR).Informer()
	for _, inf := range []cache.SharedIndexInformer{c.policyInformer, c.bindingInformer} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}

	kube := informers.NewSharedInformerFactory(c.clients.Kube, 0)
	nsInformer := kube.Core().V1().Namespaces()
	c.namespaces = nsInformer.Lister()
	_ = nsInformer.Informer()

	ext := apiextensionsinformers.NewSharedInformerFactory(c.clients.APIExtensions, 0)
	crdInformer := ext.Apiextensions().V1().CustomResourceDefinitions().Informer()
	if _, err := crdInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.crdChanged(ctx, obj, false) },
		UpdateFunc: func(_, obj any) { c.crdChanged(ctx, obj, false) },
		DeleteFunc: func(obj any) { c.crdChanged(ctx, obj, true) },
	}); err != nil {
		return err
	}

	dyn.Start(ctx.Done())
	kube.Start(ctx.Done())
	ext.Start(ctx.Done())
	defer dyn.Shutdown()
	defer kube.Shutdown()
	defer ext.Shutdown()

	if !cache.WaitForCacheSync(ctx.Done(), c.policyInformer.HasSynced, c.bindingInformer.HasSynced,
		nsInformer.Informer().HasSynced, crdInformer.HasSynced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("informers did not sync")
	}
	logger.Info("informers synced")
	if stop := c.startLeaderElection(ctx); stop != nil {
		defer stop()
	}
	c.queue.Add(syncKey)

	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for c.processNext(ctx) {
	}
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx); err != nil {
		if ctx.Err() != nil {
			return false
		}
		klog.FromContext(ctx).Error(err, "reconciling policies; retrying")
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// resolveSource picks the policy and binding resources of the mode.
func (c *Controller) resolveSource() error {
	if c.cfg.Source == SourceShadow {
		gv := schema.GroupVersion{Group: ShadowGroup, Version: ShadowVersion}
		c.policyGVR, c.bindingGVR = gv.WithResource(PolicyResource), gv.WithResource(BindingResource)
		return nil
	}
	gv, err := discoverNative(c.clients.Kube)
	if err != nil {
		return err
	}
	c.policyGVR, c.bindingGVR = gv.WithResource(PolicyResource), gv.WithResource(BindingResource)
	return nil
}

// nativeVersions are the versions of admissionregistration.k8s.io that may
// serve MutatingAdmissionPolicy, preferred first.
var nativeVersions = []string{"v1", "v1beta1", "v1alpha1"}

// discoverNative returns the newest admissionregistration.k8s.io version
// that serves both policies and bindings.
func discoverNative(kube kubernetes.Interface) (schema.GroupVersion, error) {
	var errs []error
	for _, v := range nativeVersions {
		gv := schema.GroupVersion{Group: admissionregistrationv1.GroupName, Version: v}
		list, err := kube.Discovery().ServerResourcesForGroupVersion(gv.String())
		if err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("discovering %s: %w", gv, err))
			}
			continue
		}
		served := map[string]bool{}
		for _, r := range list.APIResources {
			served[r.Name] = true
		}
		if served[PolicyResource] && served[BindingResource] {
			return gv, nil
		}
	}
	if len(errs) > 0 {
		return schema.GroupVersion{}, errors.Join(errs...)
	}
	return schema.GroupVersion{}, fmt.Errorf("native mode: the cluster serves no MutatingAdmissionPolicy API (admissionregistration.k8s.io %v); use shadow mode", nativeVersions)
}

// crdChanged keeps the schemas and the resource table in step with the
// cluster's CRDs, then rebuilds (paramKinds may now resolve, or not).
func (c *Controller) crdChanged(ctx context.Context, obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = tomb.Obj, true
	}
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return
	}
	if deleted {
		c.schemas.RemoveCRD(crd.Name)
		c.scheme.RemoveCRD(crd.Name)
		c.table.RemoveCRD(crd.Name)
	} else {
		if err := c.table.AddCRD(crd); err != nil {
			klog.FromContext(ctx).Error(err, "adding CustomResourceDefinition to the resource table", "crd", crd.Name)
		}
		if err := c.schemas.AddCRD(crd); err != nil {
			klog.FromContext(ctx).Error(err, "adding CustomResourceDefinition schema", "crd", crd.Name)
		}
		if err := c.scheme.AddCRD(crd); err != nil {
			// Its objects are still merged and patched; they are not
			// defaulted after mutations.
			klog.FromContext(ctx).Error(err, "adding CustomResourceDefinition defaulting", "crd", crd.Name)
		}
	}
	c.queue.Add(syncKey)
}

// engineConfig is the engine configuration over the controller's caches,
// for its Engine: every policy set the controller swaps in shares its
// matcher, params collector and patcher (and their per-kind plans).
func (c *Controller) engineConfig() engine.Config {
	ns := matching.NamespaceGetterFunc(c.namespace)
	pt := &mutation.Patcher{Schemas: c.schemas, Scheme: c.scheme}
	return engine.Config{
		Matcher:    matching.NewMatcher(ns, c.table),
		Params:     &params.Collector{Source: c.params, Scopes: scopes{c.table}},
		Patcher:    pt,
		Metrics:    c.cfg.Metrics,
		Authorizer: c.authz,
	}
}

// namespace returns a Namespace from the informer cache, falling back to the
// API server for one created after the last watch event.
func (c *Controller) namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	if c.namespaces != nil {
		ns, err := c.namespaces.Get(name)
		if err == nil {
			return ns, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return c.clients.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
}

// scopes implements params.Scopes over the resource table.
type scopes struct{ table *matching.Table }

func (s scopes) Namespaced(gvk schema.GroupVersionKind) (namespaced, known bool) {
	return s.table.KindScope(gvk)
}

// publish records the status of the policy set just swapped in and wakes
// the waiters.
func (c *Controller) publish(st Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.Generation = c.status.Generation + 1
	st.Leader = c.status.Leader
	c.status = st
	close(c.changed)
	c.changed = make(chan struct{})
	if !c.isReady {
		c.isReady = true
		close(c.ready)
	}
}
