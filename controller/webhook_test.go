package controller

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubefake "k8s.io/client-go/kubernetes/fake"
	certutil "k8s.io/client-go/util/cert"
)

func TestWebhookConfigurations(t *testing.T) {
	port := int32(8443)
	path := "/mutate"
	service := WebhookOptions{Name: "mutatis", Namespace: "mutatis-system", CABundle: []byte("CA"), TimeoutSeconds: 5,
		Service: &admissionregistrationv1.ServiceReference{Namespace: "mutatis-system", Name: "mutatis", Path: &path, Port: &port}}
	url := WebhookOptions{Name: "dev", Namespace: "mutatis-system", URL: "https://127.0.0.1:8443/mutate", TimeoutSeconds: 10}

	type rule struct {
		ops       string // operations joined by ","
		group     string
		resources string
	}
	for _, tc := range []struct {
		name         string
		opts         WebhookOptions
		policies     []*admissionregistrationv1.MutatingAdmissionPolicy
		fail, ignore []rule // nil: no configuration
	}{
		{
			name: "no policy needs no configuration",
			opts: service,
		},
		{
			name: "a Fail policy and an Ignore policy go to separate configurations",
			opts: service,
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{
				mapWithRules("a", admissionregistrationv1.Fail, namedRule([]string{"CREATE"}, "", "pods")),
				mapWithRules("b", admissionregistrationv1.Ignore, namedRule([]string{"UPDATE"}, "apps", "deployments")),
			},
			fail:   []rule{{"CREATE", "", "pods"}},
			ignore: []rule{{"UPDATE", "apps", "deployments"}},
		},
		{
			name: "rules are the union of the policies' rules, without repeats",
			opts: url,
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{
				mapWithRules("a", admissionregistrationv1.Fail, namedRule([]string{"CREATE"}, "", "pods"), namedRule([]string{"CREATE"}, "", "configmaps")),
				mapWithRules("b", admissionregistrationv1.Fail, namedRule([]string{"CREATE"}, "", "pods")),
			},
			fail: []rule{{"CREATE", "", "configmaps"}, {"CREATE", "", "pods"}},
		},
		{
			name: "a policy without failurePolicy is a Fail policy",
			opts: url,
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{
				mapWithRules("a", "", namedRule([]string{"CREATE"}, "", "pods")),
			},
			fail: []rule{{"CREATE", "", "pods"}},
		},
		{
			name: "the * operation means CREATE, UPDATE and CONNECT, never DELETE",
			opts: url,
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{
				mapWithRules("a", admissionregistrationv1.Ignore, namedRule([]string{"*"}, "*", "*")),
			},
			ignore: []rule{{"CONNECT,CREATE,UPDATE", "*", "*"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fail, ignore := WebhookConfigurations(tc.policies, tc.opts)
			for _, c := range []struct {
				fp    admissionregistrationv1.FailurePolicyType
				got   *admissionregistrationv1.MutatingWebhookConfiguration
				rules []rule
			}{{admissionregistrationv1.Fail, fail, tc.fail}, {admissionregistrationv1.Ignore, ignore, tc.ignore}} {
				if c.rules == nil {
					if c.got != nil {
						t.Fatalf("%s configuration %s, want none", c.fp, c.got.Name)
					}
					continue
				}
				if c.got == nil {
					t.Fatalf("no %s configuration", c.fp)
				}
				checkWebhook(t, c.got, tc.opts, c.fp)
				var got []rule
				for _, r := range c.got.Webhooks[0].Rules {
					ops := ""
					for i, op := range r.Operations {
						if i > 0 {
							ops += ","
						}
						ops += string(op)
					}
					got = append(got, rule{ops, r.APIGroups[0], r.Resources[0]})
				}
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(c.rules)
				if string(gj) != string(wj) {
					t.Fatalf("%s rules %s, want %s", c.fp, gj, wj)
				}
			}
		})
	}
}

// checkWebhook checks what every configuration must have.
func checkWebhook(t *testing.T, c *admissionregistrationv1.MutatingWebhookConfiguration, o WebhookOptions, fp admissionregistrationv1.FailurePolicyType) {
	t.Helper()
	if c.Name != WebhookConfigurationName(o.Name, fp) || len(c.Webhooks) != 1 {
		t.Fatalf("configuration %s with %d webhooks", c.Name, len(c.Webhooks))
	}
	w := c.Webhooks[0]
	switch {
	case *w.FailurePolicy != fp:
		t.Errorf("failurePolicy %s", *w.FailurePolicy)
	case *w.MatchPolicy != admissionregistrationv1.Equivalent:
		t.Errorf("matchPolicy %s", *w.MatchPolicy)
	case *w.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy:
		t.Errorf("reinvocationPolicy %s", *w.ReinvocationPolicy)
	case *w.SideEffects != admissionregistrationv1.SideEffectClassNone:
		t.Errorf("sideEffects %s", *w.SideEffects)
	case *w.TimeoutSeconds != o.TimeoutSeconds:
		t.Errorf("timeoutSeconds %d", *w.TimeoutSeconds)
	case string(w.ClientConfig.CABundle) != string(o.CABundle):
		t.Errorf("caBundle %q", w.ClientConfig.CABundle)
	}
	// Each configuration calls the endpoint of its failure policy.
	suffix := "/fail"
	if fp == admissionregistrationv1.Ignore {
		suffix = "/ignore"
	}
	if o.Service != nil && (w.ClientConfig.Service == nil || w.ClientConfig.Service.Name != o.Service.Name || *w.ClientConfig.Service.Path != *o.Service.Path+suffix) {
		t.Errorf("service %+v", w.ClientConfig.Service)
	}
	if o.URL != "" && (w.ClientConfig.URL == nil || *w.ClientConfig.URL != o.URL+suffix) {
		t.Errorf("url %v", *w.ClientConfig.URL)
	}
	want := metav1.LabelSelectorRequirement{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{o.Namespace}}
	if e := w.NamespaceSelector.MatchExpressions; len(e) != 1 || e[0].Key != want.Key || e[0].Operator != want.Operator || e[0].Values[0] != o.Namespace {
		t.Errorf("namespaceSelector %+v, want its own namespace excluded", w.NamespaceSelector)
	}
	if len(w.MatchConditions) != len(lockoutConditions) {
		t.Errorf("matchConditions %+v, want the lockout exclusions", w.MatchConditions)
	}
}

func namedRule(ops []string, group, resource string) admissionregistrationv1.NamedRuleWithOperations {
	var o []admissionregistrationv1.OperationType
	for _, op := range ops {
		o = append(o, admissionregistrationv1.OperationType(op))
	}
	return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: o,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
	}}
}

