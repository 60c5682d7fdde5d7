package validating

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	celtypes "github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/compiler"
)

// derivedInts are the int sub-expressions X of TestDerivedValidationsAreEvaluations:
// a count, a count through a filter (its cost grows with the containers),
// arithmetic that can overflow (an error), a size of a field that can be
// missing (an error).
var derivedInts = []string{
	`object.spec.containers.size()`,
	`size(object.spec.containers)`,
	`object.spec.containers.filter(c, c.image.startsWith("registry.example.com/")).size()`,
	`object.spec.containers.size() * 4611686018427387904 - 1`,
	`object.metadata.name.size()`,
	`(object.spec.containers.map(c, c.name).size())`,
}

// derivedLiterals are the bounds X is compared with.
var derivedLiterals = []string{"0", "1", "3", "-1", "9223372036854775807", "-9223372036854775808"}

// derivedOperators are the comparisons a validation can be made with.
var derivedOperators = []string{"==", "!=", "<", "<=", ">", ">="}

// TestDerivedValidationsAreEvaluations holds a validation made from its
// messageExpression's sub-expression string(X) (derivedResult) to the
// evaluation of the whole validation, on random Pods: for every operator,
// the literal on either side, the same value and the same cost wherever it
// is made, the whole evaluation wherever it is not (X an error), a budget
// of its cost making it and one short not. The messageExpression is made
// from the same evaluation (prefixedResult), held to its whole evaluation
// too. Validations that are not such comparisons (a double bound, a dyn
// X, another X than the message's, a message of another form) are not
// made. It fails when the comparison or its cost is made wrong (the
// literal's side swapped, the conversion's cost kept, the comparison's
// not charged).
func TestDerivedValidationsAreEvaluations(t *testing.T) {
	comp := NewCompiler()
	var hooks []Hook
	// want: whether each hook's validations are made from their message.
	var want [][]bool
	policy := func(name string, vs []admissionregistrationv1.Validation, made []bool) {
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: vs}}
		vp, err := comp.compile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, exprs := range [][]*compiler.Expression{vp.Validations, vp.MessageExpressions} {
			for _, e := range exprs {
				if e != nil && e.Err != nil {
					t.Fatalf("%s: %v", e.Source, e.Err)
				}
			}
		}
		hooks, want = append(hooks, Hook{Policy: p, compiled: vp}), append(want, made)
	}
	for i, x := range derivedInts {
		var vs []admissionregistrationv1.Validation
		var made []bool
		for _, op := range derivedOperators {
			for j, lit := range derivedLiterals {
				expr := x + " " + op + " " + lit
				if j%2 == 1 {
					expr = lit + " " + op + " " + x
				}
				vs = append(vs, admissionregistrationv1.Validation{Expression: expr, MessageExpression: fmt.Sprintf(`"not %s %d: " + string(%s)`, op, j, x)})
				made = append(made, true)
			}
		}
		policy(fmt.Sprintf("p%d", i), vs, made)
	}
	policy("not-made", []admissionregistrationv1.Validation{
		{Expression: `object.spec.containers.size() <= 1.0`, MessageExpression: `"n " + string(object.spec.containers.size())`},
		{Expression: `object.spec.replicas <= 1`, MessageExpression: `"r " + string(object.spec.replicas)`},
		{Expression: `object.spec.containers.size() <= 1`, MessageExpression: `"n " + string(size(object.spec.containers))`},
		{Expression: `object.spec.containers.size() <= 1`, MessageExpression: `"n " + string(object.spec.containers.size()) + "!"`},
		{Expression: `object.spec.containers.size() + 0 <= 1`, MessageExpression: `"n " + string(object.spec.containers.size())`},
		{Expression: `object.spec.containers.size() <= 1 && true`, MessageExpression: `"n " + string(object.spec.containers.size())`},
	}, []bool{false, false, false, false, false, false})
	shared := assignShareKeys(hooks)
	n := assignPrefixed(hooks, comp, shared)
	for h, hook := range hooks {
		for i, v := range hook.compiled.Validations {
			if made := hook.derived != nil && hook.derived[i] != nil; made != want[h][i] {
				t.Fatalf("%s: made from its messageExpression: %v", v.Source, made)
			}
		}
	}

	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	made := 0
	for round := range 100 {
		pod := randomPod(rng)
		in := compiler.Input{Object: pod}
		results := &sharedResults{slots: make([]sharedSlot, n)}
		v := &view{}
		for _, h := range hooks {
			sh := sharing{results: results, view: v, derived: h.derived}
			msh := sharing{results: results, view: v, prefixes: h.prefixes}
			for i, e := range h.compiled.Validations {
				whole := wholeResult(t, ctx, h, e, in, round)
				_, ok := checkMadeIsWhole(t, round, e, whole, func(budget int64) (compiler.Result, bool) {
					return sh.derivedResult(ctx, i, in, budget)
				})
				if !ok {
					if whole.Err == nil && h.derived != nil && h.derived[i] != nil {
						t.Fatalf("round %d, %s: evaluated whole, though its value is %v", round, e.Source, whole.Value)
					}
					continue
				}
				made++
				m := h.compiled.MessageExpressions[i]
				act := h.compiled.Policy.NewActivation(ctx, in)
				wholeMsg, _, err := act.Eval(m, compiler.PerCallLimit)
				act.Release()
				if err != nil {
					t.Fatal(err)
				}
				gotMsg, ok := msh.prefixedResult(ctx, i, in, compiler.PerCallLimit)
				if !ok || wholeMsg.Err != nil || wholeMsg.Value.Equal(gotMsg.Value) != celtypes.True || wholeMsg.Cost != gotMsg.Cost {
					t.Fatalf("round %d, %s:\nmade  %v %v (cost %d)\nwhole %v %v (cost %d)", round, m.Source, gotMsg.Value, ok, gotMsg.Cost, wholeMsg.Value, wholeMsg.Err, wholeMsg.Cost)
				}
			}
		}
	}
	if made == 0 {
		t.Fatal("no result made")
	}
}

