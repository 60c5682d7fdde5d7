package validating_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/validating"
)

// vap is a ValidatingAdmissionPolicy on Deployments (CREATE, UPDATE,
// DELETE) with spec, and its binding with bindingSpec.
func vap(name, spec, bindingSpec string) string {
	return vapOn(name, "    resourceRules:\n    - apiGroups: [apps]\n      apiVersions: [v1]\n      operations: [CREATE, UPDATE, DELETE]\n      resources: [deployments]", spec, bindingSpec)
}

// vapOn is a ValidatingAdmissionPolicy with matchConstraints and spec, and
// its binding with bindingSpec.
func vapOn(name, matchConstraints, spec, bindingSpec string) string {
	return `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: ` + name + `
spec:
  matchConstraints:
` + matchConstraints + `
` + spec + `
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: ` + name + `-binding
spec:
  policyName: ` + name + `
` + bindingSpec + "\n---\n"
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: prod
  labels: {app: web}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
`

const resources = `apiVersion: v1
kind: Namespace
metadata:
  name: prod
  labels: {env: prod}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: limits
  namespace: prod
  labels: {policy: replicas}
data: {maxReplicas: "3"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: limits-strict
  namespace: prod
  labels: {policy: replicas}
data: {maxReplicas: "2"}
`

type want struct {
	code     int32
	reason   string
	message  string
	warnings []string
	audit    map[string]string
}

func TestValidatingAdmissionPolicies(t *testing.T) {
	for _, tc := range []struct {
		name      string
		policies  string
		object    string
		oldObject string
		operation admission.Operation
		want      want
		// skipped is the Skip of the first record, when it is not
		// NotSkipped.
		skipped chain.Skip
	}{
		{name: "Deny with the default reason is a 422 naming the expression",
			policies: vap("max-replicas", "  validations:\n  - expression: object.spec.replicas <= 3", "  validationActions: [Deny]"),
			object:   deployment,
			want: want{code: 422, reason: "Invalid",
				message: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 3`}},
		{name: "reason Forbidden is a 403 with the message",
			policies: vap("max-replicas", "  validations:\n  - expression: object.spec.replicas <= 3\n    message: too many replicas\n    reason: Forbidden", "  validationActions: [Deny]"),
			object:   deployment,
			want: want{code: 403, reason: "Forbidden",
				message: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: too many replicas`}},
		{name: "messageExpression and variables",
			policies: vap("max-replicas", `  variables:
  - name: max
    expression: "3"
  validations:
  - expression: object.spec.replicas <= variables.max
    messageExpression: "'replicas ' + string(object.spec.replicas) + ' > ' + string(variables.max)"`, "  validationActions: [Deny]"),
			object: deployment,
			want: want{code: 422, reason: "Invalid",
				message: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: replicas 5 > 3`}},
		{name: "Warn is a warning, and the request is admitted",
			policies: vap("max-replicas", "  validations:\n  - expression: object.spec.replicas <= 3\n    message: too many replicas", "  validationActions: [Warn]"),
			object:   deployment,
			want:     want{warnings: []string{"Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding': too many replicas"}}},
		{name: "Audit is the validation_failure audit annotation",
			policies: vap("max-replicas", "  validations:\n  - expression: object.spec.replicas <= 3\n    message: too many replicas", "  validationActions: [Audit, Warn]"),
			object:   deployment,
			want: want{
				warnings: []string{"Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding': too many replicas"},
				audit:    map[string]string{validating.ValidationFailureAnnotation: `[{"message":"too many replicas","policy":"max-replicas","binding":"max-replicas-binding","expressionIndex":0,"validationActions":["Audit","Warn"]}]`}}},
		{name: "auditAnnotations are published as POLICY/KEY",
			policies: vap("replicas", "  auditAnnotations:\n  - key: count\n    valueExpression: \"'replicas: ' + string(object.spec.replicas)\"", "  validationActions: [Audit]"),
			object:   deployment,
			want:     want{audit: map[string]string{"replicas/count": "replicas: 5"}}},
		{name: "params by name",
			policies: vap("max-replicas", `  paramKind: {apiVersion: v1, kind: ConfigMap}
  validations:
  - expression: object.spec.replicas <= int(params.data.maxReplicas)
    messageExpression: "params.kind + ' ' + params.metadata.name + ' allows ' + params.data.maxReplicas"`, "  validationActions: [Deny]\n  paramRef: {name: limits, parameterNotFoundAction: Deny}"),
			object: deployment,
			want: want{code: 422, reason: "Invalid",
				message: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: ConfigMap limits allows 3`}},
		{name: "params by selector: one evaluation per param, each warns",
			policies: vap("max-replicas", `  paramKind: {apiVersion: v1, kind: ConfigMap}
  validations:
  - expression: object.spec.replicas <= int(params.data.maxReplicas)
    messageExpression: "params.metadata.name + ' allows ' + params.data.maxReplicas"`, "  validationActions: [Warn]\n  paramRef: {selector: {matchLabels: {policy: replicas}}, parameterNotFoundAction: Deny}"),
			object: deployment,
			want: want{warnings: []string{
				"Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding': limits allows 3",
				"Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding': limits-strict allows 2",
			}}},
		{name: "parameterNotFoundAction Deny refuses",
			policies: vap("max-replicas", "  paramKind: {apiVersion: v1, kind: ConfigMap}\n  validations:\n  - expression: \"true\"", "  validationActions: [Deny]\n  paramRef: {name: missing, parameterNotFoundAction: Deny}"),
			object:   deployment,
			want: want{code: 422, reason: "Invalid",
				message: "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
			skipped: chain.SkipParams},
		{name: "parameterNotFoundAction Allow skips the binding",
			policies: vap("max-replicas", "  paramKind: {apiVersion: v1, kind: ConfigMap}\n  validations:\n  - expression: \"false\"", "  validationActions: [Deny]\n  paramRef: {name: missing, parameterNotFoundAction: Allow}"),
			object:   deployment,
			skipped:  chain.SkipNoParams},
		{name: "a false matchCondition skips the policy",
			policies: vap("max-replicas", "  matchConditions:\n  - name: big\n    expression: object.spec.replicas > 10\n  validations:\n  - expression: \"false\"", "  validationActions: [Deny]"),
			object:   deployment,
			skipped:  chain.SkipMatchConditionFalse},
		{name: "an expression error under failurePolicy Fail refuses",
			policies: vap("max-replicas", "  validations:\n  - expression: object.spec.missing.replicas > 1", "  validationActions: [Deny]"),
			object:   deployment,
			want: want{code: 422, reason: "Invalid",
				message: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: expression 'object.spec.missing.replicas > 1' resulted in error: no such key: missing`}},
		{name: "an expression error under failurePolicy Ignore admits",
			policies: vap("max-replicas", "  failurePolicy: Ignore\n  validations:\n  - expression: object.spec.missing.replicas > 1", "  validationActions: [Deny]"),
			object:   deployment},
		{name: "UPDATE sees oldObject",
			policies: vap("no-scale-down", "  validations:\n  - expression: request.operation != 'UPDATE' || object.spec.replicas >= oldObject.spec.replicas\n    message: no scaling down", "  validationActions: [Deny]"),
			object:   strings.Replace(deployment, "replicas: 5", "replicas: 2", 1), oldObject: deployment,
			want: want{code: 422, reason: "Invalid",
				message: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'no-scale-down' with binding 'no-scale-down-binding' denied request: no scaling down`}},
		{name: "DELETE: object is null, oldObject is set",
			policies:  vap("no-delete-prod", "  validations:\n  - expression: request.operation != 'DELETE' || (object == null && oldObject.metadata.labels.app != 'web')\n    messageExpression: \"'cannot delete ' + oldObject.metadata.name + ' in ' + namespaceObject.metadata.labels.env\"", "  validationActions: [Deny]"),
			oldObject: deployment, operation: admission.Delete,
			want: want{code: 422, reason: "Invalid",
				message: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'no-delete-prod' with binding 'no-delete-prod-binding' denied request: cannot delete web in prod`}},
		// "request" is bound only for policies whose expressions refer to
		// it: in a variable, a matchCondition or an auditAnnotation alone.
		{name: "request in a variable only",
			policies: vap("no-create", "  variables:\n  - name: op\n    expression: request.operation\n  validations:\n  - expression: variables.op != 'CREATE'\n    message: no create", "  validationActions: [Deny]"),
			object:   deployment,
			want: want{code: 422, reason: "Invalid",
				message: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'no-create' with binding 'no-create-binding' denied request: no create`}},
		{name: "request in a matchCondition only",
			policies: vap("updates", "  matchConditions:\n  - name: updates\n    expression: request.operation == 'UPDATE'\n  validations:\n  - expression: \"false\"", "  validationActions: [Deny]"),
			object:   deployment,
			skipped:  chain.SkipMatchConditionFalse},
		{name: "request in an auditAnnotation only",
			policies: vap("ops", "  validations:\n  - expression: \"true\"\n  auditAnnotations:\n  - key: op\n    valueExpression: request.operation + ' ' + request.name", "  validationActions: [Deny]"),
			object:   deployment,
			want:     want{audit: map[string]string{"ops/op": "CREATE web"}}},
		// namespaceObject and the authorizer likewise.
		{name: "namespaceObject in a variable only",
			policies: vap("env", "  variables:\n  - name: env\n    expression: namespaceObject.metadata.labels.env\n  validations:\n  - expression: variables.env != 'prod'\n    messageExpression: \"'not in ' + variables.env\"", "  validationActions: [Deny]"),
			object:   deployment,
			want: want{code: 422, reason: "Invalid",
				message: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'env' with binding 'env-binding' denied request: not in prod`}},
		{name: "authorizer.requestResource alone",
			policies: vap("may-delete", "  validations:\n  - expression: authorizer.requestResource.check('delete').allowed()\n    message: not allowed", "  validationActions: [Deny]"),
			object:   deployment},
		{name: "the binding's matchResources do not select the request",
			policies: vap("max-replicas", "  validations:\n  - expression: \"false\"", "  validationActions: [Deny]\n  matchResources:\n    namespaceSelector: {matchLabels: {env: dev}}"),
			object:   deployment,
			skipped:  chain.SkipBindingNotSelected},
		{name: "the authorizer: the default user may do anything",
			policies: vap("admins", "  validations:\n  - expression: authorizer.group('apps').resource('deployments').namespace('prod').check('delete').allowed()\n    message: not allowed", "  validationActions: [Deny]"),
			object:   deployment},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			sim, policies, bindings := policySet(t, tc.policies)
			// The same decisions whether the evaluations are observed
			// (coverage) or not.
			for _, comp := range []*validating.Compiler{nil, validating.NewObservedCompiler(&observations{})} {
				ev := evaluator(t, sim, comp, policies, bindings)
				checkValidation(t, ctx, sim, ev, tc.object, tc.oldObject, tc.operation, tc.want, tc.skipped)
			}
		})
	}
}

