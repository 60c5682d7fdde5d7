// Package admissionplugins runs kube-apiserver 1.37's built-in mutating
// admission plugins, the ones before MutatingAdmissionPolicy in its
// admission chain, offline: k8s.io/kubernetes' own plugin packages, chained
// and initialized as kube-apiserver does, fed through client-go informer
// stores that hold the simulated cluster's objects (filled, never
// started). A Chain belongs to one simulated cluster (package cluster
// builds it with its objects); its plugins are chosen when it is built.
//
// It is part of scheme's k8s.io/kubernetes boundary, in a package of its
// own so that the scheme's other jobs (decoding, defaulting, conversion,
// validation) do not carry the plugins and their stores.
package admissionplugins

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	apiserverapiv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	apiserverapiv1alpha1 "k8s.io/apiserver/pkg/apis/apiserver/v1alpha1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	api "k8s.io/kubernetes/pkg/apis/core"
	kubeadmission "k8s.io/kubernetes/pkg/controlplane/apiserver/admission"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"
	quotainstall "k8s.io/kubernetes/pkg/quota/v1/install"
	"k8s.io/kubernetes/plugin/pkg/admission/admit"
	"k8s.io/kubernetes/plugin/pkg/admission/alwayspullimages"
	"k8s.io/kubernetes/plugin/pkg/admission/antiaffinity"
	certapproval "k8s.io/kubernetes/plugin/pkg/admission/certificates/approval"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/ctbattest"
	certsigning "k8s.io/kubernetes/plugin/pkg/admission/certificates/signing"
	certsubjectrestriction "k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction"
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds"
	"k8s.io/kubernetes/plugin/pkg/admission/deny"
	"k8s.io/kubernetes/plugin/pkg/admission/eventratelimit"
	"k8s.io/kubernetes/plugin/pkg/admission/extendedresourcetoleration"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"
	"k8s.io/kubernetes/plugin/pkg/admission/namespace/autoprovision"
	"k8s.io/kubernetes/plugin/pkg/admission/namespace/exists"
	"k8s.io/kubernetes/plugin/pkg/admission/network/defaultingressclass"
	"k8s.io/kubernetes/plugin/pkg/admission/network/denyserviceexternalips"
	"k8s.io/kubernetes/plugin/pkg/admission/nodedeclaredfeatures"
	"k8s.io/kubernetes/plugin/pkg/admission/nodetaint"
	"k8s.io/kubernetes/plugin/pkg/admission/podnodeselector"
	"k8s.io/kubernetes/plugin/pkg/admission/podresize"
	"k8s.io/kubernetes/plugin/pkg/admission/podtolerationrestriction"
	"k8s.io/kubernetes/plugin/pkg/admission/podtopologylabels"
	podpriority "k8s.io/kubernetes/plugin/pkg/admission/priority"
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass"
	"k8s.io/kubernetes/plugin/pkg/admission/scheduling/podgroupprotection"
	"k8s.io/kubernetes/plugin/pkg/admission/security/podsecurity"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/persistentvolume/resize"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageclass/setdefault"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageobjectinuseprotection"

	"github.com/mutatis-dev/mutatis/scheme"
)

// Stage is what a kube-apiserver admission plugin is to mutatis' offline
// admission.
type Stage int

const (
	// Mutating plugins run offline, before the policies (Chain.Admit).
	Mutating Stage = iota
	// Validating plugins only validate (they have no Admit), after
	// mutating admission and the registry's validation: Chain.Validate
	// runs them, but for those that cannot run offline (Plugin.Why).
	Validating
	// Policies is the MutatingAdmissionPolicy plugin: mutatis' engine.
	Policies
	// Webhooks is the MutatingAdmissionWebhook plugin, which calls
	// webhooks: not one of the plugins before the policies.
	Webhooks
	// Unsupported plugins mutate but need what an offline run does not
	// have.
	Unsupported
)

// Plugin is one of kube-apiserver 1.37's admission plugins.
type Plugin struct {
	// Name is kube-apiserver's (--enable-admission-plugins).
	Name string
	// DefaultOn tells whether a kube-apiserver without admission flags
	// runs it.
	DefaultOn bool
	// Stage tells whether Chain.Admit runs it when it is enabled.
	Stage Stage
	// Why a plugin of Stage Unsupported cannot run offline, or why
	// Chain.Validate does not run a plugin of Stage Validating.
	Why string

	register func(*admission.Plugins)
}

