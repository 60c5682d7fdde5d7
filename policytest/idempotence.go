package policytest

import (
	"context"
	"fmt"
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
func checkIdempotence(ctx context.Context, run *suiteRun, lc *loadedCase, first outcome) []Failure {
	if first.result.Denied != nil || first.result.Object == nil {
		return nil
	}
	final := (&unstructured.Unstructured{Object: first.result.Object}).DeepCopy()
	again, err := admit(ctx, lc, cluster.Chain{Policies: run.evaluators[lc.cluster]}, final)
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
	for _, h := range run.hooks {
		for _, b := range h.Bindings {
			one := engine.NewEvaluator(lc.cluster.Config(), []engine.Hook{{Policy: h.Policy, Compiled: h.Compiled, Bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}})
			o, err := admit(ctx, lc, cluster.Chain{Policies: one}, final)
			if err != nil || o.result.Denied != nil || equal(first.result.Object, o.result.Object) {
				continue
			}
			fs = append(fs, Failure{
				Expectation: "idempotence",
				Message:     fmt.Sprintf("policy %q binding %q changes the final object again when it is re-admitted (as reinvocation would)", h.Policy.Name, b.Name),
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
