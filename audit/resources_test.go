package audit

import (
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/matching"
)

func policyWithRules(rules ...admissionregistrationv1.RuleWithOperations) *admissionregistrationv1.MutatingAdmissionPolicy {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: &admissionregistrationv1.MatchResources{}}}
	for _, r := range rules {
		p.Spec.MatchConstraints.ResourceRules = append(p.Spec.MatchConstraints.ResourceRules, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: r})
	}
	return p
}

func rule(ops []admissionregistrationv1.OperationType, groups, resources []string) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: []string{"*"}, Resources: resources}}
}

var (
	create = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	anyOp  = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
)

func TestTargets(t *testing.T) {
	table := matching.DefaultTable()
	cases := []struct {
		name   string
		rules  []admissionregistrationv1.RuleWithOperations
		op     admission.Operation
		kinds  []string
		want   []string // exactly, in order
		has    []string // at least
		hasNot []string
	}{
		{name: "one resource", rules: []admissionregistrationv1.RuleWithOperations{rule(create, []string{""}, []string{"configmaps"})}, op: admission.Create, want: []string{"configmaps"}},
		{name: "another operation lists nothing", rules: []admissionregistrationv1.RuleWithOperations{rule(create, []string{""}, []string{"configmaps"})}, op: admission.Update, want: nil},
		{name: "a subresource alone lists nothing", rules: []admissionregistrationv1.RuleWithOperations{rule(anyOp, []string{""}, []string{"pods/status"})}, op: admission.Create, want: nil},
		{name: "pods/* names the pods themselves", rules: []admissionregistrationv1.RuleWithOperations{rule(anyOp, []string{""}, []string{"pods/*"})}, op: admission.Create, want: []string{"pods"}},
		{name: "one version of a resource served in several",
			rules: []admissionregistrationv1.RuleWithOperations{rule(anyOp, []string{"autoscaling"}, []string{"horizontalpodautoscalers"})}, op: admission.Update,
			want: []string{"horizontalpodautoscalers.autoscaling"}},
		{name: "everything, events once", rules: []admissionregistrationv1.RuleWithOperations{rule(anyOp, []string{"*"}, []string{"*"})}, op: admission.Create,
			has: []string{"configmaps", "events", "deployments.apps", "customresourcedefinitions.apiextensions.k8s.io"}, hasNot: []string{"events.events.k8s.io"}},
		{name: "--kinds keeps what it names", rules: []admissionregistrationv1.RuleWithOperations{rule(anyOp, []string{"*"}, []string{"*"})}, op: admission.Create,
			kinds: []string{"Deployment.apps", "configmaps"}, want: []string{"configmaps", "deployments.apps"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kinds, err := ParseKinds(c.kinds)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range Targets(table, []*admissionregistrationv1.MutatingAdmissionPolicy{policyWithRules(c.rules...)}, c.op, kinds) {
				got = append(got, resourceName(r))
			}
			if c.want != nil || (c.has == nil && c.hasNot == nil) {
				if !slices.Equal(got, c.want) {
					t.Errorf("targets %v, want %v", got, c.want)
				}
			}
			for _, h := range c.has {
				if !slices.Contains(got, h) {
					t.Errorf("targets lack %s: %v", h, got)
				}
			}
			for _, h := range c.hasNot {
				if slices.Contains(got, h) {
					t.Errorf("targets have %s", h)
				}
			}
		})
	}
}

func TestParseKinds(t *testing.T) {
	for _, bad := range []string{"", ".apps", " "} {
		if _, err := ParseKinds([]string{bad}); err == nil {
			t.Errorf("ParseKinds(%q) accepted", bad)
		}
	}
	k, err := ParseKinds([]string{"Widget.example.com"})
	if err != nil || k[0] != (Kind{Name: "widget", Group: "example.com", Grouped: true}) || k[0].String() != "widget.example.com" {
		t.Errorf("%+v %v", k, err)
	}
}

func FuzzParseKinds(f *testing.F) {
	for _, s := range []string{"Deployment.apps", "configmaps", "Widget.example.com", ".x", ""} {
		f.Add(s)
	}
	table := matching.DefaultTable()
	f.Fuzz(func(t *testing.T, s string) {
		kinds, err := ParseKinds([]string{s})
		if err != nil {
			return
		}
		// Whatever it names resolves or says why, and prints back.
		if _, err := kinds[0].Resolve(table); err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
		_ = kinds[0].String()
	})
}
