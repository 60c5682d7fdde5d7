package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/compiler"
)

// MutateStandalone evaluates mutation m of policy p against in and applies
// its patch to in.Object (of kind gvk) with pt, outside any admission: the
// unit that one call of upstream's patchers (patch.Patcher.Patch of
// k8s.io/apiserver's mutating package) followed by the dispatcher's
// conversion back to the typed object and defaulting (dispatchOne) is, and
// nothing else of Admit (no matching, params, matchConditions, merge chain
// or reinvocation). It returns the new object content (in.Object is never
// modified) and errors in the two classes Admit tells apart: an
// *apierrors.StatusError ends a whole admission request, any other error is
// the policy invocation's.
//
// Admission never calls it. Upstream exports its patchers because its
// dispatcher is assembled from them; here the mutation is a step of the one
// algorithm in Evaluator.Admit, not an API of the Patcher. It is exported
// for what must hold that unit, and only that unit, beside upstream's
// patchers from outside this package: the side-by-side benchmark of one
// mutation (test/bench BenchmarkMutation) and the differential tests and
// fuzzer of the patchers (test/differential). It does exactly the work a
// mutation does within Admit, without the chain.
func MutateStandalone(ctx context.Context, pt *Patcher, p *compiler.Policy, m *compiler.Expression, in compiler.Input, gvk schema.GroupVersionKind) (map[string]any, chain.MutationOutcome, error) {
	return pt.mutate(ctx, p, m, in, gvk, &mutationCache{standalone: true})
}
