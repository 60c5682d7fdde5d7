package compiler

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"

	"github.com/mutatis-dev/mutatis/policytest/coverage/decisions"
)

// recorder is an Observer that probes the decisions of every expression
// (as coverage does) and keeps every evaluation.
type recorder struct {
	mu  sync.Mutex
	evs []Evaluation
}

func (r *recorder) Probes(source string, checked *cel.Ast) []Probe {
	return decisionProbes(source, checked)
}

// decisionProbes are the probes coverage asks for: one per decision.
func decisionProbes(source string, checked *cel.Ast) []Probe {
	var out []Probe
	for _, d := range decisions.Of(checked.NativeRep(), source) {
		out = append(out, Probe{ID: d.ID, Optional: d.Kind.OptionalValue()})
	}
	return out
}

func (r *recorder) ObserveEvaluation(ev Evaluation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.Outcomes = append([]Outcome(nil), ev.Outcomes...)
	r.evs = append(r.evs, ev)
}

func (r *recorder) of(e *Expression) []Evaluation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Evaluation
	for _, ev := range r.evs {
		if ev.Expression == e {
			out = append(out, ev)
		}
	}
	return out
}

// describe renders decisions as "kind `text`" lines.
func describe(e *Expression) []string {
	var out []string
	for _, d := range decisions.Of(e.AST().NativeRep(), e.Source) {
		out = append(out, fmt.Sprintf("%s `%s`", d.Kind, e.Source[d.Start:d.End]))
	}
	return out
}

func pod(labels map[string]any, images ...string) map[string]any {
	var containers []any
	for i, img := range images {
		containers = append(containers, map[string]any{"name": fmt.Sprintf("c%d", i), "image": img})
	}
	meta := map[string]any{"name": "web"}
	if labels != nil {
		meta["labels"] = labels
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": map[string]any{"containers": containers}}
}

func TestObserverOutcomes(t *testing.T) {
	const (
		T = OutcomeTrue
		F = OutcomeFalse
	)
	for _, tc := range []struct {
		name   string
		src    string
		object map[string]any
		want   []Outcome
	}{
		{"a conditional taken one way", `has(object.metadata.labels) ? 1 : 2`, pod(nil), []Outcome{F}},
		{"the right operand of && is not reached when the left is false",
			`has(object.metadata.labels) && object.metadata.labels.size() > 1`, pod(nil), []Outcome{F, 0}},
		{"both operands reached", `has(object.metadata.labels) && object.metadata.labels.size() > 1`,
			pod(map[string]any{"a": "b"}), []Outcome{T, F}},
		{"every iteration of a predicate is observed", `object.spec.containers.exists(c, c.image.startsWith("r/"))`,
			pod(nil, "x", "y", "r/z"), []Outcome{F | T}},
		{"optional present and absent in one evaluation",
			`object.spec.containers.map(c, c.?image.orValue("none"))`,
			map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "a", "image": "x"}, map[string]any{"name": "b"}}}},
			[]Outcome{T | F}},
		{"a runtime error is another outcome", `object.metadata.missing == 1 || true`, pod(nil), []Outcome{OutcomeOther, T}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			c, _ := New(WithObserver(rec))
			p, _ := c.Compile(policySpec{conditions: [][2]string{{"c", "true"}}, variables: [][2]string{{"v", tc.src}}, ac: []string{"Object{}"}}.build())
			e := p.Variables[0]
			if e.Err != nil {
				t.Fatal(e.Err)
			}
			act := p.NewActivation(context.Background(), Input{Object: tc.object})
			// A matchCondition that does not use the variable leaves it unevaluated.
			if _, _, err := act.Eval(p.MatchConditions[0], MatchConditionsBudget); err != nil {
				t.Fatal(err)
			}
			if n := len(rec.of(e)); n != 0 {
				t.Fatalf("variable observed %d times before use", n)
			}
			if v := act.vars().(traits.Mapper).Get(celtypes.String("v")); v == nil {
				t.Fatal("no value")
			}
			act.vars().(traits.Mapper).Get(celtypes.String("v"))
			evs := rec.of(e)
			if len(evs) != 1 {
				t.Fatalf("variable observed %d times, want once", len(evs))
			}
			if fmt.Sprint(evs[0].Outcomes) != fmt.Sprint(tc.want) {
				t.Errorf("outcomes of %s = %v, want %v (decisions %q)", tc.src, evs[0].Outcomes, tc.want, describe(e))
			}
		})
	}
}

