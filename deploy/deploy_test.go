package deploy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/controller"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/rbac"
)

var overlays = []string{"base", "cert-manager", "self-signed"}

// render builds a kustomization with the kustomize library, as
// `kubectl apply -k` would.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		content, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: content})
	}
	return out
}

func strictDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}

func TestKustomizationsRenderValidObjects(t *testing.T) {
	decoder := strictDecoder(t)
	for _, dir := range overlays {
		t.Run(dir+" renders objects that decode strictly and are valid", func(t *testing.T) {
			objs := render(t, dir)
			kinds := map[string]int{}
			for _, u := range objs {
				kinds[u.GetKind()]++
				if u.GetAPIVersion() == "cert-manager.io/v1" {
					continue // not a type of ours; cert-manager validates it
				}
				js, err := u.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				obj, _, err := decoder.Decode(js, nil, nil)
				if err != nil {
					t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
				}
				if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
					validateCRD(t, crd)
				}
			}
			for kind, n := range map[string]int{"Namespace": 1, "ServiceAccount": 1, "Deployment": 1, "Service": 1,
				"PodDisruptionBudget": 1, "CustomResourceDefinition": 2, "ClusterRole": 2} {
				if kinds[kind] != n {
					t.Errorf("%d %s, want %d", kinds[kind], kind, n)
				}
			}
			secrets := kinds["Secret"]
			if dir == "cert-manager" {
				secrets += kinds["Certificate"] / 2 // cert-manager writes the Secret
			}
			if secrets != 1 {
				t.Errorf("no serving certificate Secret (%v)", kinds)
			}
		})
	}
}

func validateCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	crd = crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	internal := &apiextensionsinternal.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
		t.Fatal(err)
	}
	if errs := apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
		t.Fatalf("CustomResourceDefinition %s: %v", crd.Name, errs.ToAggregate())
	}
}

// shadowCRDs returns the rendered CRDs by plural.
func shadowCRDs(t *testing.T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, u := range render(t, "base") {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			t.Fatal(err)
		}
		out[crd.Spec.Names.Plural] = crd
	}
	return out
}

func TestShadowCRDsServeWhatTheControllerWatches(t *testing.T) {
	crds := shadowCRDs(t)
	for _, tc := range []struct {
		resource, kind string
		status         bool
		file           string
	}{
		{controller.PolicyResource, "MutatingAdmissionPolicy", true, "base/crds/mutatis.dev_mutatingadmissionpolicies.yaml"},
		{controller.BindingResource, "MutatingAdmissionPolicyBinding", false, "base/crds/mutatis.dev_mutatingadmissionpolicybindings.yaml"},
	} {
		t.Run(tc.resource+" is served as the controller expects", func(t *testing.T) {
			crd := crds[tc.resource]
			switch {
			case crd == nil:
				t.Fatal("not rendered")
			case crd.Name != tc.resource+"."+controller.ShadowGroup, crd.Spec.Group != controller.ShadowGroup:
				t.Fatalf("name %s group %s", crd.Name, crd.Spec.Group)
			case crd.Spec.Scope != apiextensionsv1.ClusterScoped, crd.Spec.Names.Kind != tc.kind:
				t.Fatalf("scope %s kind %s", crd.Spec.Scope, crd.Spec.Names.Kind)
			case len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != controller.ShadowVersion || !crd.Spec.Versions[0].Served || !crd.Spec.Versions[0].Storage:
				t.Fatalf("versions %+v", crd.Spec.Versions)
			}
			hasStatus := crd.Spec.Versions[0].Subresources != nil && crd.Spec.Versions[0].Subresources.Status != nil
			if hasStatus != tc.status {
				t.Fatalf("status subresource %v, want %v", hasStatus, tc.status)
			}
			// The e2e installs the committed, generated files: the rendered
			// CRD must be exactly that file.
			raw, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(raw), "# Code generated by deploy/internal/crdgen") {
				t.Fatalf("%s is not the generator's output", tc.file)
			}
			var committed apiextensionsv1.CustomResourceDefinition
			if err := yaml.UnmarshalStrict(raw, &committed); err != nil {
				t.Fatal(err)
			}
			a, _ := yaml.Marshal(&committed)
			b, _ := yaml.Marshal(crd)
			if string(a) != string(b) {
				t.Fatalf("the rendered CRD differs from %s", tc.file)
			}
		})
	}
}

