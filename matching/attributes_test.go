package matching

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

func TestAdmissionAttributesRoundTrip(t *testing.T) {
	q := testRequests(t)
	a := q.podUpdate
	a.UserInfo = &user.DefaultInfo{Name: "alice", Groups: []string{"devs"}}
	a.DryRun = true
	aa := a.AdmissionAttributes()
	if aa.GetOperation() != admission.Update || aa.GetResource() != podGVR || aa.GetKind() != podGVK || aa.GetName() != "web" ||
		aa.GetNamespace() != "default" || !aa.IsDryRun() || aa.GetUserInfo().GetName() != "alice" || aa.GetObject() != a.Object || aa.GetOldObject() != a.OldObject {
		t.Errorf("conversion lost something: %+v", aa)
	}
	back := AttributesFrom(aa)
	if back.Operation != a.Operation || back.Resource != a.Resource || back.Object != a.Object || back.OldObject != a.OldObject || back.UserInfo != a.UserInfo || !back.DryRun {
		t.Errorf("round trip lost something: %+v", back)
	}

	// Nil objects are nil interfaces, not typed nils.
	c := q.podCreate.AdmissionAttributes()
	if c.GetOldObject() != nil || c.GetOperationOptions() != nil || c.GetUserInfo() == nil {
		t.Errorf("nil handling: old=%v options=%v user=%v", c.GetOldObject(), c.GetOperationOptions(), c.GetUserInfo())
	}

	// Typed objects become unstructured.
	typed := admission.NewAttributesRecord(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}}}, (*corev1.Pod)(nil),
		podGVK, "default", "p", podGVR, "", admission.Create, &metav1.CreateOptions{}, false, nil)
	got := AttributesFrom(typed)
	if got.Object == nil || got.Object.GetLabels()["a"] != "b" || got.OldObject != nil || got.Options == nil {
		t.Errorf("typed conversion: %+v", got)
	}
}

// TestMalformedInputsDoNotPanic feeds objects and criteria kube-apiserver would never produce.
func TestMalformedInputsDoNotPanic(t *testing.T) {
	m := NewMatcher(testNamespaceGetter(), DefaultTable())
	ctx := context.Background()
	objects := []*unstructured.Unstructured{
		nil,
		{},
		{Object: map[string]any{"metadata": "not a map"}},
		{Object: map[string]any{"metadata": map[string]any{"labels": "x"}}},
		{Object: map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": 3}}}},
	}
	requests := []*Attributes{{}, {Operation: "WHATEVER"}}
	for _, o := range objects {
		for _, op := range []admission.Operation{admission.Create, admission.Update, admission.Delete, admission.Connect} {
			for _, res := range []string{"namespaces", "pods", ""} {
				for _, ns := range []string{"", "default", "ghost"} {
					requests = append(requests, &Attributes{Operation: op, Resource: schema.GroupVersionResource{Version: "v1", Resource: res}, Namespace: ns, Object: o, OldObject: o})
				}
			}
		}
	}
	criteria := []*admissionregistrationv1.MatchResources{
		{},
		{NamespaceSelector: selector("env=prod"), ObjectSelector: selector("app=web")},
		{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "", Operator: metav1.LabelSelectorOpIn}}}, ObjectSelector: &metav1.LabelSelector{},
			ResourceRules:        []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: matchesAll}, {}},
			ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{}},
			MatchPolicy:          policyType(admissionregistrationv1.Equivalent)},
		{NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}, MatchPolicy: policyType("?"),
			ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: rule(ops("*"), strs("*"), strs("*"), strs("/", "//", "*/"), "")}}},
	}
	for _, a := range requests {
		for _, mr := range criteria {
			_, _ = m.MatchResources(ctx, a, mr)
			_, _ = m.DefinitionMatches(ctx, a, mr)
			_, _ = m.BindingMatches(ctx, a, mr)
			w := &admissionregistrationv1.MutatingWebhook{NamespaceSelector: mr.NamespaceSelector, ObjectSelector: mr.ObjectSelector, MatchPolicy: mr.MatchPolicy}
			_, _ = m.MutatingWebhookMatches(ctx, a, w)
			_ = PolicyExempt(a)
			_ = WebhookExempt(a)
			_ = a.AdmissionAttributes()
		}
	}
	// A namespace being created without an object cannot be matched on its labels.
	_, err := m.MatchResources(ctx, &Attributes{Operation: admission.Create, Resource: namespacesGVR},
		&admissionregistrationv1.MatchResources{NamespaceSelector: selector("env=prod"), ObjectSelector: &metav1.LabelSelector{},
			ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: matchesAll}}})
	if err == nil || !strings.HasPrefix(err.Error(), "Internal error occurred: ") {
		t.Errorf("namespace create without object: %v", err)
	}
}

// FuzzMatchResources builds rules and selectors from arbitrary strings.
func FuzzMatchResources(f *testing.F) {
	f.Add("CREATE", "apps", "v1", "deployments/scale", "Namespaced", "env=prod", "app", "Equivalent", "web")
	f.Add("*", "*", "*", "*/*", "", "", "!app", "Exact", "")
	f.Add("UPDATE", "", "v1", "pods/status", "Cluster", "env notin (a)", "x in (y)", "", "")
	m := NewMatcher(testNamespaceGetter(), testTable(f))
	reqs := allRequests(testRequests(f))
	f.Fuzz(func(t *testing.T, op, group, version, resource, scope, nsSel, objSel, policy, name string) {
		toSel := func(s string) *metav1.LabelSelector {
			sel, err := metav1.ParseToLabelSelector(s)
			if err != nil {
				return &metav1.LabelSelector{MatchLabels: map[string]string{s: s}}
			}
			return sel
		}
		r := rule(ops(admissionregistrationv1.OperationType(op)), strs(group), strs(version), strs(resource), admissionregistrationv1.ScopeType(scope))
		mr := &admissionregistrationv1.MatchResources{NamespaceSelector: toSel(nsSel), ObjectSelector: toSel(objSel),
			MatchPolicy:   policyType(admissionregistrationv1.MatchPolicyType(policy)),
			ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{ResourceNames: strs(name), RuleWithOperations: r}}}
		w := &admissionregistrationv1.MutatingWebhook{NamespaceSelector: mr.NamespaceSelector, ObjectSelector: mr.ObjectSelector, MatchPolicy: mr.MatchPolicy,
			Rules: []admissionregistrationv1.RuleWithOperations{r}}
		ix := NewIndex[int](m.Table())
		ix.Add(SelectorForMatchResources(mr), 1)
		for _, a := range reqs {
			res, err := m.MatchResources(context.Background(), a, mr)
			found := false
			ix.Lookup(a.Operation, a.Resource, func(int) bool { found = true; return true })
			if (res.Matches || err != nil) && !found {
				t.Fatalf("index missed a result for %v", a.Resource)
			}
			_, _ = m.MutatingWebhookMatches(context.Background(), a, w)
		}
	})
}
