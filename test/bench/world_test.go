package bench

// The two implementations under the same cluster state, built once per
// scenario outside the timed loop:
//
//   - upstream: k8s.io/apiserver's mutating.NewDispatcher over a policy
//     matcher fed by a fake clientset's informers, with PolicyHooks compiled
//     once as its policy source compiles them (test/upstream, shared with
//     test/differential) and the reinvocation protocol of
//     admission.reinvoker;
//   - mutatis: cluster.New from the same objects and its Evaluator.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
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
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/test/upstream"
)

// request is one admission request as kube-apiserver hands it to the
// admission chain (typed objects for built-in kinds).
type request struct {
	obj       runtime.Object
	gvk       schema.GroupVersionKind
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

var benchUser = &user.DefaultInfo{Name: "alice", UID: "u-1", Groups: []string{"devs", "system:authenticated"}}

// attributes builds fresh attributes with a copy of the object: upstream's
// dispatcher mutates both in place, so every admission needs its own.
func (r request) attributes() admission.Attributes {
	return admission.NewAttributesRecord(r.obj.DeepCopyObject(), nil, r.gvk, r.namespace, r.name, r.gvr, "",
		admission.Create, &metav1.CreateOptions{}, false, benchUser)
}

// world is the cluster state of a scenario: namespaces, param objects and
// CRDs, served to both implementations.
type world struct {
	objects []runtime.Object // Namespaces, ConfigMaps (typed)
	crds    []*unstructured.Unstructured

	// upstream
	informers    informers.SharedInformerFactory
	restMapper   meta.RESTMapper
	dispatcher   generic.Dispatcher[mutating.PolicyHook]
	objectIfaces admission.ObjectInterfaces

	// mutatis
	cluster *cluster.Cluster
}

// newWorld starts the upstream informers and builds the mutatis cluster
// over the same objects. Stop the informers with the returned function.
func newWorld(tb testing.TB, objects []runtime.Object, crdFiles ...string) (*world, func()) {
	tb.Helper()
	w := &world{objects: objects}
	for _, f := range crdFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			tb.Fatal(err)
		}
		w.crds = append(w.crds, u)
	}

	// mutatis
	var mobjs []manifest.Object
	for _, o := range objects {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.DeepCopyObject())
		if err != nil {
			tb.Fatal(err)
		}
		mobjs = append(mobjs, manifest.Object{Object: &unstructured.Unstructured{Object: u}})
	}
	for _, c := range w.crds {
		mobjs = append(mobjs, manifest.Object{Object: c.DeepCopy()})
	}
	c, err := cluster.New(mobjs, cluster.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	w.cluster = c

	// upstream
	ctx, cancel := context.WithCancel(context.Background())
	var typed []runtime.Object
	for _, o := range objects {
		o = o.DeepCopyObject()
		// Typed informers hold objects without TypeMeta.
		o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		typed = append(typed, o)
	}
	client := fake.NewClientset(typed...)
	w.informers = informers.NewSharedInformerFactory(client, 0)
	nsLister := w.informers.Core().V1().Namespaces().Lister()
	for _, gvr := range []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "namespaces"}} {
		if _, err := w.informers.ForResource(gvr); err != nil {
			tb.Fatal(err)
		}
	}
	w.informers.Start(ctx.Done())
	for typ, ok := range w.informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			tb.Fatalf("informer for %v did not sync", typ)
		}
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	w.restMapper = mapper
	tcm := &upstream.TypeConverters{Static: applyconfigurations.NewTypeConverter(scheme.Scheme), CRDs: c.Schemas}
	w.dispatcher = mutating.NewDispatcher(authorizerfactory.NewAlwaysDenyAuthorizer(), upstreammatching.NewMatcher(nsLister, client), tcm)
	w.objectIfaces = crdInterfaces{ObjectInterfaces: admission.NewObjectInterfacesFromScheme(kubeScheme()), defaulter: newCRDDefaulter(tb, w.crds)}
	return w, func() { cancel(); w.informers.Shutdown() }
}

// crdInterfaces are the ObjectInterfaces of kube-apiserver's request
// scopes: the built-in kinds' scheme, and for custom resources the CRD
// handler's defaulter (the one the dispatcher runs after every mutation).
type crdInterfaces struct {
	admission.ObjectInterfaces
	defaulter runtime.ObjectDefaulter
}