// TestShadowCRDSchemasKeepEveryField stores real policies as shadow objects:
// pruning with the CRD schema must drop nothing, so the schema carries every
// field of the v1 types the examples use.
func TestShadowCRDSchemasKeepEveryField(t *testing.T) {
	files, err := filepath.Glob("../examples/*/policy.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example policies: %v", err)
	}
	set, _ := manifest.Load(context.Background(), files, nil) // other documents may be anything
	if len(set.Policies) == 0 || len(set.Bindings) == 0 {
		t.Fatalf("%d policies and %d bindings in the examples", len(set.Policies), len(set.Bindings))
	}
	crds := shadowCRDs(t)
	var objects []runtime.Object
	for _, p := range set.Policies {
		objects = append(objects, p.Policy)
	}
	for _, b := range set.Bindings {
		objects = append(objects, b.Binding)
	}
	for _, o := range objects {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: content}
		resource := controller.PolicyResource
		if _, ok := o.(*admissionregistrationv1.MutatingAdmissionPolicyBinding); ok {
			resource = controller.BindingResource
		}
		u.SetAPIVersion(controller.ShadowGroup + "/" + controller.ShadowVersion)
		u.SetKind(crds[resource].Spec.Names.Kind)
		unknown := pruning.PruneWithOptions(u.Object, structural(t, crds[resource]), true,
			structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
		if len(unknown) > 0 {
			t.Errorf("%s %s: the schema drops %v", u.GetKind(), u.GetName(), unknown)
		}
	}
}

