package compiler

import (
	"context"
	"fmt"
	"strings"
	"testing"

	celast "github.com/google/cel-go/common/ast"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStaticMaxBoundsRuntimeCost measures the premise of evaluating an
// expression without cel-go's cost tracker (docs/performance.md, session
// 21): that the runtime cost cel-go charges an expression of finite static
// maximum (Expression.Cost, kube-apiserver's estimator with every input
// unbounded) stays within that maximum. It does not: the estimator charges
// a chain of field selections on a dyn value (object.spec.a) as one
// selection and the tracker each (staticUnderCounts), so the runtime cost
// passes the static maximum by up to the number of the AST's nodes, which
// is what this test holds (every expression of the example and load-test
// policies, on every fixture object, as created and as updated to the
// next, with every param), logging how often and by how much the maximum
// alone is passed.
func TestStaticMaxBoundsRuntimeCost(t *testing.T) {
	policies, objects, params := fixtures(t)
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "payments", Labels: map[string]string{"team": "shop"}}}
	var checked, bounded, over int
	var worst uint64
	for _, mp := range policies {
		p, err := c.Compile(mp)
		if err != nil {
			t.Fatalf("%s: %v", mp.Name, err)
		}
		for i, obj := range objects {
			other := objects[(i+1)%len(objects)]
			for _, old := range []map[string]any{nil, other} {
				op := admissionv1.Create
				if old != nil {
					op = admissionv1.Update
				}
				req := &admissionv1.AdmissionRequest{UID: "u", Operation: op, Namespace: "payments", Name: "n",
					Kind:     metav1.GroupVersionKind{Version: "v1", Kind: fmt.Sprint(obj["kind"])},
					Resource: metav1.GroupVersionResource{Version: "v1", Resource: strings.ToLower(fmt.Sprint(obj["kind"])) + "s"},
					UserInfo: authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev"}}}
				for _, prm := range append([]map[string]any{nil}, params...) {
					in := Input{Object: obj, OldObject: old, Params: prm, Request: req, Namespace: ns}
					for _, list := range [][]*Expression{p.Variables, p.MatchConditions, p.Mutations} {
						for _, e := range list {
							if e.Err != nil || e.Cost.Unbounded() {
								continue
							}
							prog, perr := e.program()
							if perr != nil {
								t.Fatalf("%s: %v", e.Source, perr)
							}
							a := p.NewActivation(context.Background(), in)
							// The program's own cost: the variables it
							// resolves are charged apart (a.variableCost).
							_, det, _ := prog.Eval(a)
							a.Release()
							checked++
							if det == nil || det.ActualCost() == nil {
								t.Errorf("%s: %s: no runtime cost", mp.Name, e.Source)
								continue
							}
							got := *det.ActualCost()
							if got > e.Cost.Max {
								over++
								worst = max(worst, got-e.Cost.Max)
							}
							if n := astNodes(e); got > e.Cost.Max+n {
								t.Errorf("%s: %s: runtime cost %d above the static maximum %d and the %d nodes", mp.Name, strings.TrimSpace(e.Source), got, e.Cost.Max, n)
							}
						}
					}
				}
			}
		}
		for _, list := range [][]*Expression{p.Variables, p.MatchConditions, p.Mutations} {
			for _, e := range list {
				if e.Err == nil && !e.Cost.Unbounded() {
					bounded++
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no expression of finite static maximum in the fixtures")
	}
	t.Logf("%d expressions of finite static maximum, %d evaluations: %d above the maximum, by at most %d", bounded, checked, over, worst)
}

// astNodes is the number of nodes of e's checked AST.
func astNodes(e *Expression) uint64 {
	var n uint64
	celast.PostOrderVisit(e.ast.NativeRep().Expr(), celast.NewExprVisitor(func(celast.Expr) { n++ }))
	return n
}

// TestStaticUnderCounts pins the estimator's under-count that
// TestStaticMaxBoundsRuntimeCost allows for: kube-apiserver's static
// estimate charges a chain of selections on a dyn value once, cel-go's
// tracker every selection.
func TestStaticUnderCounts(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		expr          string
		static, spent uint64
	}{
		{"object == null", 2, 2},
		{"object.spec == null", 2, 3},
		{"object.spec.a == null", 2, 4},
		{"object.spec.a.b.c == null", 2, 6},
		{"object.spec.missing == null", 2, 4},
		{`object["spec"] == null`, 3, 3},
		{"!has(object.spec.dnsConfig)", 2, 3},
	}
	var conds [][2]string
	for i, tc := range cases {
		conds = append(conds, [2]string{fmt.Sprint("c", i), tc.expr})
	}
	p, err := c.Compile(policySpec{conditions: conds, ac: []string{`Object{}`}}.build())
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Object: map[string]any{"spec": map[string]any{"a": map[string]any{"b": map[string]any{"c": "x"}}, "dnsConfig": map[string]any{}}}}
	for i, e := range p.MatchConditions {
		prog, perr := e.program()
		if perr != nil {
			t.Fatal(perr)
		}
		a := p.NewActivation(context.Background(), in)
		_, det, _ := prog.Eval(a)
		a.Release()
		if det == nil || det.ActualCost() == nil {
			t.Fatalf("%s: no runtime cost", cases[i].expr)
		}
		if e.Cost.Max != cases[i].static || *det.ActualCost() != cases[i].spent {
			t.Errorf("%s: static maximum %d, runtime %d; want %d and %d", cases[i].expr, e.Cost.Max, *det.ActualCost(), cases[i].static, cases[i].spent)
		}
	}
}
