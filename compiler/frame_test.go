package compiler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
)

// sharedFrameCase compiles a policy whose expressions cover what a shared
// frame could change: variables evaluated inside an expression (nested
// evaluations), comprehensions (interrupt checks), runtime errors, the
// cost charged, a mutation, and an input for it.
func sharedFrameCase(t *testing.T) (*Policy, Input) {
	t.Helper()
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	conditions := [][2]string{
		{"name", `object.metadata.name == "web"`},
		{"variable", `variables.count > 2 && variables.names.exists(n, n == "c")`},
		{"fold", `object.spec.containers.all(c, c.image.startsWith("r/")) && [1,2,3].map(x, x * 2).sum() == 12`},
		{"error", `object.spec.missing == 1`},
		{"nested-variable", `variables.names.filter(n, variables.count > 1).size() == variables.count`},
		{"costly", `object.spec.containers.map(c, c.name + "-" + c.image).join(",").size() > 0`},
		{"false", `request.userInfo.username == "bob"`},
	}
	p, err := c.Compile(policySpec{
		variables: [][2]string{
			{"names", `object.spec.containers.map(c, c.name)`},
			{"count", `variables.names.size()`},
		},
		conditions: conditions,
		ac:         []string{`Object{metadata: Object.metadata{labels: {"n": string(variables.count)}}}`},
	}.build())
	if err != nil {
		t.Fatal(err)
	}
	var containers []any
	for i, n := range []string{"a", "b", "c"} {
		containers = append(containers, map[string]any{"name": n, "image": fmt.Sprintf("r/%d", i)})
	}
	in := Input{
		Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "web", "namespace": "shop"},
			"spec":     map[string]any{"containers": containers}},
		Request: &admissionv1.AdmissionRequest{Name: "web", Namespace: "shop", Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: "alice"}},
	}
	return p, in
}

// evalAll evaluates every expression of p as the engine does for one
// admission (several activations under one context, one budget each) and
// describes each result: value, error text, cost and remaining budget.
func evalAll(ctx context.Context, p *Policy, in Input) []string {
	var out []string
	for round := 0; round < 3; round++ {
		act := p.NewActivation(ctx, in)
		budget := int64(MatchConditionsBudget)
		for _, e := range append(append([]*Expression{}, p.MatchConditions...), p.Mutations...) {
			res, remaining, err := act.Eval(e, budget)
			var val any
			if res.Value != nil {
				val = res.Value.Value()
			}
			out = append(out, fmt.Sprintf("%s: value %v (%T) err %v cost %d remaining %d fatal %v",
				e.Source, val, val, res.Err, res.Cost, remaining, err))
			budget = remaining
		}
	}
	return out
}

// TestSharedFrameAgrees holds evaluations through a shared frame
// (WithSharedFrame) equal to cel-go's ContextEval with a frame each: values,
// error texts and costs, with one activation at a time, with evaluations
// from several goroutines under one frame (those that find it held bind
// their own), and under a context cancelled before or after the frame was
// bound (no frame is used then).
func TestSharedFrameAgrees(t *testing.T) {
	p, in := sharedFrameCase(t)
	if len(p.Mutations) == 0 {
		t.Fatal("no mutation compiled")
	}
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	want := evalAll(parent, p, in)
	if !strings.Contains(want[3], "no such key") || !strings.Contains(want[1], "value true") || !strings.Contains(want[7], "n:3") {
		t.Fatalf("the case does not evaluate as meant: %q", want[:8])
	}

	ctx, release := WithSharedFrame(parent)
	if ctx.Value(frameKey{}) == nil {
		t.Fatal("WithSharedFrame bound no frame to a cancellable context")
	}
	got := evalAll(ctx, p, in)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("shared frame:\n got %s\nwant %s", got[i], want[i])
		}
	}

	var wg sync.WaitGroup
	results := make([][]string, 4)
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[g] = evalAll(ctx, p, in)
		}()
	}
	wg.Wait()
	for g, r := range results {
		for i := range want {
			if r[i] != want[i] {
				t.Errorf("goroutine %d:\n got %s\nwant %s", g, r[i], want[i])
			}
		}
	}
	release()
	release() // a second release does nothing
	if got := evalAll(ctx, p, in); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after release:\n got %v\nwant %v", got, want)
	}

	// Cancelled contexts: the frame bound before the cancellation, and one
	// bound after it, against ContextEval with a frame each.
	before, cancelBefore := context.WithCancel(context.Background())
	sharedBefore, releaseBefore := WithSharedFrame(before)
	defer releaseBefore()
	cancelBefore()
	after, cancelAfter := context.WithCancel(context.Background())
	cancelAfter()
	sharedAfter, releaseAfter := WithSharedFrame(after)
	defer releaseAfter()
	wantCancelled := evalAll(after, p, in)
	for name, ctx := range map[string]context.Context{"cancelled after binding": sharedBefore, "cancelled before binding": sharedAfter} {
		if got := evalAll(ctx, p, in); fmt.Sprint(got) != fmt.Sprint(wantCancelled) {
			t.Errorf("%s:\n got %v\nwant %v", name, got, wantCancelled)
		}
	}

	// A context that cannot be cancelled gets no frame (Eval needs none).
	if bg, _ := WithSharedFrame(context.Background()); bg != context.Background() {
		t.Error("WithSharedFrame wrapped a context without a Done channel")
	}
}

// TestSharedFrameAllocatesLess checks the point of the shared frame: the
// evaluations of one admission under it allocate less than with a frame
// (and a cancellable context) each.
func TestSharedFrameAllocatesLess(t *testing.T) {
	p, in := sharedFrameCase(t)
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	each := testing.AllocsPerRun(20, func() { evalAll(parent, p, in) })
	shared := testing.AllocsPerRun(20, func() {
		ctx, release := WithSharedFrame(parent)
		evalAll(ctx, p, in)
		release()
	})
	t.Logf("allocations: %v with a frame each, %v with a shared frame", each, shared)
	if shared >= each {
		t.Errorf("shared frame allocates %v, a frame each %v: want fewer", shared, each)
	}
}