// All are kube-apiserver 1.37's admission plugins in the
// order of its admission chain (options.AllOrderedPlugins of
// k8s.io/kubernetes/pkg/kubeapiserver/options), which plugins it enables
// by default (all but options.DefaultOffAdmissionPlugins), and what
// offline admission does with each. TestAdmissionPluginsAreKubeAPIServers
// holds the list equal to upstream's and each Stage to the plugin's own
// interfaces. The slice must not be modified.
var All = []Plugin{
	{Name: admit.PluginName, Stage: Mutating, register: admit.Register},
	{Name: autoprovision.PluginName, Stage: Mutating, register: autoprovision.Register},
	{Name: lifecycle.PluginName, DefaultOn: true, Stage: Mutating, register: lifecycle.Register},
	{Name: exists.PluginName, Stage: Validating, register: exists.Register},
	{Name: antiaffinity.PluginName, Stage: Validating, register: antiaffinity.Register},
	{Name: limitranger.PluginName, DefaultOn: true, Stage: Mutating, register: limitranger.Register},
	{Name: serviceaccount.PluginName, DefaultOn: true, Stage: Mutating, register: serviceaccount.Register},
	{Name: "NodeRestriction", Stage: Unsupported, Why: "it restricts what kubelets (system:node:NAME users) may do to their Node and the Pods bound to it, which an offline run does not hold"},
	{Name: nodetaint.PluginName, DefaultOn: true, Stage: Mutating, register: nodetaint.Register},
	{Name: alwayspullimages.PluginName, Stage: Mutating, register: alwayspullimages.Register},
	{Name: "ImagePolicyWebhook", Stage: Validating, Why: "it asks an image review webhook backend (its configuration file's kubeconfig) about every Pod"},
	{Name: podsecurity.PluginName, DefaultOn: true, Stage: Validating, register: podsecurity.Register},
	{Name: podnodeselector.PluginName, Stage: Mutating, register: podnodeselector.Register},
	{Name: podpriority.PluginName, DefaultOn: true, Stage: Mutating, register: podpriority.Register},
	{Name: defaulttolerationseconds.PluginName, DefaultOn: true, Stage: Mutating, register: defaulttolerationseconds.Register},
	{Name: podtolerationrestriction.PluginName, Stage: Mutating, register: podtolerationrestriction.Register},
	{Name: eventratelimit.PluginName, Stage: Validating, register: eventratelimit.Register},
	{Name: extendedresourcetoleration.PluginName, Stage: Mutating, register: extendedresourcetoleration.Register},
	{Name: setdefault.PluginName, DefaultOn: true, Stage: Mutating, register: setdefault.Register},
	{Name: storageobjectinuseprotection.PluginName, DefaultOn: true, Stage: Mutating, register: storageobjectinuseprotection.Register},
	{Name: podgroupprotection.PluginName, DefaultOn: true, Stage: Mutating, register: podgroupprotection.Register},
	{Name: "OwnerReferencesPermissionEnforcement", Stage: Validating, Why: "it asks the authorizer about the owners' resources through a REST mapper of the live API server's discovery"},
	{Name: resize.PluginName, DefaultOn: true, Stage: Validating, register: resize.Register},
	{Name: runtimeclass.PluginName, DefaultOn: true, Stage: Mutating, register: runtimeclass.Register},
	{Name: certapproval.PluginName, DefaultOn: true, Stage: Validating, register: certapproval.Register},
	{Name: certsigning.PluginName, DefaultOn: true, Stage: Validating, register: certsigning.Register},
	{Name: ctbattest.PluginName, DefaultOn: true, Stage: Validating, register: ctbattest.Register},
	{Name: certsubjectrestriction.PluginName, DefaultOn: true, Stage: Validating, register: certsubjectrestriction.Register},
	{Name: defaultingressclass.PluginName, DefaultOn: true, Stage: Mutating, register: defaultingressclass.Register},
	{Name: denyserviceexternalips.PluginName, Stage: Validating, register: denyserviceexternalips.Register},
	{Name: podtopologylabels.PluginName, DefaultOn: true, Stage: Mutating, register: podtopologylabels.Register},
	{Name: nodedeclaredfeatures.PluginName, DefaultOn: true, Stage: Validating, register: nodedeclaredfeatures.Register},
	{Name: podresize.PluginName, DefaultOn: true, Stage: Validating, register: podresize.Register},
	{Name: "MutatingAdmissionPolicy", DefaultOn: true, Stage: Policies},
	{Name: "MutatingAdmissionWebhook", DefaultOn: true, Stage: Webhooks},
	{Name: "ValidatingAdmissionPolicy", DefaultOn: true, Stage: Validating, Why: "mutatis' ValidatingAdmissionPolicy stage runs it"},
	{Name: "ValidatingAdmissionWebhook", DefaultOn: true, Stage: Validating, Why: "mutatis' validating webhook stage runs it"},
	{Name: resourcequota.PluginName, DefaultOn: true, Stage: Validating, register: resourcequota.Register},
	{Name: deny.PluginName, Stage: Mutating, register: deny.Register},
}

