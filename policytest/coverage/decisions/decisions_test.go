package decisions_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/policytest/coverage"
	"github.com/mutatis-dev/mutatis/policytest/coverage/decisions"
)

// observer probes the decisions of every expression as coverage's Recorder
// does, and keeps the outcomes of every evaluation.
type observer struct {
	*coverage.Recorder
	outcomes [][]compiler.Outcome
}

func (o *observer) ObserveEvaluation(ev compiler.Evaluation) {
	var outcomes []compiler.Outcome
	if ev.Outcomes != nil {
		outcomes = append(make([]compiler.Outcome, 0, len(ev.Outcomes)), ev.Outcomes...)
	}
	o.outcomes = append(o.outcomes, outcomes)
}

// variablePolicy is a policy with one variable, v, and an ApplyConfiguration
// mutation that changes nothing.
func variablePolicy(src string) *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			Variables: []admissionregistrationv1.Variable{{Name: "v", Expression: src}},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "Object{}"}}},
		}}
}

// describe renders decisions as "kind `text`" lines.
func describe(e *compiler.Expression) []string {
	var out []string
	for _, d := range decisions.Of(e.AST().NativeRep(), e.Source) {
		out = append(out, fmt.Sprintf("%s `%s`", d.Kind, e.Source[d.Start:d.End]))
	}
	return out
}

func TestDecisions(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"an expression without decisions has none", `object.metadata.name`, nil},
		{"operands of a mixed chain, with has() looked through its negation",
			`object.metadata.name == "a" && !has(object.spec) || [1, 2, 3].all(x, x > 1)`,
			[]string{"|| `object.metadata.name == \"a\" && !has(object.spec)`", "&& `object.metadata.name == \"a\"`",
				"has() `has(object.spec)`", "|| `[1, 2, 3].all(x, x > 1)`", "predicate `x > 1`"}},
		{"a chain of one operator is flattened",
			`object.a && object.b && object.c && object.d`,
			[]string{"&& `object.a`", "&& `object.b`", "&& `object.c`", "&& `object.d`"}},
		{"a parenthesized operand is a decision of its own",
			`(object.a || object.b) && object.c`,
			[]string{"&& `object.a || object.b`", "|| `object.a`", "|| `object.b`", "&& `object.c`"}},
		{"optional selections and orValue",
			`object.?spec.?replicas.orValue(1) > 2 ? "big" : "small"`,
			[]string{"?: `object.?spec.?replicas.orValue(1) > 2`", "optional `object.?spec.?replicas`", "optional `object.?spec`"}},
		{"optional index and a zero-argument call",
			`object.metadata.labels[?"team"].hasValue() ? 1 : 2`,
			[]string{"?: `object.metadata.labels[?\"team\"].hasValue()`", "optional `object.metadata.labels[?\"team\"]`"}},
		{"orValue on a non-optional-select receiver",
			`optional.of(object.kind).orValue("x") == "Pod"`,
			[]string{"orValue `optional.of(object.kind)`"}},
		{"filter and exists_one predicates",
			`object.spec.containers.filter(c, c.name.startsWith("x")).size() > 0 || object.spec.containers.exists_one(c, c.name == "a")`,
			[]string{"|| `object.spec.containers.filter(c, c.name.startsWith(\"x\")).size() > 0`", "predicate `c.name.startsWith(\"x\")`",
				"|| `object.spec.containers.exists_one(c, c.name == \"a\")`", "predicate `c.name == \"a\"`"}},
		{"map with a filter", `object.spec.containers.map(c, has(c.image), c.name)`,
			[]string{"has() `has(c.image)`"}},
		{"brackets inside string literals do not confuse the spans",
			`object.metadata.name == "a)" || object.kind == "(x"`,
			[]string{"|| `object.metadata.name == \"a)\"`", "|| `object.kind == \"(x\"`"}},
		{"global calls and non-ASCII text",
			`int(object.spec.replicas) > 1 || string(object.kind) == "Pödé" || object.x`,
			[]string{"|| `int(object.spec.replicas) > 1`", "|| `string(object.kind) == \"Pödé\"`", "|| `object.x`"}},
		{"backquoted fields and a multi-line source",
			"has(object.metadata.labels)\n  && object.metadata.labels.`app.kubernetes.io/name` == \"web\"",
			[]string{"has() `has(object.metadata.labels)`", "&& `object.metadata.labels.`app.kubernetes.io/name` == \"web\"`"}},
		{"two-variable comprehension", `object.metadata.labels.all(k, v, v != "")`, []string{"predicate `v != \"\"`"}},
		{"decisions used as operands of selections and indexes",
			`object.metadata.?annotations["skip"].orValue("") == "x" ? object.?spec.replicas : object.?spec.?containers[0]`,
			[]string{"?: `object.metadata.?annotations[\"skip\"].orValue(\"\") == \"x\"`", "orValue `object.metadata.?annotations[\"skip\"]`",
				"optional `object.metadata.?annotations`", "optional `object.?spec`", "optional `object.?spec.?containers`", "optional `object.?spec`"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &observer{Recorder: coverage.NewRecorder()}
			c, _ := compiler.New(compiler.WithObserver(obs))
			p, _ := c.Compile(variablePolicy(tc.src))
			e := p.Variables[0]
			if e.Err != nil {
				t.Fatal(e.Err)
			}
			// An evaluation that is not cut short has outcomes (none
			// reached, on a null object) exactly when the compiler planned
			// the instrumented program with a probe on every decision.
			if _, _, err := p.NewActivation(context.Background(), compiler.Input{}).Eval(e, compiler.MutationBudget); err != nil {
				t.Fatal(err)
			}
			if len(obs.outcomes) != 1 || obs.outcomes[0] == nil {
				t.Error("the instrumented program could not be planned")
			}
			if got := describe(e); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("decisions of %s:\n got %q\nwant %q", tc.src, got, tc.want)
			}
		})
	}
}