func mapWithRules(name string, fp admissionregistrationv1.FailurePolicyType, rules ...admissionregistrationv1.NamedRuleWithOperations) *admissionregistrationv1.MutatingAdmissionPolicy {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if fp != "" {
		p.Spec.FailurePolicy = &fp
	}
	p.Spec.MatchConstraints = &admissionregistrationv1.MatchResources{ResourceRules: rules}
	return p
}

func TestEnsureSelfSignedCertificate(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mutatis-system", Name: "mutatis-tls"}})
	first, err := EnsureSelfSignedCertificate(ctx, kube, "mutatis-system", "mutatis-tls", []string{"mutatis.mutatis-system.svc"})
	if err != nil {
		t.Fatal(err)
	}
	certs, err := certutil.ParseCertsPEM(first.CertPEM)
	if err != nil || len(certs) == 0 || certs[0].DNSNames[0] != "mutatis.mutatis-system.svc" {
		t.Fatalf("certificate %v, %v", certs, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(first.CABundle) {
		t.Fatal("CA bundle holds no certificate")
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: "mutatis.mutatis-system.svc"}); err != nil {
		t.Fatalf("the CA bundle does not verify the certificate: %v", err)
	}
	second, err := EnsureSelfSignedCertificate(ctx, kube, "mutatis-system", "mutatis-tls", []string{"mutatis.mutatis-system.svc"})
	if err != nil {
		t.Fatal(err)
	}
	if string(second.CertPEM) != string(first.CertPEM) {
		t.Fatal("a second replica made another certificate instead of reading the Secret")
	}
}

// TestWebhookConfigurationsExcludeSystemNamespaces: with
// ExcludeNamespaces (serve --exclude-system-namespaces), kube-apiserver
// calls neither webhook for kube-system and kube-node-lease, besides
// mutatis' own namespace; without, only mutatis' own is excluded.
func TestWebhookConfigurationsExcludeSystemNamespaces(t *testing.T) {
	policies := []*admissionregistrationv1.MutatingAdmissionPolicy{
		mapWithRules("a", admissionregistrationv1.Fail, namedRule([]string{"CREATE"}, "", "pods")),
		mapWithRules("b", admissionregistrationv1.Ignore, namedRule([]string{"UPDATE"}, "coordination.k8s.io", "leases")),
	}
	for _, tc := range []struct {
		name     string
		exclude  []string
		excluded map[string]bool
	}{
		{"by default only mutatis' namespace", nil, map[string]bool{"mutatis-system": true}},
		{"with the system namespaces", SystemNamespaces, map[string]bool{"mutatis-system": true, "kube-system": true, "kube-node-lease": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := WebhookOptions{Name: "mutatis", Namespace: "mutatis-system", URL: "https://127.0.0.1:8443/mutate", TimeoutSeconds: 10, ExcludeNamespaces: tc.exclude}
			fail, ignore := WebhookConfigurations(policies, o)
			for _, c := range []*admissionregistrationv1.MutatingWebhookConfiguration{fail, ignore} {
				sel, err := metav1.LabelSelectorAsSelector(c.Webhooks[0].NamespaceSelector)
				if err != nil {
					t.Fatal(err)
				}
				for _, ns := range []string{"mutatis-system", "kube-system", "kube-node-lease", "kube-public", "default"} {
					// kube-apiserver matches the namespace's labels, which
					// always include its name.
					if got := sel.Matches(labels.Set{corev1.LabelMetadataName: ns}); got == tc.excluded[ns] {
						t.Errorf("%s: namespace %s called: %v, want excluded %v", c.Name, ns, got, tc.excluded[ns])
					}
				}
			}
		})
	}
}
