package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/matching"
)

// fixture is a controller over fake clients, running until the test ends.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	c        *Controller
	kube     *kubefake.Clientset
	dyn      *dynamicfake.FakeDynamicClient
	recorder *record.FakeRecorder
	policies schema.GroupVersionResource
	bindings schema.GroupVersionResource
}

var listKinds = func() map[schema.GroupVersionResource]string {
	m := map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "configmaps"}: "ConfigMapList",
	}
	for _, gv := range []schema.GroupVersion{
		{Group: admissionregistrationv1.GroupName, Version: "v1"},
		{Group: admissionregistrationv1.GroupName, Version: "v1beta1"},
		{Group: admissionregistrationv1.GroupName, Version: "v1alpha1"},
		{Group: ShadowGroup, Version: ShadowVersion},
	} {
		m[gv.WithResource(PolicyResource)] = "MutatingAdmissionPolicyList"
		m[gv.WithResource(BindingResource)] = "MutatingAdmissionPolicyBindingList"
	}
	return m
}

// start runs a controller of the given source; for native mode, the cluster
// serves MAP in nativeVersion.
func start(t *testing.T, source, nativeVersion string, webhook WebhookOptions, objects ...*unstructured.Unstructured) *fixture {
	t.Helper()
	return startConfigured(t, source, nativeVersion, webhook, nil, objects...)
}

