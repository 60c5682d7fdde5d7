package admissionplugins

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	kubeadmission "k8s.io/kubernetes/pkg/controlplane/apiserver/admission"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"
	"k8s.io/kubernetes/pkg/kubeapiserver/options"
	quotainstall "k8s.io/kubernetes/pkg/quota/v1/install"

	"github.com/mutatis-dev/mutatis/scheme"
)

// TestAdmissionPluginsAreKubeAPIServers holds All equal to
// kube-apiserver 1.37's own lists (options.AllOrderedPlugins,
// options.DefaultOffAdmissionPlugins), and each plugin's Stage to what
// the plugin is: Mutating plugins implement admission.MutationInterface,
// Validating ones only admission.ValidationInterface, and Chain.Validate
// runs every Validating one it can build.
func TestAdmissionPluginsAreKubeAPIServers(t *testing.T) {
	var names []string
	for _, p := range All {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, options.AllOrderedPlugins) {
		t.Fatalf("All\n%v\nkube-apiserver's AllOrderedPlugins\n%v", names, options.AllOrderedPlugins)
	}
	off := options.DefaultOffAdmissionPlugins()
	registry := options.NewAdmissionOptions().GenericAdmission.Plugins
	st := NewStores(scheme.New())
	// The plugins' initializer with what the validating plugins want too.
	init := initializer.New(st.client(), nil, st.factory, authorizerfactory.NewAlwaysAllowAuthorizer(), utilfeature.DefaultFeatureGate, kubeVersion, nil, nil)
	for _, p := range All {
		if p.DefaultOn == off.Has(p.Name) {
			t.Errorf("%s: DefaultOn %v, kube-apiserver's default off %v", p.Name, p.DefaultOn, off.Has(p.Name))
		}
		switch p.Name {
		case "MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota":
			// Registered by k8s.io/apiserver, built with initializers of
			// their own; their stages are what their names say.
			continue
		}
		plugin, err := registry.InitPlugin(p.Name, nil, init)
		if err != nil {
			// Plugins that need a configuration file (ImagePolicyWebhook,
			// EventRateLimit) or a node identity cannot be built here.
			if p.Stage == Mutating {
				t.Errorf("%s: %v", p.Name, err)
			}
			t.Logf("%s (%v) not built: %v", p.Name, p.Stage, err)
			continue
		}
		_, mutating := plugin.(admission.MutationInterface)
		if mutating != (p.Stage == Mutating || p.Stage == Unsupported) {
			t.Errorf("%s: Stage %v, implements MutationInterface %v", p.Name, p.Stage, mutating)
		}
		if _, validating := plugin.(admission.ValidationInterface); p.Stage == Validating && validating != (p.register != nil) {
			t.Errorf("%s: Chain.Validate runs it %v, implements ValidationInterface %v", p.Name, p.register != nil, validating)
		}
	}
}

// TestAdmitPluginsDifferential runs every case of TestAdmitPlugins through
// kube-apiserver's own admission chain, built the normal way as the
// oracle: kube-apiserver's AdmissionOptions (all its plugins registered,
// its order and default set, the case's flags) applied to a server
// Config over started informers of a clientset holding the case's
// objects, each namespace's "default" ServiceAccount (which
// kube-controller-manager would create) and the Namespace. MAP, the
// webhooks and VAP are disabled in the oracle (mutatis runs them as
// stages of their own); ResourceQuota, which only validates, is built
// with kube-apiserver's own quota initializer. The outcome of mutatis'
// AdmitPlugins must be the oracle's: the same object (the token volume's
// random suffix read as TokenVolumeSuffix) or the same refusal.
func TestAdmitPluginsDifferential(t *testing.T) {
	for _, c := range pluginCases() {
		t.Run(c.name, func(t *testing.T) {
			p := pluginChain(t, c)
			s := p.stores.scheme
			req, decoded := pluginRequest(t, s, c)
			chain := oracleChain(t, s, c, req.Namespace)

			got, gotErr := p.Admit(context.Background(), req, runtime.DeepCopyJSON(decoded), nil, pluginUser, false)

			k, err := scheme.Kube()
			if err != nil {
				t.Fatal(err)
			}
			internal := internalOf(t, k, decoded, req.Kind)
			attrs := admission.NewAttributesRecord(internal, nil, req.Kind, req.Namespace, req.Name, req.Resource, req.Subresource, req.Operation, &metav1.CreateOptions{}, false, pluginUser)
			wantErr := chain.Admit(context.Background(), attrs, admission.NewObjectInterfacesFromScheme(k))
			if wantErr != nil || gotErr != nil {
				var ws, gs *apierrors.StatusError
				if !errors.As(wantErr, &ws) || !errors.As(gotErr, &gs) || !reflect.DeepEqual(ws.ErrStatus, gs.ErrStatus) {
					t.Fatalf("mutatis: %v\nkube-apiserver: %v", gotErr, wantErr)
				}
				return
			}
			versioned, err := k.ConvertToVersion(internal, req.Kind.GroupVersion())
			if err != nil {
				t.Fatal(err)
			}
			versioned.GetObjectKind().SetGroupVersionKind(req.Kind)
			want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(versioned)
			if err != nil {
				t.Fatal(err)
			}
			want = normalizeTokenVolume(t, want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("mutatis\n%v\nkube-apiserver\n%v", got, want)
			}
		})
	}
}

