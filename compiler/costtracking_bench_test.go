package compiler

import (
	"encoding/json"
	"testing"

	"github.com/google/cel-go/interpreter"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/cel/library"
)

// BenchmarkCostTracking measures what cel-go's cost tracking costs the
// evaluation of the load-test policies' expressions (test/load) on the
// load-test Pod: each expression evaluated with its real program
// (tracking=on: kube-apiserver's per-call limit and cost tracker) and with
// the same AST planned without the cost observer (tracking=off), for every
// expression (set=all) and for those whose static cost estimate is small
// (set=bounded: Cost.Max < 10,000, the expressions a tracker-free path
// could serve). Session 21's measurement (docs/performance.md).
//
// tracking=off is a measurement only, not a faithful program: cel-go
// v0.29.2 gives no way to build a program of an environment without the
// tracking its program options ask for, and the optional library's
// decorator of `or`/`orValue` (cel-go's unexported decorateOptionalOr) is
// missing from this plan. Nothing outside this benchmark evaluates it.
func BenchmarkCostTracking(b *testing.B) {
	c, err := New()
	if err != nil {
		b.Fatal(err)
	}
	var pod map[string]any
	var policies []*Policy
	for _, pattern := range []string{"test/load/testdata/policies/*.yaml", "test/load/testdata/pod.yaml"} {
		for _, doc := range yamlDocs(b, pattern) {
			switch doc["kind"] {
			case "Pod":
				pod = doc
			case "MutatingAdmissionPolicy":
				j, _ := json.Marshal(doc)
				mp := &admissionregistrationv1.MutatingAdmissionPolicy{}
				if err := json.Unmarshal(j, mp); err != nil {
					b.Fatal(err)
				}
				p, err := c.Compile(mp)
				if err != nil {
					b.Fatal(err)
				}
				policies = append(policies, p)
			}
		}
	}
	req := &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create, Namespace: "payments", Name: "n",
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		UserInfo: authenticationv1.UserInfo{Username: "alice"}}
	in := Input{Object: pod, Request: req, Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "payments"}}}
	type expr struct {
		p         *Policy
		e         *Expression
		untracked interpreter.InterpretableV2
	}
	var all, bounded []expr
	for _, p := range policies {
		for _, list := range [][]*Expression{p.Variables, p.MatchConditions, p.Mutations} {
			for _, e := range list {
				if e.Err != nil {
					continue
				}
				x := expr{p, e, planUntracked(b, e)}
				all = append(all, x)
				if e.Cost.Max < 10000 {
					bounded = append(bounded, x)
				}
			}
		}
	}
	b.Logf("%d expressions, %d with a static maximum under 10,000", len(all), len(bounded))
	for _, set := range []struct {
		name  string
		exprs []expr
	}{{"all", all}, {"bounded", bounded}} {
		b.Run("set="+set.name+"/tracking=on", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				for _, x := range set.exprs {
					a := x.p.NewActivation(b.Context(), in)
					prog, _ := x.e.program()
					_, _, _ = prog.Eval(a)
					a.Release()
				}
			}
		})
		b.Run("set="+set.name+"/tracking=off", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				for _, x := range set.exprs {
					a := x.p.NewActivation(b.Context(), in)
					f, err := interpreter.NewExecutionFrame(a)
					if err != nil {
						b.Fatal(err)
					}
					x.untracked.Exec(f)
					f.Close()
					a.Release()
				}
			}
		})
	}
}

// planUntracked plans e with the decorators of its program but the cost
// observer (and the optional library's, which cel-go does not export):
// BenchmarkCostTracking's tracking=off, a measurement only.
func planUntracked(b *testing.B, e *Expression) interpreter.InterpretableV2 {
	env := e.env
	disp := interpreter.NewDispatcher()
	for _, fn := range env.Functions() {
		bindings, err := fn.Bindings()
		if err != nil {
			b.Fatal(err)
		}
		if err := disp.Add(bindings...); err != nil {
			b.Fatal(err)
		}
	}
	provider, adapter := env.CELTypeProvider(), env.CELTypeAdapter()
	attrs := interpreter.NewAttributeFactory(env.Container, adapter, provider)
	i, err := interpreter.NewInterpreter(disp, env.Container, provider, adapter, attrs).
		NewInterpretable(e.ast.NativeRep(), interpreter.InterruptableEval(), interpreter.Optimize(),
			interpreter.CompileRegexConstants(library.FindRegexOptimization, library.FindAllRegexOptimization, interpreter.MatchesRegexOptimization))
	if err != nil {
		b.Fatal(err)
	}
	return i
}
