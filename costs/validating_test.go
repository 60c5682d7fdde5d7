package costs

import (
	"reflect"
	"testing"

	"github.com/mutatis-dev/mutatis/manifest"
)

const podImagesVAP = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: pod-images
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods"]
  matchConditions:
  - name: not-system
    expression: "!request.namespace.startsWith('kube-')"
  variables:
  - name: images
    expression: object.spec.containers.map(c, c.image)
  - name: unused
    expression: object.metadata.name
  validations:
  - expression: variables.images.all(i, object.spec.containers.exists(c, c.image == i))
    messageExpression: "'images: ' + variables.images.join(', ')"
  - expression: size(object.metadata.name) < 64
  auditAnnotations:
  - key: count
    valueExpression: string(size(object.spec.containers))
`

// A ValidatingAdmissionPolicy's expressions are estimated as a
// MutatingAdmissionPolicy's are (targets, points, formulas), named by their
// own fields and kinds, and summed into the plugin's budgets: the
// matchConditions', the validations' (with the messageExpressions and the
// variables they evaluate) and the auditAnnotations'.
func TestValidatingPolicyCosts(t *testing.T) {
	set, err := manifest.Parse("vap.yaml", []byte(podImagesVAP))
	if err != nil {
		t.Fatal(err)
	}
	ix, _ := IndexCRDs(nil)
	r, err := AnalyzeWith(nil, ix, Options{Validating: set.ValidatingPolicies})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Policies) != 0 || len(r.ValidatingPolicies) != 1 {
		t.Fatalf("policies %d, validating %d", len(r.Policies), len(r.ValidatingPolicies))
	}
	if r.Limits.Validations != 10_000_000 || r.Limits.AuditAnnotations != 10_000_000 {
		t.Errorf("limits %+v", r.Limits)
	}
	p := r.ValidatingPolicies[0]
	var got []string
	for _, e := range p.Expressions {
		got = append(got, e.Kind+" "+e.Path+" "+e.Name)
		if e.Target != "Pod v1" || e.Limit != 1_000_000 || e.Status != StatusOK {
			t.Errorf("%s: target %q limit %d status %s", e.Path, e.Target, e.Limit, e.Status)
		}
	}
	want := []string{
		"variable spec.variables[0].expression images",
		"variable spec.variables[1].expression unused",
		"matchCondition spec.matchConditions[0].expression not-system",
		"validation spec.validations[0].expression ",
		"messageExpression spec.validations[0].messageExpression ",
		"validation spec.validations[1].expression ",
		"auditAnnotation spec.auditAnnotations[0].valueExpression ",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("expressions\n%q\nwant\n%q", got, want)
	}
	budgets := map[string][]string{}
	for _, b := range p.Budgets {
		budgets[b.Name] = b.Expressions
		if b.Status != StatusOK {
			t.Errorf("%s: %s", b.Name, b.Status)
		}
	}
	wantBudgets := map[string][]string{
		"spec.matchConditions":  {"spec.matchConditions[0].expression"},
		"spec.validations":      {"spec.validations[0].expression", "spec.validations[0].messageExpression", "spec.validations[1].expression", "variables.images"},
		"spec.auditAnnotations": {"spec.auditAnnotations[0].valueExpression"},
	}
	if !reflect.DeepEqual(budgets, wantBudgets) {
		t.Errorf("budgets\n%q\nwant\n%q", budgets, wantBudgets)
	}
	for _, b := range p.Budgets {
		if b.Name == "spec.validations" && (b.Limit != 10_000_000 || b.Formula == nil || b.Formula.Text != "21 + 18.4·n(object.spec.containers) + 6·n(object.spec.containers)^2") {
			t.Errorf("spec.validations: limit %d formula %+v", b.Limit, b.Formula)
		}
		if b.Name == "spec.matchConditions" && b.Limit != 2_500_000 {
			t.Errorf("spec.matchConditions: limit %d", b.Limit)
		}
	}
	// The quadratic validation is flagged as a mutation's would be.
	for _, e := range p.Expressions {
		if e.Path == "spec.validations[0].expression" && len(e.SuperLinear) != 1 {
			t.Errorf("super-linear terms %+v", e.SuperLinear)
		}
	}
}