// internalOf is obj, of kind gvk, in its group's internal version, as
// kube-apiserver's ObjectConvertor makes it (FromUnstructured into the
// kind's Go type, ConvertToVersion).
func internalOf(t *testing.T, k *runtime.Scheme, obj map[string]any, gvk schema.GroupVersionKind) runtime.Object {
	t.Helper()
	typed, err := k.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
		t.Fatal(err)
	}
	typed.GetObjectKind().SetGroupVersionKind(gvk)
	internal, err := k.ConvertToVersion(typed, schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal})
	if err != nil {
		t.Fatal(err)
	}
	return internal
}

// oracleChain is kube-apiserver's admission chain over c's objects.
func oracleChain(t *testing.T, s *scheme.Scheme, c pluginCase, namespace string) admission.MutationInterface {
	t.Helper()
	var objects []runtime.Object
	hasNS, hasSA := false, false
	for _, o := range c.objects {
		u := obj(t, o)
		gv, _ := schema.ParseGroupVersion(u["apiVersion"].(string))
		gvk := gv.WithKind(u["kind"].(string))
		u, err := s.Default(u, gvk)
		if err != nil {
			t.Fatal(err)
		}
		typed, err := s.Types().New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, typed); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, typed)
		if ns, ok := typed.(*corev1.Namespace); ok && ns.Name == namespace {
			hasNS = true
		}
		if sa, ok := typed.(*corev1.ServiceAccount); ok && sa.Name == "default" && sa.Namespace == namespace {
			hasSA = true
		}
	}
	if namespace != "" && !hasNS {
		objects = append(objects, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{corev1.LabelMetadataName: namespace}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}})
	}
	if namespace != "" && !hasSA {
		objects = append(objects, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: namespace}})
	}
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)

	opts := options.NewAdmissionOptions()
	opts.GenericAdmission.ConfigFile = c.flags.ConfigFile
	notHere := []string{"MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook"}
	if c.flags.Only != nil {
		opts.PluginNames = c.flags.Only
	} else {
		opts.GenericAdmission.EnablePlugins = c.flags.Enable
		opts.GenericAdmission.DisablePlugins = append(slices.Clone(c.flags.Disable), notHere...)
	}
	if errs := opts.Validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
	k, err := scheme.Kube()
	if err != nil {
		t.Fatal(err)
	}
	config := server.NewConfig(serializer.NewCodecFactory(k))
	config.Authorization.Authorizer = authorizerfactory.NewAlwaysAllowAuthorizer()
	// kube-apiserver's own initializer, with the quota configuration of
	// its admission (the ResourceQuota plugin's).
	quota, err := quotainstall.NewQuotaConfigurationForAdmission(factory, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeInit := kubeadmission.NewPluginInitializer(quota, exclusion.Excluded())
	if err := opts.ApplyTo(config, factory, client, dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), utilfeature.DefaultFeatureGate, kubeVersion, kubeInit); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	// The plugins' live lookups go through the clientset; give the
	// informers' first events a moment as kube-apiserver's start does.
	time.Sleep(10 * time.Millisecond)
	return config.AdmissionControl.(admission.MutationInterface)
}

var generatedTokenVolume = regexp.MustCompile(`^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$`)

// normalizeTokenVolume renames the token volume kube-apiserver's
// ServiceAccount plugin named at random, and its mounts, to the offline
// name.
func normalizeTokenVolume(t *testing.T, pod map[string]any) map[string]any {
	t.Helper()
	spec, _ := pod["spec"].(map[string]any)
	volumes, _ := spec["volumes"].([]any)
	generated := ""
	for _, v := range volumes {
		if v := v.(map[string]any); generatedTokenVolume.MatchString(v["name"].(string)) {
			generated = v["name"].(string)
			v["name"] = "kube-api-access-" + TokenVolumeSuffix
		}
	}
	if generated == "" {
		return pod
	}
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			mounts, _ := c.(map[string]any)["volumeMounts"].([]any)
			for _, m := range mounts {
				if m := m.(map[string]any); m["name"] == generated {
					m["name"] = "kube-api-access-" + TokenVolumeSuffix
				}
			}
		}
	}
	return pod
}
