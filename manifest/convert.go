package manifest

import (
	v1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/api/admissionregistration/v1alpha1"
	"k8s.io/api/admissionregistration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The v1alpha1 and v1beta1 MutatingAdmissionPolicy types have the same
// fields as v1 (Rule, RuleWithOperations, OperationType, ScopeType and
// ReinvocationPolicyType are aliases of the v1 types); the enum string
// types are distinct Go types. The conversions below copy every field and
// deep-copy pointers and slices so the result shares nothing with the input.
// TypeMeta is set to admissionregistration.k8s.io/v1.

var (
	policyTypeMeta  = metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"}
	bindingTypeMeta = metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"}
)

func copySelector(s *metav1.LabelSelector) *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	return s.DeepCopy()
}

func copyStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string{}, s...)
}

func copyRuleWithOperations(r v1.RuleWithOperations) v1.RuleWithOperations {
	return *r.DeepCopy()
}

// --- v1beta1 ---

func policyFromV1beta1(in *v1beta1.MutatingAdmissionPolicy) *v1.MutatingAdmissionPolicy {
	out := &v1.MutatingAdmissionPolicy{TypeMeta: policyTypeMeta, ObjectMeta: *in.ObjectMeta.DeepCopy()}
	s := &in.Spec
	o := &out.Spec
	if s.ParamKind != nil {
		o.ParamKind = &v1.ParamKind{APIVersion: s.ParamKind.APIVersion, Kind: s.ParamKind.Kind}
	}
	o.MatchConstraints = matchResourcesFromV1beta1(s.MatchConstraints)
	if s.Variables != nil {
		o.Variables = make([]v1.Variable, len(s.Variables))
		for i, v := range s.Variables {
			o.Variables[i] = v1.Variable{Name: v.Name, Expression: v.Expression}
		}
	}
	if s.Mutations != nil {
		o.Mutations = make([]v1.Mutation, len(s.Mutations))
		for i, m := range s.Mutations {
			om := v1.Mutation{PatchType: v1.PatchType(m.PatchType)}
			if m.ApplyConfiguration != nil {
				om.ApplyConfiguration = &v1.ApplyConfiguration{Expression: m.ApplyConfiguration.Expression}
			}
			if m.JSONPatch != nil {
				om.JSONPatch = &v1.JSONPatch{Expression: m.JSONPatch.Expression}
			}
			o.Mutations[i] = om
		}
	}
	if s.FailurePolicy != nil {
		fp := v1.FailurePolicyType(*s.FailurePolicy)
		o.FailurePolicy = &fp
	}
	if s.MatchConditions != nil {
		o.MatchConditions = make([]v1.MatchCondition, len(s.MatchConditions))
		for i, c := range s.MatchConditions {
			o.MatchConditions[i] = v1.MatchCondition{Name: c.Name, Expression: c.Expression}
		}
	}
	o.ReinvocationPolicy = s.ReinvocationPolicy
	return out
}

