package engine

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
	kubescheme "github.com/mutatis-dev/mutatis/scheme"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/mutation"
	"github.com/mutatis-dev/mutatis/params"
)

const counter = `Object{metadata: Object.metadata{annotations: {"count": string(int(object.metadata.?annotations[?"count"].orValue("0")) + 1)}}}`

func mapPolicy(name string, reinvoke admissionregistrationv1.ReinvocationPolicyType, fp admissionregistrationv1.FailurePolicyType, expr string, conditions ...string) *admissionregistrationv1.MutatingAdmissionPolicy {
	equivalent := admissionregistrationv1.Equivalent
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}, MatchPolicy: &equivalent,
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
	for i, c := range conditions {
		p.Spec.MatchConditions = append(p.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: "c" + string(rune('0'+i)), Expression: c})
	}
	return p
}

func bindingFor(p string) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: p + "-binding"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: p}}
}

// admitFrozen is ev.Admit(a), failing t if Admit modified the request's
// objects (it must never modify its input).
func admitFrozen(t testing.TB, ev *Evaluator, a *matching.Attributes) (chain.Result, error) {
	t.Helper()
	frozenObj, frozenOld := valuetest.FreezeObject(a.Object), valuetest.FreezeObject(a.OldObject)
	res, err := new(chain.Runner).Run(context.Background(), a, ev)
	frozenObj.Check(t, "the request's object")
	frozenOld.Check(t, "the request's old object")
	return res, err
}

func newEvaluator(t testing.TB, policies ...*admissionregistrationv1.MutatingAdmissionPolicy) *Evaluator {
	t.Helper()
	return NewEvaluator(testConfig(), testHooks(t, policies...))
}

// testHooks compiles policies, each with one binding (bindingFor).
func testHooks(t testing.TB, policies ...*admissionregistrationv1.MutatingAdmissionPolicy) []Hook {
	t.Helper()
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	var bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for _, p := range policies {
		bindings = append(bindings, bindingFor(p.Name))
	}
	hooks, err := NewHooks(comp, policies, bindings)
	if err != nil {
		t.Fatal(err)
	}
	return hooks
}

// testConfig is a world of every namespace (labelled with its name), no
// params and the built-in schemas and scheme.
func testConfig() Config { return testConfigLabelled(nil) }

// testConfigLabelled is testConfig with labels added to every namespace.
func testConfigLabelled(labels map[string]string) Config {
	table := matching.DefaultTable()
	namespaces := matching.NamespaceGetterFunc(func(_ context.Context, name string) (*corev1.Namespace, error) {
		l := map[string]string{"kubernetes.io/metadata.name": name}
		maps.Copy(l, labels)
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}, nil
	})
	return Config{
		Matcher: matching.NewMatcher(namespaces, table),
		Params:  &params.Collector{Source: params.NewMemory(), Scopes: scopesOf{table}},
		Patcher: &mutation.Patcher{Schemas: applyconfig.NewSchemas(), Scheme: kubescheme.New()},
	}
}

type scopesOf struct{ t *matching.Table }