// Flags choose kube-apiserver's admission plugins as its flags do.
// Enabled and disabled plugins are placed in the order of All whatever
// the order of the names. The zero value is kube-apiserver's default set.
type Flags struct {
	// Only is the exact set (kube-apiserver's deprecated
	// --admission-control; mutatis' --admission-plugins); it excludes
	// Enable and Disable.
	Only []string
	// Enable adds plugins to the default set
	// (--enable-admission-plugins).
	Enable []string
	// Disable removes plugins from it (--disable-admission-plugins).
	Disable []string
	// ConfigFile is kube-apiserver's --admission-control-config-file: an
	// AdmissionConfiguration (apiserver.config.k8s.io/v1) whose plugins'
	// configurations (embedded, or a path relative to the file) configure
	// the plugins as kube-apiserver's do (PodSecurity's
	// PodSecurityConfiguration: defaults and exemptions). "": none, each
	// plugin's defaults.
	ConfigFile string
}

// Enabled returns the plugins kube-apiserver 1.37 runs with flags f, in
// the order of its chain, refusing flags as it refuses them (the messages
// name its flags). Names of every stage are accepted: Chain.Admit runs
// those of Stage Mutating, and a plugin of Stage Unsupported enabled is an
// error.
func Enabled(f Flags) ([]Plugin, error) {
	known := map[string]bool{}
	for _, p := range All {
		known[p.Name] = true
	}
	var errs []error
	unknown := func(flag string, names []string) {
		for _, n := range names {
			if !known[n] {
				errs = append(errs, fmt.Errorf("%s plugin %q is unknown", flag, n))
			}
		}
	}
	if len(f.Only) > 0 && (len(f.Enable) > 0 || len(f.Disable) > 0) {
		errs = append(errs, errors.New("admission-plugins and enable-admission-plugins/disable-admission-plugins flags are mutually exclusive"))
	}
	unknown("admission-plugins", f.Only)
	unknown("enable-admission-plugins", f.Enable)
	unknown("disable-admission-plugins", f.Disable)
	var both []string
	for _, n := range f.Enable {
		if slices.Contains(f.Disable, n) && !slices.Contains(both, n) {
			both = append(both, n)
		}
	}
	if len(both) > 0 {
		sort.Strings(both)
		errs = append(errs, fmt.Errorf("%v in enable-admission-plugins and disable-admission-plugins overlapped", both))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var out []Plugin
	for _, p := range All {
		on := p.DefaultOn
		switch {
		case len(f.Only) > 0:
			on = slices.Contains(f.Only, p.Name)
		case slices.Contains(f.Enable, p.Name):
			on = true
		case slices.Contains(f.Disable, p.Name):
			on = false
		}
		if !on {
			continue
		}
		if p.Stage == Unsupported {
			errs = append(errs, fmt.Errorf("admission plugin %q cannot run offline: %s", p.Name, p.Why))
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

// Step is what one admission plugin did to a request in Chain.Admit:
// plugins that do not handle the request's operation are not steps.
type Step struct {
	// Plugin is the plugin's name.
	Plugin string
	// Changed tells whether it changed the object; reported only when
	// the caller asks for it (AdmitSteps' changes), false otherwise.
	Changed bool
	// Err is its refusal (an *apierrors.StatusError), or nil.
	Err error
}

// Stores hold the objects of a simulated cluster that the admission
// plugins read: the stores of client-go informers that are filled (Add),
// never started. Build them with NewStores; they are safe for concurrent
// use.
type Stores struct {
	scheme  *scheme.Scheme
	factory informers.SharedInformerFactory
	stores  map[schema.GroupVersionResource]storeOf
	// closedNamespaces tells that the Namespaces added are all the
	// cluster's (CloseNamespaces).
	closedNamespaces bool
}

// storeOf is the store of a resource the plugins read, with the kind of
// its objects.
type storeOf struct {
	kind    schema.GroupVersionKind
	indexer cache.Indexer
}

// NewStores returns empty stores for objects of s.
func NewStores(s *scheme.Scheme) *Stores {
	f := informers.NewSharedInformerFactory(nil, 0)
	p := &Stores{scheme: s, factory: f, stores: map[schema.GroupVersionResource]storeOf{}}
	add := func(gv schema.GroupVersion, resource, kind string, i cache.SharedIndexInformer) {
		p.stores[gv.WithResource(resource)] = storeOf{kind: gv.WithKind(kind), indexer: i.GetIndexer()}
	}
	core := corev1.SchemeGroupVersion
	add(core, "namespaces", "Namespace", f.Core().V1().Namespaces().Informer())
	add(core, "serviceaccounts", "ServiceAccount", f.Core().V1().ServiceAccounts().Informer())
	add(core, "limitranges", "LimitRange", f.Core().V1().LimitRanges().Informer())
	add(core, "resourcequotas", "ResourceQuota", f.Core().V1().ResourceQuotas().Informer())
	add(core, "nodes", "Node", f.Core().V1().Nodes().Informer())
	add(schema.GroupVersion{Group: "scheduling.k8s.io", Version: "v1"}, "priorityclasses", "PriorityClass", f.Scheduling().V1().PriorityClasses().Informer())
	add(schema.GroupVersion{Group: "storage.k8s.io", Version: "v1"}, "storageclasses", "StorageClass", f.Storage().V1().StorageClasses().Informer())
	add(schema.GroupVersion{Group: "networking.k8s.io", Version: "v1"}, "ingressclasses", "IngressClass", f.Networking().V1().IngressClasses().Informer())
	add(schema.GroupVersion{Group: "node.k8s.io", Version: "v1"}, "runtimeclasses", "RuntimeClass", f.Node().V1().RuntimeClasses().Informer())
	return p
}

// Chain is the admission plugins of a simulated cluster: the chain of the
// enabled plugins of Stage Mutating (Admit) and the validating lists of
// the enabled plugins that validate (Validate), built on first use as
// kube-apiserver builds its admission chain (registration, the plugins'
// configurations, one initializer, each plugin initialized and
// validated, a chain handler), fed by the informers of its Stores, and a
// client that answers the plugins' lookups when a store misses from the
// same stores. A plugin that both mutates and validates (LimitRanger,
// ServiceAccount, Priority, RuntimeClass …) is one instance in both, as in
// kube-apiserver. Build one with New; it is safe for concurrent use.
type Chain struct {
	stores *Stores
	names  []string // the enabled plugins, Enabled's
	config admission.ConfigProvider
	authz  authorizer.Authorizer

	// stop is closed when the Chain is unreachable (runtime.AddCleanup):
	// the goroutines of the ResourceQuota plugin's evaluator, which
	// kube-apiserver stops when it drains, stop with it.
	stop chan struct{}
	// resources are WithResources'.
	resources []schema.GroupResource

	mu    sync.Mutex
	built *built
}

// built is a Chain's plugins, once built.
type built struct {
	// mutating chains the plugins of Stage Mutating; run names them.
	mutating admission.MutationInterface
	run      []string
	// validating chains, for each Phase, the plugins that validate.
	validating [phases]admission.ValidationInterface
}

// Option configures a Chain (New).
type Option func(*Chain)

// WithAuthorizer is the authorizer the plugins ask (the certificate
// plugins: CertificateApproval, CertificateSigning,
// ClusterTrustBundleAttest). Without it they are built with
// kube-apiserver's default --authorization-mode, AlwaysAllow.
func WithAuthorizer(a authorizer.Authorizer) Option {
	return func(c *Chain) { c.authz = a }
}

// WithResources names the cluster's resources (its namespaced ones are
// enough): the ResourceQuota plugin's registry gets the object count
// evaluator of each at once (generic.NewObjectCountEvaluator, with no
// aggregate usage) that kube-apiserver's adds, and logs, the first time a
// request of the resource meets it; the result is the same, without a
// log line per resource on the standard error.
func WithResources(grs []schema.GroupResource) Option {
	return func(c *Chain) { c.resources = grs }
}

// New returns the admission plugins that kube-apiserver 1.37 runs with
// flags f (Enabled, whose error it returns), reading st. A configuration
// file (Flags.ConfigFile) is read, and the plugins are built with it, at
// once: its errors are New's, as kube-apiserver's are at start.
func New(st *Stores, f Flags, opts ...Option) (*Chain, error) {
	enabled, err := Enabled(f)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, e := range enabled {
		names = append(names, e.Name)
	}
	configScheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{apiserverapi.AddToScheme, apiserverapiv1alpha1.AddToScheme, apiserverapiv1.AddToScheme} {
		if err := add(configScheme); err != nil {
			return nil, err
		}
	}
	config, err := admission.ReadAdmissionConfiguration(names, f.ConfigFile, configScheme)
	if err != nil {
		return nil, fmt.Errorf("failed to read plugin config: %w", err)
	}
	c := &Chain{stores: st, names: names, config: config, authz: authorizerfactory.NewAlwaysAllowAuthorizer(), stop: make(chan struct{})}
	goruntime.AddCleanup(c, func(stop chan struct{}) { close(stop) }, c.stop)
	for _, o := range opts {
		o(c)
	}
	if f.ConfigFile != "" {
		if _, err := c.build(); err != nil {
			return nil, fmt.Errorf("%s: %w", f.ConfigFile, err)
		}
	}
	return c, nil
}

// store is the store of objects of kind gvk (any version of the group),
// if a plugin reads them.
func (p *Stores) store(gk schema.GroupKind) (storeOf, bool) {
	for _, s := range p.stores {
		if s.kind.GroupKind() == gk {
			return s, true
		}
	}
	return storeOf{}, false
}

func (p *Chain) build() (*built, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.built != nil {
		return p.built, nil
	}
	registry := admission.NewPlugins()
	var enabled []Plugin
	for _, ap := range All {
		if ap.register != nil && slices.Contains(p.names, ap.Name) {
			ap.register(registry)
			enabled = append(enabled, ap)
		}
	}
	init, err := p.initializer()
	if err != nil {
		return nil, err
	}
	// As registry.NewFromPlugins, without its log line; each plugin
	// decorated as kube-apiserver decorates them for its metrics, here to
	// report steps.
	b := &built{}
	var mutating []admission.Interface
	var validating [phases][]admission.Interface
	for _, ap := range enabled {
		name := ap.Name
		config, err := p.config.ConfigFor(name)
		if err != nil {
			return nil, fmt.Errorf("building kube-apiserver's admission plugin %s: %w", name, err)
		}
		plugin, err := registry.InitPlugin(name, config, init)
		if err != nil {
			return nil, fmt.Errorf("building kube-apiserver's admission plugin %s: %w", name, err)
		}
		if r, ok := plugin.(interface{ SetReadyFunc(admission.ReadyFunc) }); ok {
			// The plugins wait for their informers to sync; these stores
			// are complete before the first request.
			r.SetReadyFunc(func() bool { return true })
		}
		if v, ok := plugin.(admission.ValidationInterface); ok {
			at := phaseOf(name)
			validating[at] = append(validating[at], validationRecorder{name: name, ValidationInterface: v})
		}
		if ap.Stage != Mutating {
			continue
		}
		if name == serviceaccount.PluginName {
			plugin = tokenVolumeNamer{plugin}
		}
		mutating = append(mutating, stepRecorder{name: name, Interface: plugin})
		b.run = append(b.run, name)
	}
	b.mutating = admission.NewChainHandler(mutating...)
	for at, handlers := range validating {
		b.validating[at] = admission.NewChainHandler(handlers...)
	}
	p.built = b
	return b, nil
}

// initializer initializes plugins as kube-apiserver's generic plugin
// initializer and then its own (k8s.io/kubernetes
// pkg/controlplane/apiserver/admission) do: with the stores' informer
// factory and client, the Chain's authorizer, kube-apiserver's feature
// gates and its effective version (1.37, PodSecurity's "latest"), the
// Chain's stop channel as the drained notification (the ResourceQuota
// plugin's evaluator workers stop on it), and the quota configuration
// kube-apiserver's admission uses (its evaluators of every resource,
// reading the stores); no dynamic client or REST mapper (the plugins run
// here need none).
func (p *Chain) initializer() (admission.PluginInitializer, error) {
	qc, err := quotainstall.NewQuotaConfigurationForAdmission(p.stores.factory, nil)
	if err != nil {
		return nil, err
	}
	return admission.PluginInitializers{
		initializer.New(p.stores.client(), nil, p.stores.factory, p.authz, utilfeature.DefaultFeatureGate, kubeVersion, p.stop, nil),
		kubeadmission.NewPluginInitializer(quotaConfiguration{qc, p.resources}, exclusion.Excluded()),
	}, nil
}

// quotaConfiguration is kube-apiserver's quota configuration for
// admission with, among its evaluators, the object count evaluator of
// every resource of resources it has none of (WithResources).
type quotaConfiguration struct {
	quota.Configuration
	resources []schema.GroupResource
}

// Evaluators implements quota.Configuration.
func (c quotaConfiguration) Evaluators() []quota.Evaluator {
	evaluators := c.Configuration.Evaluators()
	have := map[schema.GroupResource]bool{}
	for _, e := range evaluators {
		have[e.GroupResource()] = true
	}
	ignored := c.IgnoredResources()
	for _, gr := range c.resources {
		if _, skip := ignored[gr]; !skip && !have[gr] {
			have[gr] = true
			evaluators = append(evaluators, generic.NewObjectCountEvaluator(gr, nil, ""))
		}
	}
	return evaluators
}

// client is the clientset the plugins look objects up with when their
// informer's store misses (a live lookup in kube-apiserver): a fake
// clientset whose GETs and LISTs read the same stores, so a live lookup
// finds what the store has, as it would against a synced informer.
// Anything else is refused: nothing is written offline.
//
// Every action is answered by the reactor below, never by the clientset's
// object tracker, so the tracker is the plain one: NewClientset's
// field-managed tracker parses client-go's whole structured-merge-diff
// schema when it is built (≈ 140 ms of CPU, most of a one-object `mutatis
// apply`, for nothing here).
func (p *Stores) client() *fake.Clientset {
	c := fake.NewSimpleClientset() //nolint:staticcheck // the tracker is never used, see above
	c.PrependReactor("*", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		gvr := action.GetResource()
		s, ok := p.stores[gvr]
		switch a := action.(type) {
		case clienttesting.GetAction:
			if !ok {
				break
			}
			key := a.GetName()
			if a.GetNamespace() != "" {
				key = a.GetNamespace() + "/" + key
			}
			obj, exists, err := s.indexer.GetByKey(key)
			if err != nil {
				return true, nil, apierrors.NewInternalError(err)
			}
			if !exists {
				return true, nil, apierrors.NewNotFound(gvr.GroupResource(), a.GetName())
			}
			return true, obj.(runtime.Object).DeepCopyObject(), nil
		case clienttesting.ListAction:
			var list runtime.Object
			switch gvr {
			case corev1.SchemeGroupVersion.WithResource("limitranges"):
				list = &corev1.LimitRangeList{}
			case corev1.SchemeGroupVersion.WithResource("resourcequotas"):
				list = &corev1.ResourceQuotaList{}
			default:
				return true, nil, apierrors.NewServiceUnavailable(fmt.Sprintf("%s %s: no API server behind offline admission", action.GetVerb(), gvr.Resource))
			}
			var items []runtime.Object
			for _, o := range s.indexer.List() {
				if o := o.(runtime.Object); a.GetNamespace() == "" || o.(metav1.Object).GetNamespace() == a.GetNamespace() {
					items = append(items, o.DeepCopyObject())
				}
			}
			return true, list, meta.SetList(list, items)
		case clienttesting.UpdateAction:
			// The ResourceQuota plugin charges an admitted request to
			// the quotas' status: the write is answered, not made, so
			// that every request is measured against the status as
			// given (what the quota controller last wrote).
			if ok && gvr.Group == "" && gvr.Resource == "resourcequotas" && a.GetSubresource() == "status" {
				return true, a.GetObject().DeepCopyObject(), nil
			}
		}
		return true, nil, apierrors.NewServiceUnavailable(fmt.Sprintf("%s %s: no API server behind offline admission", action.GetVerb(), gvr.Resource))
	})
	return c
}

// stepRecorder decorates an admission plugin to report its step to the
// recorder of the request's context, if any.
type stepRecorder struct {
	name string
	admission.Interface
}

type stepsKey struct{}

// stepLog is the recorder of a request's steps.
type stepLog struct {
	steps []Step
	// changes asks each step whether its plugin changed the object: a
	// deep copy of the object before the plugin and a comparison after
	// it, the larger part of the plugins' cost, so only when asked.
	changes bool
}

// Admit implements admission.MutationInterface.
func (r stepRecorder) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	m := r.Interface.(admission.MutationInterface)
	log, _ := ctx.Value(stepsKey{}).(*stepLog)
	if log == nil {
		return m.Admit(ctx, a, o)
	}
	var before runtime.Object
	if obj := a.GetObject(); obj != nil && log.changes {
		before = obj.DeepCopyObject()
	}
	err := m.Admit(ctx, a, o)
	log.steps = append(log.steps, Step{Plugin: r.name, Changed: before != nil && !apiequality.Semantic.DeepEqual(before, a.GetObject()), Err: err})
	return err
}

// Add adds (or replaces) obj, an object of a kind the admission plugins
// read, to their stores, as stored (defaulted, in the
// stores' version): Namespaces (NamespaceLifecycle, PodNodeSelector,
// PodTolerationRestriction), ServiceAccounts (ServiceAccount), LimitRanges
// (LimitRanger), ResourceQuotas with their status (ResourceQuota), Nodes (PodTopologyLabels), PriorityClasses (Priority),
// StorageClasses (DefaultStorageClass), IngressClasses
// (DefaultIngressClass), RuntimeClasses (RuntimeClass). It reports whether
// the kind is one of them; objects of other kinds are left alone.
func (p *Stores) Add(obj map[string]any) (bool, error) {
	s := p.scheme
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return false, err
	}
	gvk := gv.WithKind(kind)
	st, ok := p.store(gvk.GroupKind())
	if !ok || !s.Recognizes(gvk) {
		return false, nil
	}
	obj, err = s.Default(obj, gvk)
	if err != nil {
		return true, err
	}
	if gvk != st.kind {
		if obj, err = s.Convert(obj, gvk, st.kind); err != nil {
			return true, err
		}
	}
	typed, err := s.Types().New(st.kind)
	if err != nil {
		return true, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
		return true, err
	}
	return true, st.indexer.Update(typed)
}

// Names returns the names of the plugins Admit runs, in order.
func (p *Chain) Names() ([]string, error) {
	b, err := p.build()
	if err != nil {
		return nil, err
	}
	return slices.Clone(b.run), nil
}

// systemNamespaces are the namespaces every cluster has
// (kube-apiserver's system namespaces controller creates them).
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// CloseNamespaces makes the Namespaces added to p all the cluster's
// namespaces, with default, kube-system, kube-public and kube-node-lease
// (ensureNamespace): a request in another one is refused as kube-apiserver
// refuses it. Call it before the first admission.
func (p *Stores) CloseNamespaces() { p.closedNamespaces = true }

// ensureNamespace puts into the stores what every namespace of a cluster
// has when it is not among the objects of the run: the Namespace itself,
// as the simulated cluster synthesizes it (only its
// kubernetes.io/metadata.name label, phase Active), and its "default"
// ServiceAccount, which kube-controller-manager creates in every
// namespace (name only).
//
// After CloseNamespaces, a namespace that is not among the Namespaces
// added, nor one of the system namespaces every cluster has, does not
// exist and is not made up: the NamespaceLifecycle plugin refuses the
// request as kube-apiserver does (404 `namespaces "X" not found`).
func (p *Stores) ensureNamespace(name string) error {
	namespaces := p.stores[corev1.SchemeGroupVersion.WithResource("namespaces")].indexer
	_, exists, _ := namespaces.GetByKey(name)
	if !exists && p.closedNamespaces && !slices.Contains(systemNamespaces, name) {
		return nil
	}
	if !exists {
		ns := &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		}
		if err := namespaces.Add(ns); err != nil {
			return err
		}
	}
	sas := p.stores[corev1.SchemeGroupVersion.WithResource("serviceaccounts")].indexer
	if _, ok, _ := sas.GetByKey(name + "/" + serviceaccount.DefaultServiceAccountName); !ok {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: serviceaccount.DefaultServiceAccountName, Namespace: name}}
		if err := sas.Add(sa); err != nil {
			return err
		}
	}
	return nil
}