// checkValidation admits the request of object (oldObject, operation)
// through ev alone and checks its validating stage's result and first
// record's skip.
func checkValidation(t *testing.T, ctx context.Context, sim *cluster.Cluster, ev *validating.Evaluator, objectYAML, oldObjectYAML string, operation admission.Operation, expect want, skipped chain.Skip) {
	t.Helper()
	res := admit(t, ctx, sim, ev, objectYAML, oldObjectYAML, operation)
	var got want
	if res.Denied != nil {
		got.code, got.reason, got.message = res.Denied.ErrStatus.Code, string(res.Denied.ErrStatus.Reason), res.Denied.ErrStatus.Message
		if res.DeniedBy != validating.PluginName {
			t.Errorf("DeniedBy %q", res.DeniedBy)
		}
	}
	got.warnings, got.audit = res.Warnings, res.AuditAnnotations
	if !reflect.DeepEqual(got, expect) {
		t.Errorf("got  %+v\nwant %+v", got, expect)
	}
	if len(res.Validations) == 0 {
		t.Fatal("no record")
	}
	if s := res.Validations[0].Skip; s != skipped {
		t.Errorf("record %+v, want skip %v", res.Validations[0], skipped)
	}
}

// admit admits the request of object (oldObject, operation) through ev
// alone and returns its validating stage's result.
func admit(t *testing.T, ctx context.Context, sim *cluster.Cluster, ev *validating.Evaluator, objectYAML, oldObjectYAML string, operation admission.Operation) chain.Result {
	t.Helper()
	req := cluster.Request{Object: object(t, objectYAML), OldObject: object(t, oldObjectYAML), Operation: operation}
	d, err := sim.DecodeSteps(req)
	if err != nil {
		t.Fatal(err)
	}
	adm, err := sim.Admit(ctx, cluster.Chain{ValidatingPolicies: ev}, d)
	if err != nil {
		t.Fatal(err)
	}
	if adm.Invalid != nil {
		t.Fatalf("invalid: %v", adm.Invalid)
	}
	return adm.Validation
}

