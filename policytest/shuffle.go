package policytest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"context"

	"github.com/mutatis-dev/mutatis/engine"
)

// orders returns the hook orders Shuffle tries: the reverse of the
// evaluator's order (policy name, then binding name), then n-1 random
// permutations from seed. Bindings of a policy are permuted too.
func orders(hooks []engine.Hook, seed uint64, n int) [][]engine.Hook {
	rev := reorder(hooks)
	slices.Reverse(rev)
	for i := range rev {
		slices.Reverse(rev[i].Bindings)
	}
	out := [][]engine.Hook{rev}
	rng := rand.New(rand.NewPCG(seed, 0x6d757461746973))
	for range n - 1 {
		p := reorder(hooks)
		rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
		for i := range p {
			b := p[i].Bindings
			rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
		}
		out = append(out, p)
	}
	return out
}

// reorder copies hooks so that the copy's order and its bindings' order
// can change.
func reorder(hooks []engine.Hook) []engine.Hook {
	out := slices.Clone(hooks)
	for i := range out {
		out[i].Bindings = slices.Clone(out[i].Bindings)
	}
	return out
}

// orderString names an order: "p1, p2 (b2, b1), p3".
func orderString(hooks []engine.Hook) string {
	parts := make([]string, len(hooks))
	for i, h := range hooks {
		parts[i] = h.Policy.Name
		if len(h.Bindings) > 1 {
			names := make([]string, len(h.Bindings))
			for j, b := range h.Bindings {
				names[j] = b.Name
			}
			parts[i] += " (" + strings.Join(names, ", ") + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// checkShuffle evaluates the case with the policies in other orders; the
// first order whose result differs from base fails the case. (The engine
// evaluates hooks in the order given to engine.NewEvaluator.)
func (r *Runner) checkShuffle(ctx context.Context, run *suiteRun, lc *loadedCase, base outcome) []Failure {
	if len(run.hooks) < 2 && (len(run.hooks) == 0 || len(run.hooks[0].Bindings) < 2) {
		return nil
	}
	for _, order := range orders(run.hooks, r.opts.Seed, r.opts.Orders) {
		ev := engine.NewEvaluator(lc.cluster.Config(), order)
		o, err := admit(ctx, lc, run.chain(lc.cluster, ev), nil)
		if err != nil {
			return []Failure{{Expectation: "shuffle", Message: fmt.Sprintf("in the order %s: %v", orderString(order), err)}}
		}
		if msg, diff := differ(base, o); msg != "" {
			return []Failure{{
				Expectation: "shuffle",
				Message: fmt.Sprintf("the result depends on the order of the policies (--shuffle=%d):\n%s\nin the order %s than in the order %s",
					r.opts.Seed, msg, orderString(order), orderString(run.hooks)),
				Diff: diff,
			}}
		}
	}
	return nil
}

// differ compares the results of two admissions: denial and final object.
func differ(a, b outcome) (msg, diff string) {
	ra, rb := a.result, b.result
	switch {
	case (ra.Denied == nil) != (rb.Denied == nil):
		state := func(o outcome) string {
			if o.result.Denied != nil {
				return "denied (" + o.result.Denied.ErrStatus.Message + ")"
			}
			return "admitted"
		}
		return fmt.Sprintf("the request is %s instead of %s", state(b), state(a)), ""
	case ra.Denied != nil:
		if ra.Denied.ErrStatus.Message != rb.Denied.ErrStatus.Message {
			return "the denial differs", diffText(ra.Denied.ErrStatus.Message+"\n", rb.Denied.ErrStatus.Message+"\n")
		}
		return "", ""
	case !equal(ra.Object, rb.Object):
		return "the final object differs", diffLabelled("name order", "shuffled", ra.Object, rb.Object)
	}
	return "", ""
}