// Admit runs on obj, the decoded object of req (old: the stored object of
// an UPDATE), the admission plugins of kube-apiserver's chain that precede
// MutatingAdmissionPolicy (those New chose), on its internal form as the
// admission chain does, and returns the object as the MAP plugin receives
// it, in req's version.
// Their refusals (e.g. the Priority plugin's 403 for an unknown
// priorityClassName) are *apierrors.StatusError. Kinds without a Go type
// come back as they are.
func (p *Chain) Admit(ctx context.Context, req scheme.Request, obj, old map[string]any, u user.Info, dryRun bool) (map[string]any, error) {
	out, _, err := p.admit(ctx, req, obj, old, u, dryRun, nil)
	return out, err
}

// AdmitSteps is Admit that also reports what each plugin
// handling the request did, in order (the steps until a refusal, with it,
// when err is a refusal). With changes, each step tells whether its plugin
// changed the object (Step.Changed), at the price of a deep copy and
// a comparison of the object per plugin; without, the steps name the
// plugins and their refusal only.
func (p *Chain) AdmitSteps(ctx context.Context, req scheme.Request, obj, old map[string]any, u user.Info, dryRun, changes bool) (map[string]any, []Step, error) {
	return p.admit(ctx, req, obj, old, u, dryRun, &stepLog{changes: changes})
}