func bindingFromV1beta1(in *v1beta1.MutatingAdmissionPolicyBinding) *v1.MutatingAdmissionPolicyBinding {
	out := &v1.MutatingAdmissionPolicyBinding{TypeMeta: bindingTypeMeta, ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.Spec.PolicyName = in.Spec.PolicyName
	if p := in.Spec.ParamRef; p != nil {
		op := &v1.ParamRef{Name: p.Name, Namespace: p.Namespace, Selector: copySelector(p.Selector)}
		if p.ParameterNotFoundAction != nil {
			a := v1.ParameterNotFoundActionType(*p.ParameterNotFoundAction)
			op.ParameterNotFoundAction = &a
		}
		out.Spec.ParamRef = op
	}
	out.Spec.MatchResources = matchResourcesFromV1beta1(in.Spec.MatchResources)
	return out
}

func matchResourcesFromV1beta1(in *v1beta1.MatchResources) *v1.MatchResources {
	if in == nil {
		return nil
	}
	out := &v1.MatchResources{
		NamespaceSelector:    copySelector(in.NamespaceSelector),
		ObjectSelector:       copySelector(in.ObjectSelector),
		ResourceRules:        namedRulesFromV1beta1(in.ResourceRules),
		ExcludeResourceRules: namedRulesFromV1beta1(in.ExcludeResourceRules),
	}
	if in.MatchPolicy != nil {
		mp := v1.MatchPolicyType(*in.MatchPolicy)
		out.MatchPolicy = &mp
	}
	return out
}

func namedRulesFromV1beta1(in []v1beta1.NamedRuleWithOperations) []v1.NamedRuleWithOperations {
	if in == nil {
		return nil
	}
	out := make([]v1.NamedRuleWithOperations, len(in))
	for i, r := range in {
		out[i] = v1.NamedRuleWithOperations{
			ResourceNames:      copyStrings(r.ResourceNames),
			RuleWithOperations: copyRuleWithOperations(r.RuleWithOperations),
		}
	}
	return out
}

// --- v1alpha1 ---

func policyFromV1alpha1(in *v1alpha1.MutatingAdmissionPolicy) *v1.MutatingAdmissionPolicy {
	out := &v1.MutatingAdmissionPolicy{TypeMeta: policyTypeMeta, ObjectMeta: *in.ObjectMeta.DeepCopy()}
	s := &in.Spec
	o := &out.Spec
	if s.ParamKind != nil {
		o.ParamKind = &v1.ParamKind{APIVersion: s.ParamKind.APIVersion, Kind: s.ParamKind.Kind}
	}
	o.MatchConstraints = matchResourcesFromV1alpha1(s.MatchConstraints)
	if s.Variables != nil {
		o.Variables = make([]v1.Variable, len(s.Variables))
		for i, v := range s.Variables {
			o.Variables[i] = v1.Variable{Name: v.Name, Expression: v.Expression}
		}
	}
	if s.Mutations != nil {
		o.Mutations = make([]v1.Mutation, len(s.Mutations))
		for i, m := range s.Mutations {
			om := v1.Mutation{PatchType: v1.PatchType(m.PatchType)}
			if m.ApplyConfiguration != nil {
				om.ApplyConfiguration = &v1.ApplyConfiguration{Expression: m.ApplyConfiguration.Expression}
			}
			if m.JSONPatch != nil {
				om.JSONPatch = &v1.JSONPatch{Expression: m.JSONPatch.Expression}
			}
			o.Mutations[i] = om
		}
	}
	if s.FailurePolicy != nil {
		fp := v1.FailurePolicyType(*s.FailurePolicy)
		o.FailurePolicy = &fp
	}
	if s.MatchConditions != nil {
		o.MatchConditions = make([]v1.MatchCondition, len(s.MatchConditions))
		for i, c := range s.MatchConditions {
			o.MatchConditions[i] = v1.MatchCondition{Name: c.Name, Expression: c.Expression}
		}
	}
	o.ReinvocationPolicy = s.ReinvocationPolicy
	return out
}

func bindingFromV1alpha1(in *v1alpha1.MutatingAdmissionPolicyBinding) *v1.MutatingAdmissionPolicyBinding {
	out := &v1.MutatingAdmissionPolicyBinding{TypeMeta: bindingTypeMeta, ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.Spec.PolicyName = in.Spec.PolicyName
	if p := in.Spec.ParamRef; p != nil {
		op := &v1.ParamRef{Name: p.Name, Namespace: p.Namespace, Selector: copySelector(p.Selector)}
		if p.ParameterNotFoundAction != nil {
			a := v1.ParameterNotFoundActionType(*p.ParameterNotFoundAction)
			op.ParameterNotFoundAction = &a
		}
		out.Spec.ParamRef = op
	}
	out.Spec.MatchResources = matchResourcesFromV1alpha1(in.Spec.MatchResources)
	return out
}

func matchResourcesFromV1alpha1(in *v1alpha1.MatchResources) *v1.MatchResources {
	if in == nil {
		return nil
	}
	out := &v1.MatchResources{
		NamespaceSelector:    copySelector(in.NamespaceSelector),
		ObjectSelector:       copySelector(in.ObjectSelector),
		ResourceRules:        namedRulesFromV1alpha1(in.ResourceRules),
		ExcludeResourceRules: namedRulesFromV1alpha1(in.ExcludeResourceRules),
	}
	if in.MatchPolicy != nil {
		mp := v1.MatchPolicyType(*in.MatchPolicy)
		out.MatchPolicy = &mp
	}
	return out
}

func namedRulesFromV1alpha1(in []v1alpha1.NamedRuleWithOperations) []v1.NamedRuleWithOperations {
	if in == nil {
		return nil
	}
	out := make([]v1.NamedRuleWithOperations, len(in))
	for i, r := range in {
		out[i] = v1.NamedRuleWithOperations{
			ResourceNames:      copyStrings(r.ResourceNames),
			RuleWithOperations: copyRuleWithOperations(r.RuleWithOperations),
		}
	}
	return out
}