// newCluster is a cluster of resources.
// policySet is a cluster of the test's resources and the
// ValidatingAdmissionPolicies and bindings of policiesYAML.
func policySet(t *testing.T, policiesYAML string) (*cluster.Cluster, []*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	set, err := manifest.Parse("policies.yaml", []byte(policiesYAML))
	if err != nil {
		t.Fatal(err)
	}
	policies, bindings := set.ValidatingAPIObjects()
	return newCluster(t), policies, bindings
}

// evaluator is sim's validating stage of policies and bindings, compiled
// by comp (nil: the default compiler).
func evaluator(t *testing.T, sim *cluster.Cluster, comp *validating.Compiler, policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) *validating.Evaluator {
	t.Helper()
	ev, err := sim.ValidatingPolicies(comp, policies, bindings)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func newCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	rs, err := manifest.Parse("resources.yaml", []byte(resources))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := cluster.New(rs.Objects, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	if y == "" {
		return nil
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// observations collects what an observed compiler's policies report.
type observations struct {
	mu  sync.Mutex
	got []string
}

func (o *observations) ObserveValidating(ob validating.Observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	value := fmt.Sprint(ob.Value)
	if ob.Err != nil {
		value = "error"
	}
	o.got = append(o.got, fmt.Sprintf("%s %s %s=%s", ob.Policy, ob.Kind, ob.Path, value))
}

// TestObservedCompiler: an observed compiler's policies report each
// expression the evaluation (upstream's Validator's) evaluated and its value: variables only
// when used (lazily, once per evaluation), the matchConditions, the
// validations, the messageExpressions (upstream's Validator evaluates them
// all, whatever the validations decided), the auditAnnotations; a false
// matchCondition stops there.
func TestObservedCompiler(t *testing.T) {
	ctx := context.Background()
	policies := vap("max-replicas", `  matchConditions:
  - name: not-system
    expression: "!object.metadata.name.startsWith('system-')"
  - name: labelled
    expression: has(object.metadata.labels)
  variables:
  - name: max
    expression: "3"
  - name: unused
    expression: "1"
  validations:
  - expression: object.spec.replicas <= variables.max
    messageExpression: "'replicas ' + string(object.spec.replicas)"
  - expression: object.spec.replicas > 0
    messageExpression: "'none'"
  auditAnnotations:
  - key: replicas
    valueExpression: string(object.spec.replicas)`, "  validationActions: [Warn]")
	set, err := manifest.Parse("policies.yaml", []byte(policies))
	if err != nil {
		t.Fatal(err)
	}
	sim := newCluster(t)
	ps, bs := set.ValidatingAPIObjects()
	for _, tc := range []struct {
		name, object string
		want         []string
	}{
		{"evaluated", deployment, []string{
			"max-replicas matchCondition spec.matchConditions[0].expression=true",
			"max-replicas matchCondition spec.matchConditions[1].expression=true",
			"max-replicas variable spec.variables[0].expression=3",
			"max-replicas validation spec.validations[0].expression=false",
			"max-replicas validation spec.validations[1].expression=true",
			"max-replicas messageExpression spec.validations[0].messageExpression=replicas 5",
			"max-replicas messageExpression spec.validations[1].messageExpression=none",
			"max-replicas auditAnnotation spec.auditAnnotations[0].valueExpression=5",
		}},
		{"matchCondition false", strings.Replace(deployment, "name: web", "name: system-web", 1), []string{
			"max-replicas matchCondition spec.matchConditions[0].expression=false",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &observations{}
			ev, err := sim.ValidatingPolicies(validating.NewObservedCompiler(obs), ps, bs)
			if err != nil {
				t.Fatal(err)
			}
			d, err := sim.DecodeSteps(cluster.Request{Object: object(t, tc.object)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sim.Admit(ctx, cluster.Chain{ValidatingPolicies: ev}, d); err != nil {
				t.Fatal(err)
			}
			sort.Strings(obs.got)
			sort.Strings(tc.want)
			if !reflect.DeepEqual(obs.got, tc.want) {
				t.Errorf("observed\n%s\nwant\n%s", strings.Join(obs.got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestNewEvaluatorFollowsSelectorChanges: the selectors of a policy set
// (the policy's matchConstraints, the binding's matchResources and
// paramRef) are parsed once, when its Evaluator is built, and the
// Evaluator built for an update of a binding's or a policy's selectors is
// what the next admissions match with, an invalid selector included (set
// on the objects: manifest.Parse refuses it, a cluster's API server too,
// but not every policy source validates).
func TestNewEvaluatorFollowsSelectorChanges(t *testing.T) {
	ctx := context.Background()
	sim := newCluster(t)
	sel := func(key, value string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
	}
	const denied = "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: "
	set, err := manifest.Parse("policies.yaml", []byte(vap("max-replicas", `  paramKind: {apiVersion: v1, kind: ConfigMap}
  validations:
  - expression: object.spec.replicas <= int(params.data.maxReplicas)
    message: too many replicas`, "  validationActions: [Deny]\n  matchResources: {}\n  paramRef: {selector: {}, parameterNotFoundAction: Allow}")))
	if err != nil {
		t.Fatal(err)
	}
	comp := validating.NewCompiler()
	for _, step := range []struct {
		name                        string
		namespace, object, paramRef *metav1.LabelSelector
		// want is in the refusal's message ("" admits); skip is the
		// first record's.
		want string
		skip chain.Skip
	}{
		{"binding selects app=web", &metav1.LabelSelector{}, sel("app", "web"), sel("policy", "replicas"), denied + "too many replicas", chain.NotSkipped},
		{"binding updated to app=api", &metav1.LabelSelector{}, sel("app", "api"), sel("policy", "replicas"), "", chain.SkipBindingNotSelected},
		{"binding back to app=web", &metav1.LabelSelector{}, sel("app", "web"), sel("policy", "replicas"), denied + "too many replicas", chain.NotSkipped},
		{"policy updated to another namespace", sel("env", "dev"), sel("app", "web"), sel("policy", "replicas"), "", chain.SkipPolicyNotSelected},
		{"policy updated to the request's namespace", sel("env", "prod"), sel("app", "web"), sel("policy", "replicas"), denied + "too many replicas", chain.NotSkipped},
		{"paramRef updated to select no param", &metav1.LabelSelector{}, sel("app", "web"), sel("policy", "none"), "", chain.SkipNoParams},
		{"binding updated to an invalid selector", &metav1.LabelSelector{}, sel("app", "a b"), sel("policy", "replicas"), denied + "failed to configure binding: ", chain.SkipBindingConfigError},
		{"paramRef updated to an invalid selector", &metav1.LabelSelector{}, sel("app", "web"), sel("policy", "a b"), denied + "failed to configure binding: ", chain.SkipParams},
	} {
		ps, bs := set.ValidatingAPIObjects()
		p, b := ps[0].DeepCopy(), bs[0].DeepCopy()
		p.Spec.MatchConstraints.NamespaceSelector = step.namespace
		b.Spec.MatchResources.ObjectSelector = step.object
		b.Spec.ParamRef.Selector = step.paramRef
		ev, err := sim.ValidatingPolicies(comp, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the parsed selectors serve every admission
			d, err := sim.DecodeSteps(cluster.Request{Object: object(t, deployment)})
			if err != nil {
				t.Fatal(err)
			}
			adm, err := sim.Admit(ctx, cluster.Chain{ValidatingPolicies: ev}, d)
			if err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
			res := adm.Validation
			switch {
			case step.want == "" && res.Denied != nil:
				t.Fatalf("%s: denied: %v", step.name, res.Denied)
			case step.want != "" && (res.Denied == nil || !strings.Contains(res.Denied.Error(), step.want)):
				t.Fatalf("%s: denied = %v, want %q", step.name, res.Denied, step.want)
			}
			if len(res.Validations) == 0 || res.Validations[0].Skip != step.skip {
				t.Fatalf("%s: records %+v, want the first skipped %v", step.name, res.Validations, step.skip)
			}
		}
	}
}

// TestEvaluatorFollowsParamChanges: an Evaluator presents and binds each
// param object once (params.Memo), by the object; a param replaced by a
// changed copy, as informers and the cluster replace them, is what the
// next admission sees, by name and by selector.
func TestEvaluatorFollowsParamChanges(t *testing.T) {
	for _, ref := range []string{"paramRef: {name: limits, parameterNotFoundAction: Deny}", "paramRef: {selector: {matchLabels: {policy: replicas}}, parameterNotFoundAction: Deny}"} {
		t.Run(ref, func(t *testing.T) {
			ctx := context.Background()
			sim, policies, bindings := policySet(t, vap("max-replicas", `  paramKind: {apiVersion: v1, kind: ConfigMap}
  validations:
  - expression: object.spec.replicas <= int(params.data.maxReplicas)
    messageExpression: "params.metadata.name + ' allows ' + params.data.maxReplicas"`, "  validationActions: [Warn]\n  "+ref))
			ev := evaluator(t, sim, nil, policies, bindings)
			warning := func(name, max string) string {
				return fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding': %s allows %s", name, max)
			}
			strict := warning("limits-strict", "2")
			if strings.Contains(ref, "name:") {
				strict = ""
			}
			expect := func(warnings ...string) want {
				var w want
				for _, s := range warnings {
					if s != "" {
						w.warnings = append(w.warnings, s)
					}
				}
				return w
			}
			for range 2 {
				checkValidation(t, ctx, sim, ev, deployment, "", admission.Create, expect(warning("limits", "3"), strict), chain.NotSkipped)
			}
			// limits replaced by a changed copy: maxReplicas 4, then 10.
			for _, max := range []string{"4", "10"} {
				changed := object(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: limits, namespace: prod, labels: {policy: replicas}}\ndata: {maxReplicas: %q}\n", max))
				sim.Params.Put(changed)
				w := warning("limits", max)
				if max == "10" {
					w = ""
				}
				for range 2 {
					checkValidation(t, ctx, sim, ev, deployment, "", admission.Create, expect(w, strict), chain.NotSkipped)
				}
			}
		})
	}
}
