package differential

// Differential tests of the validating webhook stage: the same
// configurations, requests and test webhook servers through
// k8s.io/apiserver's ValidatingAdmissionWebhook plugin (test/upstream's
// ValidatingWebhooks, the oracle) and through
// webhookclient.ValidatingDispatcher run once by a chain.Runner. Status
// codes, messages, warnings (as a set: the webhooks answer concurrently),
// audit annotations and the number of calls each webhook received must be
// the same.

import (
	"context"
	"net/url"
	"reflect"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/utils/ptr"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
	kubescheme "github.com/mutatis-dev/mutatis/scheme"
	"github.com/mutatis-dev/mutatis/test/upstream"
	"github.com/mutatis-dev/mutatis/test/webhookserver"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

func (w *webhookWorld) runUpstreamValidating(t *testing.T, configs []*admissionregistrationv1.ValidatingWebhookConfiguration, r webhookRequest) webhookOutcome {
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
	plugin, err := upstream.ValidatingWebhooks(ctx, objects, services, w.authz)
	if err != nil {
		t.Fatal(err)
	}
	s := kubeScheme()
	attrs := &annotatingAttributes{annotations: map[string]string{}, Attributes: admission.NewAttributesRecord(internalOf(t, r.obj, r.gvk), internalOf(t, r.old, r.gvk), r.gvk, r.namespace, r.name, r.gvr, "", r.op, nil, r.dryRun, &user.DefaultInfo{Name: "alice"})}
	oi := &admission.RuntimeObjectInterfaces{ObjectCreater: s, ObjectTyper: s, ObjectDefaulter: s, ObjectConvertor: s, EquivalentResourceMapper: matching.DefaultTable()}
	rec := &warningList{}
	w.srv.ResetCalls()
	err = plugin.Validate(warning.WithWarningRecorder(ctx, rec), attrs, oi)
	return w.validatingOutcome(t, err, rec.list, attrs.annotations)
}

func (w *webhookWorld) runMutatisValidating(t *testing.T, configs []*admissionregistrationv1.ValidatingWebhookConfiguration, r webhookRequest) (webhookOutcome, []chain.Call) {
	t.Helper()
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
	d, err := webhookclient.NewValidatingDispatcher(configs, webhookclient.Options{Matcher: matcher, Scheme: kubescheme.New(), ServiceURLs: w.services, Authorizer: w.authz}, nil)
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
	res, err := new(chain.Runner).RunOnce(context.Background(), a, d)
	if err == nil && res.Denied != nil {
		err = res.Denied
	}
	return w.validatingOutcome(t, err, res.Warnings, res.AuditAnnotations), res.Calls
}

// validatingOutcome is outcome with the warnings sorted: concurrent
// webhooks warn in the order they answer.
func (w *webhookWorld) validatingOutcome(t *testing.T, err error, warns []string, annotations map[string]string) webhookOutcome {
	out := w.outcome(t, err, slices.Sorted(slices.Values(warns)), annotations)
	if len(out.Warnings) == 0 {
		out.Warnings = nil
	}
	return out
}

func (w *webhookWorld) vHook(name, path string, opts ...hookOpt) admissionregistrationv1.ValidatingWebhook {
	fs := make([]func(*admissionregistrationv1.MutatingWebhook), len(opts))
	for i, o := range opts {
		fs[i] = o
	}
	return w.srv.ValidatingWebhook(name, path, fs...)
}

func vwConfig(name string, hooks ...admissionregistrationv1.ValidatingWebhook) []*admissionregistrationv1.ValidatingWebhookConfiguration {
	return []*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}}
}

// validatingCase is one differential scenario of the validating stage.
type validatingCase struct {
	name    string
	configs []*admissionregistrationv1.ValidatingWebhookConfiguration
	request webhookRequest
	want    func(t *testing.T, o webhookOutcome)
}

func wantHookAnnotation(key, value string) func(t *testing.T, o webhookOutcome) {
	return func(t *testing.T, o webhookOutcome) {
		t.Helper()
		if o.Annotations[key] != value {
			t.Errorf("annotation %s = %q, want %q (%v)", key, o.Annotations[key], value, o.Annotations)
		}
	}
}

