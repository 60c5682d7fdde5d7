package webhookclient

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/test/webhookserver"
)

func (f *fixture) validating(t *testing.T, opts Options, hooks ...admissionregistrationv1.ValidatingWebhook) *ValidatingDispatcher {
	t.Helper()
	opts.Matcher, opts.Scheme = f.matcher, f.scheme
	d, err := NewValidatingDispatcher([]*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Webhooks: hooks}}, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(nil) })
	return d
}

func (f *fixture) vhook(name, path string, opts ...func(*admissionregistrationv1.MutatingWebhook)) admissionregistrationv1.ValidatingWebhook {
	return f.srv.ValidatingWebhook(name, path, opts...)
}

func timeout(s int32) func(*admissionregistrationv1.MutatingWebhook) {
	return func(h *admissionregistrationv1.MutatingWebhook) { h.TimeoutSeconds = ptr.To(s) }
}

// deleteAttributes is a DELETE of the Pod web (labels), which kube-apiserver
// sends with the stored object as the old object and no object.
func deleteAttributes(t *testing.T, labels map[string]string) *matching.Attributes {
	a := podAttributes(t, labels)
	a.Operation, a.OldObject, a.Object = admission.Delete, a.Object, nil
	return a
}

// TestValidatingWebhooks: the validating stage's decisions, messages,
// warnings, audit annotations and records against the test server.
func TestValidatingWebhooks(t *testing.T) {
	f := newFixture(t)
	team := map[string]string{"team": "web"}
	cases := []struct {
		name  string
		hooks []admissionregistrationv1.ValidatingWebhook
		attrs *matching.Attributes
		// code and message of the refusal (0: admitted).
		code        int32
		message     string
		warnings    []string
		annotations map[string]string
		outcomes    []chain.CallOutcome
		calls       map[string]int
	}{
		{name: "a label a policy set is required, and there",
			hooks: []admissionregistrationv1.ValidatingWebhook{f.vhook("team.example.com", webhookserver.PathRequireLabel+"/team")},
			attrs: podAttributes(t, team), warnings: []string{"label team=web checked"},
			annotations: map[string]string{"team.example.com/checked": "team"},
			outcomes:    []chain.CallOutcome{chain.Admitted}, calls: map[string]int{webhookserver.PathRequireLabel: 1}},
		{name: "a label a policy set is required, and missing",
			hooks: []admissionregistrationv1.ValidatingWebhook{f.vhook("team.example.com", webhookserver.PathRequireLabel+"/team")},
			attrs: podAttributes(t, nil), code: 403,
			message:  `admission webhook "team.example.com" denied the request: CREATE Pod: the label team is required`,
			outcomes: []chain.CallOutcome{chain.Denied}},
		{name: "DELETE: the old object is validated",
			hooks: []admissionregistrationv1.ValidatingWebhook{f.vhook("team.example.com", webhookserver.PathRequireLabel+"/team")},
			attrs: deleteAttributes(t, nil), code: 403,
			message:  `admission webhook "team.example.com" denied the request: DELETE Pod: the label team is required`,
			outcomes: []chain.CallOutcome{chain.Denied}},
		{name: "DELETE with the label",
			hooks: []admissionregistrationv1.ValidatingWebhook{f.vhook("team.example.com", webhookserver.PathRequireLabel+"/team")},
			attrs: deleteAttributes(t, team), warnings: []string{"label team=web checked"},
			annotations: map[string]string{"team.example.com/checked": "team"},
			outcomes:    []chain.CallOutcome{chain.Admitted}},
		{name: "a patch in a validating answer under Fail",
			hooks: []admissionregistrationv1.ValidatingWebhook{f.vhook("labels.example.com", webhookserver.PathLabels)},
			attrs: podAttributes(t, nil), code: 500,
			message:  `Internal error occurred: failed calling webhook "labels.example.com": received invalid webhook response: validating webhook may not return response.patch`,
			outcomes: []chain.CallOutcome{chain.FailedClosed}},
		{name: "a patch in a validating answer under Ignore",
			hooks:       []admissionregistrationv1.ValidatingWebhook{f.vhook("labels.example.com", webhookserver.PathLabels, ignorePolicy)},
			attrs:       podAttributes(t, nil),
			annotations: map[string]string{"failed-open.validating.webhook.admission.k8s.io/round_0_index_0": "labels.example.com"},
			outcomes:    []chain.CallOutcome{chain.FailedOpen}},
		{name: "no patch: admitted",
			hooks: []admissionregistrationv1.ValidatingWebhook{f.vhook("labels.example.com", webhookserver.PathLabels)},
			attrs: podAttributes(t, map[string]string{"stamped-by": "webhook"}), outcomes: []chain.CallOutcome{chain.Admitted}},
		{name: "a timeout under Fail",
			hooks: []admissionregistrationv1.ValidatingWebhook{f.vhook("slow.example.com", webhookserver.PathSlow+"/30s", timeout(1))},
			attrs: podAttributes(t, nil), code: 500, message: `Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: `,
			outcomes: []chain.CallOutcome{chain.FailedClosed}},
		{name: "a timeout under Ignore, the failed-open index counts matching webhooks",
			hooks: []admissionregistrationv1.ValidatingWebhook{
				f.vhook("skipped.example.com", webhookserver.PathDeny, func(h *admissionregistrationv1.MutatingWebhook) { h.Rules[0].Resources = []string{"services"} }),
				f.vhook("warn.example.com", webhookserver.PathWarn),
				f.vhook("slow.example.com", webhookserver.PathSlow+"/30s", timeout(1), ignorePolicy)},
			attrs: podAttributes(t, nil), warnings: []string{"first warning", "second warning"},
			annotations: map[string]string{"warn.example.com/decision": "allowed", "failed-open.validating.webhook.admission.k8s.io/round_0_index_1": "slow.example.com"},
			outcomes:    []chain.CallOutcome{chain.NotCalled, chain.Admitted, chain.FailedOpen}},
		{name: "every matching webhook is called at once",
			hooks: []admissionregistrationv1.ValidatingWebhook{
				f.vhook("a.example.com", webhookserver.PathBarrier+"/all/3", timeout(10)),
				f.vhook("b.example.com", webhookserver.PathBarrier+"/all/3", timeout(10)),
				f.vhook("c.example.com", webhookserver.PathBarrier+"/all/3", timeout(10))},
			attrs: podAttributes(t, nil), outcomes: []chain.CallOutcome{chain.Admitted, chain.Admitted, chain.Admitted},
			calls: map[string]int{webhookserver.PathBarrier: 3}},
		{name: "a denial does not stop the other calls",
			hooks: []admissionregistrationv1.ValidatingWebhook{
				f.vhook("deny.example.com", webhookserver.PathDeny),
				f.vhook("warn.example.com", webhookserver.PathWarn)},
			attrs: podAttributes(t, nil), code: 403, message: `admission webhook "deny.example.com" denied the request: pods may not run as root`,
			warnings:    []string{"first warning", "second warning"},
			annotations: map[string]string{"warn.example.com/decision": "allowed"},
			outcomes:    []chain.CallOutcome{chain.Denied, chain.Admitted}, calls: map[string]int{webhookserver.PathDeny: 1, webhookserver.PathWarn: 1}},
		{name: "a matchCondition error under Fail refuses before any call",
			hooks: []admissionregistrationv1.ValidatingWebhook{
				f.vhook("warn.example.com", webhookserver.PathWarn),
				f.vhook("cond.example.com", webhookserver.PathWarn, func(h *admissionregistrationv1.MutatingWebhook) {
					h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "bad", Expression: "object.metadata.labels['missing'] == 'x'"}}
				})},
			attrs: podAttributes(t, nil), code: 403, message: `pods "web" is forbidden: `,
			outcomes: []chain.CallOutcome{chain.NotCalled, chain.Refused}, calls: map[string]int{}},
		{name: "dry run with sideEffects Some",
			hooks: []admissionregistrationv1.ValidatingWebhook{f.vhook("se.example.com", webhookserver.PathWarn, func(h *admissionregistrationv1.MutatingWebhook) {
				h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
			}, ignorePolicy)},
			attrs: func() *matching.Attributes { a := podAttributes(t, nil); a.DryRun = true; return a }(),
			code:  400, message: `admission webhook "se.example.com" does not support dry run`,
			outcomes: []chain.CallOutcome{chain.Refused}, calls: map[string]int{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			d := f.validating(t, Options{Metrics: m}, c.hooks...)
			f.srv.ResetCalls()
			res, err := new(chain.Runner).RunOnce(context.Background(), c.attrs, d)
			if err != nil {
				t.Fatal(err)
			}
			var code int32
			var message string
			if res.Denied != nil {
				code, message = res.Denied.ErrStatus.Code, res.Denied.ErrStatus.Message
				if res.DeniedBy != ValidatingPluginName {
					t.Errorf("denied by %q", res.DeniedBy)
				}
			}
			if code != c.code || !strings.HasPrefix(message, c.message) || (c.message == "") != (message == "") {
				t.Errorf("refusal %d %q, want %d %q…", code, message, c.code, c.message)
			}
			if !reflect.DeepEqual(res.Warnings, c.warnings) {
				t.Errorf("warnings %q, want %q", res.Warnings, c.warnings)
			}
			if len(res.AuditAnnotations)+len(c.annotations) > 0 && !reflect.DeepEqual(res.AuditAnnotations, c.annotations) {
				t.Errorf("audit annotations %v, want %v", res.AuditAnnotations, c.annotations)
			}
			var outcomes []chain.CallOutcome
			for i, call := range res.Calls {
				outcomes = append(outcomes, call.Outcome)
				if call.Index != i || call.Round != 0 || call.Configuration != "v" || call.Hook != c.hooks[i].Name {
					t.Errorf("record %d: %+v", i, call)
				}
			}
			if !reflect.DeepEqual(outcomes, c.outcomes) {
				t.Errorf("outcomes %v, want %v", outcomes, c.outcomes)
			}
			if c.calls != nil {
				for _, p := range webhookserver.Paths {
					if f.srv.Calls(p) != c.calls[p] {
						t.Errorf("%s called %d times, want %d", p, f.srv.Calls(p), c.calls[p])
					}
				}
			}
			if res.Object == nil && c.attrs.Object != nil {
				t.Error("the object was lost")
			}
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, fam := range families {
				for _, metric := range fam.GetMetric() {
					for _, l := range metric.GetLabel() {
						if l.GetName() == "type" && l.GetValue() != "validating" {
							t.Errorf("%s: type %q", fam.GetName(), l.GetValue())
						}
					}
				}
			}
		})
	}
}
