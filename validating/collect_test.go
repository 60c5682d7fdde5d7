package validating_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/validating"
)

// TestCollectionsAreCollects: a binding's remembered collection of params
// (collect.go) answers what collecting anew answers. One Evaluator admits
// a Deployment twice after each of 120 random changes of the ConfigMaps
// its binding selects (added, replaced by a changed copy, put again
// unchanged, relabelled out of the selector, deleted; at times more than
// maxRememberedParams of them, at times none), and its records (the
// params, their order, skips, decisions), warnings and audit annotations
// are those of a new Evaluator built over the same params, which
// collects them anew; the collection is remembered when it is small
// enough.
func TestCollectionsAreCollects(t *testing.T) {
	ctx := context.Background()
	sim, policies, bindings := policySet(t, vap("max-replicas", `  paramKind: {apiVersion: v1, kind: ConfigMap}
  validations:
  - expression: object.spec.replicas <= int(params.data.maxReplicas)
    messageExpression: "params.metadata.name + ' allows ' + params.data.maxReplicas"
  auditAnnotations:
  - key: team
    valueExpression: "'team ' + params.metadata.name"`, "  validationActions: [Warn, Audit]\n  paramRef: {selector: {matchLabels: {role: limits}}, parameterNotFoundAction: Allow}"))
	comp := validating.NewCompiler()
	ev := evaluator(t, sim, comp, policies, bindings)
	rng := rand.New(rand.NewPCG(29, 6))
	configMap := func(name string, max int, labelled bool) string {
		labels := "{role: limits}"
		if !labelled {
			labels = "{role: other}"
		}
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: prod, labels: %s}\ndata: {maxReplicas: %q}\n", name, labels, fmt.Sprint(max))
	}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	names := map[string]bool{}
	remembered := 0
	for step := range 120 {
		switch op := rng.IntN(10); {
		case step >= 40 && step < 44:
			// Many at once: more than a collection remembers.
			for i := range 25 {
				n := fmt.Sprintf("bulk-%02d-%d", i, step)
				sim.Params.Put(object(t, configMap(n, rng.IntN(8), true)))
				names[n] = true
			}
		case step >= 44 && step < 48:
			for n := range names {
				sim.Params.Delete(gvk, "prod", n)
				delete(names, n)
				if len(names) < 3 {
					break
				}
			}
		case op < 4 || len(names) == 0:
			n := fmt.Sprintf("limits-%d", rng.IntN(12))
			sim.Params.Put(object(t, configMap(n, rng.IntN(8), true)))
			names[n] = true
		case op < 6:
			for n := range names {
				sim.Params.Put(object(t, configMap(n, rng.IntN(8), true)))
				break
			}
		case op < 7:
			// Unchanged: the same objects found again.
		case op < 8:
			for n := range names {
				sim.Params.Put(object(t, configMap(n, rng.IntN(8), false)))
				delete(names, n)
				break
			}
		default:
			for n := range names {
				sim.Params.Delete(gvk, "prod", n)
				delete(names, n)
				break
			}
		}
		fresh := evaluator(t, sim, comp, policies, bindings)
		want := outcome(admit(t, ctx, sim, fresh, deployment, "", admission.Create))
		for round := range 2 {
			got := outcome(admit(t, ctx, sim, ev, deployment, "", admission.Create))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d (%d params), admission %d:\ngot  %+v\nwant %+v", step, len(names), round, got, want)
			}
		}
		n := validating.RememberedParams(ev, "max-replicas", 0)
		switch {
		case len(names) > 0 && len(names) <= 64 && n != len(names):
			t.Fatalf("step %d: %d params remembered, want %d", step, n, len(names))
		case len(names) > 0 && len(names) <= 64:
			remembered++
		}
	}
	if remembered == 0 {
		t.Fatal("no collection remembered")
	}
}

// outcome is what an admission's validating stage answers, without the
// evaluations' durations.
type validationOutcome struct {
	Records     []string
	Warnings    []string
	Annotations map[string]string
	Denied      string
}

func outcome(res chain.Result) validationOutcome {
	var o validationOutcome
	for _, v := range res.Validations {
		r := fmt.Sprintf("%s/%s param %q skip %v audit %v", v.Configuration, v.Hook, v.Param, v.Skip, v.AuditAnnotations)
		for _, d := range v.Decisions {
			r += fmt.Sprintf(" [%v %v %q %v]", d.Action, d.Error, d.Message, d.Reason)
		}
		o.Records = append(o.Records, r)
	}
	o.Warnings = res.Warnings
	o.Annotations = res.AuditAnnotations
	if res.Denied != nil {
		o.Denied = res.Denied.Error()
	}
	return o
}
