package differential

// The harness of dispatcher_test.go: one "world" (namespaces, param objects,
// CRD schemas) served to both admission implementations, and a runner that
// sends one admission request through
//
//   - upstream: k8s.io/apiserver's MutatingAdmissionPolicy dispatcher
//     (mutating.NewDispatcher over generic.PolicyDispatcher), fed with hand-built
//     PolicyHooks compiled exactly as the package's unexported compilePolicy
//     does, a policy matching.Matcher over a fake clientset's namespace
//     informer, param informers from the same informer factory and the
//     reinvocation protocol of admission.reinvoker (Dispatch, then Dispatch
//     again with IsReinvoke() true if the first pass asked for it);
//   - mutatis: engine.NewEvaluator with matching.NewMatcher(DefaultTable),
//     params.Collector over params.NewMemory and mutation.Patcher;
//
// and reduces both answers to a comparable outcome.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
	kubescheme "github.com/mutatis-dev/mutatis/scheme"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	upstreammatching "k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/matching"
	mut "github.com/mutatis-dev/mutatis/mutation"
	"github.com/mutatis-dev/mutatis/params"
	"github.com/mutatis-dev/mutatis/test/upstream"
)

// dispatchRequest is one admission request, as kube-apiserver hands it to the
// admission chain (typed objects for built-in kinds).
type dispatchRequest struct {
	op          admission.Operation
	obj, old    runtime.Object
	gvk         schema.GroupVersionKind
	gvr         schema.GroupVersionResource
	subresource string
	namespace   string
	name        string
	user        user.Info
	dryRun      bool
	options     runtime.Object
}

func (r dispatchRequest) attributes() admission.Attributes {
	var obj, old runtime.Object
	if r.obj != nil {
		obj = r.obj.DeepCopyObject()
	}
	if r.old != nil {
		old = r.old.DeepCopyObject()
	}
	var opts runtime.Object
	if r.options != nil {
		opts = r.options.DeepCopyObject()
	}
	u := r.user
	if u == nil {
		u = &user.DefaultInfo{Name: "alice", UID: "u-1", Groups: []string{"devs", "system:authenticated"}}
	}
	return admission.NewAttributesRecord(obj, old, r.gvk, r.namespace, r.name, r.gvr, r.subresource, r.op, opts, r.dryRun, u)
}

// dispatchOutcome is what a client of kube-apiserver can observe.
type dispatchOutcome struct {
	object map[string]any
	status *metav1.Status // denial or failure, nil if admitted
	err    error          // an error that is not an API status
}

func (o dispatchOutcome) String() string {
	switch {
	case o.err != nil:
		return "error: " + o.err.Error()
	case o.status != nil:
		return fmt.Sprintf("status %d %s %q causes=%v", o.status.Code, o.status.Reason, o.status.Message, o.status.Details)
	default:
		y, _ := yaml.Marshal(o.object)
		return "object:\n" + string(y)
	}
}

// compareOutcomes returns nil when both implementations answered alike:
// the same Status (message, code, reason, details incl. causes) or the same
// final object (semantic deep equality of the unstructured content).
func compareOutcomes(ours, theirs dispatchOutcome) error {
	if (ours.err == nil) != (theirs.err == nil) || (ours.err != nil && ours.err.Error() != theirs.err.Error()) {
		return fmt.Errorf("errors differ:\n ours:     %v\n upstream: %v", ours.err, theirs.err)
	}
	if (ours.status == nil) != (theirs.status == nil) {
		return fmt.Errorf("one side denied:\n ours:     %s\n upstream: %s", ours, theirs)
	}
	if ours.status != nil {
		if !apiequality.Semantic.DeepEqual(ours.status, theirs.status) {
			return fmt.Errorf("statuses differ:\n ours:     %s\n upstream: %s", ours, theirs)
		}
		return nil
	}
	// Typed objects come back from upstream's patchers without TypeMeta;
	// the apiserver sets it again when it serializes, so clients never see
	// the difference.
	if !apiequality.Semantic.DeepEqual(withoutTypeMeta(ours.object), withoutTypeMeta(theirs.object)) {
		return fmt.Errorf("objects differ:\n ours:     %s\n upstream: %s", ours, theirs)
	}
	return nil
}

// withoutTypeMeta returns a shallow copy of obj without apiVersion and kind.
func withoutTypeMeta(obj map[string]any) map[string]any {
	if obj == nil {
		return nil
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "apiVersion" && k != "kind" {
			out[k] = v
		}
	}
	return out
}

// dispatchWorld is the cluster state both implementations see.
type dispatchWorld struct {
	namespaces []*corev1.Namespace
	params     []runtime.Object // typed ConfigMaps and Secrets (Namespaces are params too)

	// upstream
	informerFactory informers.SharedInformerFactory
	restMapper      meta.RESTMapper
	dispatcher      generic.Dispatcher[mutating.PolicyHook]
	objectIfaces    admission.ObjectInterfaces
	upstreamCache   map[string]mutating.PolicyEvaluator // compiled per policy revision (compiler.Key)

	// mutatis
	schemas  *applyconfig.Schemas
	table    *matching.Table
	memory   *params.Memory
	compiler *compiler.Compiler

	authz authorizer.Authorizer
}