func (s scopesOf) Namespaced(gvk schema.GroupVersionKind) (bool, bool) {
	for _, r := range s.t.ResourcesForKind(gvk) {
		return r.Namespaced, true
	}
	return false, false
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

func TestReinvocationCountsAsKubeAPIServer(t *testing.T) {
	ifNeeded, never := admissionregistrationv1.IfNeededReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy
	cases := []struct {
		name     string
		policies []*admissionregistrationv1.MutatingAdmissionPolicy
		want     string
	}{
		{name: "a single IfNeeded counter runs twice", policies: []*admissionregistrationv1.MutatingAdmissionPolicy{mapPolicy("a", ifNeeded, admissionregistrationv1.Fail, counter)}, want: "2"},
		{name: "a single Never counter runs once", policies: []*admissionregistrationv1.MutatingAdmissionPolicy{mapPolicy("a", never, admissionregistrationv1.Fail, counter)}, want: "1"},
		{name: "two IfNeeded and one Never counter reach five", policies: []*admissionregistrationv1.MutatingAdmissionPolicy{
			mapPolicy("a", ifNeeded, admissionregistrationv1.Fail, counter), mapPolicy("b", ifNeeded, admissionregistrationv1.Fail, counter), mapPolicy("c", never, admissionregistrationv1.Fail, counter)}, want: "5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := admitFrozen(t, newEvaluator(t, tc.policies...), createConfigMap())
			if err != nil || res.Denied != nil {
				t.Fatalf("err %v denied %v", err, res.Denied)
			}
			if got := count(t, res); got != tc.want {
				t.Fatalf("count = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFailurePolicyAndMatchConditions(t *testing.T) {
	never := admissionregistrationv1.NeverReinvocationPolicy
	broken := `Object{metadata: Object.metadata{labels: {"x": object.missing}}}`
	cases := []struct {
		name       string
		policy     *admissionregistrationv1.MutatingAdmissionPolicy
		wantDenied string
		wantCount  string
	}{
		{name: "a runtime error under Fail denies with upstream's message", policy: mapPolicy("p", never, admissionregistrationv1.Fail, broken),
			wantDenied: "policy 'p' with binding 'p-binding' denied request: expression '" + broken + "' resulted in error: no such key: missing"},
		{name: "a runtime error under Ignore admits unchanged", policy: mapPolicy("p", never, admissionregistrationv1.Ignore, broken)},
		{name: "a false matchCondition skips the policy", policy: mapPolicy("p", never, admissionregistrationv1.Fail, counter, "true", "object.metadata.name == 'other'")},
		{name: "a true matchCondition runs it", policy: mapPolicy("p", never, admissionregistrationv1.Fail, counter, "object.metadata.name == 'cm'"), wantCount: "1"},
		{name: "a matchCondition error under Fail denies", policy: mapPolicy("p", never, admissionregistrationv1.Fail, counter, "object.nope == 1"),
			wantDenied: "policy 'p' with binding 'p-binding' denied request: expression 'object.nope == 1' resulted in error: no such key: nope"},
		{name: "a false condition wins over an error", policy: mapPolicy("p", never, admissionregistrationv1.Fail, counter, "object.nope == 1", "false")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := admitFrozen(t, newEvaluator(t, tc.policy), createConfigMap())
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantDenied != "" {
				if res.Denied == nil || res.Denied.ErrStatus.Message != tc.wantDenied {
					t.Fatalf("denied = %v, want %q", res.Denied, tc.wantDenied)
				}
				if res.Denied.ErrStatus.Code != 403 || !apierrors.IsInvalid(res.Denied) {
					t.Fatalf("status %d %s, want 403 Invalid", res.Denied.ErrStatus.Code, res.Denied.ErrStatus.Reason)
				}
				return
			}
			if res.Denied != nil {
				t.Fatalf("denied: %v", res.Denied)
			}
			if got := count(t, res); got != tc.wantCount {
				t.Fatalf("count = %q, want %q", got, tc.wantCount)
			}
		})
	}
}

func TestOtherOperationsPass(t *testing.T) {
	a := createConfigMap()
	a.Operation = admission.Delete
	res, err := new(chain.Runner).Run(context.Background(), a, newEvaluator(t, mapPolicy("p", admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.Fail, counter)))
	if err != nil || res.Denied != nil || len(res.Invocations) != 0 || !strings.Contains("", count(t, res)) {
		t.Fatalf("DELETE was evaluated: %+v", res)
	}
}

func TestIndexNeverChangesTheResult(t *testing.T) {
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	podsOnly := mapPolicy("pods-only", ifNeeded, admissionregistrationv1.Fail, counter)
	podsOnly.Spec.MatchConstraints.ResourceRules[0].Resources = []string{"pods"}
	wildcard := mapPolicy("wildcard", ifNeeded, admissionregistrationv1.Fail, counter)
	wildcard.Spec.MatchConstraints.ResourceRules[0].Resources = []string{"*"}
	wildcard.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{"*"}
	update := mapPolicy("update-only", ifNeeded, admissionregistrationv1.Fail, counter)
	update.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{"UPDATE"}
	policies := []*admissionregistrationv1.MutatingAdmissionPolicy{
		mapPolicy("configmaps", ifNeeded, admissionregistrationv1.Fail, counter), podsOnly, wildcard, update,
	}
	indexed := newEvaluator(t, policies...)
	brute := newEvaluator(t, policies...)
	brute.bruteForce = true
	a, _ := new(chain.Runner).Run(context.Background(), createConfigMap(), indexed)
	b, _ := new(chain.Runner).Run(context.Background(), createConfigMap(), brute)
	ran := func(r chain.Result) []string {
		var out []string
		for _, inv := range r.Invocations {
			if inv.Skip != chain.SkipPolicyNotSelected {
				out = append(out, fmt.Sprintf("%d %s %s %q", inv.Round+1, inv.Configuration, inv.Hook, inv.Skip))
			}
		}
		return out
	}
	if count(t, a) != count(t, b) || strings.Join(ran(a), ";") != strings.Join(ran(b), ";") {
		t.Fatalf("index changed the result: %s %v vs %s %v", count(t, a), ran(a), count(t, b), ran(b))
	}
	if count(t, a) != "4" {
		t.Fatalf("count = %s, want 4 (configmaps and wildcard, each twice)", count(t, a))
	}
	if got := len(indexed.appendCandidates(nil, createConfigMap())); got != 2 {
		t.Fatalf("index offers %d candidates for a configmap CREATE, want 2", got)
	}
}

func TestEquivalentMatchPresentsTheMatchedVersion(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", ListKind: "WidgetList", Plural: "widgets", Singular: "widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTrue()}}},
				{Name: "v2", Served: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTrue()}}},
			},
		},
	}
	p := mapPolicy("seen-version", admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.Fail,
		`Object{metadata: Object.metadata{labels: {"seen": object.apiVersion.replace("/", "_")}}}`)
	p.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{"example.com"}
	p.Spec.MatchConstraints.ResourceRules[0].Resources = []string{"widgets"}
	ev := newEvaluator(t, p)
	if err := ev.cfg.Matcher.Table().AddCRD(crd); err != nil {
		t.Fatal(err)
	}
	if err := ev.cfg.Patcher.Schemas.AddCRD(crd); err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v2", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "shop"}}}
	a := &matching.Attributes{Operation: admission.Create, Kind: schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"},
		Resource: schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}, Name: "w", Namespace: "shop", Object: obj}
	res, err := new(chain.Runner).Run(context.Background(), a, ev)
	if err != nil || res.Denied != nil {
		t.Fatalf("err %v denied %v", err, res.Denied)
	}
	seen, _, _ := unstructured.NestedString(res.Object, "metadata", "labels", "seen")
	if seen != "example.com_v1" {
		t.Fatalf("policy saw apiVersion %q, want the matched example.com/v1", seen)
	}
	if res.Object["apiVersion"] != "example.com/v2" {
		t.Fatalf("result is in %v, want the request's example.com/v2", res.Object["apiVersion"])
	}
}

