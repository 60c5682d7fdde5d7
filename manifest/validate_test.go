package manifest

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func validPolicy() *v1.MutatingAdmissionPolicy {
	p := &v1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "add-label"},
		Spec: v1.MutatingAdmissionPolicySpec{
			ParamKind: &v1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &v1.MatchResources{
				ResourceRules: []v1.NamedRuleWithOperations{{
					RuleWithOperations: v1.RuleWithOperations{
						Operations: []v1.OperationType{v1.Create, v1.Update},
						Rule:       v1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
					},
				}},
			},
			Variables:       []v1.Variable{{Name: "v", Expression: "1"}},
			MatchConditions: []v1.MatchCondition{{Name: "always", Expression: "true"}},
			Mutations: []v1.Mutation{{
				PatchType:          v1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &v1.ApplyConfiguration{Expression: "Object{}"},
			}},
			ReinvocationPolicy: v1.NeverReinvocationPolicy,
		},
	}
	DefaultPolicy(p)
	return p
}

func validBinding() *v1.MutatingAdmissionPolicyBinding {
	b := &v1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "add-label-binding"},
		Spec: v1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: "add-label",
			ParamRef:   &v1.ParamRef{Name: "cfg", Namespace: "default", ParameterNotFoundAction: ptr.To(v1.DenyAction)},
			MatchResources: &v1.MatchResources{
				ResourceRules: []v1.NamedRuleWithOperations{{
					RuleWithOperations: v1.RuleWithOperations{
						Operations: []v1.OperationType{v1.OperationAll},
						Rule:       v1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}},
					},
				}},
			},
		},
	}
	DefaultBinding(b)
	return b
}

