package manifest

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/admissionregistration/v1"
)

const vapV1 = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: require-limits
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [pods]
  validations:
  - expression: object.spec.containers.all(c, has(c.resources.limits))
    message: every container needs resource limits
  auditAnnotations:
  - key: containers
    valueExpression: string(size(object.spec.containers))
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: require-limits
spec:
  policyName: require-limits
  validationActions: [Deny]
`

func TestValidatingPoliciesLoad(t *testing.T) {
	set := mustParse(t, "vap.yaml", vapV1)
	if len(set.ValidatingPolicies) != 1 || len(set.ValidatingBindings) != 1 || len(set.Objects)+len(set.Policies)+len(set.Bindings) != 0 {
		t.Fatalf("got %d VAPs, %d bindings, %d objects, %d MAPs", len(set.ValidatingPolicies), len(set.ValidatingBindings), len(set.Objects), len(set.Policies))
	}
	p := set.ValidatingPolicies[0]
	if p.Source.String() != "vap.yaml#0" || p.APIVersion != "admissionregistration.k8s.io/v1" {
		t.Errorf("source %s, apiVersion %s", p.Source, p.APIVersion)
	}
	// kube-apiserver's defaults.
	if *p.Policy.Spec.FailurePolicy != v1.Fail || *p.Policy.Spec.MatchConstraints.MatchPolicy != v1.Equivalent ||
		*p.Policy.Spec.MatchConstraints.ResourceRules[0].Scope != v1.AllScopes || p.Policy.Generation != 1 {
		t.Errorf("not defaulted as kube-apiserver defaults: %+v", p.Policy.Spec)
	}
	if b := set.ValidatingBindings[0].Binding; b.Spec.PolicyName != "require-limits" || b.Kind != "ValidatingAdmissionPolicyBinding" {
		t.Errorf("binding: %+v", b)
	}
	policies, bindings := set.ValidatingAPIObjects()
	if len(policies) != 1 || policies[0] != p.Policy || len(bindings) != 1 {
		t.Error("ValidatingAPIObjects")
	}
}

func TestValidatingPoliciesV1beta1ConvertToV1(t *testing.T) {
	beta := mustParse(t, "beta.yaml", strings.ReplaceAll(vapV1, "admissionregistration.k8s.io/v1\n", "admissionregistration.k8s.io/v1beta1\n"))
	v1set := mustParse(t, "v1.yaml", vapV1)
	if len(beta.ValidatingPolicies) != 1 || len(beta.ValidatingBindings) != 1 {
		t.Fatalf("v1beta1 not read: %+v", beta)
	}
	if beta.ValidatingPolicies[0].APIVersion != "admissionregistration.k8s.io/v1beta1" {
		t.Error("APIVersion is not the manifest's")
	}
	if !reflect.DeepEqual(beta.ValidatingPolicies[0].Policy, v1set.ValidatingPolicies[0].Policy) {
		t.Errorf("v1beta1 policy differs from v1:\n%+v\n%+v", beta.ValidatingPolicies[0].Policy, v1set.ValidatingPolicies[0].Policy)
	}
	if !reflect.DeepEqual(beta.ValidatingBindings[0].Binding, v1set.ValidatingBindings[0].Binding) {
		t.Error("v1beta1 binding differs from v1")
	}
}

func TestValidatingPoliciesRefused(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           []string
	}{
		{"an auditAnnotation valueExpression that is not statically a string",
			"string(size(object.spec.containers))", "size(object.spec.containers)",
			[]string{`bad.yaml#0: ValidatingAdmissionPolicy "require-limits": spec.auditAnnotations[0].valueExpression: Invalid value: "size(object.spec.containers)": must evaluate to one of [string null_type] but got int`}},
		{"a validation that does not compile",
			"object.spec.containers.all(c, has(c.resources.limits))", "object.spec.containers.all(c,",
			[]string{`bad.yaml#0: ValidatingAdmissionPolicy "require-limits": spec.validations[0].expression: Invalid value: "object.spec.containers.all(c,": compilation failed`}},
		{"an unknown field", "  validations:\n", "  validation:\n",
			[]string{`bad.yaml#0: ValidatingAdmissionPolicy "require-limits": strict decoding error: unknown field "spec.validation"`}},
		{"a binding without validationActions", "  validationActions: [Deny]\n", "",
			[]string{`bad.yaml#1: ValidatingAdmissionPolicyBinding "require-limits": spec.validationActions: Required value`}},
		{"an unserved version", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding", "apiVersion: admissionregistration.k8s.io/v2\nkind: ValidatingAdmissionPolicyBinding",
			[]string{`bad.yaml#1: ValidatingAdmissionPolicyBinding "require-limits": no kind "ValidatingAdmissionPolicyBinding" is registered for version "admissionregistration.k8s.io/v2"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := parseErr(t, "bad.yaml", strings.Replace(vapV1, tc.from, tc.to, 1))
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("error\n%s\nlacks\n%s", got, want)
				}
			}
		})
	}
}

func TestValidatingPoliciesDuplicateNames(t *testing.T) {
	set, got := parseErr(t, "dup.yaml", vapV1+"---\n"+vapV1)
	if len(set.ValidatingPolicies) != 1 || len(set.ValidatingBindings) != 1 {
		t.Errorf("duplicates kept: %d, %d", len(set.ValidatingPolicies), len(set.ValidatingBindings))
	}
	for _, want := range []string{
		`dup.yaml#2: ValidatingAdmissionPolicy "require-limits": already defined at dup.yaml#0`,
		`dup.yaml#3: ValidatingAdmissionPolicyBinding "require-limits": already defined at dup.yaml#1`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
}