func ptrTrue() *bool { b := true; return &b }

type recordedMetrics []string

func (r *recordedMetrics) ObserveMutation(_ context.Context, _ time.Duration, policy, binding, errorType string) {
	*r = append(*r, policy+"/"+binding+"/"+errorType)
}

func TestMetricsObserveEveryMutation(t *testing.T) {
	never := admissionregistrationv1.NeverReinvocationPolicy
	ev := newEvaluator(t,
		mapPolicy("good", never, admissionregistrationv1.Ignore, counter),
		mapPolicy("runtime", never, admissionregistrationv1.Ignore, `Object{metadata: Object.metadata{labels: {"x": object.missing}}}`),
		mapPolicy("uncompiled", never, admissionregistrationv1.Ignore, `Object{`))
	var rec recordedMetrics
	ev.cfg.Metrics = &rec
	if _, err := new(chain.Runner).Run(context.Background(), createConfigMap(), ev); err != nil {
		t.Fatal(err)
	}
	want := []string{"good/good-binding/no_error", "runtime/runtime-binding/invalid_error", "uncompiled/uncompiled-binding/compile_error"}
	if strings.Join(rec, ",") != strings.Join(want, ",") {
		t.Fatalf("metrics %v, want %v", rec, want)
	}
}

func TestPanicInAMutationFollowsTheFailurePolicy(t *testing.T) {
	never := admissionregistrationv1.NeverReinvocationPolicy
	for _, tc := range []struct {
		fp     admissionregistrationv1.FailurePolicyType
		denied bool
	}{{admissionregistrationv1.Fail, true}, {admissionregistrationv1.Ignore, false}} {
		ev := newEvaluator(t, mapPolicy("p", never, tc.fp, counter))
		ev.cfg.Patcher = &mutation.Patcher{Scheme: kubescheme.New()} // no Schemas: the lookup panics
		res, err := new(chain.Runner).Run(context.Background(), createConfigMap(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if (res.Denied != nil) != tc.denied {
			t.Fatalf("failurePolicy %s: denied = %v", tc.fp, res.Denied)
		}
		if tc.denied && !strings.Contains(res.Denied.ErrStatus.Message, "panic") {
			t.Fatalf("denial does not name the panic: %s", res.Denied.ErrStatus.Message)
		}
	}
}

// TestInputsSeeWhatAdmitSees: Inputs presents the request's object as
// Admit's first pass does (decoded into the kind's Go type), so the cost
// harness evaluates expressions over the objects admission would.
func TestInputsSeeWhatAdmitSees(t *testing.T) {
	ev := newEvaluator(t, mapPolicy("p", admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.Fail, `Object{metadata: Object.metadata{labels: {"seen": "yes"}}}`))
	a := createConfigMap()
	// Empty maps the ConfigMap type omits: the typed form has neither.
	a.Object.Object["data"] = map[string]any{}
	unstructured.SetNestedMap(a.Object.Object, map[string]any{}, "metadata", "labels")
	want, err := ev.cfg.Patcher.NormalizeRequest(a.Object.Object, a.Kind)
	if err != nil {
		t.Fatal(err)
	}
	if jsonvalue.Equal(want, a.Object.Object) {
		t.Fatal("the test object is already in its typed form")
	}
	ins, err := ev.Inputs(context.Background(), a)
	if err != nil || len(ins) != 1 {
		t.Fatalf("Inputs: %d, %v", len(ins), err)
	}
	for name, got := range map[string]map[string]any{"matchConditions": ins[0].MatchConditions.Object, "mutations": ins[0].Mutations.Object} {
		if !jsonvalue.Equal(got, want) {
			t.Errorf("the %s' object is %#v, Admit's first pass sees %#v", name, got, want)
		}
	}
}