func errorStrings(errs []error) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestValidatePolicy(t *testing.T) {
	if errs := ValidatePolicy(validPolicy()); len(errs) != 0 {
		t.Fatalf("valid policy: %v", errs)
	}
	rule := func(p *v1.MutatingAdmissionPolicy) *v1.RuleWithOperations {
		return &p.Spec.MatchConstraints.ResourceRules[0].RuleWithOperations
	}
	tests := []struct {
		name   string
		mutate func(p *v1.MutatingAdmissionPolicy)
		want   []string
	}{
		{"name is required", func(p *v1.MutatingAdmissionPolicy) { p.Name = "" },
			[]string{`metadata.name: Required value: name or generateName is required`}},
		{"name must be a DNS subdomain", func(p *v1.MutatingAdmissionPolicy) { p.Name = "Bad_Name" },
			[]string{`metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{"namespace is forbidden", func(p *v1.MutatingAdmissionPolicy) { p.Namespace = "default" },
			[]string{`metadata.namespace: Forbidden: not allowed on this type`}},
		{"failurePolicy is required", func(p *v1.MutatingAdmissionPolicy) { p.Spec.FailurePolicy = nil },
			[]string{`spec.failurePolicy: Required value`}},
		{"failurePolicy must be supported", func(p *v1.MutatingAdmissionPolicy) { p.Spec.FailurePolicy = ptr.To(v1.FailurePolicyType("Maybe")) },
			[]string{`spec.failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"`}},
		{"paramKind needs apiVersion and kind", func(p *v1.MutatingAdmissionPolicy) { p.Spec.ParamKind = &v1.ParamKind{} },
			[]string{`spec.paramKind.apiVersion: Required value`, `spec.paramKind.kind: Required value`}},
		{"paramKind apiVersion with two slashes", func(p *v1.MutatingAdmissionPolicy) { p.Spec.ParamKind.APIVersion = "a/b/c" },
			[]string{`spec.paramKind.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c`}},
		{"paramKind apiVersion without version", func(p *v1.MutatingAdmissionPolicy) { p.Spec.ParamKind.APIVersion = "example.com/" },
			[]string{`spec.paramKind.apiVersion: Invalid value: "example.com/": version must be specified`}},
		{"paramKind kind must be a DNS label", func(p *v1.MutatingAdmissionPolicy) { p.Spec.ParamKind.Kind = "Config_Map" },
			[]string{`spec.paramKind.kind: Invalid value: "Config_Map": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`}},
		{"matchConstraints is required", func(p *v1.MutatingAdmissionPolicy) { p.Spec.MatchConstraints = nil },
			[]string{`spec.matchConstraints: Required value`}},
		{"at least one resourceRule", func(p *v1.MutatingAdmissionPolicy) { p.Spec.MatchConstraints.ResourceRules = nil },
			[]string{`spec.matchConstraints.resourceRules: Required value`}},
		{"DELETE is rejected", func(p *v1.MutatingAdmissionPolicy) { rule(p).Operations = []v1.OperationType{v1.Delete} },
			[]string{`spec.matchConstraints.resourceRules.operations: Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE"`}},
		{"empty operations", func(p *v1.MutatingAdmissionPolicy) { rule(p).Operations = nil },
			[]string{`spec.matchConstraints.resourceRules[0].operations: Required value`}},
		{"unknown operation", func(p *v1.MutatingAdmissionPolicy) { rule(p).Operations = []v1.OperationType{"PATCH"} },
			[]string{
				`spec.matchConstraints.resourceRules[0].operations[0]: Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"`,
				`spec.matchConstraints.resourceRules.operations: Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "UPDATE"`,
			}},
		{"wildcard operation with others", func(p *v1.MutatingAdmissionPolicy) { rule(p).Operations = []v1.OperationType{"*", v1.Create} },
			[]string{`spec.matchConstraints.resourceRules[0].operations: Invalid value: ["*","CREATE"]: if '*' is present, must not specify other operations`}},
		{"apiGroups required", func(p *v1.MutatingAdmissionPolicy) { rule(p).APIGroups = nil },
			[]string{`spec.matchConstraints.resourceRules[0].apiGroups: Required value`}},
		{"apiGroups wildcard with others", func(p *v1.MutatingAdmissionPolicy) { rule(p).APIGroups = []string{"*", "apps"} },
			[]string{`spec.matchConstraints.resourceRules[0].apiGroups: Invalid value: ["*","apps"]: if '*' is present, must not specify other API groups`}},
		{"apiVersions required", func(p *v1.MutatingAdmissionPolicy) { rule(p).APIVersions = nil },
			[]string{`spec.matchConstraints.resourceRules[0].apiVersions: Required value`}},
		{"empty apiVersion", func(p *v1.MutatingAdmissionPolicy) { rule(p).APIVersions = []string{"v1", ""} },
			[]string{`spec.matchConstraints.resourceRules[0].apiVersions[1]: Required value`}},
		{"resources required", func(p *v1.MutatingAdmissionPolicy) { rule(p).Resources = nil },
			[]string{`spec.matchConstraints.resourceRules[0].resources: Required value`}},
		{"resources */* with others", func(p *v1.MutatingAdmissionPolicy) { rule(p).Resources = []string{"*/*", "pods"} },
			[]string{`spec.matchConstraints.resourceRules[0].resources: Invalid value: ["*/*","pods"]: if '*/*' is present, must not specify other resources`}},
		{"resources * with plain resource", func(p *v1.MutatingAdmissionPolicy) { rule(p).Resources = []string{"*", "pods"} },
			[]string{`spec.matchConstraints.resourceRules[0].resources: Invalid value: ["*","pods"]: if '*' is present, must not specify other resources without subresources`}},
		{"resources x/* with x/y", func(p *v1.MutatingAdmissionPolicy) { rule(p).Resources = []string{"pods/*", "pods/status"} },
			[]string{`spec.matchConstraints.resourceRules[0].resources[1]: Invalid value: "pods/status": if 'pods/*' is present, must not specify pods/status`}},
		{"bad scope", func(p *v1.MutatingAdmissionPolicy) { rule(p).Scope = ptr.To(v1.ScopeType("Global")) },
			[]string{`spec.matchConstraints.resourceRules[0].scope: Unsupported value: "Global": supported values: "*", "Cluster", "Namespaced"`}},
		{"duplicate resourceNames", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].ResourceNames = []string{"a", "a", ".."}
		}, []string{
			`spec.matchConstraints.resourceRules[0].resourceNames[1]: Duplicate value: "a"`,
			`spec.matchConstraints.resourceRules[0].resourceNames[2]: Invalid value: "..": may not be '..'`,
		}},
		{"matchPolicy required", func(p *v1.MutatingAdmissionPolicy) { p.Spec.MatchConstraints.MatchPolicy = nil },
			[]string{`spec.matchConstraints.matchPolicy: Required value`}},
		{"matchPolicy supported", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.MatchConstraints.MatchPolicy = ptr.To(v1.MatchPolicyType("Fuzzy"))
		},
			[]string{`spec.matchConstraints.matchPolicy: Unsupported value: "Fuzzy": supported values: "Equivalent", "Exact"`}},
		{"selectors required", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.MatchConstraints.NamespaceSelector = nil
			p.Spec.MatchConstraints.ObjectSelector = nil
		}, []string{`spec.matchConstraints.namespaceSelector: Required value`, `spec.matchConstraints.objectSelector: Required value`}},
		{"bad label selector", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpIn}}}
		}, []string{`spec.matchConstraints.objectSelector.matchExpressions[0].values: Required value: must be specified when ` + "`operator`" + ` is 'In' or 'NotIn'`}},
		{"bad label value in selector", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b c"}}
		}, []string{`spec.matchConstraints.namespaceSelector.matchLabels: Invalid value: "b c": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
		{"exclude rules are validated", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ExcludeResourceRules = []v1.NamedRuleWithOperations{{}}
		}, []string{
			`spec.matchConstraints.excludeResourceRules[0].operations: Required value`,
			`spec.matchConstraints.excludeResourceRules[0].apiGroups: Required value`,
			`spec.matchConstraints.excludeResourceRules[0].apiVersions: Required value`,
			`spec.matchConstraints.excludeResourceRules[0].resources: Required value`,
		}},
		{"matchCondition name and expression required", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.MatchConditions = []v1.MatchCondition{{Expression: "  "}}
		}, []string{`spec.matchConditions[0].expression: Required value`, `spec.matchConditions[0].name: Required value`}},
		{"matchCondition name is a qualified name", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.MatchConditions[0].Name = "not a name"
		}, []string{`spec.matchConditions[0].name: Invalid value: "not a name": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`}},
		{"matchCondition names are unique", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.MatchConditions = append(p.Spec.MatchConditions, p.Spec.MatchConditions[0])
		}, []string{`spec.matchConditions[1].name: Duplicate value: "always"`}},
		{"at most 64 matchConditions", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.MatchConditions = nil
			for i := 0; i < 65; i++ {
				p.Spec.MatchConditions = append(p.Spec.MatchConditions, v1.MatchCondition{Name: fmt.Sprintf("c%d", i), Expression: "true"})
			}
		}, []string{`spec.matchConditions: Too many: 65: must have at most 64 items`}},
		{"variable name and expression required", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.Variables = []v1.Variable{{Name: " ", Expression: ""}}
		}, []string{`spec.variables[0].name: Required value: name is not specified`, `spec.variables[0].expression: Required value: expression is not specified`}},
		{"variable name is a CEL identifier", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.Variables = []v1.Variable{{Name: "1x", Expression: "1"}, {Name: "in", Expression: "1"}, {Name: "a-b", Expression: "1"}}
		}, []string{
			`spec.variables[0].name: Invalid value: "1x": must be a valid CEL identifier`,
			`spec.variables[1].name: Invalid value: "in": must be a valid CEL identifier`,
			`spec.variables[2].name: Invalid value: "a-b": must be a valid CEL identifier`,
		}},
		{"at least one mutation", func(p *v1.MutatingAdmissionPolicy) { p.Spec.Mutations = nil },
			[]string{`spec.mutations: Required value: mutations must contain at least one item`}},
		{"patchType required", func(p *v1.MutatingAdmissionPolicy) { p.Spec.Mutations[0].PatchType = "" },
			[]string{`spec.mutations[0].patchType: Required value`}},
		{"patchType supported", func(p *v1.MutatingAdmissionPolicy) { p.Spec.Mutations[0].PatchType = "StrategicMerge" },
			[]string{`spec.mutations[0].patchType: Unsupported value: "StrategicMerge": supported values: "ApplyConfiguration", "JSONPatch"`}},
		{"applyConfiguration expression required", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.Mutations = append(p.Spec.Mutations, v1.Mutation{PatchType: v1.PatchTypeApplyConfiguration, ApplyConfiguration: &v1.ApplyConfiguration{Expression: " \n"}})
		}, []string{`spec.mutations[1].applyConfiguration.expression: Required value`}},
		{"applyConfiguration required for its patchType", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.Mutations[0].ApplyConfiguration = nil
		}, []string{`spec.mutations[0].applyConfiguration: Required value: must be specified when patchType is ApplyConfiguration`}},
		{"jsonPatch forbidden with ApplyConfiguration", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.Mutations[0].JSONPatch = &v1.JSONPatch{Expression: "[]"}
		}, []string{`spec.mutations[0].jsonPatch: Invalid value: "{jsonPatch}": must not be specified when patchType is ApplyConfiguration`}},
		{"jsonPatch required for its patchType", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.Mutations[0].PatchType = v1.PatchTypeJSONPatch
		}, []string{
			`spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch`,
			`spec.mutations[0].applyConfiguration: Invalid value: "{applyConfiguration}": must not be specified when patchType is JSONPatch`,
		}},
		{"jsonPatch expression required", func(p *v1.MutatingAdmissionPolicy) {
			p.Spec.Mutations[0] = v1.Mutation{PatchType: v1.PatchTypeJSONPatch, JSONPatch: &v1.JSONPatch{}}
		}, []string{`spec.mutations[0].jsonPatch.expression: Required value`}},
		{"reinvocationPolicy required", func(p *v1.MutatingAdmissionPolicy) { p.Spec.ReinvocationPolicy = "" },
			[]string{`spec.reinvocationPolicy: Required value`}},
		{"reinvocationPolicy supported", func(p *v1.MutatingAdmissionPolicy) { p.Spec.ReinvocationPolicy = "Always" },
			[]string{`spec.reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := validPolicy()
			tc.mutate(p)
			var errs []error
			for _, e := range ValidatePolicy(p) {
				errs = append(errs, e)
			}
			got := errorStrings(errs)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestValidateBinding(t *testing.T) {
	if errs := ValidateBinding(validBinding()); len(errs) != 0 {
		t.Fatalf("valid binding: %v", errs)
	}
	tests := []struct {
		name   string
		mutate func(b *v1.MutatingAdmissionPolicyBinding)
		want   []string
	}{
		{"policyName required", func(b *v1.MutatingAdmissionPolicyBinding) { b.Spec.PolicyName = "" },
			[]string{`spec.policyName: Required value`}},
		{"policyName is a DNS subdomain", func(b *v1.MutatingAdmissionPolicyBinding) { b.Spec.PolicyName = "Nope!" },
			[]string{`spec.policyName: Invalid value: "Nope!": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{"paramRef name xor selector", func(b *v1.MutatingAdmissionPolicyBinding) { b.Spec.ParamRef.Selector = &metav1.LabelSelector{} },
			[]string{`spec.paramRef.name: Forbidden: name and selector are mutually exclusive`, `spec.paramRef.selector: Forbidden: name and selector are mutually exclusive`}},
		{"paramRef name or selector", func(b *v1.MutatingAdmissionPolicyBinding) { b.Spec.ParamRef.Name = "" },
			[]string{`spec.paramRef: Required value: one of name or selector must be specified`}},
		{"paramRef name is a path segment", func(b *v1.MutatingAdmissionPolicyBinding) { b.Spec.ParamRef.Name = "a/b" },
			[]string{`spec.paramRef.name: Invalid value: "a/b": may not contain '/'`}},
		{"parameterNotFoundAction required", func(b *v1.MutatingAdmissionPolicyBinding) { b.Spec.ParamRef.ParameterNotFoundAction = nil },
			[]string{`spec.paramRef.parameterNotFoundAction: Required value`}},
		{"parameterNotFoundAction supported", func(b *v1.MutatingAdmissionPolicyBinding) {
			b.Spec.ParamRef.ParameterNotFoundAction = ptr.To(v1.ParameterNotFoundActionType("Skip"))
		}, []string{`spec.paramRef.parameterNotFoundAction: Unsupported value: "Skip": supported values: "Deny", "Allow"`}},
		{"paramRef selector validated", func(b *v1.MutatingAdmissionPolicyBinding) {
			b.Spec.ParamRef.Name = ""
			b.Spec.ParamRef.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
		}, []string{`spec.paramRef.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`}},
		{"matchResources DELETE rejected", func(b *v1.MutatingAdmissionPolicyBinding) {
			b.Spec.MatchResources.ResourceRules[0].Operations = []v1.OperationType{v1.Delete}
		}, []string{`spec.matchResources.resourceRules.operations: Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE"`}},
		{"matchResources without rules is fine", func(b *v1.MutatingAdmissionPolicyBinding) { b.Spec.MatchResources.ResourceRules = nil }, nil},
		{"matchResources may be omitted", func(b *v1.MutatingAdmissionPolicyBinding) { b.Spec.MatchResources = nil }, nil},
		{"paramRef may be omitted", func(b *v1.MutatingAdmissionPolicyBinding) { b.Spec.ParamRef = nil }, nil},
		{"matchResources needs its defaults", func(b *v1.MutatingAdmissionPolicyBinding) { b.Spec.MatchResources = &v1.MatchResources{} },
			[]string{`spec.matchResources.matchPolicy: Required value`, `spec.matchResources.namespaceSelector: Required value`, `spec.matchResources.objectSelector: Required value`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := validBinding()
			tc.mutate(b)
			var errs []error
			for _, e := range ValidateBinding(b) {
				errs = append(errs, e)
			}
			got := errorStrings(errs)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestValidateNil(t *testing.T) {
	if len(ValidatePolicy(nil)) == 0 || len(ValidateBinding(nil)) == 0 {
		t.Fatal("nil objects must not validate")
	}
}