// TestObserverChangesNothing evaluates the same policies with and without
// an observer: values, errors, costs, remaining budgets and the variables
// evaluated must be identical.
func TestObserverChangesNothing(t *testing.T) {
	spec := policySpec{
		variables: [][2]string{
			{"labels", `has(object.metadata.labels) ? object.metadata.labels : {}`},
			{"big", `object.spec.containers.filter(c, c.image.startsWith("r/") || c.name == "c1").size() > 1`},
			{"unused", `object.spec.containers.map(c, c.name + c.image)`},
			{"broken", `object.metadata.missing.x`},
		},
		conditions: [][2]string{
			{"labelled", `variables.labels.size() > 0 || variables.big`},
			{"errs", `variables.broken == 1 || false`},
			{"slow", `[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a+b+c+d+e+f > 0))))))`},
		},
		ac: []string{
			`Object{metadata: Object.metadata{labels: {"big": variables.big ? "yes" : "no"}}}`,
			`Object{metadata: Object.metadata{labels: variables.labels.size() > 0 && variables.big ? {"both": "yes"} : {}}}`,
		},
		jp: []string{`[JSONPatch{op: "add", path: "/metadata/annotations", value: {"n": string(variables.labels.size())}}]`},
	}
	objects := []map[string]any{
		pod(nil, "r/a"),
		pod(map[string]any{"team": "shop"}, "r/a", "b", "r/c"),
		pod(map[string]any{"team": "shop"}),
	}
	type outcome struct {
		value, resErr, err string
		cost, remaining    int64
	}
	run := func(c *Compiler, obj map[string]any, budget int64) []outcome {
		p, err := c.Compile(spec.build())
		if err != nil {
			t.Fatal(err)
		}
		var out []outcome
		record := func(r Result, remaining int64, err error) {
			o := outcome{cost: r.Cost, remaining: remaining}
			if r.Value != nil {
				o.value = fmt.Sprint(r.Value.Value())
				if l, ok := r.Value.(traits.Lister); ok {
					o.value = fmt.Sprintf("list of %v", l.Size())
				}
			}
			if r.Err != nil {
				o.resErr = r.Err.Error()
			}
			if err != nil {
				o.err = err.Error()
			}
			out = append(out, o)
		}
		act := p.NewActivation(context.Background(), Input{Object: obj})
		b := budget
		for _, mc := range p.MatchConditions {
			r, remaining, err := act.Eval(mc, b)
			record(r, remaining, err)
			if err != nil {
				break
			}
			b = remaining
		}
		for _, m := range p.Mutations {
			r, remaining, err := p.NewActivation(context.Background(), Input{Object: obj}).Eval(m, budget)
			record(r, remaining, err)
		}
		return out
	}
	for i, obj := range objects {
		for _, budget := range []int64{MatchConditionsBudget, 40, 5} {
			t.Run(fmt.Sprintf("object %d with budget %d", i, budget), func(t *testing.T) {
				plain, _ := New()
				rec := &recorder{}
				observed, _ := New(WithObserver(rec))
				want := run(plain, obj, budget)
				got := run(observed, obj, budget)
				if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
					t.Errorf("with an observer:\n got %+v\nwant %+v", got, want)
				}
				p, _ := observed.Compile(spec.build())
				if n := len(rec.of(p.Variables[2])); n != 0 {
					t.Errorf("the unused variable was evaluated %d times", n)
				}
				if budget == MatchConditionsBudget {
					slow := rec.of(p.MatchConditions[2])
					if len(slow) != 1 || slow[0].Outcomes != nil || slow[0].Err == nil {
						t.Errorf("an evaluation cut short by the per-call limit is observed once, with an error and no outcomes: %+v", slow)
					}
				}
			})
		}
	}
}
