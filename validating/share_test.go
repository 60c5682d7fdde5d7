package validating_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/validating"
)

// bigDeployment is deployment whose container has a 4 MiB argument:
// searching it costs about 4.2e5, so that 23 searches fit the runtime
// budget of 1e7 and 24 do not.
var bigDeployment = strings.Replace(deployment, "        image: nginx:1.27\n", "        image: nginx:1.27\n        args: ["+strings.Repeat("x", 4<<20)+"]\n", 1)

// search is a validation searching bigDeployment's argument for s.
func search(s string) string {
	return fmt.Sprintf("  - expression: \"!object.spec.template.spec.containers[0].args[0].contains('%s')\"\n", s)
}

// derivedSearch is a validation searching bigDeployment's argument with
// indexOf, its messageExpression the index found (derive.go).
const derivedSearch = "  - expression: object.spec.template.spec.containers[0].args[0].indexOf('y') < 0\n" +
	"    messageExpression: \"'found at ' + string(object.spec.template.spec.containers[0].args[0].indexOf('y'))\"\n"

// disjunctionSearch is a validation `A || B` whose B searches
// bigDeployment's argument for s (disjunction.go).
func disjunctionSearch(s string) string {
	return fmt.Sprintf("  - expression: \"object.spec.replicas > 9 || !object.spec.template.spec.containers[0].args[0].contains('%s')\"\n", s)
}

// built is a messageExpression building a string of bigDeployment's
// argument and s.
func built(s string) string {
	return fmt.Sprintf("\"'%s ' + string(size(object.spec.template.spec.containers[0].args[0] + '%s'))\"", s, s)
}

// hpa is a ValidatingAdmissionPolicy on HorizontalPodAutoscalers of
// version (CREATE) with matchPolicy, and its Deny binding.
func hpa(name, version, matchPolicy, spec string) string {
	return vapOn(name, "    matchPolicy: "+matchPolicy+"\n    resourceRules:\n    - apiGroups: [autoscaling]\n      apiVersions: ["+version+"]\n      operations: [CREATE]\n      resources: [horizontalpodautoscalers]",
		spec, "  validationActions: [Deny]")
}

const autoscaler = `apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: prod
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
`

