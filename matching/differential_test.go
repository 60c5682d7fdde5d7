package matching

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	upmatching "k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// upstreamCriteria adapts MatchResources to upstream's MatchCriteria the way its policy matcher
// does.
type upstreamCriteria struct {
	mr *admissionregistrationv1.MatchResources
}

func (c upstreamCriteria) GetParsedNamespaceSelector() (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(c.mr.NamespaceSelector)
}
func (c upstreamCriteria) GetParsedObjectSelector() (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(c.mr.ObjectSelector)
}
func (c upstreamCriteria) GetMatchResources() admissionregistrationv1.MatchResources { return *c.mr }

// objectInterfaces answers equivalence questions with our table, so that the comparison is
// about the matching logic.
type objectInterfaces struct {
	admission.ObjectInterfaces
	mapper runtime.EquivalentResourceMapper
}

func (o objectInterfaces) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return o.mapper
}

type upstream struct {
	policy  *upmatching.Matcher
	webhook *generic.Webhook
	o       admission.ObjectInterfaces
}

func newUpstream(t *testing.T, tb *Table) upstream {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	nsInformer := factory.Core().V1().Namespaces()
	for _, ns := range testNamespaces {
		if err := nsInformer.Informer().GetIndexer().Add(ns); err != nil {
			t.Fatal(err)
		}
	}
	wh, err := generic.NewWebhook(admission.NewHandler(admission.Create, admission.Update, admission.Delete, admission.Connect), nil, nil,
		func(*webhookutil.ClientManager) generic.Dispatcher { return nil })
	if err != nil {
		t.Fatal(err)
	}
	wh.SetExternalKubeClientSet(client)
	wh.SetExternalKubeInformerFactory(factory)
	return upstream{
		policy:  upmatching.NewMatcher(nsInformer.Lister(), client),
		webhook: wh,
		o:       objectInterfaces{ObjectInterfaces: admission.NewObjectInterfacesFromScheme(runtime.NewScheme()), mapper: tb},
	}
}

type outcome struct {
	match bool
	gvr   schema.GroupVersionResource
	gvk   schema.GroupVersionKind
	err   string
}

