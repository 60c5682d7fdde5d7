package policyconfig

import (
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidatingPolicyDefaultsAndConverts(t *testing.T) {
	beta := &admissionregistrationv1beta1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "limits"},
		Spec: admissionregistrationv1beta1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1beta1.MatchResources{ResourceRules: []admissionregistrationv1beta1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1beta1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionregistrationv1beta1.Validation{{Expression: "object.spec.containers.all(c, has(c.resources.limits))"}},
		},
	}
	before := beta.DeepCopy()
	res, err := ValidatingPolicy(beta)
	if err != nil || len(res.Invalid) > 0 {
		t.Fatalf("%v %v", err, res.Invalid)
	}
	if !reflect.DeepEqual(beta, before) {
		t.Error("the input was modified")
	}
	p := res.Policy
	if p.APIVersion != "admissionregistration.k8s.io/v1" || p.Kind != "ValidatingAdmissionPolicy" || p.Generation != 1 {
		t.Errorf("type or generation: %+v", p.TypeMeta)
	}
	mc := p.Spec.MatchConstraints
	if *p.Spec.FailurePolicy != admissionregistrationv1.Fail || *mc.MatchPolicy != admissionregistrationv1.Equivalent ||
		mc.NamespaceSelector == nil || mc.ObjectSelector == nil || *mc.ResourceRules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("defaults missing: %+v", p.Spec)
	}
}

func TestValidatingPolicyRefusedAsKubeAPIServerRefusesIt(t *testing.T) {
	rules := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
		},
	}}}
	for _, tc := range []struct {
		name string
		spec admissionregistrationv1.ValidatingAdmissionPolicySpec
		want []string
	}{
		{"an auditAnnotation valueExpression that is not a string", admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: rules,
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "replicas", ValueExpression: "object.spec.replicas + 1"}},
		}, []string{"spec.auditAnnotations[0].valueExpression: Invalid value"}},
		{"a validation that does not compile", admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: rules,
			Validations:      []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <"}},
		}, []string{"spec.validations[0].expression: Invalid value", "compilation failed"}},
		{"params without paramKind", admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: rules,
			Validations:      []admissionregistrationv1.Validation{{Expression: "params.data.x == 'y'"}},
		}, []string{"spec.validations[0].expression", "undeclared reference to 'params'"}},
		{"no validations nor auditAnnotations", admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: rules,
		}, []string{"spec.validations: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ValidatingPolicy(&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: tc.spec})
			if err != nil {
				t.Fatal(err)
			}
			if res.Policy != nil {
				t.Fatal("accepted")
			}
			got := res.Invalid.ToAggregate().Error()
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("%q lacks %q", got, want)
				}
			}
		})
	}
}

func TestValidatingBinding(t *testing.T) {
	b := &admissionregistrationv1beta1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "limits"},
		Spec: admissionregistrationv1beta1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "limits",
			ValidationActions: []admissionregistrationv1beta1.ValidationAction{admissionregistrationv1beta1.Deny},
			MatchResources:    &admissionregistrationv1beta1.MatchResources{},
		},
	}
	res, err := ValidatingBinding(b)
	if err != nil || len(res.Invalid) > 0 {
		t.Fatalf("%v %v", err, res.Invalid)
	}
	if res.Binding.APIVersion != "admissionregistration.k8s.io/v1" || *res.Binding.Spec.MatchResources.MatchPolicy != admissionregistrationv1.Equivalent {
		t.Errorf("not converted or defaulted: %+v", res.Binding)
	}
	res, err = ValidatingBinding(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Invalid.ToAggregate().Error(); !strings.Contains(got, "spec.validationActions: Required value") {
		t.Errorf("got %q", got)
	}
	if _, err := ValidatingBinding(&corev1.Pod{}); err == nil {
		t.Error("a Pod was taken for a binding")
	}
}