// TestSharedEvaluationsAreEvaluations holds the sharing of an expression's
// evaluation among the policies that hold it (share.go) to evaluating it
// in each: the same admission (refusal, warnings, audit annotations) and
// records (decisions, messages, skips) with sharing on and off, and as
// many results shared as each case says. Each case fails when the sharing
// is made wrong: a result used where its cost does not fit the budget, a
// result used without charging its cost, an expression that refers to
// variables or params shared, a result shared between views of different
// versions.
func TestSharedEvaluationsAreEvaluations(t *testing.T) {
	same := "  matchConditions:\n  - {name: m, expression: object.spec.replicas > 0}\n  validations:\n  - expression: object.spec.replicas <= 3\n    messageExpression: \"'replicas ' + string(object.spec.replicas)\"\n  auditAnnotations:\n  - {key: k, valueExpression: \"'r' + string(object.spec.replicas)\"}"
	var others strings.Builder
	for i := range 22 {
		others.WriteString(search(fmt.Sprintf("z%d", i)))
	}
	for _, tc := range []struct {
		name, policies, object string
		// replays: the results shared; want: a text of the outcome.
		replays int64
		want    string
		// bytes, when set, bounds the bytes an activation's evaluations
		// build (compiler.WithVariableBytesLimit).
		bytes int64
	}{
		{name: "every filter's expression in three policies",
			policies: vap("a", same, "  validationActions: [Deny]") + vap("b", same, "  validationActions: [Warn]") + vap("c", same, "  validationActions: [Audit]"),
			object:   deployment, replays: 8, want: "replicas 5"},
		// b has spent on 22 searches what leaves room for the shared one
		// (charged: 23 searches) and not for its last.
		{name: "a shared result's cost is charged",
			policies: vap("a", "  validations:\n"+search("y"), "  validationActions: [Deny]") +
				vap("b", "  validations:\n"+others.String()+search("y")+search("last"), "  validationActions: [Deny]"),
			object: bigDeployment, replays: 1, want: "running out of cost budget"},
		// b has spent on 23 searches what leaves no room for the shared
		// one: it is evaluated, for upstream's error.
		{name: "a shared result that does not fit the budget left",
			policies: vap("a", "  validations:\n"+search("y"), "  validationActions: [Deny]") +
				vap("b", "  validations:\n"+others.String()+search("z22")+search("y"), "  validationActions: [Deny]"),
			object: bigDeployment, replays: 0, want: "running out of cost budget"},
		{name: "the same text over variables of other values",
			policies: vap("a", "  variables:\n  - {name: v, expression: '1'}\n  validations:\n  - expression: variables.v == 1", "  validationActions: [Deny]") +
				vap("b", "  variables:\n  - {name: v, expression: '2'}\n  validations:\n  - expression: variables.v == 1", "  validationActions: [Deny]"),
			object: deployment, want: "failed expression: variables.v == 1"},
		{name: "the same text over other params",
			policies: vap("a", "  paramKind: {apiVersion: v1, kind: ConfigMap}\n  validations:\n  - expression: params.data.maxReplicas == '3'", "  validationActions: [Deny]\n  paramRef: {name: limits, parameterNotFoundAction: Deny}") +
				vap("b", "  paramKind: {apiVersion: v1, kind: ConfigMap}\n  validations:\n  - expression: params.data.maxReplicas == '3'", "  validationActions: [Deny]\n  paramRef: {name: limits-strict, parameterNotFoundAction: Deny}"),
			object: deployment, want: "failed expression: params.data.maxReplicas == '3'"},
		// One policy, two params: the validation that does not read
		// params is evaluated for the first.
		{name: "one policy, two params",
			policies: vap("a", "  paramKind: {apiVersion: v1, kind: ConfigMap}\n  validations:\n  - expression: object.spec.replicas <= 3\n  - expression: object.spec.replicas <= int(params.data.maxReplicas)\n    messageExpression: \"'at most ' + params.data.maxReplicas\"", "  validationActions: [Warn]\n  paramRef: {selector: {matchLabels: {policy: replicas}}, parameterNotFoundAction: Deny}"),
			object:   deployment, replays: 1, want: "at most 2"},
		// The validation and its messageExpression made from one
		// evaluation of string(X) (derive.go): two results made.
		{name: "a validation made from its messageExpression's sub-expression",
			policies: vap("a", "  validations:\n  - expression: object.spec.template.spec.containers.size() <= 0\n    messageExpression: \"'at most none, not ' + string(object.spec.template.spec.containers.size())\"\n  - expression: 1 != size(object.spec.template.spec.containers)\n    messageExpression: \"'not ' + string(size(object.spec.template.spec.containers))\"", "  validationActions: [Warn]"),
			object:   deployment, replays: 4, want: "at most none, not 1"},
		// b has spent on 22 searches what leaves room for its made
		// validation (charged: X's search and the comparison) and not for
		// the last search.
		{name: "a made validation's cost is charged",
			policies: vap("b", "  validations:\n"+others.String()+derivedSearch+search("last"), "  validationActions: [Deny]"),
			object:   bigDeployment, replays: 1, want: "running out of cost budget"},
		// b has spent on 23 searches what leaves no room for the made
		// validation: it is evaluated, for upstream's error.
		{name: "a made validation that does not fit the budget left",
			policies: vap("b", "  validations:\n"+others.String()+search("z22")+derivedSearch, "  validationActions: [Deny]"),
			object:   bigDeployment, replays: 0, want: "running out of cost budget"},
		// Three validations `A || B`, A the same: the first evaluated
		// whole, the others made from one evaluation of A and each its B
		// (disjunction.go).
		{name: "validations A || B made from their operands",
			policies: vap("a", "  validations:\n  - expression: '!has(object.metadata.labels) || object.spec.replicas <= 3'", "  validationActions: [Deny]") +
				vap("b", "  validations:\n  - expression: '!has(object.metadata.labels) || object.spec.replicas <= 9'", "  validationActions: [Warn]") +
				vap("c", "  validations:\n  - expression: '!has(object.metadata.labels) || object.spec.replicas <= 4'", "  validationActions: [Audit]"),
			object: deployment, replays: 2, want: "failed expression: !has(object.metadata.labels) || object.spec.replicas <= 3"},
		// b (a evaluated whole before it) has spent on 22 searches what
		// leaves room for its made validation (charged: A and B's search)
		// and not for the last.
		{name: "a made A || B's cost is charged",
			policies: vap("a", "  validations:\n"+disjunctionSearch("y"), "  validationActions: [Deny]") +
				vap("b", "  validations:\n"+others.String()+disjunctionSearch("w")+search("last"), "  validationActions: [Deny]"),
			object: bigDeployment, replays: 1, want: "running out of cost budget"},
		// b has spent on 23 searches what leaves no room for its A || B:
		// it is evaluated, for upstream's error.
		{name: "a made A || B that does not fit the budget left",
			policies: vap("a", "  validations:\n"+disjunctionSearch("y"), "  validationActions: [Deny]") +
				vap("b", "  validations:\n"+others.String()+search("z22")+disjunctionSearch("w"), "  validationActions: [Deny]"),
			object: bigDeployment, replays: 0, want: "running out of cost budget"},
		// b matches the autoscaling/v1 request through autoscaling/v2
		// (matchPolicy Equivalent) and sees the object in v2.
		{name: "the same text over the object in another version",
			policies: hpa("a", "v1", "Exact", "  validations:\n  - expression: object.apiVersion == 'autoscaling/v1'") +
				hpa("b", "v2", "Equivalent", "  validations:\n  - expression: object.apiVersion == 'autoscaling/v1'") +
				hpa("c", "v1", "Exact", "  validations:\n  - expression: object.apiVersion == 'autoscaling/v1'"),
			object: autoscaler, replays: 1, want: "ValidatingAdmissionPolicy 'b'"},
		// The bytes built add up over an activation's evaluations: b's
		// messageExpressions build 8 MiB, past the bound (its second falls
		// back to the message), a's 4 MiB. Nothing is shared under a bound.
		{name: "a bound of the bytes built",
			policies: vap("a", "  validations:\n  - expression: 'false'\n    message: fallback\n    messageExpression: "+built("m"), "  validationActions: [Warn]") +
				vap("b", "  validations:\n  - expression: 'false'\n    message: fallback\n    messageExpression: "+built("n")+"\n  - expression: 'false'\n    message: fallback\n    messageExpression: "+built("m"), "  validationActions: [Warn]"),
			object: bigDeployment, bytes: 6 << 20, want: "'b' with binding 'b-binding': fallback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.bytes > 0 {
				ctx = compiler.WithVariableBytesLimit(ctx, tc.bytes)
			}
			sim, policies, bindings := policySet(t, tc.policies)
			var outcomes [2]string
			for i, on := range []bool{false, true} {
				ev := evaluator(t, sim, nil, policies, bindings)
				replays := validating.Sharing(ev, on)
				outcomes[i] = admitted(t, ctx, sim, ev, tc.object)
				if want := map[bool]int64{false: 0, true: tc.replays}[on]; replays.Load() != want {
					t.Errorf("sharing %v: %d results shared, want %d", on, replays.Load(), want)
				}
			}
			if outcomes[0] != outcomes[1] {
				t.Errorf("evaluated:\n%s\nshared:\n%s", outcomes[0], outcomes[1])
			}
			if !strings.Contains(outcomes[0], tc.want) {
				t.Errorf("the outcome does not hold %q:\n%s", tc.want, outcomes[0])
			}
		})
	}
}