func (o outcome) String() string {
	return fmt.Sprintf("match=%v %v %v err=%q", o.match, o.gvr, o.gvk, o.err)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (u upstream) policyOutcome(a *Attributes, mr *admissionregistrationv1.MatchResources) outcome {
	ok, gvr, gvk, err := u.policy.Matches(a.AdmissionAttributes(), u.o, upstreamCriteria{mr})
	return outcome{ok, gvr, gvk, errText(err)}
}

func (u upstream) webhookOutcome(a *Attributes, w *admissionregistrationv1.MutatingWebhook) outcome {
	inv, serr := u.webhook.ShouldCallHook(context.Background(), webhook.NewMutatingWebhookAccessor("uid", "config", w), a.AdmissionAttributes(), u.o, nil)
	if serr != nil {
		return outcome{err: serr.Error()}
	}
	if inv == nil {
		return outcome{}
	}
	return outcome{true, inv.Resource, inv.Kind, ""}
}

func ourOutcome(r Result, err error) outcome {
	return outcome{r.Matches, r.Resource, r.Kind, errText(err)}
}

// TestDifferentialCases runs every case of TestMatchCases through k8s.io/apiserver's policy
// matcher and webhook ShouldCallHook as well.
func TestDifferentialCases(t *testing.T) {
	tb := testTable(t)
	up := newUpstream(t, tb)
	m := NewMatcher(testNamespaceGetter(), tb)
	q := testRequests(t)
	ctx := context.Background()
	for _, c := range matchCases() {
		t.Run(c.name, func(t *testing.T) {
			a := c.req(q)
			mr := c.matchResources()
			if got, want := ourOutcome(m.MatchResources(ctx, a, mr)), up.policyOutcome(a, mr); got != want {
				t.Errorf("policy:\n got %v\nwant %v", got, want)
			}
			if c.policyOnly {
				return
			}
			w := c.webhookConfig()
			if got, want := ourOutcome(m.MutatingWebhookMatches(ctx, a, w)), up.webhookOutcome(a, w); got != want {
				t.Errorf("webhook:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// randomCriteria draws match criteria from small pools so that matches, misses and errors
// all happen often.
func randomCriteria(rng *rand.Rand) *admissionregistrationv1.MatchResources {
	pick := func(pool []string) []string {
		var out []string
		for _, s := range pool {
			if rng.Intn(3) == 0 {
				out = append(out, s)
			}
		}
		return out
	}
	opPool := []string{"CREATE", "UPDATE", "DELETE", "CONNECT", "*"}
	groupPool := []string{"", "apps", "autoscaling", "events.k8s.io", "example.com", "*"}
	versionPool := []string{"v1", "v2", "v1beta1", "*"}
	resourcePool := []string{"pods", "pods/status", "pods/exec", "pods/*", "*", "*/*", "*/status", "deployments", "deployments/scale",
		"horizontalpodautoscalers", "horizontalpodautoscalers/status", "events", "namespaces", "namespaces/status", "nodes", "widgets"}
	scopes := []admissionregistrationv1.ScopeType{"", admissionregistrationv1.AllScopes, admissionregistrationv1.NamespacedScope, admissionregistrationv1.ClusterScope}
	selectors := []*metav1.LabelSelector{nil, {}, {}, selector("env=prod"), selector("env=dev"), selector("app=web"), selector("!app"), selector("app=old"), selector("team"),
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Bogus"}}}}
	names := [][]string{nil, nil, {"web"}, {"db"}, {"web", "w"}}
	policies := []*admissionregistrationv1.MatchPolicyType{nil, policyType(admissionregistrationv1.Exact), policyType(admissionregistrationv1.Equivalent), policyType(admissionregistrationv1.Equivalent)}

	rules := func(n int) []admissionregistrationv1.NamedRuleWithOperations {
		var out []admissionregistrationv1.NamedRuleWithOperations
		for i := 0; i < n; i++ {
			r := rule(nil, pick(groupPool), pick(versionPool), pick(resourcePool), scopes[rng.Intn(len(scopes))])
			for _, o := range pick(opPool) {
				r.Operations = append(r.Operations, admissionregistrationv1.OperationType(o))
			}
			out = append(out, admissionregistrationv1.NamedRuleWithOperations{ResourceNames: names[rng.Intn(len(names))], RuleWithOperations: r})
		}
		return out
	}
	return &admissionregistrationv1.MatchResources{
		NamespaceSelector:    selectors[rng.Intn(len(selectors))],
		ObjectSelector:       selectors[rng.Intn(len(selectors))],
		ResourceRules:        rules(rng.Intn(4)),
		ExcludeResourceRules: rules(rng.Intn(2)),
		MatchPolicy:          policies[rng.Intn(len(policies))],
	}
}

func allRequests(q requests) []*Attributes {
	return []*Attributes{q.podCreate, q.podCreateDev, q.podCreateGhost, q.podGenerateName, q.podUpdate, q.podDelete, q.podStatus, q.podExec,
		q.deployCreate, q.deployScale, q.deployCreateV1beta1, q.nsCreate, q.nsUpdate, q.nsDelete, q.nsStatus,
		q.nodeCreate, q.hpaV1Create, q.hpaV1Status, q.eventCreate, q.eventsV1Create, q.widgetBetaCreate, q.widgetV1Create}
}

// TestDifferentialRandom compares random criteria on every test request with upstream, for
// policies and for webhooks (the same rules without names and exclusions).
func TestDifferentialRandom(t *testing.T) {
	tb := testTable(t)
	up := newUpstream(t, tb)
	m := NewMatcher(testNamespaceGetter(), tb)
	reqs := allRequests(testRequests(t))
	rng := rand.New(rand.NewSource(1))
	ctx := context.Background()
	stats := map[string]int{}
	for i := 0; i < 1500; i++ {
		mr := randomCriteria(rng)
		w := &admissionregistrationv1.MutatingWebhook{NamespaceSelector: mr.NamespaceSelector, ObjectSelector: mr.ObjectSelector, MatchPolicy: mr.MatchPolicy}
		for _, r := range mr.ResourceRules {
			w.Rules = append(w.Rules, r.RuleWithOperations)
		}
		// The criteria prepared once serve every request, as an
		// Evaluator's serve every request of its policy set.
		prepared := NewCriteria(mr)
		for _, a := range reqs {
			got, want := ourOutcome(m.MatchResources(ctx, a, mr)), up.policyOutcome(a, mr)
			if got != want {
				t.Fatalf("policy %d on %s %v/%s:\n got %v\nwant %v\ncriteria %+v", i, a.Operation, a.Resource, a.Subresource, got, want, mr)
			}
			if got := ourOutcome(m.matchCriteria(ctx, a, prepared)); got != want {
				t.Fatalf("prepared policy %d on %s %v/%s:\n got %v\nwant %v\ncriteria %+v", i, a.Operation, a.Resource, a.Subresource, got, want, mr)
			}
			if got, want := ourOutcome(m.CriteriaDefinitionMatches(ctx, a, prepared)), ourOutcome(m.DefinitionMatches(ctx, a, mr)); got != want {
				t.Fatalf("prepared definition %d on %s %v/%s:\n got %v\nwant %v", i, a.Operation, a.Resource, a.Subresource, got, want)
			}
			gotOK, gotErr := m.CriteriaBindingMatches(ctx, a, prepared)
			wantOK, wantErr := m.BindingMatches(ctx, a, mr)
			if gotOK != wantOK || errText(gotErr) != errText(wantErr) {
				t.Fatalf("prepared binding %d on %s %v/%s: %v %v, want %v %v", i, a.Operation, a.Resource, a.Subresource, gotOK, gotErr, wantOK, wantErr)
			}
			stats[fmt.Sprintf("policy match=%v err=%v", got.match, got.err != "")]++
			got, want = ourOutcome(m.MutatingWebhookMatches(ctx, a, w)), up.webhookOutcome(a, w)
			if got != want {
				t.Fatalf("webhook %d on %s %v/%s:\n got %v\nwant %v\nwebhook %+v", i, a.Operation, a.Resource, a.Subresource, got, want, w)
			}
			stats[fmt.Sprintf("webhook match=%v err=%v", got.match, got.err != "")]++
		}
	}
	for _, k := range []string{"policy match=true err=false", "policy match=false err=true", "webhook match=true err=false", "webhook match=false err=true"} {
		if stats[k] == 0 {
			t.Errorf("random criteria never produced %q: %v", k, stats)
		}
	}
	t.Logf("outcomes: %v", stats)
}

// TestDifferentialExemptions compares PolicyExempt and WebhookExempt with upstream's lists.
func TestDifferentialExemptions(t *testing.T) {
	for _, r := range BuiltinResources() {
		a := &Attributes{Resource: r.GroupVersionResource(), Kind: r.GroupVersionKind()}
		// upstream webhooks exempt configuration kinds by kind (rules.IsExemptAdmissionConfigurationResource)
		if got, want := WebhookExempt(a), upstreamWebhookExempt(a); got != want {
			t.Errorf("WebhookExempt(%v) = %v, want %v", r.GroupVersionResource(), got, want)
		}
	}
}

// reviewResources is k8s.io/kubernetes pkg/kubeapiserver/admission/exclusion's excluded list
// at v1.37.1 (not importable here).
var reviewResources = map[schema.GroupResource]bool{
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:       true,
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}:             true,
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:  true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:   true,
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:      true,
}

func upstreamWebhookExempt(a *Attributes) bool {
	return reviewResources[a.Resource.GroupResource()] || rules.IsExemptAdmissionConfigurationResource(a.AdmissionAttributes())
}

func TestPolicyExempt(t *testing.T) {
	exempt := map[string]bool{}
	for _, r := range BuiltinResources() {
		subs := []Subresource{{}}
		subs = append(subs, r.Subresources...)
		for _, s := range subs {
			a := &Attributes{Resource: r.GroupVersionResource(), Kind: r.GroupVersionKind(), Subresource: s.Name}
			if PolicyExempt(a) {
				exempt[r.Group+"/"+r.Resource] = true
			}
		}
	}
	want := map[string]bool{
		"admissionregistration.k8s.io/validatingadmissionpolicies":       true,
		"admissionregistration.k8s.io/validatingadmissionpolicybindings": true,
		"admissionregistration.k8s.io/mutatingadmissionpolicies":         true,
		"admissionregistration.k8s.io/mutatingadmissionpolicybindings":   true,
	}
	for gr := range reviewResources {
		want[gr.Group+"/"+gr.Resource] = true
	}
	if fmt.Sprint(exempt) != fmt.Sprint(want) {
		t.Errorf("exempt from policies:\n got %v\nwant %v", exempt, want)
	}
	if PolicyExempt(nil) || WebhookExempt(nil) {
		t.Error("nil attributes exempt")
	}
	// Webhook configurations are not exempt from policies.
	if PolicyExempt(&Attributes{Resource: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}}) {
		t.Error("mutatingwebhookconfigurations exempt from policies")
	}
	if !WebhookExempt(&Attributes{Resource: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
		Kind: schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"}}) {
		t.Error("mutatingwebhookconfigurations not exempt from webhooks")
	}
}
