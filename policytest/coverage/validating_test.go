package coverage

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/manifest"
)

// vapSuite is a ValidatingAdmissionPolicy with each kind of expression:
// a used and an unused variable, a matchCondition, two validations (the
// first with a messageExpression), an auditAnnotation, and a binding that
// selects nothing.
const vapSuite = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-replicas}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  matchConditions:
  - {name: not-system, expression: "!object.metadata.name.startsWith('system-')"}
  variables:
  - {name: max, expression: "3"}
  - {name: unused, expression: "1"}
  validations:
  - expression: object.spec.replicas <= variables.max
    messageExpression: "'replicas ' + string(object.spec.replicas)"
  - expression: object.spec.replicas > 0
  auditAnnotations:
  - {key: replicas, valueExpression: string(object.spec.replicas)}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: deny}
spec: {policyName: max-replicas, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: dev-only}
spec:
  policyName: max-replicas
  validationActions: [Warn]
  matchResources: {namespaceSelector: {matchLabels: {env: dev}}}
`

func deploymentNamed(name string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "prod"},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}}},
			},
		},
	}}
}

// TestValidatingCoverage: the ValidatingAdmissionPolicies' coverage from
// an observed compiler and the validating stage's results: validations
// seen true and false, messageExpressions and auditAnnotations evaluated,
// the variables the lazy evaluation ran, the matchConditions' outcomes,
// the bindings that ran the validations.
func TestValidatingCoverage(t *testing.T) {
	set, err := manifest.Parse("vap.yaml", []byte(vapSuite))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := cluster.New(nil, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	policies, bindings := set.ValidatingAPIObjects()
	r := NewRecorder()
	ev, err := sim.ValidatingPolicies(r.ValidatingCompiler(), policies, bindings)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []*unstructured.Unstructured{deploymentNamed("web", 5), deploymentNamed("api", 2), deploymentNamed("system-x", 9)} {
		d, err := sim.DecodeSteps(cluster.Request{Object: obj})
		if err != nil {
			t.Fatal(err)
		}
		adm, err := sim.Admit(context.Background(), cluster.Chain{ValidatingPolicies: ev}, d)
		if err != nil {
			t.Fatal(err)
		}
		r.RecordResult(adm.Validation)
	}
	rep := r.ValidatingReport(policies, bindings)
	if len(rep.Policies) != 1 {
		t.Fatalf("%d policies", len(rep.Policies))
	}
	p := rep.Policies[0]
	want := ValidatingCounts{Validations: c(3, 4), MessageExpressions: c(1, 1), AuditAnnotations: c(1, 1),
		Bindings: c(1, 2), MatchConditions: c(2, 2), Variables: c(1, 2), Total: c(9, 12)}
	if p.Counts != want {
		t.Errorf("counts\n got %+v\nwant %+v", p.Counts, want)
	}
	states := map[string]string{}
	for _, e := range p.Expressions {
		states[e.Path] = e.State
	}
	for path, state := range map[string]string{
		"spec.variables[0].expression":             StateCovered,
		"spec.variables[1].expression":             StateUncovered,
		"spec.matchConditions[0].expression":       StateCovered,
		"spec.validations[0].expression":           StateCovered,
		"spec.validations[1].expression":           StatePartial,
		"spec.validations[0].messageExpression":    StateCovered,
		"spec.auditAnnotations[0].valueExpression": StateCovered,
	} {
		if states[path] != state {
			t.Errorf("%s: %s, want %s", path, states[path], state)
		}
	}
	for _, b := range p.Bindings {
		if want := map[string]string{"deny": StateCovered, "dev-only": StateUncovered}[b.Name]; b.State != want {
			t.Errorf("binding %s: %s, want %s", b.Name, b.State, want)
		}
	}

	// The report of both kinds: the mutating table is left out when
	// there is no MutatingAdmissionPolicy; the total counts both.
	full := r.Report(nil, nil)
	full.Validating = rep
	var buf bytes.Buffer
	if err := full.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	wantTable := `VALIDATINGPOLICY  VALIDATIONS  MESSAGES  AUDITANNOTATIONS  BINDINGS  MATCHCONDITIONS  VARIABLES  TOTAL
max-replicas      3/4          1/1       1/1               1/2       2/2              1/2        75.0%
TOTAL             3/4          1/1       1/1               1/2       2/2              1/2        75.0%
`
	if buf.String() != wantTable {
		t.Errorf("table\n%s\nwant\n%s", buf.String(), wantTable)
	}
	if full.Percent() != 75 {
		t.Errorf("percent %v", full.Percent())
	}
	buf.Reset()
	if err := full.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"validating": {`) || !strings.Contains(buf.String(), `"kind": "auditAnnotation"`) {
		t.Errorf("JSON lacks the validating report:\n%s", buf.String())
	}
	buf.Reset()
	if err := full.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<td><a href="#validating-max-replicas">max-replicas</a></td><td>3/4</td><td>1/1</td><td>1/1</td><td>1/2</td><td>2/2</td><td>1/2</td><td>75.0%</td>`,
		`<pre class="source partial" data-key="max-replicas/spec.validations[1].expression">object.spec.replicas &gt; 0</pre>`,
		`<li class="binding uncovered">dev-only: validations ran 0 times, selected 0 times</li>`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("HTML lacks %s:\n%s", want, buf.String())
		}
	}
}