// worldNamespaces are the namespaces of every scenario.
func worldNamespaces() []*corev1.Namespace {
	ns := func(name string, labels map[string]string) *corev1.Namespace {
		l := map[string]string{"kubernetes.io/metadata.name": name}
		for k, v := range labels {
			l[k] = v
		}
		return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{"owner": name + "-team"}}}
	}
	return []*corev1.Namespace{
		ns("shop", map[string]string{"env": "prod", "team": "payments"}),
		ns("dev", map[string]string{"env": "dev"}),
		ns("kube-system", nil),
	}
}

// worldParams are the param objects of every scenario.
func worldParams() []runtime.Object {
	cm := func(ns, name string, labels, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: data}
	}
	return []runtime.Object{
		cm("shop", "defaults", map[string]string{"role": "defaults"}, map[string]string{"team": "payments", "replicas": "3", "registry": "mirror.example.com"}),
		cm("shop", "gold", map[string]string{"role": "defaults", "tier": "gold"}, map[string]string{"team": "gold-team", "replicas": "5"}),
		cm("shop", "unlabelled", nil, map[string]string{"team": "nobody"}),
		cm("dev", "defaults", map[string]string{"role": "defaults"}, map[string]string{"team": "dev-team", "replicas": "1"}),
		cm("kube-system", "cluster-defaults", map[string]string{"role": "cluster"}, map[string]string{"team": "platform"}),
		&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "token", Labels: map[string]string{"role": "defaults"}},
			StringData: map[string]string{"ignored": "x"}, Data: map[string][]byte{"token": []byte("s3cr3t")}},
	}
}

// testAuthorizer allows members of system:masters everything and everybody
// "get" on configmaps; it denies the rest.
func testAuthorizer() authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if u := a.GetUser(); u != nil {
			for _, g := range u.GetGroups() {
				if g == "system:masters" {
					return authorizer.DecisionAllow, "", nil
				}
			}
		}
		if a.GetVerb() == "get" && a.GetResource() == "configmaps" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionDeny, "forbidden by test authorizer", nil
	})
}

func newDispatchWorld(t testing.TB) *dispatchWorld {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := &dispatchWorld{namespaces: worldNamespaces(), params: worldParams(), authz: testAuthorizer(),
		upstreamCache: map[string]mutating.PolicyEvaluator{}}

	// CRDs: widgets have a schema; gadgets are served without one reaching
	// the type converters.
	w.schemas = applyconfig.NewSchemas()
	loadCRD(t, w.schemas, "testdata/widgets-crd.yaml")
	w.table = matching.DefaultTable()
	data, err := os.ReadFile("testdata/widgets-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	if err := w.table.AddCRD(crd); err != nil {
		t.Fatal(err)
	}

	// Upstream: fake clientset, informers, matcher, dispatcher.
	var objs []runtime.Object
	for _, ns := range w.namespaces {
		objs = append(objs, ns.DeepCopy())
	}
	for _, p := range w.params {
		// A real typed informer holds objects without TypeMeta (the
		// decoder clears it); the fake one keeps what it is given.
		o := p.DeepCopyObject()
		o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		objs = append(objs, o)
	}
	client := fake.NewClientset(objs...)
	w.informerFactory = informers.NewSharedInformerFactory(client, 0)
	nsLister := w.informerFactory.Core().V1().Namespaces().Lister()
	for _, gvr := range []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "secrets"}, {Version: "v1", Resource: "namespaces"}} {
		if _, err := w.informerFactory.ForResource(gvr); err != nil {
			t.Fatal(err)
		}
	}
	w.informerFactory.Start(ctx.Done())
	for typ, ok := range w.informerFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	// Cleanups run last-in first-out: stop the informers before waiting
	// for them to shut down.
	t.Cleanup(func() { cancel(); w.informerFactory.Shutdown() })
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	w.restMapper = mapper
	// Kinds client-go's static converter does not know (options objects,
	// subresource kinds) get the converter of their group/version's OpenAPI
	// document, as kube-apiserver's plugin does.
	tcm := &upstream.TypeConverters{Static: applyconfigurations.NewTypeConverter(scheme.Scheme), CRDs: w.schemas, Discovery: kubeTypeConverters(t)}
	w.dispatcher = mutating.NewDispatcher(w.authz, upstreammatching.NewMatcher(nsLister, client), tcm)
	w.objectIfaces = admission.NewObjectInterfacesFromScheme(kubeScheme())

	// mutatis: the same objects in memory.
	w.memory = params.NewMemory()
	for _, o := range append(append([]runtime.Object{}, w.params...), namespacesAsObjects(w.namespaces)...) {
		u, err := toUnstructured(o.DeepCopyObject())
		if err != nil {
			t.Fatal(err)
		}
		w.memory.Put(&unstructured.Unstructured{Object: u})
	}
	if w.compiler, err = compiler.New(); err != nil {
		t.Fatal(err)
	}
	return w
}