func (o crdInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter { return o.defaulter }

// crdDefaulter is customresource_handler.go's unstructuredDefaulter for
// every CRD of a world: structural defaulting with the schema of the
// object's version, the delegate for other objects.
type crdDefaulter struct {
	delegate runtime.ObjectDefaulter
	schemas  map[schema.GroupKind]map[string]*structuralschema.Structural
}

func (d crdDefaulter) Default(in runtime.Object) {
	if u, ok := in.(runtime.Unstructured); ok {
		gvk := u.GetObjectKind().GroupVersionKind()
		if versions, ok := d.schemas[gvk.GroupKind()]; ok {
			structuraldefaulting.Default(u.UnstructuredContent(), versions[gvk.Version])
			return
		}
	}
	d.delegate.Default(in)
}

// newCRDDefaulter builds the structural schemas of crds as
// getOrCreateServingInfoFor does (defaults pruned).
func newCRDDefaulter(tb testing.TB, crds []*unstructured.Unstructured) crdDefaulter {
	tb.Helper()
	d := crdDefaulter{delegate: kubeScheme(), schemas: map[schema.GroupKind]map[string]*structuralschema.Structural{}}
	for _, u := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			tb.Fatal(err)
		}
		versions := map[string]*structuralschema.Structural{}
		for _, v := range crd.Spec.Versions {
			internal := &apiextensionsinternal.CustomResourceValidation{}
			if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
				tb.Fatal(err)
			}
			s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
			if err != nil {
				tb.Fatal(err)
			}
			if err := structuraldefaulting.PruneDefaults(s); err != nil {
				tb.Fatal(err)
			}
			versions[v.Name] = s
		}
		d.schemas[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = versions
	}
	return d
}

// upstreamHooks builds the hooks upstream's policy source would build
// (upstream.Hooks).
func (w *world) upstreamHooks(tb testing.TB, policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) []mutating.PolicyHook {
	hooks, err := upstream.Hooks(policies, bindings, w.restMapper, w.informers, upstream.Compile)
	if err != nil {
		tb.Fatal(err)
	}
	return hooks
}

// runUpstream admits r as the MutatingAdmissionPolicy plugin inside
// admission.reinvoker would, and returns the admitted object.
func (w *world) runUpstream(ctx context.Context, hooks []mutating.PolicyHook, r request) (runtime.Object, error) {
	attrs := r.attributes()
	if err := w.dispatcher.Dispatch(ctx, attrs, w.objectIfaces, hooks); err != nil {
		return nil, err
	}
	if rc := attrs.GetReinvocationContext(); rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		if err := w.dispatcher.Dispatch(ctx, attrs, w.objectIfaces, hooks); err != nil {
			return nil, err
		}
	}
	return attrs.GetObject(), nil
}

// mutatisEvaluator compiles the policies into an Evaluator over the
// cluster, and the request's attributes.
func (w *world) mutatisEvaluator(tb testing.TB, policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding, r request) (*engine.Evaluator, *matching.Attributes) {
	ev, err := w.cluster.Evaluator(nil, policies, bindings)
	if err != nil {
		tb.Fatal(err)
	}
	return ev, matching.AttributesFrom(r.attributes())
}

// runMutatis admits a through ev with r and returns the admitted object.
func runMutatis(ctx context.Context, r *chain.Runner, ev *engine.Evaluator, a *matching.Attributes) (map[string]any, error) {
	res, err := r.Run(ctx, a, ev)
	if err != nil {
		return nil, err
	}
	if res.Denied != nil {
		return nil, res.Denied
	}
	return res.Object, nil
}

// sameObject tells whether both implementations admitted the same object
// (TypeMeta aside: typed objects come back from upstream without it).
func sameObject(ours map[string]any, theirs runtime.Object) error {
	m, err := toUnstructured(theirs)
	if err != nil {
		return err
	}
	strip := func(o map[string]any) map[string]any {
		out := make(map[string]any, len(o))
		for k, v := range o {
			if k != "apiVersion" && k != "kind" {
				out[k] = v
			}
		}
		return out
	}
	if !apiequality.Semantic.DeepEqual(strip(ours), strip(m)) {
		oy, _ := yaml.Marshal(ours)
		ty, _ := yaml.Marshal(m)
		return fmt.Errorf("objects differ:\nmutatis:\n%s\nupstream:\n%s", oy, ty)
	}
	return nil
}

func toUnstructured(obj runtime.Object) (map[string]any, error) {
	if obj == nil {
		return nil, errors.New("no object")
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// statusOf returns the Status of an admission error, for messages.
func statusOf(err error) string {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return se.Status().Message
	}
	return err.Error()
}
