package compiler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"
)

// releasePolicy compiles a policy whose condition and mutation read a chain
// of variables of the object's name.
func releasePolicy(t *testing.T) *Policy {
	t.Helper()
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Compile(policySpec{
		variables:  [][2]string{{"name", `object.metadata.name`}, {"upper", `variables.name.upperAscii()`}, {"unused", `variables.name + "!"`}},
		conditions: [][2]string{{"web", `variables.upper.startsWith("WEB")`}},
		ac:         []string{`Object{metadata: Object.metadata{labels: {"n": variables.upper}}}`},
	}.build())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func namedObject(name string) Input {
	return Input{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name}}}
}

// evalReleasing evaluates p's condition and mutation in one activation
// each, as the engine and the mutation step do, releasing them when release
// is set.
func evalReleasing(p *Policy, in Input, release bool) []evaluated {
	var out []evaluated
	for _, e := range []*Expression{p.MatchConditions[0], p.Mutations[0]} {
		act := p.NewActivation(context.Background(), in)
		res, remaining, err := act.Eval(e, MutationBudget)
		out = append(out, evaluated{res, remaining, err})
		if release {
			act.Release()
		}
	}
	return out
}

type evaluated struct {
	res       Result
	remaining int64
	err       error
}

// sameEvaluations reports how got differs from want, or "".
func sameEvaluations(got, want []evaluated) string {
	for i := range want {
		g, w := got[i], want[i]
		if g.res.Value.Equal(w.res.Value) != celtypes.True || fmt.Sprint(g.res.Err) != fmt.Sprint(w.res.Err) ||
			g.res.Cost != w.res.Cost || g.remaining != w.remaining || fmt.Sprint(g.err) != fmt.Sprint(w.err) {
			return fmt.Sprintf("expression %d: got %v %v %d %d %v, want %v %v %d %d %v", i,
				g.res.Value, g.res.Err, g.res.Cost, g.remaining, g.err, w.res.Value, w.res.Err, w.res.Cost, w.remaining, w.err)
		}
	}
	return ""
}

// TestReleasedActivationsAgree checks that activations released and reused
// (NewActivation after Release) give the values, errors and costs of fresh
// ones, input after input, and that reviews running at once each see their
// own input. Run it with -race.
func TestReleasedActivationsAgree(t *testing.T) {
	p := releasePolicy(t)
	fresh := releasePolicy(t)
	names := []string{"web-1", "db", "web-22", "", "weB"}
	want := map[string][]evaluated{}
	for _, n := range names {
		want[n] = evalReleasing(fresh, namedObject(n), false)
	}
	for round := 0; round < 3; round++ {
		for _, n := range names {
			if d := sameEvaluations(evalReleasing(p, namedObject(n), true), want[n]); d != "" {
				t.Errorf("%q reused: %s", n, d)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]string, 8)
	for g := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				n := names[(g+i)%len(names)]
				if d := sameEvaluations(evalReleasing(p, namedObject(n), true), want[n]); d != "" {
					errs[g] = fmt.Sprintf("%q concurrently: %s", n, d)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
}

// TestReleasedActivationIsNotResolvedThrough checks that the variables map
// of a released activation, still held (as an expression's value can hold
// it), never evaluates a variable against another input: not against the
// poisoned input a released activation binds under test, nor against the
// input of the activation reusing it.
func TestReleasedActivationIsNotResolvedThrough(t *testing.T) {
	for _, poison := range []bool{true, false} {
		p := releasePolicy(t)
		if poison {
			in := namedObject("poison")
			p.poisonReleased = &in
		}
		act := p.NewActivation(context.Background(), namedObject("web"))
		v, _ := act.ResolveName(VariablesVar)
		held := v.(traits.Mapper)
		if got := held.Get(celtypes.String("name")); got != celtypes.String("web") {
			t.Fatalf("before release: %v", got)
		}
		act.Release()
		next := p.NewActivation(context.Background(), namedObject("other"))
		if _, _, err := next.Eval(p.MatchConditions[0], MatchConditionsBudget); err != nil {
			t.Fatal(err)
		}
		// name was evaluated before the release and kept; upper was not.
		if got := held.Get(celtypes.String("name")); got != celtypes.String("web") {
			t.Errorf("poison %v: kept variable: got %v, want web", poison, got)
		}
		got := held.Get(celtypes.String("upper"))
		if e, ok := got.(*celtypes.Err); !ok || !strings.Contains(e.Error(), "resolved after its activation was released") {
			t.Errorf("poison %v: variable resolved through a released activation: got %v (%T)", poison, got, got)
		}
		next.Release()
	}
}