func (w *webhookWorld) validatingCases() []validatingCase {
	team := map[string]string{"team": "web"}
	requireTeam := webhookserver.PathRequireLabel + "/team"
	del := func(labels map[string]string) webhookRequest {
		return webhookRequest{op: admission.Delete, old: webhookPod(labels), gvk: webhookPodGVK, gvr: podGVR, namespace: "default", name: "web"}
	}
	update := webhookRequest{op: admission.Update, obj: webhookPod(team), old: webhookPod(nil), gvk: webhookPodGVK, gvr: podGVR, namespace: "default", name: "web"}
	dryRun := webhookPodCreate(team)
	dryRun.dryRun = true
	hpaV2 := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 5,
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
	everything := admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}, Scope: ptr.To(admissionregistrationv1.AllScopes)},
	}
	tokenReview := webhookRequest{op: admission.Create, obj: &authenticationv1.TokenReview{TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"}, Spec: authenticationv1.TokenReviewSpec{Token: "t"}},
		gvk: authenticationv1.SchemeGroupVersion.WithKind("TokenReview"), gvr: authenticationv1.SchemeGroupVersion.WithResource("tokenreviews")}
	failedOpen := "failed-open.validating.webhook.admission.k8s.io/round_0_index_"
	return []validatingCase{
		{name: "a label a policy set, present", configs: vwConfig("team", w.vHook("team.example.com", requireTeam)),
			request: webhookPodCreate(team), want: wantAllOf(wantStatus(0, ""), wantHookAnnotation("team.example.com/checked", "team"))},
		{name: "a label a policy set, missing", configs: vwConfig("team", w.vHook("team.example.com", requireTeam)),
			request: webhookPodCreate(nil), want: wantStatus(403, `admission webhook "team.example.com" denied the request: CREATE Pod: the label team is required`)},
		{name: "UPDATE", configs: vwConfig("team", w.vHook("team.example.com", requireTeam)),
			request: update, want: wantStatus(0, "")},
		{name: "DELETE: the old object, refused", configs: vwConfig("team", w.vHook("team.example.com", requireTeam)),
			request: del(nil), want: wantStatus(403, "DELETE Pod: the label team is required")},
		{name: "DELETE: the old object, admitted", configs: vwConfig("team", w.vHook("team.example.com", requireTeam)),
			request: del(team), want: wantStatus(0, "")},
		{name: "a patch under Fail", configs: vwConfig("p", w.vHook("labels.example.com", webhookserver.PathLabels)),
			request: webhookPodCreate(nil), want: wantStatus(500, "validating webhook may not return response.patch")},
		{name: "a patch under Ignore", configs: vwConfig("p", w.vHook("labels.example.com", webhookserver.PathLabels, hookIgnore)),
			request: webhookPodCreate(nil), want: wantAllOf(wantStatus(0, ""), wantHookAnnotation(failedOpen+"0", "labels.example.com"))},
		{name: "a patch in a v1beta1 answer is not read", configs: vwConfig("p", w.vHook("labels.example.com", webhookserver.PathLabels, hookVersions("v1beta1"))),
			request: webhookPodCreate(nil), want: wantStatus(0, "")},
		{name: "a timeout under Fail", configs: vwConfig("slow", w.vHook("slow.example.com", webhookserver.PathSlow+"/30s", hookTimeout(1))),
			request: webhookPodCreate(nil), want: wantStatus(500, "context deadline exceeded")},
		{name: "a timeout under Ignore beside a denial", configs: vwConfig("slow",
			w.vHook("slow.example.com", webhookserver.PathSlow+"/30s", hookTimeout(1), hookIgnore),
			w.vHook("team.example.com", requireTeam)),
			request: webhookPodCreate(nil), want: wantAllOf(wantStatus(403, "the label team is required"), wantHookAnnotation(failedOpen+"0", "slow.example.com"))},
		{name: "the failed-open index counts the matching webhooks only", configs: vwConfig("idx",
			w.vHook("skipped.example.com", webhookserver.PathDeny, hookNSSelector("env", "dev")),
			w.vHook("warn.example.com", webhookserver.PathWarn),
			w.vHook("broken.example.com", webhookserver.PathBroken, hookIgnore)),
			request: webhookPodCreate(nil), want: wantAllOf(wantStatus(0, ""), wantHookAnnotation(failedOpen+"1", "broken.example.com"), wantHookAnnotation("warn.example.com/decision", "allowed"))},
		{name: "matching webhooks are called at once", configs: vwConfig("at-once",
			w.vHook("a.example.com", webhookserver.PathBarrier+"/x/2"),
			w.vHook("b.example.com", webhookserver.PathBarrier+"/x/2")),
			request: webhookPodCreate(nil), want: wantAllOf(wantStatus(0, ""), wantWebhookCalls(map[string]int{webhookserver.PathBarrier: 2}))},
		{name: "a denial and a warning", configs: vwConfig("dw", w.vHook("deny.example.com", webhookserver.PathDeny), w.vHook("warn.example.com", webhookserver.PathWarn)),
			request: webhookPodCreate(nil), want: wantAllOf(wantStatus(403, "pods may not run as root"), wantWebhookCalls(map[string]int{webhookserver.PathDeny: 1, webhookserver.PathWarn: 1}))},
		{name: "a denial without a status", configs: vwConfig("bare", w.vHook("bare.example.com", webhookserver.PathDenyBare)),
			request: webhookPodCreate(nil), want: wantStatus(400, `admission webhook "bare.example.com" denied the request without explanation`)},
		{name: "a bad uid", configs: vwConfig("uid", w.vHook("uid.example.com", webhookserver.PathBadUID)),
			request: webhookPodCreate(nil), want: wantStatus(500, "expected response.uid=")},
		{name: "an HTTP 500", configs: vwConfig("err", w.vHook("err.example.com", webhookserver.PathServerError)),
			request: webhookPodCreate(nil), want: wantStatus(500, `failed calling webhook "err.example.com"`)},
		{name: "an unreachable webhook", configs: vwConfig("gone", w.vHook("gone.example.com", "", hookURL("https://127.0.0.1:1/x"))),
			request: webhookPodCreate(nil), want: wantStatus(500, "connection refused")},
		{name: "through a mapped service", configs: vwConfig("svc", w.vHook("team.example.com", "", hookService("hooks", "labels", requireTeam))),
			request: webhookPodCreate(nil), want: wantStatus(403, "the label team is required")},
		{name: "no known AdmissionReview version", configs: vwConfig("v", w.vHook("v.example.com", requireTeam, hookVersions("v2"))),
			request: webhookPodCreate(nil), want: wantStatus(500, "webhook does not accept known AdmissionReview versions")},
		{name: "matchConditions false", configs: vwConfig("mc", w.vHook("mc.example.com", requireTeam, hookConditions("never", "false"))),
			request: webhookPodCreate(nil), want: wantAllOf(wantStatus(0, ""), wantWebhookCalls(map[string]int{}))},
		{name: "matchConditions error under Fail", configs: vwConfig("mc", w.vHook("mc.example.com", requireTeam, hookConditions("missing", "object.metadata.labels['nope'] == 'x'"))),
			request: webhookPodCreate(team), want: wantStatus(403, "no such key: nope")},
		{name: "matchConditions error under Ignore", configs: vwConfig("mc", w.vHook("mc.example.com", requireTeam, hookIgnore, hookConditions("missing", "object.metadata.labels['nope'] == 'x'"))),
			request: webhookPodCreate(team), want: wantWebhookCalls(map[string]int{})},
		{name: "matchConditions on a DELETE's oldObject", configs: vwConfig("mc", w.vHook("mc.example.com", requireTeam, hookConditions("delete", "object == null && oldObject.metadata.name == 'web'"))),
			request: del(nil), want: wantStatus(403, "DELETE Pod")},
		{name: "namespaceSelector does not match", configs: vwConfig("ns", w.vHook("ns.example.com", requireTeam, hookNSSelector("env", "dev"))),
			request: webhookPodCreate(nil), want: wantWebhookCalls(map[string]int{})},
		{name: "objectSelector on a DELETE's old object", configs: vwConfig("obj", w.vHook("obj.example.com", webhookserver.PathDeny, hookObjSelector("team", "web"))),
			request: del(team), want: wantStatus(403, "pods may not run as root")},
		{name: "dry run with sideEffects Some", configs: vwConfig("se", w.vHook("se.example.com", requireTeam, hookSideEffects(admissionregistrationv1.SideEffectClassSome))),
			request: dryRun, want: wantAllOf(wantStatus(400, "does not support dry run"), wantWebhookCalls(map[string]int{}))},
		{name: "dry run with sideEffects NoneOnDryRun", configs: vwConfig("se", w.vHook("se.example.com", requireTeam, hookSideEffects(admissionregistrationv1.SideEffectClassNoneOnDryRun))),
			request: dryRun, want: wantWebhookCalls(map[string]int{webhookserver.PathRequireLabel: 1})},
		{name: "Equivalent: an autoscaling/v2 request seen in v1", configs: vwConfig("eq", w.vHook("eq.example.com", requireTeam, hookRules(hpaRule("v1")))),
			request: hpaCreate, want: wantStatus(403, "CREATE HorizontalPodAutoscaler")},
		{name: "Equivalent and exact: two versions at once", configs: vwConfig("eq",
			w.vHook("v1.example.com", webhookserver.PathWarn, hookRules(hpaRule("v1"))),
			w.vHook("v2.example.com", webhookserver.PathWarn, hookRules(hpaRule("v2")))),
			request: hpaCreate, want: wantWebhookCalls(map[string]int{webhookserver.PathWarn: 2})},
		{name: "webhooks never see a token review", configs: vwConfig("all", w.vHook("all.example.com", webhookserver.PathDeny, hookRules(everything))),
			request: tokenReview, want: wantAllOf(wantStatus(0, ""), wantWebhookCalls(map[string]int{}))},
	}
}

// TestValidatingWebhooksAgainstUpstream runs every scenario through both
// implementations and requires the same outcome.
func TestValidatingWebhooksAgainstUpstream(t *testing.T) {
	w := newWebhookWorld(t)
	for _, c := range w.validatingCases() {
		t.Run(c.name, func(t *testing.T) {
			want := w.runUpstreamValidating(t, c.configs, c.request)
			got, calls := w.runMutatisValidating(t, c.configs, c.request)
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
