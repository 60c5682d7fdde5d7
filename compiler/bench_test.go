package compiler

import (
	"context"
	"testing"

	"github.com/google/cel-go/cel"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func (recorderDiscard) Probes(source string, checked *cel.Ast) []Probe {
	return decisionProbes(source, checked)
}

func (recorderDiscard) ObserveEvaluation(Evaluation) {}

// BenchmarkNewActivation measures binding one Input with a request and a
// namespace (what every mutation of an invocation pays before evaluating).
func BenchmarkNewActivation(b *testing.B) {
	c, err := New()
	if err != nil {
		b.Fatal(err)
	}
	p, err := c.Compile(policySpec{
		variables: [][2]string{{"team", `"x"`}, {"big", `1`}},
		ac:        []string{`Object{}`},
	}.build())
	if err != nil {
		b.Fatal(err)
	}
	dryRun := false
	in := Input{
		Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "shop"}},
		Request: &admissionv1.AdmissionRequest{
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Name:      "web",
			Namespace: "shop",
			Operation: admissionv1.Create,
			UserInfo:  authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated", "devs"}, Extra: map[string]authenticationv1.ExtraValue{}},
			DryRun:    &dryRun,
		},
		Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"kubernetes.io/metadata.name": "shop", "team": "shop"}}},
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p.NewActivation(ctx, in)
	}
}