// admitted is what the admission of the CREATE of objectYAML through ev
// alone answered and recorded, as text.
func admitted(t *testing.T, ctx context.Context, sim *cluster.Cluster, ev *validating.Evaluator, objectYAML string) string {
	t.Helper()
	return describe(admit(t, ctx, sim, ev, objectYAML, "", admission.Create))
}

// admittedQuietly is admitted for another goroutine than the test's: its
// failures are in the text.
func admittedQuietly(ctx context.Context, sim *cluster.Cluster, ev *validating.Evaluator, objectYAML string) string {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(objectYAML), &m); err != nil {
		return err.Error()
	}
	d, err := sim.DecodeSteps(cluster.Request{Object: &unstructured.Unstructured{Object: m}, Operation: admission.Create})
	if err != nil {
		return err.Error()
	}
	adm, err := sim.Admit(ctx, cluster.Chain{ValidatingPolicies: ev}, d)
	if err != nil {
		return err.Error()
	}
	return describe(adm.Validation)
}

// describe is a validating stage's result as text: refusal, warnings,
// audit annotations, records without durations.
func describe(res chain.Result) string {
	var b strings.Builder
	if res.Denied != nil {
		fmt.Fprintf(&b, "denied %d %s: %s\n", res.Denied.ErrStatus.Code, res.Denied.ErrStatus.Reason, res.Denied.ErrStatus.Message)
	}
	fmt.Fprintf(&b, "warnings %q\naudit %v\n", res.Warnings, res.AuditAnnotations)
	for _, v := range res.Validations {
		fmt.Fprintf(&b, "%s/%s %s skip=%v err=%v annotations=%v\n", v.Configuration, v.Hook, v.Param, v.Skip, v.Err, v.AuditAnnotations)
		for _, d := range v.Decisions {
			d.Elapsed = 0
			fmt.Fprintf(&b, "  %+v\n", d)
		}
	}
	return b.String()
}