// startConfigured is start with configure applied to the Config first.
func startConfigured(t *testing.T, source, nativeVersion string, webhook WebhookOptions, configure func(*Config), objects ...*unstructured.Unstructured) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	kube := kubefake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{corev1.LabelMetadataName: "default"}}},
	)
	gv := schema.GroupVersion{Group: ShadowGroup, Version: ShadowVersion}
	if source == SourceNative {
		gv = schema.GroupVersion{Group: admissionregistrationv1.GroupName, Version: nativeVersion}
		kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
			GroupVersion: gv.String(),
			APIResources: []metav1.APIResource{
				{Name: PolicyResource, Kind: "MutatingAdmissionPolicy"},
				{Name: BindingResource, Kind: "MutatingAdmissionPolicyBinding"},
			},
		}}
	}
	var objs []runtime.Object
	for _, o := range objects {
		objs = append(objs, o)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds(), objs...)
	recorder := record.NewFakeRecorder(100)
	cfg := Config{
		Clients:                          &Clients{Kube: kube, Dynamic: dyn, APIExtensions: apiextensionsfake.NewClientset()},
		Source:                           source,
		AcknowledgeBuiltinPluginDisabled: true,
		Namespace:                        "mutatis-system",
		Recorder:                         recorder,
		Webhook:                          webhook,
	}
	if configure != nil {
		configure(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Ready() {
		t.Fatal("Ready before Run")
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-c.ReadyCh():
	case err := <-done:
		t.Fatalf("Run returned before ready: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("not ready after a minute")
	}
	if !c.Ready() || c.Generation() == 0 {
		t.Fatalf("ReadyCh closed but Ready()=%v generation=%d", c.Ready(), c.Generation())
	}
	return &fixture{t: t, ctx: ctx, c: c, kube: kube, dyn: dyn, recorder: recorder,
		policies: gv.WithResource(PolicyResource), bindings: gv.WithResource(BindingResource)}
}

// waitFor waits until the engine reflects cond.
func (f *fixture) waitFor(what string, cond func(Status) bool) Status {
	f.t.Helper()
	st, err := f.c.WaitFor(f.ctx, cond)
	if err != nil {
		f.t.Fatalf("waiting for %s: %v (status %+v)", what, err, st)
	}
	return st
}

func (f *fixture) create(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	f.t.Helper()
	if _, err := f.dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(f.ctx, u, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) update(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	f.t.Helper()
	if _, err := f.dyn.Resource(gvr).Namespace(u.GetNamespace()).Update(f.ctx, u, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) delete(gvr schema.GroupVersionResource, name string) {
	f.t.Helper()
	if err := f.dyn.Resource(gvr).Delete(f.ctx, name, metav1.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// admitConfigMap admits the creation of a ConfigMap in "default" and returns
// its labels after mutation.
func (f *fixture) admitConfigMap(name string) map[string]string {
	f.t.Helper()
	cm := object(f.t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: default}\ndata: {a: b}", name))
	res, err := f.c.Engine().Admit(f.ctx, &matching.Attributes{
		Operation: admission.Create,
		Kind:      schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		Resource:  schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		Name:      name, Namespace: "default", Object: cm,
		UserInfo: &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	if res.Denied != nil {
		f.t.Fatalf("denied: %v", res.Denied)
	}
	return (&unstructured.Unstructured{Object: res.Object}).GetLabels()
}

// nextEvent returns the next recorded event.
func (f *fixture) nextEvent() string {
	f.t.Helper()
	select {
	case e := <-f.recorder.Events:
		return e
	case <-f.ctx.Done():
		f.t.Fatal("no event")
	}
	return ""
}

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	return &unstructured.Unstructured{Object: m}
}

// policy is a MutatingAdmissionPolicy that sets label key=value on
// ConfigMaps.
func policy(t *testing.T, apiVersion, name, rv, key, value string) *unstructured.Unstructured {
	return object(t, fmt.Sprintf(`
apiVersion: %s
kind: MutatingAdmissionPolicy
metadata: {name: %s, uid: uid-%s, resourceVersion: "%s"}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"%s": "%s"}}}'
`, apiVersion, name, name, rv, key, value))
}

func bindingObject(t *testing.T, apiVersion, name, policy string) *unstructured.Unstructured {
	return object(t, fmt.Sprintf(`
apiVersion: %s
kind: MutatingAdmissionPolicyBinding
metadata: {name: %s, uid: uid-%s, resourceVersion: "1"}
spec: {policyName: %s}
`, apiVersion, name, name, policy))
}

func TestNew(t *testing.T) {
	clients := &Clients{Kube: kubefake.NewClientset(), Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), APIExtensions: apiextensionsfake.NewClientset()}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" for success
	}{
		{"native mode without the acknowledgment is refused", Config{Source: SourceNative}, "double mutation"},
		{"native mode with the acknowledgment starts", Config{Source: SourceNative, AcknowledgeBuiltinPluginDisabled: true}, ""},
		{"shadow mode needs no acknowledgment", Config{Source: SourceShadow}, ""},
		{"an unknown source is refused", Config{Source: "both"}, `source must be "native" or "shadow"`},
		{"a service and a URL together are refused", Config{Source: SourceShadow, Webhook: WebhookOptions{URL: "https://127.0.0.1:8443/mutate", Service: &admissionregistrationv1.ServiceReference{Name: "mutatis"}}}, "not both"},
		{"a timeout above 30s is refused", Config{Source: SourceShadow, Webhook: WebhookOptions{TimeoutSeconds: 31}}, "between 1 and 30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Clients = clients
			tc.cfg.Recorder = record.NewFakeRecorder(1)
			_, err := New(tc.cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := New(Config{Source: SourceNative, Clients: clients}); !errors.Is(err, ErrBuiltinPluginEnabled) {
		t.Fatalf("error %v, want ErrBuiltinPluginEnabled", err)
	}
}

func TestNativeModeFollowsPolicies(t *testing.T) {
	for _, version := range []string{"v1", "v1beta1", "v1alpha1"} {
		t.Run("the cluster serves "+version, func(t *testing.T) {
			apiVersion := admissionregistrationv1.GroupName + "/" + version
			svcPath := "/mutate"
			f := start(t, SourceNative, version, WebhookOptions{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: "mutatis-system", Name: "mutatis", Path: &svcPath},
				CABundle: []byte("CA"),
			}, policy(t, apiVersion, "add-team", "1", "team", "a"), bindingObject(t, apiVersion, "add-team", "add-team"))
			if f.policies.Version != version {
				t.Fatalf("watching %v", f.policies)
			}
			f.waitFor("policy in the engine", func(s Status) bool { return s.Policies["add-team"] == "1" })
			if got := f.admitConfigMap("x")["team"]; got != "a" {
				t.Fatalf("label team = %q, want a", got)
			}
			wh, err := f.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(f.ctx, "mutatis-fail", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("webhook configuration: %v", err)
			}
			if r := wh.Webhooks[0].Rules; len(r) != 1 || r[0].Resources[0] != "configmaps" {
				t.Fatalf("rules %+v", r)
			}

			f.update(f.policies, policy(t, apiVersion, "add-team", "2", "team", "b"))
			f.waitFor("updated policy in the engine", func(s Status) bool { return s.Policies["add-team"] == "2" })
			if got := f.admitConfigMap("x")["team"]; got != "b" {
				t.Fatalf("after update: label team = %q, want b", got)
			}

			f.delete(f.policies, "add-team")
			f.waitFor("policy gone", func(s Status) bool { _, ok := s.Policies["add-team"]; return !ok })
			if got, ok := f.admitConfigMap("x")["team"]; ok {
				t.Fatalf("after delete: label team = %q, want none", got)
			}
			if _, err := f.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(f.ctx, "mutatis-fail", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("webhook configuration of no policy: %v, want NotFound", err)
			}
		})
	}
}

func TestNativeModeWithoutTheAPIFails(t *testing.T) {
	c, err := New(Config{
		Clients:                          &Clients{Kube: kubefake.NewClientset(), Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), APIExtensions: apiextensionsfake.NewClientset()},
		Source:                           SourceNative,
		AcknowledgeBuiltinPluginDisabled: true,
		Recorder:                         record.NewFakeRecorder(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "serves no MutatingAdmissionPolicy API") {
		t.Fatalf("Run: %v", err)
	}
}

func TestBrokenPolicyIsReportedAndOthersWork(t *testing.T) {
	const v1 = "admissionregistration.k8s.io/v1"
	broken := policy(t, v1, "broken", "1", "x", "y")
	_ = unstructured.SetNestedSlice(broken.Object, []any{map[string]any{
		"patchType":          "ApplyConfiguration",
		"applyConfiguration": map[string]any{"expression": `Object{metadata: Object.metadata{labels: {"a": }}}`},
	}}, "spec", "mutations")
	f := start(t, SourceNative, "v1", WebhookOptions{},
		broken, bindingObject(t, v1, "broken", "broken"),
		policy(t, v1, "good", "1", "team", "a"), bindingObject(t, v1, "good", "good"))
	f.waitFor("both policies", func(s Status) bool { return s.Policies["good"] == "1" && s.Policies["broken"] == "1" })

	ev := f.nextEvent()
	for _, want := range []string{"Warning", ReasonCompileError, "spec.mutations[0].applyConfiguration.expression", "Syntax error"} {
		if !strings.Contains(ev, want) {
			t.Fatalf("event %q lacks %q", ev, want)
		}
	}
	// The broken policy is kept, as kube-apiserver keeps it: under its
	// failurePolicy (Fail) it denies what it matches. Bind the good one
	// alone to see it mutate.
	f.delete(f.bindings, "broken")
	f.waitFor("broken policy unbound", func(s Status) bool { _, ok := s.Bindings["broken"]; return !ok })
	if got := f.admitConfigMap("x")["team"]; got != "a" {
		t.Fatalf("good policy: label team = %q, want a", got)
	}
}

func TestParamInformersFollowPolicies(t *testing.T) {
	p := object(t, `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: from-params, uid: uid-p, resourceVersion: "1"}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"team": params.data.team}}}'
`)
	b := object(t, `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: from-params, uid: uid-b, resourceVersion: "1"}
spec:
  policyName: from-params
  paramRef: {name: team, namespace: default, parameterNotFoundAction: Deny}
`)
	param := object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: team, namespace: default}, data: {team: blue}}`)
	configmaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

	f := start(t, SourceNative, "v1", WebhookOptions{}, param, p)
	st := f.waitFor("the unbound policy", func(s Status) bool { return s.Policies["from-params"] == "1" })
	if len(st.ParamKinds) != 0 {
		t.Fatalf("param informers %v without a binding", st.ParamKinds)
	}

	f.create(f.bindings, b)
	st = f.waitFor("the binding", func(s Status) bool { return s.Bindings["from-params"] == "1" })
	if len(st.ParamKinds) != 1 || st.ParamKinds[0] != configmaps {
		t.Fatalf("param informers %v, want [configmaps]", st.ParamKinds)
	}
	if got := f.admitConfigMap("x")["team"]; got != "blue" {
		t.Fatalf("label team = %q, want blue", got)
	}

	f.delete(f.bindings, "from-params")
	st = f.waitFor("no binding", func(s Status) bool { return len(s.Bindings) == 0 })
	if len(st.ParamKinds) != 0 {
		t.Fatalf("param informers %v after the last binding went", st.ParamKinds)
	}
}

func TestShadowMode(t *testing.T) {
	const shadow = ShadowGroup + "/" + ShadowVersion
	invalid := policy(t, shadow, "no-reinvocation", "1", "x", "y")
	unstructured.RemoveNestedField(invalid.Object, "spec", "reinvocationPolicy")
	f := start(t, SourceShadow, "", WebhookOptions{},
		policy(t, shadow, "add-team", "1", "team", "a"), bindingObject(t, shadow, "add-team", "add-team"), invalid)
	st := f.waitFor("shadow policy", func(s Status) bool { return s.Policies["add-team"] == "1" })
	if _, ok := st.Policies["no-reinvocation"]; ok {
		t.Fatal("an invalid shadow policy reached the engine")
	}
	if got := f.admitConfigMap("x")["team"]; got != "a" {
		t.Fatalf("label team = %q, want a", got)
	}
	if ev := f.nextEvent(); !strings.Contains(ev, ReasonInvalid) || !strings.Contains(ev, "spec.reinvocationPolicy: Required value") {
		t.Fatalf("event %q", ev)
	}

	for _, tc := range []struct {
		policy, status, reason string
	}{
		{"add-team", "True", ReasonCompiled},
		{"no-reinvocation", "False", ReasonInvalid},
	} {
		t.Run(tc.policy+" has Ready="+tc.status, func(t *testing.T) {
			c, conds := f.readyCondition(t, tc.policy)
			if c == nil || string(c.Status) != tc.status || c.Reason != tc.reason {
				t.Fatalf("conditions %+v", conds)
			}
		})
	}
}

// readyCondition returns the Ready condition of the shadow policy name (nil
// when it has none) and all its conditions.
func (f *fixture) readyCondition(t *testing.T, name string) (*metav1.Condition, []metav1.Condition) {
	t.Helper()
	u, err := f.dyn.Resource(f.policies).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var conds []metav1.Condition
	for _, r := range raw {
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(r.(map[string]any), &c); err != nil {
			t.Fatal(err)
		}
		conds = append(conds, c)
	}
	return apimeta.FindStatusCondition(conds, ConditionReady), conds
}

// TestShadowModeLeavesOutWhatTheAPIServerRefuses: a shadow policy whose
// expressions kube-apiserver's create-time validation refuses (here a
// variable the policy does not declare: 422 natively, so the policy never
// exists) is left out of the set — it neither appears in the status nor
// denies under its failurePolicy — and is reported not Ready with the
// refusal's field error (test/e2e case 29-refused-undefined-variable).
func TestShadowModeLeavesOutWhatTheAPIServerRefuses(t *testing.T) {
	const shadow = ShadowGroup + "/" + ShadowVersion
	refused := object(t, `
apiVersion: `+shadow+`
kind: MutatingAdmissionPolicy
metadata: {name: undefined-variable, uid: uid-undefined-variable, resourceVersion: "1"}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  failurePolicy: Fail
  reinvocationPolicy: Never
  variables:
  - {name: owner, expression: '"platform"'}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"owner": variables.team}}}'
`)
	f := start(t, SourceShadow, "", WebhookOptions{},
		refused, bindingObject(t, shadow, "undefined-variable", "undefined-variable"),
		policy(t, shadow, "add-team", "1", "team", "a"), bindingObject(t, shadow, "add-team", "add-team"))
	st := f.waitFor("the valid policy and both bindings", func(s Status) bool {
		return s.Policies["add-team"] == "1" && len(s.Bindings) == 2
	})
	if _, ok := st.Policies["undefined-variable"]; ok {
		t.Fatalf("the status lists the refused policy: %+v", st)
	}
	// Kept, it would deny the ConfigMap under failurePolicy Fail.
	if got := f.admitConfigMap("x")["team"]; got != "a" {
		t.Fatalf("label team = %q, want a", got)
	}
	const fieldErr = `spec.mutations[0].applyConfiguration.expression: Invalid value: "Object{metadata: Object.metadata{labels: {\"owner\": variables.team}}}": compilation failed: ERROR: <input>:1:61: undefined field 'team'`
	if ev := f.nextEvent(); !strings.Contains(ev, "Warning "+ReasonInvalid) || !strings.Contains(ev, fieldErr) {
		t.Fatalf("event %q, want a warning %s with %q", ev, ReasonInvalid, fieldErr)
	}
	c, conds := f.readyCondition(t, "undefined-variable")
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalid || !strings.Contains(c.Message, fieldErr) {
		t.Fatalf("conditions %+v, want Ready=False %s with %q", conds, ReasonInvalid, fieldErr)
	}
}