func structural(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *structuralschema.Structural {
	t.Helper()
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(crd.Spec.Versions[0].Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// call is one API call of the controller.
type call struct {
	verb, namespace, name string
	resource              schema.GroupVersionResource
	subresource           string
}

type recorder struct{ calls chan call }

func (r recorder) record(a k8stesting.Action) (bool, runtime.Object, error) {
	c := call{verb: a.GetVerb(), namespace: a.GetNamespace(), resource: a.GetResource(), subresource: a.GetSubresource()}
	switch a := a.(type) {
	case k8stesting.GetAction:
		c.name = a.GetName()
	case k8stesting.DeleteAction:
		c.name = a.GetName()
	case k8stesting.UpdateAction:
		if m, err := metaName(a.GetObject()); err == nil {
			c.name = m
		}
	}
	r.calls <- c
	return false, nil, nil
}

func metaName(o runtime.Object) (string, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return "", err
	}
	return (&unstructured.Unstructured{Object: u}).GetName(), nil
}

// TestRBACCoversTheController runs the controller in shadow mode against
// fake clients that record every call (informers, status updates, webhook
// configurations, params, the self-signed certificate, the leader election
// Lease) and checks each call
// against the RBAC of the self-signed overlay for the mutatis service
// account, with the repository's RBAC authorizer.
func TestRBACCoversTheController(t *testing.T) {
	objs := render(t, "self-signed")
	var clusterRoles []rbacv1.ClusterRole
	var roles []rbacv1.Role
	var crbs []rbacv1.ClusterRoleBinding
	var rbs []rbacv1.RoleBinding
	for _, u := range objs {
		var err error
		switch u.GetKind() {
		case "ClusterRole":
			var o rbacv1.ClusterRole
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o)
			clusterRoles = append(clusterRoles, o)
		case "Role":
			var o rbacv1.Role
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o)
			roles = append(roles, o)
		case "ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o)
			crbs = append(crbs, o)
		case "RoleBinding":
			var o rbacv1.RoleBinding
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o)
			rbs = append(rbs, o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	authz, err := rbac.New(clusterRoles, roles, crbs, rbs)
	if err != nil {
		t.Fatal(err)
	}
	sa := &user.DefaultInfo{Name: serviceaccount.MakeUsername("mutatis-system", "mutatis"),
		Groups: serviceaccount.MakeGroupNames("mutatis-system")}

	rec := recorder{calls: make(chan call, 10000)}
	kube := kubefake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{corev1.LabelMetadataName: "default"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mutatis-system", Labels: map[string]string{corev1.LabelMetadataName: "mutatis-system"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mutatis-system", Name: "mutatis-tls"}},
	)
	shadow := controller.ShadowGroup + "/" + controller.ShadowVersion
	// The policy must pass kube-apiserver's create-time validation, or the
	// controller leaves it out (a JSONPatch expression of type list(dyn),
	// such as [], is refused).
	policy := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: `+shadow+`
kind: MutatingAdmissionPolicy
metadata: {name: p, uid: uid-p, resourceVersion: "1"}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  reinvocationPolicy: Never
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: '[JSONPatch{op: "test", path: "/kind", value: "Pod"}]'}
`), &policy.Object); err != nil {
		t.Fatal(err)
	}
	binding := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: `+shadow+`
kind: MutatingAdmissionPolicyBinding
metadata: {name: b, uid: uid-b, resourceVersion: "1"}
spec: {policyName: p, paramRef: {name: x, namespace: default, parameterNotFoundAction: Allow}}
`), &binding.Object); err != nil {
		t.Fatal(err)
	}
	gv := schema.GroupVersion{Group: controller.ShadowGroup, Version: controller.ShadowVersion}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		gv.WithResource(controller.PolicyResource):  "MutatingAdmissionPolicyList",
		gv.WithResource(controller.BindingResource): "MutatingAdmissionPolicyBindingList",
		{Version: "v1", Resource: "configmaps"}:     "ConfigMapList",
	}, policy, binding)
	ext := apiextensionsfake.NewClientset()
	for _, f := range []*k8stesting.Fake{&kube.Fake, &dyn.Fake, &ext.Fake} {
		f.PrependReactor("*", "*", rec.record)
		f.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
			rec.record(a)
			return false, nil, nil
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cert, err := controller.EnsureSelfSignedCertificate(ctx, kube, "mutatis-system", "mutatis-tls", []string{"mutatis.mutatis-system.svc"})
	if err != nil {
		t.Fatal(err)
	}
	path := "/mutate"
	c, err := controller.New(controller.Config{
		Clients:   &controller.Clients{Kube: kube, Dynamic: dyn, APIExtensions: ext},
		Source:    controller.SourceShadow,
		Namespace: "mutatis-system",
		Recorder:  record.NewFakeRecorder(100),
		Webhook: controller.WebhookOptions{CABundle: cert.CABundle,
			Service: &admissionregistrationv1.ServiceReference{Namespace: "mutatis-system", Name: "mutatis", Path: &path}},
		// As the Deployment runs it (the lease name defaults to the
		// webhook base name); stopping releases the Lease: an update.
		LeaderElection: controller.LeaderElectionOptions{Enabled: true, Identity: "mutatis-0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	if _, err := c.WaitFor(ctx, func(s controller.Status) bool { return s.Leader && len(s.ParamKinds) == 1 }); err != nil {
		t.Fatal(err)
	}
	// Unbinding stops the param informer and deletes the webhook
	// configuration: more calls to check.
	if err := dyn.Resource(gv.WithResource(controller.BindingResource)).Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitFor(ctx, func(s controller.Status) bool { return len(s.Bindings) == 0 }); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(rec.calls)

	// Calls the fakes do not make: Events (recorded by a fake recorder here)
	// and SubjectAccessReviews (made when a policy uses the CEL authorizer).
	expected := []call{
		{verb: "create", namespace: "default", resource: corev1.SchemeGroupVersion.WithResource("events")},
		{verb: "patch", namespace: "default", resource: corev1.SchemeGroupVersion.WithResource("events")},
		{verb: "create", resource: schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"}},
	}
	seen := map[call]bool{}
	var calls []call
	for c := range rec.calls {
		if c.resource.Resource == "" || seen[c] {
			continue
		}
		// The test's own delete of the binding is not the controller's.
		if c.verb == "delete" && c.resource.Resource == controller.BindingResource {
			continue
		}
		seen[c] = true
		calls = append(calls, c)
	}
	for _, want := range []string{"list " + controller.PolicyResource, "update " + controller.PolicyResource + "/status",
		"create mutatingwebhookconfigurations", "delete mutatingwebhookconfigurations", "list configmaps", "update secrets",
		"get leases", "create leases", "update leases"} {
		found := false
		for _, c := range calls {
			r := c.resource.Resource
			if c.subresource != "" {
				r += "/" + c.subresource
			}
			if c.verb+" "+r == want {
				found = true
			}
		}
		if !found {
			t.Errorf("the controller never made a %q call; the test exercises less than it should", want)
		}
	}
	for _, c := range append(calls, expected...) {
		attrs := authorizer.AttributesRecord{User: sa, Verb: c.verb, Namespace: c.namespace, APIGroup: c.resource.Group,
			APIVersion: c.resource.Version, Resource: c.resource.Resource, Subresource: c.subresource, Name: c.name, ResourceRequest: true}
		if c.verb == "create" {
			attrs.Name = "" // RBAC cannot limit create by name; kube-apiserver passes none for POST
		}
		d, reason, err := authz.Authorize(ctx, attrs)
		if err != nil || d != authorizer.DecisionAllow {
			t.Errorf("RBAC does not allow %s %s/%s %q in namespace %q: %s %v", c.verb, c.resource.GroupResource(), c.subresource, c.name, c.namespace, reason, err)
		}
	}
}

// TestDeploymentHardening checks what the Deployment sets for the webhook's
// reliability: the system namespaces excluded from the webhooks, the Go
// runtime's memory limit from the container's (downward API), and a grace
// period that covers serve's drain and shutdown.
func TestDeploymentHardening(t *testing.T) {
	for _, dir := range overlays {
		t.Run(dir, func(t *testing.T) {
			var dep *appsv1.Deployment
			for _, u := range render(t, dir) {
				if u.GetKind() != "Deployment" {
					continue
				}
				dep = &appsv1.Deployment{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dep); err != nil {
					t.Fatal(err)
				}
			}
			if dep == nil {
				t.Fatal("no Deployment")
			}
			spec := dep.Spec.Template.Spec
			c := spec.Containers[0]
			if !slices.Contains(c.Args, "--exclude-system-namespaces") {
				t.Errorf("args %v lack --exclude-system-namespaces", c.Args)
			}
			// --memory-limit=$(VAR) with VAR the container's memory limit
			// in bytes.
			var limitVar string
			for _, a := range c.Args {
				if v, ok := strings.CutPrefix(a, "--memory-limit=$("); ok {
					limitVar = strings.TrimSuffix(v, ")")
				}
			}
			var env *corev1.EnvVar
			for i := range c.Env {
				if c.Env[i].Name == limitVar {
					env = &c.Env[i]
				}
			}
			switch {
			case limitVar == "" || env == nil:
				t.Errorf("no --memory-limit from an environment variable (args %v)", c.Args)
			case env.ValueFrom == nil || env.ValueFrom.ResourceFieldRef == nil:
				t.Errorf("%s is not from the downward API: %+v", limitVar, env)
			default:
				ref := env.ValueFrom.ResourceFieldRef
				if ref.Resource != "limits.memory" || (ref.ContainerName != "" && ref.ContainerName != c.Name) || ref.Divisor.Value() != 1 {
					t.Errorf("%s: %+v, want limits.memory of %s in bytes", limitVar, ref, c.Name)
				}
			}
			if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
				t.Error("the container has no memory limit for GOMEMLIMIT to follow")
			}
			// serve's shutdown: 5s drain + 1s settle + 30s --shutdown-timeout.
			if g := spec.TerminationGracePeriodSeconds; g == nil || *g < 36 {
				t.Errorf("terminationGracePeriodSeconds %v, want at least 36", g)
			}
		})
	}
}