// TestEvaluatorConcurrentAdmissions: admissions running at once through
// one Evaluator (its pooled scratch, its shared results) answer and
// record what each answers alone.
func TestEvaluatorConcurrentAdmissions(t *testing.T) {
	ctx := context.Background()
	same := "  validations:\n  - expression: object.spec.replicas <= 3\n    messageExpression: \"'replicas ' + string(object.spec.replicas)\"\n  auditAnnotations:\n  - {key: k, valueExpression: \"'r' + string(object.spec.replicas)\"}"
	sim, policies, bindings := policySet(t, vap("a", same, "  validationActions: [Deny]")+vap("b", same, "  validationActions: [Warn, Audit]"))
	ev := evaluator(t, sim, nil, policies, bindings)
	objects := make([]string, 6)
	want := make([]string, len(objects))
	for i := range objects {
		objects[i] = strings.Replace(deployment, "replicas: 5", fmt.Sprintf("replicas: %d", i+1), 1)
		want[i] = admitted(t, ctx, sim, ev, objects[i])
	}
	got := make([][]string, 8)
	var wg sync.WaitGroup
	for g := range got {
		wg.Go(func() {
			for i := range objects {
				got[g] = append(got[g], admittedQuietly(ctx, sim, ev, objects[(i+g)%len(objects)]))
			}
		})
	}
	wg.Wait()
	for g := range got {
		for i, o := range got[g] {
			if w := want[(i+g)%len(objects)]; o != w {
				t.Errorf("goroutine %d, object %d:\n%s\nalone:\n%s", g, (i+g)%len(objects), o, w)
			}
		}
	}
}

// TestParamResultsAreEvaluations holds the results kept for a param of the
// expressions over params alone (share.go: a validation, a
// messageExpression, an auditAnnotation) to their evaluation: the same
// admissions, one after the other through one Evaluator (the results kept
// from the first used by the next), with sharing on and off, and results
// used when on.
func TestParamResultsAreEvaluations(t *testing.T) {
	ctx := context.Background()
	spec := "  paramKind: {apiVersion: v1, kind: ConfigMap}\n  validations:\n" +
		"  - expression: object.spec.replicas <= int(params.data.maxReplicas)\n    messageExpression: \"'at most ' + params.data.maxReplicas\"\n" +
		"  - expression: params.data.maxReplicas != '2'\n    messageExpression: \"'not ' + params.data.maxReplicas + ' for ' + object.metadata.name\"\n" +
		"  - expression: \"params.data.maxReplicas.size() > 0\"\n    messageExpression: \"'a max: ' + params.data.maxReplicas\"\n" +
		"  auditAnnotations:\n  - {key: max, valueExpression: \"'max ' + params.data.maxReplicas\"}"
	sim, policies, bindings := policySet(t, vap("a", spec, "  validationActions: [Warn, Audit]\n  paramRef: {selector: {matchLabels: {policy: replicas}}, parameterNotFoundAction: Deny}"))
	var outcomes [2]string
	for i, on := range []bool{false, true} {
		ev := evaluator(t, sim, nil, policies, bindings)
		replays := validating.Sharing(ev, on)
		var b strings.Builder
		for n := range 4 {
			b.WriteString(admitted(t, ctx, sim, ev, strings.Replace(deployment, "replicas: 5", fmt.Sprintf("replicas: %d", n+1), 1)))
		}
		outcomes[i] = b.String()
		if got := replays.Load(); on != (got > 0) {
			t.Errorf("sharing %v: %d results used", on, got)
		}
	}
	if outcomes[0] != outcomes[1] {
		t.Errorf("evaluated:\n%s\nkept:\n%s", outcomes[0], outcomes[1])
	}
	for _, want := range []string{"at most 2", "not 2 for", "max 2"} {
		if !strings.Contains(outcomes[0], want) {
			t.Errorf("the outcome does not hold %q:\n%s", want, outcomes[0])
		}
	}
}
