package validating

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/compiler"
)

// disjunctionFirsts are the first operands A of TestDisjunctionsAreEvaluations:
// true or false by the Pod, a cost that grows with the containers, an
// error (a missing name), an error on every Pod (no replicas), a
// disjunction itself.
var disjunctionFirsts = []string{
	`!has(object.metadata.labels)`,
	`object.spec.containers.size() > 2`,
	`object.spec.containers.exists(c, c.image.startsWith("registry.example.com/"))`,
	`object.metadata.name.size() > 3`,
	`object.spec.replicas > 1`,
	`(has(object.spec.nodeName) || object.spec.containers.size() == 0)`,
}

// disjunctionSeconds are the second operands B: true or false by the Pod,
// errors where labels or the name are missing, a cost that grows with the
// containers, an error on every Pod, a dyn that is not a bool.
var disjunctionSeconds = []string{
	`!("app" in object.metadata.labels)`,
	`object.metadata.labels.app.startsWith("a")`,
	`object.spec.containers.all(c, c.image != "")`,
	`object.metadata.name == "x"`,
	`object.spec.containers.map(c, c.name).filter(n, n.size() > 3).size() < 2`,
	`object.spec.replicas == 1`,
	`dyn(object.metadata.namespace)`,
	`has(object.spec.nodeName) || object.spec.containers.size() > 1`,
}

// TestDisjunctionsAreEvaluations holds a validation `A || B` made from its
// operands' results (disjunctionResult) to the evaluation of the whole
// validation, on random Pods: every A with every B (each A held by several
// validations, in two policies), the same value and cost wherever it is
// made, the whole evaluation wherever it is not (A or B an error or not a
// bool), a budget of its cost making it and one short not. Validations
// whose A only one holds, or that are not `||` at the root, are not made.
// It fails when `||` is made wrong (the short-circuit's cost, A's cost not
// charged when B is evaluated, an error of A taken for false).
func TestDisjunctionsAreEvaluations(t *testing.T) {
	comp := NewCompiler()
	var hooks []Hook
	var want [][]bool
	policy := func(name string, vs []admissionregistrationv1.Validation, made []bool) {
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: vs}}
		vp, err := comp.compile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range vp.Validations {
			if e.Err != nil {
				t.Fatalf("%s: %v", e.Source, e.Err)
			}
		}
		hooks, want = append(hooks, Hook{Policy: p, compiled: vp}), append(want, made)
	}
	for p := range 2 {
		var vs []admissionregistrationv1.Validation
		var made []bool
		for _, a := range disjunctionFirsts {
			for _, b := range disjunctionSeconds {
				if p == 1 {
					// Not shared whole: another text, the same B.
					b = "(" + b + ")"
				}
				vs = append(vs, admissionregistrationv1.Validation{Expression: fmt.Sprintf("%s || %s", a, b)})
				// A dyn B does not compile as a validation by itself; in
				// `A || x || y` (p0) the root's first operand is `A || x`,
				// which one validation holds.
				made = append(made, !strings.Contains(b, "dyn(") && (p == 1 || !strings.Contains(b, "||")))
			}
		}
		policy(fmt.Sprintf("p%d", p), vs, made)
	}
	policy("not-made", []admissionregistrationv1.Validation{
		{Expression: `object.metadata.name == "only-here" || !has(object.metadata.labels)`},
		{Expression: `!has(object.metadata.labels) && object.metadata.name == "x"`},
		{Expression: `!has(object.metadata.labels)`},
	}, []bool{false, false, false})
	n := assignDisjunctions(hooks, comp, assignPrefixed(hooks, comp, assignShareKeys(hooks)))
	for h, hook := range hooks {
		for i, v := range hook.compiled.Validations {
			made := hook.disjunctions != nil && hook.disjunctions[i] != nil
			if made != want[h][i] {
				t.Fatalf("%s: made from its operands: %v", v.Source, made)
			}
		}
	}

	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	made, shortCircuits, whole := 0, 0, 0
	for round := range 100 {
		pod := randomPod(rng)
		in := compiler.Input{Object: pod}
		results := &sharedResults{slots: make([]sharedSlot, n)}
		v := &view{}
		for _, h := range hooks {
			sh := sharing{results: results, view: v, disjunctions: h.disjunctions}
			for i, e := range h.compiled.Validations {
				w := wholeResult(t, ctx, h, e, in, round)
				got, ok := checkMadeIsWhole(t, round, e, w, func(budget int64) (compiler.Result, bool) {
					return sh.disjunctionResult(ctx, i, in, budget)
				})
				if !ok {
					whole++
					continue
				}
				made++
				if a := results.slots[h.disjunctions[i].first.key].res; a.Value == got.Value && got.Cost == a.Cost {
					shortCircuits++
				}
			}
		}
	}
	t.Logf("made %d (%d short-circuited), evaluated whole %d", made, shortCircuits, whole)
	if made == 0 || shortCircuits == 0 || shortCircuits == made || whole == 0 {
		t.Fatalf("made %d (%d short-circuited), evaluated whole %d: not every path taken", made, shortCircuits, whole)
	}
}