func (p *Chain) admit(ctx context.Context, req scheme.Request, obj, old map[string]any, u user.Info, dryRun bool, log *stepLog) (map[string]any, []Step, error) {
	s := p.stores.scheme
	if obj == nil || !s.Recognizes(req.Kind) {
		return obj, nil, nil
	}
	kube, err := scheme.Kube()
	if err != nil {
		return nil, nil, err
	}
	b, err := p.build()
	if err != nil {
		return nil, nil, err
	}
	chain := b.mutating
	if req.Namespace != "" {
		if err := p.stores.ensureNamespace(req.Namespace); err != nil {
			return nil, nil, err
		}
	}
	internal, err := s.Internal(obj, req.Kind)
	if err != nil {
		return nil, nil, err
	}
	var oldInternal runtime.Object
	if old != nil {
		if oldInternal, err = s.Internal(old, req.Kind); err != nil {
			return nil, nil, err
		}
	}
	steps := func() []Step {
		if log == nil {
			return nil
		}
		return log.steps
	}
	if log != nil {
		ctx = context.WithValue(ctx, stepsKey{}, log)
	}
	attrs := admission.NewAttributesRecord(internal, oldInternal, req.Kind, req.Namespace, req.Name, req.Resource, req.Subresource, req.Operation, nil, dryRun, u)
	if chain.Handles(req.Operation) {
		if err := chain.Admit(ctx, attrs, admission.NewObjectInterfacesFromScheme(kube)); err != nil {
			return nil, steps(), err
		}
	}
	// The plugins' object, which nothing uses afterwards.
	out, err := s.FromInternal(internal, req.Kind)
	if err != nil {
		return nil, steps(), apierrors.NewInternalError(err)
	}
	return out, steps(), nil
}

