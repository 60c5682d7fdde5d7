package policytest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/explain"
)

// checkIdempotence re-admits the final object of first with the case's
// request (same operation, old object and user) through the policies
// alone. That is what kube-apiserver's reinvocation does to them: when a
// later admission plugin changes the object, the policies with
// reinvocationPolicy IfNeeded run again, within the same request, on the
// object they already mutated — so a policy must leave its own output
// alone. (The built-in plugins, which run again in that round too, and
// the webhooks are left out: the check is the policies'.) Every policy binding that
// changes the final object again is named, with the diff.
//
// The policies the suite names in skipIdempotence are left out of the
// re-admission: their output may change on purpose.
func checkIdempotence(ctx context.Context, run *suiteRun, lc *loadedCase, first outcome) []Failure {
	if first.result.Denied != nil || first.result.Object == nil {
		return nil
	}
	final := (&unstructured.Unstructured{Object: first.result.Object}).DeepCopy()
	hooks, ev := run.hooks, run.evaluators[lc.cluster]
	if skip := run.l.Suite.SkipIdempotence; len(skip) > 0 {
		hooks = withoutPolicies(hooks, skip)
		ev = engine.NewEvaluator(lc.cluster.Config(), hooks)
	}
	again, err := admit(ctx, lc, cluster.Chain{Policies: ev}, final)
	if err != nil {
		return []Failure{{Expectation: "idempotence", Message: "re-admitting the final object: " + err.Error()}}
	}
	if d := again.result.Denied; d != nil {
		return []Failure{{Expectation: "idempotence", Message: "re-admitting the final object is denied: " + d.ErrStatus.Message}}
	}
	if equal(first.result.Object, again.result.Object) {
		return nil
	}
	var fs []Failure
	for _, h := range hooks {
		for _, b := range h.Bindings {
			one := engine.NewEvaluator(lc.cluster.Config(), []engine.Hook{{Policy: h.Policy, Compiled: h.Compiled, Bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}})
			o, err := admit(ctx, lc, cluster.Chain{Policies: one}, final)
			if err != nil || o.result.Denied != nil || equal(first.result.Object, o.result.Object) {
				continue
			}
			fs = append(fs, Failure{
				Expectation: "idempotence",
				Message:     changesAgain(h.Policy, b.Name, string(lc.operation)),
				Diff:        diffLabelled("final", "re-admitted", first.result.Object, o.result.Object),
			})
		}
	}
	if len(fs) == 0 {
		// No single binding does it: they do it together.
		fs = append(fs, Failure{
			Expectation: "idempotence",
			Message:     "re-admitting the final object changes it again\n" + strings.TrimSuffix(explain.TraceString(again.result), "\n"),
			Diff:        diffLabelled("final", "re-admitted", first.result.Object, again.result.Object),
		})
	}
	return fs
}

func diffLabelled(from, to string, a, b any) string {
	d, err := explain.Diff(from, to, canonical(a), canonical(b))
	if err != nil {
		return err.Error()
	}
	// YAML ends with a newline, which difflib shows as an empty last line.
	return strings.TrimSuffix(d, " \n")
}

// changesAgain says that a policy binding changes the final object again
// when it is re-admitted, and when kube-apiserver would do that: within
// the request (reinvocation) for a policy with reinvocationPolicy
// IfNeeded; for one with Never, which kube-apiserver never reinvokes, on
// the next request that carries the object.
func changesAgain(p *admissionregistrationv1.MutatingAdmissionPolicy, binding, operation string) string {
	if p.Spec.ReinvocationPolicy == admissionregistrationv1.NeverReinvocationPolicy {
		return fmt.Sprintf("policy %q binding %q changes the final object again when it is re-admitted: with reinvocationPolicy Never kube-apiserver does not reinvoke it within the request, but every later request that carries this object (the same %s again, an apply of the stored object) changes it again (skipIdempotence or idempotence: false to accept that)", p.Name, binding, operation)
	}
	return fmt.Sprintf("policy %q binding %q changes the final object again when it is re-admitted (as reinvocation would)", p.Name, binding)
}

// withoutPolicies is hooks without the policies named in skip.
func withoutPolicies(hooks []engine.Hook, skip []string) []engine.Hook {
	out := make([]engine.Hook, 0, len(hooks))
	for _, h := range hooks {
		if !slices.Contains(skip, h.Policy.Name) {
			out = append(out, h)
		}
	}
	return out
}

// idempotence tells whether a case is checked for idempotence: its own
// idempotence field, else its suite's defaults.idempotence, else flag
// (--idempotence).
func idempotence(flag bool, s *Suite, c *Case) bool {
	switch {
	case c.Idempotence != nil:
		return *c.Idempotence
	case s.Defaults.Idempotence != nil:
		return *s.Defaults.Idempotence
	}
	return flag
}
