package differential

// Differential tests of the webhook client: the same configurations,
// requests and test webhook servers (test/webhookserver) through
// k8s.io/apiserver's MutatingAdmissionWebhook plugin (test/upstream's
// MutatingWebhooks, the oracle) and through webhookclient.Dispatcher, with
// the admission chain's reinvocation protocol around both. Objects, denial
// and error messages, HTTP codes, warningList, audit annotations and the
// number of calls each webhook received must be the same.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/utils/ptr"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/rbac"
	kubescheme "github.com/mutatis-dev/mutatis/scheme"
	"github.com/mutatis-dev/mutatis/test/upstream"
	"github.com/mutatis-dev/mutatis/test/webhookserver"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// webhookWorld is what both implementations are given: the test server,
// the namespaces and the service mappings.
type webhookWorld struct {
	srv        *webhookserver.Server
	namespaces []*corev1.Namespace
	// services maps (namespace, name, port) to the test server.
	services map[webhookclient.Service]*url.URL
	// authz backs matchConditions' authorizer: alice may create pods.
	authz *rbac.Authorizer
}

func newWebhookWorld(t *testing.T) *webhookWorld {
	t.Helper()
	srv, err := webhookserver.Start(t.TempDir(), "labels.hooks.svc", "sidecar.hooks.svc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	u, err := url.Parse("https://" + srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	authz, err := rbac.New([]rbacv1.ClusterRole{{ObjectMeta: metav1.ObjectMeta{Name: "pod-creator"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}}, nil,
		[]rbacv1.ClusterRoleBinding{{ObjectMeta: metav1.ObjectMeta{Name: "alice"}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "pod-creator"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &webhookWorld{
		authz: authz,
		srv:   srv,
		namespaces: []*corev1.Namespace{
			{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"env": "prod", "kubernetes.io/metadata.name": "default"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", Labels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}}},
		},
		services: map[webhookclient.Service]*url.URL{
			{Namespace: "hooks", Name: "labels", Port: 443}:   u,
			{Namespace: "hooks", Name: "sidecar", Port: 443}:  u,
			{Namespace: "hooks", Name: "sidecar", Port: 8443}: u,
		},
	}
}

// webhookRequest is one admission request (typed objects in the request's
// version) and, for the reinvocation round, what an in-tree plugin does to
// the object before the webhooks run again (KEP-492's in-tree scenarios).
type webhookRequest struct {
	op        admission.Operation
	obj, old  runtime.Object
	gvk       schema.GroupVersionKind
	gvr       schema.GroupVersionResource
	namespace string
	name      string
	dryRun    bool
	// inTree, when set, changes the object (in the request's version)
	// between the two rounds, and asks for the second round.
	inTree func(obj map[string]any)
}

// webhookOutcome is an implementation's answer reduced to what must be
// equal.
type webhookOutcome struct {
	Object      map[string]any
	Code        int32
	Message     string
	Reason      metav1.StatusReason
	Calls       map[string]int
	Warnings    []string
	Annotations map[string]string
}

var uidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func (o webhookOutcome) String() string {
	js, _ := json.MarshalIndent(o, "", "  ")
	return string(js)
}

func webhookErrorOutcome(err error) (int32, string, metav1.StatusReason) {
	if err == nil {
		return 0, "", ""
	}
	if s, ok := err.(apierrors.APIStatus); ok {
		st := s.Status()
		return st.Code, uidRE.ReplaceAllString(st.Message, "UID"), st.Reason
	}
	return -1, uidRE.ReplaceAllString(err.Error(), "UID"), ""
}

// typedToMap is obj in typed form (ToUnstructured), as the chain holds
// objects.
func typedToMap(t *testing.T, obj runtime.Object) map[string]any {
	t.Helper()
	if obj == nil {
		return nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// annotatingAttributes records the audit annotations the plugin adds.
type annotatingAttributes struct {
	admission.Attributes
	mu          sync.Mutex
	annotations map[string]string
}

func (a *annotatingAttributes) AddAnnotation(k, v string) error {
	return a.AddAnnotationWithLevel(k, v, auditinternal.LevelMetadata)
}

func (a *annotatingAttributes) AddAnnotationWithLevel(k, v string, _ auditinternal.Level) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.annotations[k]; ok && old != v {
		return fmt.Errorf("admission annotations are not allowed to be overwritten")
	}
	a.annotations[k] = v
	return nil
}

type warningList struct {
	mu   sync.Mutex
	list []string
}

func (w *warningList) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *webhookWorld) runUpstream(t *testing.T, configs []*admissionregistrationv1.MutatingWebhookConfiguration, r webhookRequest) webhookOutcome {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var objects []runtime.Object
	for _, ns := range w.namespaces {
		objects = append(objects, ns.DeepCopy())
	}
	for _, c := range configs {
		objects = append(objects, c.DeepCopy())
	}
	services := map[string]*url.URL{}
	for k, u := range w.services {
		services[upstream.ServiceKey(k.Namespace, k.Name, k.Port)] = u
	}
	plugin, err := upstream.MutatingWebhooks(ctx, objects, services, w.authz)
	if err != nil {
		t.Fatal(err)
	}
	s := kubeScheme()
	attrs := &annotatingAttributes{annotations: map[string]string{}, Attributes: admission.NewAttributesRecord(internalOf(t, r.obj, r.gvk), internalOf(t, r.old, r.gvk), r.gvk, r.namespace, r.name, r.gvr, "", r.op, nil, r.dryRun, &user.DefaultInfo{Name: "alice"})}
	oi := &admission.RuntimeObjectInterfaces{ObjectCreater: s, ObjectTyper: s, ObjectDefaulter: s, ObjectConvertor: s, EquivalentResourceMapper: matching.DefaultTable()}
	rec := &warningList{}
	wctx := warning.WithWarningRecorder(ctx, rec)
	w.srv.ResetCalls()
	err = plugin.Admit(wctx, attrs, oi)
	rc := attrs.GetReinvocationContext()
	if err == nil && r.inTree != nil && attrs.GetObject() != nil {
		// An in-tree plugin of the reinvocation round changes the object
		// before the webhooks run again.
		versioned, cerr := s.ConvertToVersion(attrs.GetObject(), r.gvk.GroupVersion())
		if cerr != nil {
			t.Fatal(cerr)
		}
		m := typedToMap(t, versioned)
		r.inTree(m)
		typed, _ := s.New(r.gvk)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, typed); err != nil {
			t.Fatal(err)
		}
		if err := s.Convert(typed, attrs.GetObject(), nil); err != nil {
			t.Fatal(err)
		}
		rc.SetShouldReinvoke()
	}
	if err == nil && rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		err = plugin.Admit(wctx, attrs, oi)
	}
	out := w.outcome(t, err, rec.list, attrs.annotations)
	if err == nil && attrs.GetObject() != nil {
		versioned, cerr := s.ConvertToVersion(attrs.GetObject(), r.gvk.GroupVersion())
		if cerr != nil {
			t.Fatal(cerr)
		}
		out.Object = mapRoundTrip(t, typedToMap(t, versioned))
	}
	return out
}

func (w *webhookWorld) outcome(t *testing.T, err error, warns []string, annotations map[string]string) webhookOutcome {
	out := webhookOutcome{Calls: map[string]int{}, Warnings: warns, Annotations: map[string]string{}}
	out.Code, out.Message, out.Reason = webhookErrorOutcome(err)
	for _, p := range webhookserver.Paths {
		if n := w.srv.Calls(p); n > 0 {
			out.Calls[p] = n
		}
	}
	for k, v := range annotations {
		out.Annotations[k] = v
	}
	return out
}

func (w *webhookWorld) runMutatis(t *testing.T, configs []*admissionregistrationv1.MutatingWebhookConfiguration, r webhookRequest) (webhookOutcome, []chain.Call) {
	t.Helper()
	ctx := context.Background()
	namespaces := map[string]*corev1.Namespace{}
	for _, ns := range w.namespaces {
		namespaces[ns.Name] = ns
	}
	matcher := matching.NewMatcher(matching.NamespaceGetterFunc(func(_ context.Context, name string) (*corev1.Namespace, error) {
		if ns, ok := namespaces[name]; ok {
			return ns, nil
		}
		return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
	}), matching.DefaultTable())
	d, err := webhookclient.NewDispatcher(configs, webhookclient.Options{Matcher: matcher, Scheme: kubescheme.New(), ServiceURLs: w.services, Authorizer: w.authz})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(nil)
	a := &matching.Attributes{Operation: r.op, Kind: r.gvk, Resource: r.gvr, Name: r.name, Namespace: r.namespace,
		UserInfo: &user.DefaultInfo{Name: "alice"}, DryRun: r.dryRun}
	if r.obj != nil {
		a.Object = &unstructured.Unstructured{Object: typedToMap(t, r.obj)}
	}
	if r.old != nil {
		a.OldObject = &unstructured.Unstructured{Object: typedToMap(t, r.old)}
	}
	w.srv.ResetCalls()
	stages := []chain.Stage{d}
	if r.inTree != nil {
		stages = append(stages, inTreeStage(r.inTree))
	}
	res, err := new(chain.Runner).Run(ctx, a, stages...)
	if err == nil && res.Denied != nil {
		err = res.Denied
	}
	out := w.outcome(t, err, res.Warnings, res.AuditAnnotations)
	if err == nil {
		out.Object = mapRoundTrip(t, res.Object)
	}
	return out, res.Calls
}

// inTreeStage is an in-tree plugin after the webhooks that changes the
// object between the two rounds, and asks for the second round.
type inTreeStage func(obj map[string]any)

func (inTreeStage) Name() string { return "in-tree" }

func (f inTreeStage) Admit(_ context.Context, a *matching.Attributes, rc *chain.Context) (chain.Outcome, error) {
	if a.Object == nil {
		return chain.Outcome{}, nil
	}
	if rc.IsReinvoke() {
		return chain.Outcome{Object: a.Object.Object}, nil
	}
	m := runtime.DeepCopyJSON(a.Object.Object)
	f(m)
	rc.SetShouldReinvoke()
	return chain.Outcome{Object: m}, nil
}

func mapRoundTrip(t *testing.T, m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	js, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(js, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// webhookCase is one differential scenario.
type webhookCase struct {
	name    string
	configs []*admissionregistrationv1.MutatingWebhookConfiguration
	request webhookRequest
	// want are facts of the outcome that make the case mean something
	// (so that it cannot pass with both sides doing nothing).
	want func(t *testing.T, o webhookOutcome)
}

// hookOpt changes a webhook.
type hookOpt func(*admissionregistrationv1.MutatingWebhook)

func (w *webhookWorld) urlHook(name, path string, opts ...hookOpt) admissionregistrationv1.MutatingWebhook {
	fs := make([]func(*admissionregistrationv1.MutatingWebhook), len(opts))
	for i, o := range opts {
		fs[i] = o
	}
	return w.srv.Webhook(name, path, fs...)
}

func hookIgnore(h *admissionregistrationv1.MutatingWebhook) {
	h.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
}

func hookIfNeeded(h *admissionregistrationv1.MutatingWebhook) {
	h.ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
}

func hookTimeout(s int32) hookOpt {
	return func(h *admissionregistrationv1.MutatingWebhook) { h.TimeoutSeconds = ptr.To(s) }
}

func hookVersions(v ...string) hookOpt {
	return func(h *admissionregistrationv1.MutatingWebhook) { h.AdmissionReviewVersions = v }
}

func hookSideEffects(s admissionregistrationv1.SideEffectClass) hookOpt {
	return func(h *admissionregistrationv1.MutatingWebhook) { h.SideEffects = ptr.To(s) }
}

func hookConditions(kv ...string) hookOpt {
	return func(h *admissionregistrationv1.MutatingWebhook) {
		for i := 0; i+1 < len(kv); i += 2 {
			h.MatchConditions = append(h.MatchConditions, admissionregistrationv1.MatchCondition{Name: kv[i], Expression: kv[i+1]})
		}
	}
}

func hookNSSelector(key, value string) hookOpt {
	return func(h *admissionregistrationv1.MutatingWebhook) {
		h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
	}
}

func hookObjSelector(key, value string) hookOpt {
	return func(h *admissionregistrationv1.MutatingWebhook) {
		h.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
	}
}

func hookRules(r ...admissionregistrationv1.RuleWithOperations) hookOpt {
	return func(h *admissionregistrationv1.MutatingWebhook) { h.Rules = r }
}

func hookExact(h *admissionregistrationv1.MutatingWebhook) {
	h.MatchPolicy = ptr.To(admissionregistrationv1.Exact)
}

func hookService(ns, name, path string) hookOpt {
	return func(h *admissionregistrationv1.MutatingWebhook) {
		h.ClientConfig.URL = nil
		h.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: ns, Name: name, Path: ptr.To(path), Port: ptr.To[int32](443)}
	}
}

func hookCABundle(b []byte) hookOpt {
	return func(h *admissionregistrationv1.MutatingWebhook) { h.ClientConfig.CABundle = b }
}

func hookURL(u string) hookOpt {
	return func(h *admissionregistrationv1.MutatingWebhook) { h.ClientConfig.URL = ptr.To(u) }
}

func mwConfig(name string, hooks ...admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
}

func webhookPod(labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, TerminationGracePeriodSeconds: ptr.To[int64](30),
			SchedulerName: "default-scheduler", SecurityContext: &corev1.PodSecurityContext{}},
	}
}

var (
	webhookPodGVK = corev1.SchemeGroupVersion.WithKind("Pod")
)

func webhookPodCreate(labels map[string]string) webhookRequest {
	return webhookRequest{op: admission.Create, obj: webhookPod(labels), gvk: webhookPodGVK, gvr: podGVR, namespace: "default", name: "web"}
}

func wantWebhookCalls(want map[string]int) func(t *testing.T, o webhookOutcome) {
	return func(t *testing.T, o webhookOutcome) {
		t.Helper()
		if !reflect.DeepEqual(o.Calls, want) {
			t.Errorf("calls = %v, want %v", o.Calls, want)
		}
	}
}

func wantStatus(code int32, fragment string) func(t *testing.T, o webhookOutcome) {
	return func(t *testing.T, o webhookOutcome) {
		t.Helper()
		if o.Code != code || !strings.Contains(o.Message, fragment) {
			t.Errorf("got %d %q, want %d containing %q", o.Code, o.Message, code, fragment)
		}
	}
}

func wantObjectLabel(key, value string) func(t *testing.T, o webhookOutcome) {
	return func(t *testing.T, o webhookOutcome) {
		t.Helper()
		md, _ := o.Object["metadata"].(map[string]any)
		labels, _ := md["labels"].(map[string]any)
		if labels[key] != value {
			t.Errorf("label %s = %v, want %q (object %v)", key, labels[key], value, o.Object)
		}
	}
}

func wantAllOf(fs ...func(t *testing.T, o webhookOutcome)) func(t *testing.T, o webhookOutcome) {
	return func(t *testing.T, o webhookOutcome) {
		t.Helper()
		for _, f := range fs {
			f(t, o)
		}
	}
}

func counterPath(name string) string { return webhookserver.PathCounter + "/" + name }

func (w *webhookWorld) cases(t *testing.T) []webhookCase {
	otherCA, err := webhookserver.Start(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	otherCA.Close()
	hpaV2 := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 5,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)}}}},
		},
	}
	hpaRule := func(version string) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"autoscaling"}, APIVersions: []string{version}, Resources: []string{"horizontalpodautoscalers"}, Scope: ptr.To(admissionregistrationv1.AllScopes)},
		}
	}
	hpaCreate := webhookRequest{op: admission.Create, obj: hpaV2, gvk: autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"),
		gvr: autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), namespace: "default", name: "web"}
	dryRun := webhookPodCreate(nil)
	dryRun.dryRun = true
	del := webhookRequest{op: admission.Delete, old: webhookPod(nil), gvk: webhookPodGVK, gvr: podGVR, namespace: "default", name: "web"}
	update := webhookRequest{op: admission.Update, obj: webhookPod(map[string]string{"app": "web"}), old: webhookPod(nil), gvk: webhookPodGVK, gvr: podGVR, namespace: "default", name: "web"}
	inTreeLabel := func(key, value string) func(obj map[string]any) {
		return func(obj map[string]any) {
			md := obj["metadata"].(map[string]any)
			labels, _ := md["labels"].(map[string]any)
			if labels == nil {
				labels = map[string]any{}
			}
			labels[key] = value
			md["labels"] = labels
		}
	}
	withInTree := func(r webhookRequest, f func(map[string]any)) webhookRequest {
		r.inTree = f
		return r
	}
	coreEventRule := admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"events"}, Scope: ptr.To(admissionregistrationv1.AllScopes)},
	}
	event := &eventsv1.Event{
		TypeMeta:   metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "default"},
		Regarding:  corev1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "default"},
		Reason:     "Started", Note: "started", Type: "Normal", Action: "Start",
		ReportingController: "example.com/ctl", ReportingInstance: "ctl-1",
		EventTime: metav1.NewMicroTime(metav1.Now().Rfc3339Copy().Time),
	}
	eventCreate := webhookRequest{op: admission.Create, obj: event, gvk: eventsv1.SchemeGroupVersion.WithKind("Event"),
		gvr: eventsv1.SchemeGroupVersion.WithResource("events"), namespace: "default", name: "web.1"}
	everything := admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}, Scope: ptr.To(admissionregistrationv1.AllScopes)},
	}
	tokenReview := webhookRequest{op: admission.Create, obj: &authenticationv1.TokenReview{TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"}, Spec: authenticationv1.TokenReviewSpec{Token: "t"}},
		gvk: authenticationv1.SchemeGroupVersion.WithKind("TokenReview"), gvr: authenticationv1.SchemeGroupVersion.WithResource("tokenreviews")}
	configCreate := webhookRequest{op: admission.Create, obj: &admissionregistrationv1.MutatingWebhookConfiguration{TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"}, ObjectMeta: metav1.ObjectMeta{Name: "x"}},
		gvk: admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"), gvr: admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations"), name: "x"}
	configMapCreate := webhookRequest{op: admission.Create, obj: &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default"}, Data: map[string]string{"a": "b"}},
		gvk: corev1.SchemeGroupVersion.WithKind("ConfigMap"), gvr: corev1.SchemeGroupVersion.WithResource("configmaps"), namespace: "default", name: "cm"}
	missingNamespace := webhookPodCreate(nil)
	missingNamespace.namespace = "missing"
	missingNamespace.obj.(*corev1.Pod).Namespace = "missing"
	return []webhookCase{
		// Calls and patches.
		{name: "sidecar injector over a URL with a caBundle", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("sidecars", w.urlHook("sidecar.example.com", webhookserver.PathSidecar))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathSidecar: 1})},
		{name: "label stamper through a mapped service", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("labels", w.urlHook("labels.example.com", "", hookService("hooks", "labels", webhookserver.PathLabels)))},
			request: webhookPodCreate(nil), want: wantAllOf(wantObjectLabel("stamped-by", "webhook"), wantWebhookCalls(map[string]int{webhookserver.PathLabels: 1}))},
		{name: "configurations run in name order and see each other's work", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{
			mwConfig("b-reads", w.urlHook("reads.example.com", webhookserver.PathReadsPolicy)),
			mwConfig("a-counter", w.urlHook("counter.example.com", counterPath("a"))),
		}, request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathCounter: 1, webhookserver.PathReadsPolicy: 1})},
		{name: "a webhook reads what the request carried from a policy", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("reads", w.urlHook("reads.example.com", webhookserver.PathReadsPolicy))},
			request: func() webhookRequest {
				r := webhookPodCreate(nil)
				r.obj.(*corev1.Pod).Annotations = map[string]string{"policy.example.com/tier": "gold"}
				return r
			}(), want: wantObjectLabel("tier", "gold")},
		{name: "warnings and audit annotations", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("warn", w.urlHook("warn.example.com", webhookserver.PathWarn), w.urlHook("labels.example.com", webhookserver.PathLabels))},
			request: webhookPodCreate(nil), want: func(t *testing.T, o webhookOutcome) {
				if len(o.Warnings) != 2 || o.Annotations["warn.example.com/decision"] != "allowed" {
					t.Errorf("warnings %v annotations %v", o.Warnings, o.Annotations)
				}
			}},
		{name: "an empty patch changes nothing", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("noop", w.urlHook("noop.example.com", webhookserver.PathNoop, hookIfNeeded))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathNoop: 1})},
		{name: "a field no type has is dropped by decoding", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("unknown", w.urlHook("unknown.example.com", webhookserver.PathUnknownField))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathUnknownField: 1})},
		{name: "UPDATE with the old object", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("labels", w.urlHook("labels.example.com", webhookserver.PathLabels))},
			request: update, want: wantObjectLabel("stamped-by", "webhook")},

		// Denials and failure policies.
		{name: "a denial with its code and message", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("deny", w.urlHook("deny.example.com", webhookserver.PathDeny))},
			request: webhookPodCreate(nil), want: wantStatus(403, `admission webhook "deny.example.com" denied the request: pods may not run as root`)},
		{name: "a denial without a status", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("deny", w.urlHook("deny.example.com", webhookserver.PathDenyBare, hookIgnore))},
			request: webhookPodCreate(nil), want: wantStatus(400, `admission webhook "deny.example.com" denied the request without explanation`)},
		{name: "a broken answer under Fail", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("broken", w.urlHook("broken.example.com", webhookserver.PathBroken))},
			request: webhookPodCreate(nil), want: wantStatus(500, `failed calling webhook "broken.example.com": failed to call webhook: `)},
		{name: "a broken answer under Ignore, the next webhook still runs", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("broken", w.urlHook("broken.example.com", webhookserver.PathBroken, hookIgnore), w.urlHook("labels.example.com", webhookserver.PathLabels))},
			request: webhookPodCreate(nil), want: wantAllOf(wantObjectLabel("stamped-by", "webhook"), wantWebhookCalls(map[string]int{webhookserver.PathBroken: 1, webhookserver.PathLabels: 1}))},
		{name: "a bad uid", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("uid", w.urlHook("uid.example.com", webhookserver.PathBadUID))},
			request: webhookPodCreate(nil), want: wantStatus(500, `received invalid webhook response: expected response.uid=`)},
		{name: "a bad uid under v1beta1 is not checked", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("uid", w.urlHook("uid.example.com", webhookserver.PathBadUID, hookVersions("v1beta1")))},
			request: webhookPodCreate(nil), want: wantStatus(0, "")},
		{name: "a JSON merge patch", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("merge", w.urlHook("merge.example.com", webhookserver.PathMergePatch))},
			request: webhookPodCreate(nil), want: wantStatus(500, `received undecodable patch in webhook response`)},
		{name: "a JSON merge patch under Ignore", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("merge", w.urlHook("merge.example.com", webhookserver.PathMergePatch, hookIgnore))},
			request: webhookPodCreate(nil), want: wantStatus(0, "")},
		{name: "an HTTP 500", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("err", w.urlHook("err.example.com", webhookserver.PathServerError))},
			request: webhookPodCreate(nil), want: wantStatus(500, `failed calling webhook "err.example.com"`)},
		{name: "a patch that does not apply fails whatever the policy", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("bad", w.urlHook("bad.example.com", webhookserver.PathBadPatch, hookIgnore))},
			request: webhookPodCreate(nil), want: wantStatus(500, "")},
		{name: "a timeout under Fail", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("slow", w.urlHook("slow.example.com", webhookserver.PathSlow+"/30s", hookTimeout(1)))},
			request: webhookPodCreate(nil), want: wantStatus(500, "context deadline exceeded")},
		{name: "a timeout under Ignore", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("slow", w.urlHook("slow.example.com", webhookserver.PathSlow+"/30s", hookTimeout(1), hookIgnore), w.urlHook("labels.example.com", webhookserver.PathLabels))},
			request: webhookPodCreate(nil), want: wantObjectLabel("stamped-by", "webhook")},
		{name: "an unreachable webhook", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("gone", w.urlHook("gone.example.com", "", hookURL("https://127.0.0.1:1/x")))},
			request: webhookPodCreate(nil), want: wantStatus(500, "connection refused")},
		{name: "a caBundle of another CA", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("ca", w.urlHook("ca.example.com", webhookserver.PathLabels, hookCABundle(otherCA.CABundle)))},
			request: webhookPodCreate(nil), want: wantStatus(500, "x509")},
		{name: "no caBundle: the system roots", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("ca", w.urlHook("ca.example.com", webhookserver.PathLabels, hookCABundle(nil)))},
			request: webhookPodCreate(nil), want: wantStatus(500, "x509")},
		{name: "a caBundle that is not PEM", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("ca", w.urlHook("ca.example.com", webhookserver.PathLabels, hookCABundle([]byte("not a certificate"))))},
			request: webhookPodCreate(nil), want: wantStatus(500, "could not get REST client")},
		{name: "a patch on DELETE", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("labels", w.urlHook("labels.example.com", webhookserver.PathLabels))},
			request: del, want: wantStatus(500, "attempted to modify the object, which is not supported for this operation")},

		// Dry run and side effects.
		{name: "dry run with sideEffects Some is refused without a call", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("se", w.urlHook("se.example.com", webhookserver.PathLabels, hookSideEffects(admissionregistrationv1.SideEffectClassSome), hookIgnore))},
			request: dryRun, want: wantAllOf(wantStatus(400, `admission webhook "se.example.com" does not support dry run`), wantWebhookCalls(map[string]int{}))},
		{name: "dry run with sideEffects Unknown is refused", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("se", w.urlHook("se.example.com", webhookserver.PathLabels, hookSideEffects(admissionregistrationv1.SideEffectClassUnknown)))},
			request: dryRun, want: wantStatus(400, "does not support dry run")},
		{name: "dry run with sideEffects NoneOnDryRun is called", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("se", w.urlHook("se.example.com", webhookserver.PathLabels, hookSideEffects(admissionregistrationv1.SideEffectClassNoneOnDryRun)))},
			request: dryRun, want: wantAllOf(wantObjectLabel("stamped-by", "webhook"), wantWebhookCalls(map[string]int{webhookserver.PathLabels: 1}))},

		// AdmissionReview versions.
		{name: "v1beta1 only", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("v", w.urlHook("v.example.com", webhookserver.PathSidecar, hookVersions("v1beta1")))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathSidecar: 1})},
		{name: "the first known version", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("v", w.urlHook("v.example.com", webhookserver.PathBadUID, hookVersions("v2", "v1beta1", "v1")))},
			request: webhookPodCreate(nil), want: wantStatus(0, "")},
		{name: "no known version under Fail", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("v", w.urlHook("v.example.com", webhookserver.PathLabels, hookVersions("v2")))},
			request: webhookPodCreate(nil), want: wantStatus(500, "webhook does not accept known AdmissionReview versions (v1, v1beta1)")},
		{name: "no known version under Ignore", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("v", w.urlHook("v.example.com", webhookserver.PathLabels, hookVersions("v2"), hookIgnore))},
			request: webhookPodCreate(nil), want: wantAllOf(wantStatus(0, ""), wantWebhookCalls(map[string]int{}))},

		// Matching.
		{name: "namespaceSelector does not match", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("ns", w.urlHook("ns.example.com", webhookserver.PathLabels, hookNSSelector("env", "dev")))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{})},
		{name: "namespaceSelector matches", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("ns", w.urlHook("ns.example.com", webhookserver.PathLabels, hookNSSelector("env", "prod")))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathLabels: 1})},
		{name: "objectSelector sees what an earlier webhook stamped", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("obj",
			w.urlHook("labels.example.com", webhookserver.PathLabels),
			w.urlHook("sidecar.example.com", webhookserver.PathSidecar, hookObjSelector("stamped-by", "webhook")))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathLabels: 1, webhookserver.PathSidecar: 1})},
		{name: "objectSelector does not match", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("obj", w.urlHook("obj.example.com", webhookserver.PathLabels, hookObjSelector("inject", "true")))},
			request: webhookPodCreate(map[string]string{"inject": "false"}), want: wantWebhookCalls(map[string]int{})},
		{name: "matchConditions false", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("mc", w.urlHook("mc.example.com", webhookserver.PathLabels, hookConditions("not-default", "object.metadata.namespace != 'default'")))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{})},
		{name: "matchConditions true with request and oldObject", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("mc", w.urlHook("mc.example.com", webhookserver.PathLabels, hookConditions("create", "request.operation == 'CREATE' && oldObject == null", "alice", "request.userInfo.username == 'alice'")))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathLabels: 1})},
		{name: "matchConditions error under Fail", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("mc", w.urlHook("mc.example.com", webhookserver.PathLabels, hookConditions("missing", "object.metadata.labels['nope'] == 'x'")))},
			request: webhookPodCreate(map[string]string{"a": "b"}), want: wantStatus(403, "no such key: nope")},
		{name: "matchConditions error under Ignore", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("mc", w.urlHook("mc.example.com", webhookserver.PathLabels, hookIgnore, hookConditions("missing", "object.metadata.labels['nope'] == 'x'")))},
			request: webhookPodCreate(map[string]string{"a": "b"}), want: wantWebhookCalls(map[string]int{})},
		{name: "matchConditions: a false beats an error", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("mc", w.urlHook("mc.example.com", webhookserver.PathLabels, hookConditions("missing", "object.metadata.labels['nope'] == 'x'", "no", "false")))},
			request: webhookPodCreate(map[string]string{"a": "b"}), want: wantStatus(0, "")},
		{name: "matchConditions with the authorizer: allowed", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("mc", w.urlHook("mc.example.com", webhookserver.PathLabels, hookConditions("may-create", "authorizer.group('').resource('pods').namespace('default').check('create').allowed()")))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathLabels: 1})},
		{name: "matchConditions with the authorizer: denied", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("mc", w.urlHook("mc.example.com", webhookserver.PathLabels, hookConditions("may-delete", "authorizer.group('').resource('pods').namespace('default').check('delete').allowed()")))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{})},
		{name: "matchConditions with the request's resource", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("mc", w.urlHook("mc.example.com", webhookserver.PathLabels, hookConditions("self", "authorizer.requestResource.check('create').allowed() && request.resource.resource == 'pods'")))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathLabels: 1})},
		{name: "Equivalent: an autoscaling/v2 request seen in v1", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("eq", w.urlHook("eq.example.com", webhookserver.PathLabels, hookRules(hpaRule("v1"))))},
			request: hpaCreate, want: wantAllOf(wantObjectLabel("stamped-by", "webhook"), wantWebhookCalls(map[string]int{webhookserver.PathLabels: 1}))},
		{name: "Exact: an autoscaling/v2 request is not seen in v1", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("eq", w.urlHook("eq.example.com", webhookserver.PathLabels, hookExact, hookRules(hpaRule("v1"))))},
			request: hpaCreate, want: wantWebhookCalls(map[string]int{})},
		{name: "Equivalent then exact: two versions in one pass", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("eq",
			w.urlHook("v1.example.com", counterPath("v1"), hookRules(hpaRule("v1"))),
			w.urlHook("v2.example.com", counterPath("v2"), hookRules(hpaRule("v2"))))},
			request: hpaCreate, want: wantWebhookCalls(map[string]int{webhookserver.PathCounter: 2})},

		{name: "Equivalent across groups: an events.k8s.io/v1 Event seen as a core v1 Event", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("ev", w.urlHook("ev.example.com", webhookserver.PathLabels, hookRules(coreEventRule)))},
			request: eventCreate, want: wantAllOf(wantObjectLabel("stamped-by", "webhook"), wantWebhookCalls(map[string]int{webhookserver.PathLabels: 1}))},
		{name: "a namespace that does not exist", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("ns", w.urlHook("ns.example.com", webhookserver.PathLabels, hookNSSelector("env", "prod")))},
			request: missingNamespace, want: wantStatus(404, `namespaces "missing" not found`)},
		{name: "dry run with sideEffects unset", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("se", w.urlHook("se.example.com", webhookserver.PathLabels, func(h *admissionregistrationv1.MutatingWebhook) { h.SideEffects = nil }))},
			request: dryRun, want: wantStatus(500, "Webhook SideEffects is nil")},
		{name: "a service mapped at its own port", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("svc", w.urlHook("svc.example.com", "", hookService("hooks", "sidecar", webhookserver.PathSidecar), func(h *admissionregistrationv1.MutatingWebhook) {
			h.ClientConfig.Service.Port = ptr.To[int32](8443)
		}))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathSidecar: 1})},
		{name: "a service with no mapping is resolved by DNS", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("svc", w.urlHook("svc.example.com", "", hookService("nowhere", "gone", "/x"), hookIgnore), w.urlHook("labels.example.com", webhookserver.PathLabels))},
			request: webhookPodCreate(nil), want: wantObjectLabel("stamped-by", "webhook")},

		{name: "webhooks never see a token review", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("all", w.urlHook("all.example.com", webhookserver.PathLabels, hookRules(everything)))},
			request: tokenReview, want: wantAllOf(wantStatus(0, ""), wantWebhookCalls(map[string]int{}))},
		{name: "webhooks never see a webhook configuration", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("all", w.urlHook("all.example.com", webhookserver.PathLabels, hookRules(everything)))},
			request: configCreate, want: wantAllOf(wantStatus(0, ""), wantWebhookCalls(map[string]int{}))},
		{name: "a webhook on every resource sees a ConfigMap", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("all", w.urlHook("all.example.com", webhookserver.PathLabels, hookRules(everything)))},
			request: configMapCreate, want: wantObjectLabel("stamped-by", "webhook")},

		// Reinvocation (KEP-492's scenarios), with exact call counts.
		{name: "reinvocation: none (Never)", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("r", w.urlHook("a.example.com", counterPath("a")), w.urlHook("b.example.com", counterPath("b")))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathCounter: 2})},
		{name: "reinvocation: an IfNeeded webhook before a change", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("r", w.urlHook("a.example.com", webhookserver.PathLabels, hookIfNeeded), w.urlHook("b.example.com", counterPath("b")))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathLabels: 2, webhookserver.PathCounter: 1})},
		{name: "reinvocation: full (two IfNeeded that both change)", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("r", w.urlHook("a.example.com", counterPath("a"), hookIfNeeded), w.urlHook("b.example.com", counterPath("b"), hookIfNeeded))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathCounter: 4})},
		{name: "reinvocation: partial (IfNeeded, then Never that changes)", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("r", w.urlHook("a.example.com", webhookserver.PathSidecar, hookIfNeeded), w.urlHook("b.example.com", counterPath("b")), w.urlHook("c.example.com", webhookserver.PathLabels))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathSidecar: 2, webhookserver.PathCounter: 1, webhookserver.PathLabels: 1})},
		{name: "reinvocation: the last webhook's change reinvokes nobody after it", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("r", w.urlHook("a.example.com", counterPath("a"), hookIfNeeded))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathCounter: 1})},
		{name: "reinvocation: in-tree only", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("r", w.urlHook("a.example.com", webhookserver.PathNoop, hookIfNeeded))},
			request: withInTree(webhookPodCreate(nil), inTreeLabel("in-tree", "yes")), want: wantAllOf(wantObjectLabel("in-tree", "yes"), wantWebhookCalls(map[string]int{webhookserver.PathNoop: 2}))},
		{name: "reinvocation: in-tree change with a Never webhook", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("r", w.urlHook("a.example.com", webhookserver.PathNoop))},
			request: withInTree(webhookPodCreate(nil), inTreeLabel("in-tree", "yes")), want: wantWebhookCalls(map[string]int{webhookserver.PathNoop: 1})},
		{name: "reinvocation: several webhooks across configurations", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{
			mwConfig("a", w.urlHook("sidecar.example.com", webhookserver.PathSidecar, hookIfNeeded), w.urlHook("reads.example.com", webhookserver.PathReadsPolicy, hookIfNeeded)),
			mwConfig("b", w.urlHook("labels.example.com", webhookserver.PathLabels, hookIfNeeded), w.urlHook("counter.example.com", counterPath("n"))),
		}, request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathSidecar: 2, webhookserver.PathReadsPolicy: 2, webhookserver.PathLabels: 2, webhookserver.PathCounter: 1})},
		{name: "reinvocation: a webhook skipped in the first round is not called in the second", configs: []*admissionregistrationv1.MutatingWebhookConfiguration{mwConfig("r",
			w.urlHook("sidecar.example.com", webhookserver.PathSidecar, hookIfNeeded, hookObjSelector("stamped-by", "webhook")),
			w.urlHook("labels.example.com", webhookserver.PathLabels))},
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{webhookserver.PathLabels: 1})},
	}
}

// TestWebhooksAgainstUpstream runs every scenario through both
// implementations and requires the same outcome.
func TestWebhooksAgainstUpstream(t *testing.T) {
	w := newWebhookWorld(t)
	for _, c := range w.cases(t) {
		t.Run(c.name, func(t *testing.T) {
			want := w.runUpstream(t, c.configs, c.request)
			got, calls := w.runMutatis(t, c.configs, c.request)
			if !reflect.DeepEqual(want, got) {
				t.Errorf("mutatis differs from kube-apiserver:\nupstream: %s\nmutatis: %s", want, got)
				for _, call := range calls {
					t.Logf("call %+v", call)
				}
			}
			if c.want != nil {
				c.want(t, got)
			}
		})
	}
}