// TokenVolumeSuffix is the suffix of the projected service account token
// volume the ServiceAccount plugin adds to a Pod offline:
// kube-api-access-xxxxx. kube-apiserver names it kube-api-access- and 5
// random characters (names.SimpleNameGenerator); a fixed suffix (one the
// generator can produce) keeps offline results comparable.
const TokenVolumeSuffix = "xxxxx"

// tokenVolumeNamer decorates the ServiceAccount plugin: the token volume
// it adds, and the mounts of it, get the name kube-api-access- +
// TokenVolumeSuffix instead of a random one.
type tokenVolumeNamer struct {
	admission.Interface
}

// Admit implements admission.MutationInterface.
func (n tokenVolumeNamer) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	pod, _ := a.GetObject().(*api.Pod)
	had := pod != nil && tokenVolume(pod) >= 0
	err := n.Interface.(admission.MutationInterface).Admit(ctx, a, o)
	if pod == nil || had {
		return err
	}
	if i := tokenVolume(pod); i >= 0 {
		generated, name := pod.Spec.Volumes[i].Name, serviceaccount.ServiceAccountVolumeName+"-"+TokenVolumeSuffix
		pod.Spec.Volumes[i].Name = name
		for _, cs := range [][]api.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for ci := range cs {
				for mi := range cs[ci].VolumeMounts {
					if cs[ci].VolumeMounts[mi].Name == generated {
						cs[ci].VolumeMounts[mi].Name = name
					}
				}
			}
		}
	}
	return err
}

// tokenVolume is the index of the Pod's service account token volume as
// the ServiceAccount plugin finds it (the first volume named
// kube-api-access-…), or -1.
func tokenVolume(pod *api.Pod) int {
	for i, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, serviceaccount.ServiceAccountVolumeName+"-") {
			return i
		}
	}
	return -1
}

// Handler returns the built-in admission plugins Admit runs, chained as
// kube-apiserver chains them (admission.NewChainHandler, on the internal
// objects of scheme.Kube's scheme), with what every namespace of a cluster
// has in place for namespace (its Namespace and its default
// ServiceAccount). It lets a test run kube-apiserver's own admission chain
// and reinvoker around the same plugins, as an oracle.
func (p *Chain) Handler(namespace string) (admission.MutationInterface, error) {
	b, err := p.build()
	if err != nil {
		return nil, err
	}
	if namespace != "" {
		if err := p.stores.ensureNamespace(namespace); err != nil {
			return nil, err
		}
	}
	return b.mutating, nil
}