// wholeResult is validation e of h evaluated whole for in, as the
// Evaluator evaluates it without sharing.
func wholeResult(t *testing.T, ctx context.Context, h Hook, e *compiler.Expression, in compiler.Input, round int) compiler.Result {
	t.Helper()
	act := h.compiled.Policy.NewActivation(ctx, in)
	whole, _, err := act.Eval(e, compiler.PerCallLimit)
	act.Release()
	if err != nil {
		t.Fatalf("round %d, %s: %v", round, e.Source, err)
	}
	return whole
}

// checkMadeIsWhole holds a result made otherwise than by evaluating e
// whole (made, under a budget) to whole: with the per-call limit, the same
// value and cost; under a budget of its cost made too, one short refused.
// ok=false (and nothing checked) when made makes no result.
func checkMadeIsWhole(t *testing.T, round int, e *compiler.Expression, whole compiler.Result, made func(budget int64) (compiler.Result, bool)) (compiler.Result, bool) {
	t.Helper()
	got, ok := made(compiler.PerCallLimit)
	if !ok {
		return got, false
	}
	if whole.Err != nil || whole.Value != got.Value || whole.Cost != got.Cost {
		t.Fatalf("round %d, %s:\nmade  %v (cost %d)\nwhole %v %v (cost %d)", round, e.Source, got.Value, got.Cost, whole.Value, whole.Err, whole.Cost)
	}
	if _, ok := made(whole.Cost); !ok {
		t.Fatalf("round %d, %s: not made under a budget of its cost", round, e.Source)
	}
	if r, ok := made(whole.Cost - 1); ok {
		t.Fatalf("round %d, %s: made under a budget one short of its cost: %v", round, e.Source, r)
	}
	return got, true
}
