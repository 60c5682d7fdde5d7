package compiler

import (
	"context"
	"testing"
)

// BenchmarkEval measures one mutation evaluation (a fresh Activation, two
// lazy variables, a matchCondition-like decision and an ApplyConfiguration)
// on the default path, without an observer.
func BenchmarkEval(b *testing.B) {
	c, err := New()
	if err != nil {
		b.Fatal(err)
	}
	benchmarkEval(b, c)
}

func benchmarkEval(b *testing.B, c *Compiler) {
	p, err := c.Compile(policySpec{
		variables: [][2]string{
			{"team", `has(object.metadata.labels) && "team" in object.metadata.labels ? object.metadata.labels["team"] : "none"`},
			{"big", `object.spec.containers.filter(c, c.image.startsWith("registry.example.com/") || c.name == "sidecar").size() > 1`},
		},
		ac: []string{`Object{metadata: Object.metadata{labels: {"team": string(variables.team), "big": variables.big ? "yes" : "no", "tier": string(object.metadata.?annotations["tier"].orValue("web"))}}}`},
	}.build())
	if err != nil {
		b.Fatal(err)
	}
	obj := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"team": "shop"}},
		"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "registry.example.com/app:1"},
			map[string]any{"name": "sidecar", "image": "busybox"},
			map[string]any{"name": "log", "image": "fluent"},
		}},
	}
	ctx := context.Background()
	in := Input{Object: obj}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, _, err := p.NewActivation(ctx, in).Eval(p.Mutations[0], MutationBudget)
		if err != nil || res.Err != nil {
			b.Fatal(err, res.Err)
		}
	}
}

// BenchmarkEvalObserved is BenchmarkEval with an observer: the
// instrumented second evaluation of every expression and variable.
func BenchmarkEvalObserved(b *testing.B) {
	c, err := New(WithObserver(recorderDiscard{}))
	if err != nil {
		b.Fatal(err)
	}
	benchmarkEval(b, c)
}

type recorderDiscard struct{}

func (recorderDiscard) ObserveEvaluation(Evaluation) {}
