package binding

import (
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func policy(name string, params bool) *admissionregistrationv1.MutatingAdmissionPolicy {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if params {
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	}
	return p
}

func bindingOf(name, policy string, ref bool) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy}}
	if ref {
		b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "defaults"}
	}
	return b
}

func TestGroup(t *testing.T) {
	policies := []*admissionregistrationv1.MutatingAdmissionPolicy{policy("zeta", false), policy("alpha", false), policy("unbound", false)}
	bindings := []*admissionregistrationv1.MutatingAdmissionPolicyBinding{
		bindingOf("b2", "alpha", false), bindingOf("b1", "alpha", false), bindingOf("z", "zeta", false), bindingOf("orphan", "missing", false),
	}
	hooks := Group(policies, bindings)
	var got [][]string
	for _, h := range hooks {
		row := []string{h.Policy.Name}
		for _, b := range h.Bindings {
			row = append(row, b.Name)
		}
		got = append(got, row)
	}
	want := [][]string{{"alpha", "b1", "b2"}, {"zeta", "z"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Group = %v, want %v (ordered by policy then binding name; unbound policies and orphan bindings dropped)", got, want)
	}
}

func TestCheck(t *testing.T) {
	policies := []*admissionregistrationv1.MutatingAdmissionPolicy{policy("plain", false), policy("with-params", true), policy("lonely", false)}
	bindings := []*admissionregistrationv1.MutatingAdmissionPolicyBinding{
		bindingOf("ignored-ref", "plain", true),
		bindingOf("no-ref", "with-params", false),
		bindingOf("orphan", "missing", false),
	}
	var got []string
	for _, w := range Check(policies, bindings) {
		got = append(got, w.String())
	}
	want := []string{
		`MutatingAdmissionPolicyBinding "ignored-ref": spec.paramRef: policy "plain" has no paramKind; the paramRef is ignored`,
		`MutatingAdmissionPolicyBinding "no-ref": spec.paramRef: policy "with-params" has a paramKind but the binding has no paramRef; expressions see params = null`,
		`MutatingAdmissionPolicyBinding "orphan": spec.policyName: policy "missing" does not exist; the binding does nothing until it does`,
		`MutatingAdmissionPolicy "lonely": metadata.name: no binding selects this policy; it does nothing`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Check =\n%q\nwant\n%q", got, want)
	}
}
