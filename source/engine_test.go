package source

import (
	"context"
	"maps"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/mutation"
	"github.com/mutatis-dev/mutatis/params"
	kubescheme "github.com/mutatis-dev/mutatis/scheme"
)

// The Engine's tests, moved with it from engine/ (their names kept). The
// policies count their own runs in an annotation of a ConfigMap.

const counter = `Object{metadata: Object.metadata{annotations: {"count": string(int(object.metadata.?annotations[?"count"].orValue("0")) + 1)}}}`

func mapPolicy(name string, reinvoke admissionregistrationv1.ReinvocationPolicyType, fp admissionregistrationv1.FailurePolicyType, expr string) *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{"CREATE"},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}},
			},
			FailurePolicy:      &fp,
			ReinvocationPolicy: reinvoke,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expr}}},
		},
	}
}

// testHooks compiles policies, each with one binding.
func testHooks(t testing.TB, policies ...*admissionregistrationv1.MutatingAdmissionPolicy) []engine.Hook {
	t.Helper()
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	var bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for _, p := range policies {
		bindings = append(bindings, &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: p.Name + "-binding"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: p.Name}})
	}
	hooks, err := engine.NewHooks(comp, policies, bindings)
	if err != nil {
		t.Fatal(err)
	}
	return hooks
}

// testConfig is a world of every namespace (labelled with its name), no
// params and the built-in schemas and scheme.
func testConfig() engine.Config { return testConfigLabelled(nil) }

// testConfigLabelled is testConfig with labels added to every namespace.
func testConfigLabelled(labels map[string]string) engine.Config {
	namespaces := matching.NamespaceGetterFunc(func(_ context.Context, name string) (*corev1.Namespace, error) {
		l := map[string]string{"kubernetes.io/metadata.name": name}
		maps.Copy(l, labels)
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}, nil
	})
	return engine.Config{
		Matcher: matching.NewMatcher(namespaces, matching.DefaultTable()),
		Params:  &params.Collector{Source: params.NewMemory()},
		Patcher: &mutation.Patcher{Schemas: applyconfig.NewSchemas(), Scheme: kubescheme.New()},
	}
}

func createConfigMap() *matching.Attributes {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cm", "namespace": "shop"}}}
	return &matching.Attributes{Operation: admission.Create, Kind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Name: "cm", Namespace: "shop", Object: obj,
		UserInfo: &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}}
}

func count(t *testing.T, res chain.Result) string {
	t.Helper()
	v, _, _ := unstructured.NestedString(res.Object, "metadata", "annotations", "count")
	return v
}

// newEngine is an Engine over testConfig serving policies.
func newEngine(t testing.TB, policies ...*admissionregistrationv1.MutatingAdmissionPolicy) *Engine {
	t.Helper()
	eng := NewEngine(testConfig())
	eng.Swap(testHooks(t, policies...))
	return eng
}

func TestEngineSwapIsAtomic(t *testing.T) {
	never := admissionregistrationv1.NeverReinvocationPolicy
	eng := newEngine(t)
	res, _ := eng.Admit(context.Background(), createConfigMap())
	if count(t, res) != "" {
		t.Fatal("an empty policy set mutated")
	}
	eng.Swap(testHooks(t, mapPolicy("p", never, admissionregistrationv1.Fail, counter)))
	res, _ = eng.Admit(context.Background(), createConfigMap())
	if count(t, res) != "1" {
		t.Fatalf("after Swap count = %q, want 1", count(t, res))
	}
}

// TestEngineReplaceKeepsTheNewCollaborators: Replace serves its policy set
// over its own collaborators, and later Swaps keep them.
func TestEngineReplaceKeepsTheNewCollaborators(t *testing.T) {
	never := admissionregistrationv1.NeverReinvocationPolicy
	hooks := testHooks(t, mapPolicy("team", never, admissionregistrationv1.Fail,
		`Object{metadata: Object.metadata{annotations: {"team": namespaceObject.metadata.labels[?"team"].orValue("none")}}}`))
	eng := NewEngine(testConfig())
	team := func() string {
		t.Helper()
		res, err := eng.Admit(context.Background(), createConfigMap())
		if err != nil || res.Denied != nil {
			t.Fatal(err, res.Denied)
		}
		v, _, _ := unstructured.NestedString(res.Object, "metadata", "annotations", "team")
		return v
	}
	eng.Swap(hooks)
	if got := team(); got != "none" {
		t.Fatalf("before Replace team = %q, want none", got)
	}
	eng.Replace(testConfigLabelled(map[string]string{"team": "blue"}), hooks)
	if got := team(); got != "blue" {
		t.Fatalf("after Replace team = %q, want blue", got)
	}
	eng.Swap(hooks)
	if got := team(); got != "blue" {
		t.Fatalf("after a later Swap team = %q, want blue (Replace's collaborators)", got)
	}
}