func namespacesAsObjects(nss []*corev1.Namespace) []runtime.Object {
	var out []runtime.Object
	for _, ns := range nss {
		out = append(out, ns.DeepCopy())
	}
	return out
}

// upstreamHooks builds the hooks upstream's policy source would build
// (upstream.Hooks), compiling each policy revision once.
func (w *dispatchWorld) upstreamHooks(policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) []mutating.PolicyHook {
	hooks, err := upstream.Hooks(policies, bindings, w.restMapper, w.informerFactory, func(p *admissionregistrationv1.MutatingAdmissionPolicy) mutating.PolicyEvaluator {
		key := compiler.Key(p)
		ev, ok := w.upstreamCache[key]
		if !ok {
			ev = upstream.Compile(p)
			w.upstreamCache[key] = ev
		}
		return ev
	})
	if err != nil {
		panic(err)
	}
	return hooks
}

// runUpstream admits r through k8s.io/apiserver as the MutatingAdmissionPolicy
// plugin inside admission.reinvoker would.
func (w *dispatchWorld) runUpstream(ctx context.Context, policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding, r dispatchRequest) (out dispatchOutcome, passes int) {
	attrs := r.attributes()
	handler := admission.NewHandler(admission.Create, admission.Update, admission.Connect)
	err := func() error {
		if !handler.Handles(attrs.GetOperation()) || upstream.Exempt(attrs.GetResource().GroupResource()) {
			return nil
		}
		hooks := w.upstreamHooks(policies, bindings)
		passes = 1
		if err := w.dispatcher.Dispatch(ctx, attrs, w.objectIfaces, hooks); err != nil {
			return err
		}
		if rc := attrs.GetReinvocationContext(); rc.ShouldReinvoke() {
			rc.SetIsReinvoke()
			passes = 2
			return w.dispatcher.Dispatch(ctx, attrs, w.objectIfaces, hooks)
		}
		return nil
	}()
	return w.outcome(attrs.GetObject(), err), passes
}

func (w *dispatchWorld) outcome(obj runtime.Object, err error) dispatchOutcome {
	if err != nil {
		var se *apierrors.StatusError
		if errors.As(err, &se) {
			st := se.Status()
			return dispatchOutcome{status: &st}
		}
		return dispatchOutcome{err: err}
	}
	if obj == nil {
		return dispatchOutcome{}
	}
	m, err := toUnstructured(obj)
	if err != nil {
		return dispatchOutcome{err: err}
	}
	return dispatchOutcome{object: m}
}

// namespaceGetter serves the world's namespaces to mutatis.
type namespaceGetter []*corev1.Namespace

func (g namespaceGetter) Namespace(_ context.Context, name string) (*corev1.Namespace, error) {
	for _, ns := range g {
		if ns.Name == name {
			return ns.DeepCopy(), nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
}

// tableScopes answers params.Scopes from a matching.Table.
type tableScopes struct{ t *matching.Table }

func (s tableScopes) Namespaced(gvk schema.GroupVersionKind) (bool, bool) {
	for _, r := range s.t.ResourcesForKind(gvk) {
		return r.Namespaced, true
	}
	return false, false
}

// runOurs admits r through mutatis' engine.
func (w *dispatchWorld) runOurs(ctx context.Context, policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding, r dispatchRequest) (dispatchOutcome, chain.Result, error) {
	hooks, err := engine.NewHooks(w.compiler, policies, bindings)
	if err != nil {
		return dispatchOutcome{}, chain.Result{}, err
	}
	nsGetter := namespaceGetter(w.namespaces)
	pt := &mut.Patcher{Schemas: w.schemas, Scheme: kubescheme.New()}
	ev := engine.NewEvaluator(engine.Config{
		Matcher:    matching.NewMatcher(nsGetter, w.table),
		Params:     &params.Collector{Source: w.memory, Scopes: tableScopes{w.table}},
		Patcher:    pt,
		Authorizer: w.authz,
	}, hooks)
	attrs := matching.AttributesFrom(r.attributes())
	frozenObj, frozenOld := valuetest.FreezeObject(attrs.Object), valuetest.FreezeObject(attrs.OldObject)
	res, err := new(chain.Runner).Run(ctx, attrs, ev)
	if frozenObj.Modified() || frozenOld.Modified() {
		return dispatchOutcome{}, res, errors.New("mutatis' Admit modified the request's objects")
	}
	if err != nil {
		var se *apierrors.StatusError
		if errors.As(err, &se) {
			st := se.Status()
			return dispatchOutcome{status: &st}, res, nil
		}
		return dispatchOutcome{err: err}, res, nil
	}
	if res.Denied != nil {
		st := res.Denied.Status()
		return dispatchOutcome{status: &st}, res, nil
	}
	if res.Object == nil {
		return dispatchOutcome{}, res, nil
	}
	return dispatchOutcome{object: res.Object}, res, nil
}
