package validating

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	celtypes "github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/compiler"
)

// prefixedSubs are sub-expressions of the messageExpressions
// TestPrefixedMessagesAreEvaluations writes after a literal: strings of
// every size, a string of the containers, errors (a missing field); the
// first stringSubs of type string, the others dyn (not made: a
// messageExpression of type dyn does not compile alone).
var prefixedSubs = []string{
	`object.spec.containers.filter(c, !c.image.startsWith("registry.example.com/")).map(c, c.name).join(", ")`,
	`object.spec.containers.map(c, c.name + "=" + c.image).join(";")`,
	` string(size(object.spec.containers))`,
	`("x" + object.metadata.name)`,
	`object.metadata.name`,
	`object.spec.nodeName`,
	`object.spec.replicas`,
	`object.metadata.labels.app`,
}

// prefixedLiterals are the literals before them: empty, quoted each way,
// with escapes and characters of more than one byte.
var prefixedLiterals = []string{`""`, `"policy 07: "`, `'pólicy \u00e9 日本: '`, `r"raw\n "`, `"""triple"""`, `"a"`}

// TestPrefixedMessagesAreEvaluations holds a messageExpression's result
// made from its literal and its shared sub-expression's result
// (prefixedResult) to the evaluation of the whole messageExpression, on
// random Pods: the same value and the same cost wherever it is made, the
// whole evaluation wherever it is not (an error, a value that is not a
// string), and a budget one short of the cost makes the whole evaluation.
// It fails when the concatenation's cost is counted otherwise (rounded
// down, in bytes, without the literal) or the literal is split wrong.
func TestPrefixedMessagesAreEvaluations(t *testing.T) {
	comp := NewCompiler()
	var hooks []Hook
	for i, lit := range prefixedLiterals {
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)}}
		for _, sub := range prefixedSubs {
			p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{Expression: "false", MessageExpression: lit + " +" + sub})
		}
		vp, err := comp.compile(p)
		if err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, Hook{Policy: p, compiled: vp})
	}
	const stringSubs = 4
	shared := assignShareKeys(hooks) // the validations
	n := assignPrefixed(hooks, comp, shared)
	if n-shared != stringSubs {
		t.Fatalf("%d sub-expressions, want %d", n-shared, stringSubs)
	}
	for _, h := range hooks {
		for i, m := range h.compiled.MessageExpressions {
			if m.Err != nil {
				t.Fatalf("%s: %v", m.Source, m.Err)
			}
			if made := h.prefixes != nil && h.prefixes[i] != nil; made != (i < stringSubs) {
				t.Fatalf("%s: made from its literal and %q: %v", m.Source, prefixedSubs[i], made)
			}
		}
	}

	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	made := 0
	for round := range 200 {
		pod := randomPod(rng)
		in := compiler.Input{Object: pod}
		results := &sharedResults{slots: make([]sharedSlot, n)}
		v := &view{}
		for _, h := range hooks {
			sh := sharing{results: results, view: v, prefixes: h.prefixes}
			for i, m := range h.compiled.MessageExpressions {
				act := h.compiled.Policy.NewActivation(ctx, in)
				whole, _, err := act.Eval(m, compiler.PerCallLimit)
				act.Release()
				if err != nil {
					t.Fatalf("round %d, %s: %v", round, m.Source, err)
				}
				got, ok := sh.prefixedResult(ctx, i, in, compiler.PerCallLimit)
				if !ok {
					if _, isString := whole.Value.(celtypes.String); whole.Err == nil && isString && i < stringSubs {
						t.Fatalf("round %d, %s: evaluated whole, though its value %v is a string", round, m.Source, whole.Value)
					}
					continue
				}
				made++
				if whole.Err != nil || whole.Value.Equal(got.Value) != celtypes.True || whole.Cost != got.Cost {
					t.Fatalf("round %d, %s:\nmade  %v (cost %d)\nwhole %v %v (cost %d)", round, m.Source, got.Value, got.Cost, whole.Value, whole.Err, whole.Cost)
				}
				if _, ok := sh.prefixedResult(ctx, i, in, whole.Cost); !ok {
					t.Fatalf("round %d, %s: not made under a budget of its cost", round, m.Source)
				}
				if r, ok := sh.prefixedResult(ctx, i, in, whole.Cost-1); ok {
					t.Fatalf("round %d, %s: made under a budget one short of its cost: %v", round, m.Source, r)
				}
			}
		}
	}
	if made == 0 {
		t.Fatal("no result made")
	}
}

// randomPod is a Pod's content with zero to six containers of random
// names and images (some of registry.example.com, some with characters
// of more than one byte), sometimes a name, a node name, a labels map.
func randomPod(rng *rand.Rand) map[string]any {
	word := func() string {
		parts := []string{"a", "web", "é", "日本", "sidecar", "x", strings.Repeat("long", 7)}
		var b strings.Builder
		for range 1 + rng.IntN(3) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		return b.String()
	}
	var containers []any
	for range rng.IntN(7) {
		image := word() + ":1"
		if rng.IntN(2) == 0 {
			image = "registry.example.com/" + image
		}
		containers = append(containers, map[string]any{"name": word(), "image": image})
	}
	meta := map[string]any{"namespace": "prod"}
	if rng.IntN(3) > 0 {
		meta["name"] = word()
	}
	if rng.IntN(2) == 0 {
		meta["labels"] = map[string]any{"app": word()}
	}
	spec := map[string]any{"containers": containers}
	if rng.IntN(2) == 0 {
		spec["nodeName"] = word()
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
}

// TestParamResultUnderBudget: a param's result kept is used only when its
// cost fits what is left of the budget, and only a result of a context
// not done is kept.
func TestParamResultUnderBudget(t *testing.T) {
	sh := sharing{paramKeys: []int32{0}, paramResults: newParamResults(1), results: &sharedResults{}}
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel()
	sh.putParamResult(done, 0, compiler.Result{Value: celtypes.True, Cost: 100})
	if _, ok := sh.paramResult(ctx, 0, 1000); ok {
		t.Fatal("a result of a context done was kept")
	}
	sh.putParamResult(ctx, 0, compiler.Result{Value: celtypes.True, Cost: 100})
	if _, ok := sh.paramResult(ctx, 0, 99); ok {
		t.Error("a result of cost 100 used under a budget of 99")
	}
	if r, ok := sh.paramResult(ctx, 0, 100); !ok || r.Cost != 100 {
		t.Errorf("a result of cost 100 under a budget of 100: %v %v", r, ok)
	}
	if _, ok := sh.paramResult(done, 0, 100); ok {
		t.Error("a result used in a context done")
	}
}
