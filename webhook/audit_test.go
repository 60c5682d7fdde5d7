package webhook

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mutatis-dev/mutatis/chain"
)

// auditAnnotationsReference is auditAnnotations as it was written first
// (a set of the names given, builders grown as they go): it names the invocations that ran, those whose errors
// were ignored, and whether the chain would be reinvoked.
func auditAnnotationsReference(res chain.Result) map[string]string {
	type seenKey struct {
		ignored                bool
		policy, binding, param string
	}
	var applied, ignored strings.Builder
	var seen map[seenKey]struct{}
	add := func(b *strings.Builder, inv *chain.Invocation, isIgnored bool) {
		k := seenKey{isIgnored, inv.Configuration, inv.Hook, inv.Param}
		if _, ok := seen[k]; ok {
			return
		}
		if seen == nil {
			seen = make(map[seenKey]struct{}, len(res.Invocations))
		}
		seen[k] = struct{}{}
		writeInvocation(b, inv)
	}
	for i := range res.Invocations {
		inv := &res.Invocations[i]
		switch {
		case inv.Err != nil && res.Denied == nil:
			add(&ignored, inv, true)
		case inv.Err == nil && inv.Ran() && inv.Hook != "":
			add(&applied, inv, false)
		}
	}
	return annotationMap(applied.String(), ignored.String(), res.Reinvoke)
}

// TestAuditAnnotationsIsReference holds auditAnnotations to
// auditAnnotationsReference on random traces: short and long (either side
// of maxLookBack), names repeated, errors, skips, denials, reinvocation.
func TestAuditAnnotationsIsReference(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	names := []string{"a", "b", "", "pol-1"}
	pick := func() string { return names[rnd.IntN(len(names))] }
	for i := range 4000 {
		n := rnd.IntN(8)
		if i%10 == 0 {
			n = maxLookBack - 2 + rnd.IntN(80)
		}
		var res chain.Result
		for range n {
			inv := chain.Invocation{Record: chain.Record{Configuration: pick(), Hook: pick()}, Param: pick()}
			if rnd.IntN(4) == 0 {
				inv.Err = errors.New("x")
			}
			if rnd.IntN(4) == 0 {
				inv.Skip = chain.SkipBindingNotSelected
			}
			res.Invocations = append(res.Invocations, inv)
		}
		if rnd.IntN(5) == 0 {
			res.Denied = &apierrors.StatusError{}
		}
		res.Reinvoke = rnd.IntN(2) == 0
		got, want := auditAnnotations(res), auditAnnotationsReference(res)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%d invocations: got %v, want %v", n, got, want)
		}
	}
}
