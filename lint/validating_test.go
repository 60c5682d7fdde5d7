package lint

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
)

// widgetCRD serves example.com/v1 Widget with spec.size (an integer).
const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`

func vapFor(group, resource, validations string) string {
	return `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: p
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["` + group + `"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["` + resource + `"]
  validations:
` + validations
}

// The type checking kube-controller-manager runs on a
// ValidatingAdmissionPolicy (k8s.io/apiserver's TypeChecker) warns about
// reads the kind's schema does not declare and type errors, for built-in
// kinds and loaded CRDs, and says nothing where it cannot tell the kind.
func TestValidatingPolicyTypeChecking(t *testing.T) {
	cases := []struct {
		name    string
		policy  string
		objects string
		want    []string // field: message, in order
	}{
		{name: "an undeclared field of a Deployment",
			policy: vapFor("apps", "deployments", "  - expression: object.spec.replicaz <= 5\n"),
			want: []string{"spec.validations[0].expression: kube-controller-manager's type checking warns (status.typeChecking.expressionWarnings): apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicaz'\n" +
				" | object.spec.replicaz <= 5\n | ...........^"}},
		{name: "a messageExpression adding a string and an int",
			policy: vapFor("apps", "deployments", "  - expression: object.spec.replicas <= 5\n    messageExpression: \"'too many: ' + object.spec.replicas\"\n"),
			want: []string{"spec.validations[0].messageExpression: kube-controller-manager's type checking warns (status.typeChecking.expressionWarnings): apps/v1, Kind=Deployment: ERROR: <input>:1:14: found no matching overload for '_+_' applied to '(string, int)'\n" +
				" | 'too many: ' + object.spec.replicas\n | .............^"}},
		{name: "a CRD's field read with the wrong type",
			policy:  vapFor("example.com", "widgets", "  - expression: object.spec.size == 'big'\n"),
			objects: widgetCRD,
			want: []string{"spec.validations[0].expression: kube-controller-manager's type checking warns (status.typeChecking.expressionWarnings): example.com/v1, Kind=Widget: ERROR: <input>:1:18: found no matching overload for '_==_' applied to '(int, string)'\n" +
				" | object.spec.size == 'big'\n | .................^"}},
		{name: "a CRD's declared field is clean",
			policy:  vapFor("example.com", "widgets", "  - expression: object.spec.size < 10\n"),
			objects: widgetCRD},
		{name: "a CRD not loaded: no schema, no warning",
			policy: vapFor("example.com", "widgets", "  - expression: object.spec.size == 'big'\n")},
		{name: "params typed by a built-in paramKind",
			policy: strings.Replace(vapFor("apps", "deployments", "  - expression: object.spec.replicas <= params.data.max\n"), "spec:\n", "spec:\n  paramKind: {apiVersion: v1, kind: ConfigMap}\n", 1),
			want: []string{"spec.validations[0].expression: kube-controller-manager's type checking warns (status.typeChecking.expressionWarnings): apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_<=_' applied to '(int, string)'\n" +
				" | object.spec.replicas <= params.data.max\n | .....................^"}},
		{name: "a wildcard names no kind to check",
			policy: vapFor("apps", "*", "  - expression: object.spec.replicaz <= 5\n")},
		{name: "a clean Pod policy",
			policy: vapFor("", "pods", "  - expression: object.spec.containers.all(c, c.image.startsWith('registry.example.com/'))\n")},
		// Upstream's own: a Quantity is oneOf string/number in the OpenAPI
		// definitions, which no declaration type holds, so a map of
		// Quantities is left out of the Pod's type (checked against
		// upstream's DefinitionsSchemaResolver over
		// k8s.io/kubernetes/pkg/generated/openapi).
		{name: "resources.limits, a map of Quantities, is not in the checker's Pod type",
			policy: vapFor("", "pods", "  - expression: object.spec.containers.all(c, has(c.resources.limits))\n"),
			want: []string{"spec.validations[0].expression: kube-controller-manager's type checking warns (status.typeChecking.expressionWarnings): /v1, Kind=Pod: ERROR: <input>:1:34: undefined field 'limits'\n" +
				" | object.spec.containers.all(c, has(c.resources.limits))\n | .................................^"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, err := manifest.Parse("p.yaml", []byte(tc.policy))
			if err != nil || len(set.ValidatingPolicies) != 1 {
				t.Fatalf("loading the policy: %v", err)
			}
			var objects []manifest.Object
			if tc.objects != "" {
				res, err := manifest.Parse("crd.yaml", []byte(tc.objects))
				if err != nil {
					t.Fatal(err)
				}
				objects = res.Objects
			}
			var got []string
			for _, f := range NewChecker(objects, false).ValidatingPolicy(nil, set.ValidatingPolicies[0]) {
				if f.Severity != Warning || f.Check != "type-checking" || f.Kind != "ValidatingAdmissionPolicy" || f.CELLine != 1 {
					t.Errorf("finding %+v", f)
				}
				got = append(got, f.Field+": "+f.Message)
			}
			if strings.Join(got, "\n---\n") != strings.Join(tc.want, "\n---\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n---\n"), strings.Join(tc.want, "\n---\n"))
			}
		})
	}
}

// The read-unguarded-optional check runs on a ValidatingAdmissionPolicy's
// expressions, each finding named by its own field; a has() in a
// matchCondition guards them all.
func TestValidatingPolicyOptionalReads(t *testing.T) {
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	unguarded := vapFor("", "pods", "  - expression: object.spec.initContainers.all(c, c.image != '')\n    messageExpression: \"'labels: ' + string(size(object.metadata.labels))\"\n")
	guarded := strings.Replace(unguarded, "  validations:\n", "  matchConditions:\n  - name: has-init\n    expression: has(object.spec.initContainers) && has(object.metadata.labels)\n  validations:\n", 1)
	for _, tc := range []struct {
		name, policy string
		want         []string
	}{
		{"unguarded", unguarded, []string{
			"spec.validations[0].expression 1:12: object.spec.initContainers is optional in the schema of v1 Pod and often absent: on objects without it the read fails with \"no such key: initContainers\"; guard it with has(object.spec.initContainers) or read object.spec.?initContainers.orValue([])",
			"spec.validations[0].messageExpression 1:41: object.metadata.labels is optional in the schema of v1 Pod and often absent: on objects without it the read fails with \"no such key: labels\"; guard it with has(object.metadata.labels) or read object.metadata.?labels.orValue({})",
		}},
		{"guarded by a matchCondition", guarded, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := manifest.Parse("p.yaml", []byte(tc.policy))
			if err != nil || len(set.ValidatingPolicies) != 1 {
				t.Fatalf("loading the policy: %v", err)
			}
			var got []string
			for _, f := range NewChecker(nil, false).ValidatingPolicy(comp, set.ValidatingPolicies[0]) {
				if f.Check != "read-unguarded-optional" || f.Kind != "ValidatingAdmissionPolicy" || f.Severity != Warning {
					t.Errorf("finding %+v", f)
				}
				got = append(got, fmt.Sprintf("%s %d:%d: %s", f.Field, f.CELLine, f.CELColumn, f.Message))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// The policy-set check of unserved resources covers ValidatingAdmissionPolicies
// and their bindings.
func TestValidatingPolicyUnservedResources(t *testing.T) {
	doc := vapFor("apps", "deployment", "  - expression: 'true'\n") + `---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: b}
spec:
  policyName: p
  validationActions: [Deny]
  matchResources:
    resourceRules:
    - {apiGroups: ["apps"], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
`
	set, err := manifest.Parse("p.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range NewChecker(nil, false).Set(set) {
		got = append(got, f.Kind+" "+f.Field+": "+f.Message)
	}
	want := []string{
		`ValidatingAdmissionPolicy spec.matchConstraints.resourceRules[0].resources[0]: Kubernetes v1.37.1 serves no resource "deployment" in group apps version v1; the rule never matches it; did you mean deployments in apps/v1?`,
		`ValidatingAdmissionPolicyBinding spec.matchResources.resourceRules[0].resources[0]: Kubernetes v1.37.1 serves no resource "pods" in group apps version v1; the rule never matches it; did you mean pods in core/v1 (apiGroups: [""])?`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