func TestEngineWithoutEvaluatorIsUnavailable(t *testing.T) {
	_, err := NewEngine(testConfig()).Admit(context.Background(), &matching.Attributes{})
	if !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("err = %v, want a 503", err)
	}
}

func TestEngineOnlyEvaluatesOneFailurePolicy(t *testing.T) {
	never := admissionregistrationv1.NeverReinvocationPolicy
	eng := newEngine(t,
		mapPolicy("a", never, admissionregistrationv1.Fail, counter),
		mapPolicy("b", never, admissionregistrationv1.Ignore, counter),
	)
	for _, tc := range []struct {
		name  string
		admit chain.Admitter
		want  string
	}{
		{"all policies", eng, "2"},
		{"only Fail", eng.Only(admissionregistrationv1.Fail), "1"},
		{"only Ignore", eng.Only(admissionregistrationv1.Ignore), "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.admit.Admit(context.Background(), createConfigMap())
			if err != nil {
				t.Fatal(err)
			}
			if got := count(t, res); got != tc.want {
				t.Errorf("count = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := NewEngine(testConfig()).Only(admissionregistrationv1.Fail).Admit(context.Background(), createConfigMap()); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("an empty engine's view: %v, want a 503", err)
	}
}

// TestEngineSwapFollowsSelectorChanges: the selectors of a policy set are
// parsed once, when it is swapped in, and a swapped-in update of a
// binding's or a policy's selectors is what the next admissions match
// with (the request's ConfigMap is labelled app=a in namespace shop).
func TestEngineSwapFollowsSelectorChanges(t *testing.T) {
	never := admissionregistrationv1.NeverReinvocationPolicy
	sel := func(key, value string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
	}
	hooks := func(policyNS, bindingObject *metav1.LabelSelector) []engine.Hook {
		t.Helper()
		p := mapPolicy("p", never, admissionregistrationv1.Fail, counter)
		p.Spec.MatchConstraints.NamespaceSelector = policyNS
		b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "p-binding"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "p",
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: bindingObject}}}
		comp, err := compiler.New()
		if err != nil {
			t.Fatal(err)
		}
		hs, err := engine.NewHooks(comp, []*admissionregistrationv1.MutatingAdmissionPolicy{p}, []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b})
		if err != nil {
			t.Fatal(err)
		}
		return hs
	}
	labelled := func() *matching.Attributes {
		a := createConfigMap()
		a.Object.SetLabels(map[string]string{"app": "a"})
		return a
	}
	eng := NewEngine(testConfig())
	for _, step := range []struct {
		name                 string
		policyNS, bindingObj *metav1.LabelSelector
		want                 string
	}{
		{"binding selects app=a", &metav1.LabelSelector{}, sel("app", "a"), "1"},
		{"binding updated to app=b", &metav1.LabelSelector{}, sel("app", "b"), ""},
		{"binding back to app=a", &metav1.LabelSelector{}, sel("app", "a"), "1"},
		{"policy updated to another namespace", sel("kubernetes.io/metadata.name", "other"), sel("app", "a"), ""},
		{"policy updated to the request's namespace", sel("kubernetes.io/metadata.name", "shop"), sel("app", "a"), "1"},
		{"binding updated to an invalid selector", &metav1.LabelSelector{}, sel("app", "a b"), "error"},
	} {
		eng.Swap(hooks(step.policyNS, step.bindingObj))
		for range 2 { // the parsed selectors serve every admission
			res, err := eng.Admit(context.Background(), labelled())
			if err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
			if step.want == "error" {
				if res.Denied == nil || !strings.Contains(res.Denied.Error(), "failed to configure binding") {
					t.Fatalf("%s: denied = %v, want the binding's configuration error", step.name, res.Denied)
				}
				continue
			}
			if res.Denied != nil {
				t.Fatalf("%s: denied: %v", step.name, res.Denied)
			}
			if got := count(t, res); got != step.want {
				t.Fatalf("%s: count = %q, want %q", step.name, got, step.want)
			}
		}
	}
}
