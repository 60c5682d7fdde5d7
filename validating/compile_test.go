package validating_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/validating"
)

// TestCompilerKeepsBoundedSets: a Compiler that builds Evaluator after
// Evaluator over policy sets that change (policies renamed, added and
// removed, messageExpressions whose shared sub-expressions change: each
// a compilation of its own) keeps the compilations of the last two sets
// only, however many sets went by; a policy every set has is compiled
// once; every Evaluator, the oldest included, still holds and evaluates
// its own compilations; and a name that comes back after it was dropped is
// compiled again, to the same results.
func TestCompilerKeepsBoundedSets(t *testing.T) {
	ctx := context.Background()
	const generations = 40
	// stable is in every set; gen is generation i's own policy, with two
	// messageExpressions made of a literal and a shared sub-expression
	// that is generation i's too; extra is in even generations only.
	stable := vap("stable", `  validations:
  - expression: object.spec.replicas <= 10
    message: too many replicas`, "  validationActions: [Deny]")
	gen := func(i int) string {
		return vap(fmt.Sprintf("gen-%d", i), fmt.Sprintf(`  validations:
  - expression: object.metadata.name != "web"
    messageExpression: '"first %[1]d: " + (object.metadata.name + "-%[1]d")'
  - expression: object.metadata.name != "web"
    messageExpression: '"second %[1]d: " + (object.metadata.name + "-%[1]d")'`, i), "  validationActions: [Warn]")
	}
	extra := func(i int) string {
		return vap(fmt.Sprintf("extra-%d", i), `  validations:
  - expression: object.spec.replicas < 5
    message: five or more`, "  validationActions: [Audit]")
	}
	comp := validating.NewCompiler()
	sim := newCluster(t)
	var evs []*validating.Evaluator
	var kept any
	for i := range generations {
		y := stable + gen(i)
		if i%2 == 0 {
			y += extra(i)
		}
		if i == generations-1 {
			y += gen(0) // a name dropped long ago, back
		}
		_, policies, bindings := policySet(t, y)
		ev := evaluator(t, sim, comp, policies, bindings)
		evs = append(evs, ev)
		// This set and the one before: stable, gen-i, gen-(i-1), their
		// sub-expressions, extra of the even one, and gen-0 back with
		// its sub-expression.
		bound := 6
		if i == 0 {
			bound = 4
		}
		if i == generations-1 {
			bound += 2
		}
		if n := validating.CachedCompilations(comp); n > bound {
			t.Fatalf("generation %d: %d compilations kept, want at most %d", i, n, bound)
		}
		c := validating.CompiledOf(ev, "stable")
		if c == nil {
			t.Fatalf("generation %d: no compilation of stable", i)
		}
		if kept == nil {
			kept = c
		} else if kept != any(c) {
			t.Fatalf("generation %d: stable compiled again", i)
		}
	}
	if a, b := validating.CompiledOf(evs[0], "gen-0"), validating.CompiledOf(evs[generations-1], "gen-0"); a == nil || b == nil || a == b {
		t.Fatalf("gen-0 dropped and back: compilations %p and %p, want two", a, b)
	}
	// Every Evaluator, however old, evaluates its own policies.
	for i, ev := range []*validating.Evaluator{evs[0], evs[generations/2], evs[generations-1]} {
		res := admit(t, ctx, sim, ev, deployment, "", admission.Create)
		if res.Denied != nil {
			t.Fatalf("evaluator %d: denied %v", i, res.Denied)
		}
		g := []int{0, generations / 2, generations - 1}[i]
		want := []string{fmt.Sprintf("first %d: web-%d", g, g), fmt.Sprintf("second %d: web-%d", g, g)}
		var got []string
		for _, w := range res.Warnings {
			if strings.Contains(w, fmt.Sprintf("'gen-%d'", g)) {
				got = append(got, w)
			}
		}
		if len(got) != 2 || !strings.HasSuffix(got[0], want[0]) || !strings.HasSuffix(got[1], want[1]) {
			t.Fatalf("evaluator of generation %d: warnings %q, want two ending %q", g, res.Warnings, want)
		}
	}
}
