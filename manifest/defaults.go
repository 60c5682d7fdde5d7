package manifest

import (
	v1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultPolicy applies kube-apiserver's defaulting for a
// MutatingAdmissionPolicy, in place. It ports the generated defaulter of
// k8s.io/kubernetes/pkg/apis/admissionregistration/v1:
// SetDefaults_MutatingAdmissionPolicySpec (failurePolicy Fail),
// SetDefaults_MatchResources on matchConstraints (matchPolicy Equivalent,
// empty namespaceSelector and objectSelector) and SetDefaults_Rule on every
// resource rule and exclude rule (scope "*"). reinvocationPolicy is not
// defaulted: the API requires it.
func DefaultPolicy(p *v1.MutatingAdmissionPolicy) {
	if p == nil {
		return
	}
	if p.Spec.FailurePolicy == nil {
		fp := v1.Fail
		p.Spec.FailurePolicy = &fp
	}
	defaultMatchResources(p.Spec.MatchConstraints)
}

// DefaultBinding applies kube-apiserver's defaulting for a
// MutatingAdmissionPolicyBinding, in place: SetDefaults_MatchResources and
// SetDefaults_Rule on spec.matchResources when it is set. (v1 and v1beta1
// do not default paramRef.parameterNotFoundAction; v1alpha1 does, which
// the loader applies before converting, see defaultV1alpha1ParamRef.)
func DefaultBinding(b *v1.MutatingAdmissionPolicyBinding) {
	if b == nil {
		return
	}
	defaultMatchResources(b.Spec.MatchResources)
}

func defaultMatchResources(m *v1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		mp := v1.Equivalent
		m.MatchPolicy = &mp
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for i := range m.ResourceRules {
		defaultRule(&m.ResourceRules[i].Rule)
	}
	for i := range m.ExcludeResourceRules {
		defaultRule(&m.ExcludeResourceRules[i].Rule)
	}
}

func defaultRule(r *v1.Rule) {
	if r.Scope == nil {
		s := v1.AllScopes
		r.Scope = &s
	}
}

// defaultV1alpha1ParamRef ports SetDefaults_ParamRef of
// k8s.io/kubernetes/pkg/apis/admissionregistration/v1alpha1: a v1alpha1
// paramRef without parameterNotFoundAction gets Deny.
func defaultV1alpha1ParamRef(b *v1.MutatingAdmissionPolicyBinding) {
	if p := b.Spec.ParamRef; p != nil && p.ParameterNotFoundAction == nil {
		a := v1.DenyAction
		p.ParameterNotFoundAction = &a
	}
}
