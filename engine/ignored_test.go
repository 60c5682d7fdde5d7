package engine

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mutatis-dev/mutatis/chain"
)

// TestIgnoredErrorsAreReported: kube-apiserver drops the errors of a
// policy whose failurePolicy is Ignore without a word; the engine admits
// the same way and lists each in Records.Ignored with the message a denial
// would have had.
func TestIgnoredErrorsAreReported(t *testing.T) {
	never := admissionregistrationv1.NeverReinvocationPolicy
	ignore, fail := admissionregistrationv1.Ignore, admissionregistrationv1.Fail
	broken := `Object{metadata: Object.metadata{labels: {"x": object.missing}}}`
	twoBroken := mapPolicy("two", never, ignore, broken)
	twoBroken.Spec.Mutations = append(twoBroken.Spec.Mutations, twoBroken.Spec.Mutations[0], admissionregistrationv1.Mutation{
		PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
		ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"y": object.alsoMissing}}}`},
	})
	cases := []struct {
		name   string
		policy *admissionregistrationv1.MutatingAdmissionPolicy
		// want are the ignored errors: pass, mutation, message.
		want []chain.IgnoredError
		// wantErrs are the errors of the trace's mutations ("" for none).
		wantErrs []string
	}{
		{
			name: "a mutation error", policy: mapPolicy("p", never, ignore, broken),
			want: []chain.IgnoredError{{Record: chain.Record{Configuration: "p", Hook: "p-binding", Round: 0}, Mutation: 0,
				Message: "policy 'p' with binding 'p-binding' denied request: expression '" + broken + "' resulted in error: no such key: missing"}},
			wantErrs: []string{"no such key: missing"},
		},
		{
			name: "every failing mutation of an invocation", policy: twoBroken,
			want: []chain.IgnoredError{
				{Record: chain.Record{Configuration: "two", Hook: "two-binding", Round: 0}, Mutation: 0, Message: "policy 'two' with binding 'two-binding' denied request: expression '" + broken + "' resulted in error: no such key: missing"},
				{Record: chain.Record{Configuration: "two", Hook: "two-binding", Round: 0}, Mutation: 1, Message: "policy 'two' with binding 'two-binding' denied request: expression '" + broken + "' resulted in error: no such key: missing"},
				{Record: chain.Record{Configuration: "two", Hook: "two-binding", Round: 0}, Mutation: 2, Message: "policy 'two' with binding 'two-binding' denied request: expression 'Object{metadata: Object.metadata{labels: {\"y\": object.alsoMissing}}}' resulted in error: no such key: alsoMissing"},
			},
			wantErrs: []string{"no such key: missing", "no such key: missing", "no such key: alsoMissing"},
		},
		{
			name: "a matchConditions error", policy: mapPolicy("c", never, ignore, counter, "object.nope == 1"),
			want: []chain.IgnoredError{{Record: chain.Record{Configuration: "c", Hook: "c-binding", Round: 0}, Mutation: -1,
				Message: "policy 'c' with binding 'c-binding' denied request: expression 'object.nope == 1' resulted in error: no such key: nope"}},
		},
		{name: "nothing under Fail when nothing fails", policy: mapPolicy("ok", never, fail, counter)},
		{name: "a false matchCondition is no error", policy: mapPolicy("f", never, ignore, counter, "object.nope == 1", "false")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := admitFrozen(t, newEvaluator(t, tc.policy), createConfigMap())
			if err != nil || res.Denied != nil {
				t.Fatalf("err %v denied %v: an Ignore policy's errors never deny", err, res.Denied)
			}
			if len(res.Ignored) != len(tc.want) {
				t.Fatalf("ignored = %+v, want %d", res.Ignored, len(tc.want))
			}
			for i, w := range tc.want {
				g := res.Ignored[i]
				if g.Configuration != w.Configuration || g.Hook != w.Hook || g.Round != w.Round || g.Mutation != w.Mutation || g.Message != w.Message || g.Err == nil {
					t.Errorf("ignored[%d] = %+v\nwant %+v", i, g, w)
				}
			}
			var gotErrs []string
			for _, inv := range res.Invocations {
				for _, m := range inv.Mutations {
					if m.Err != nil {
						gotErrs = append(gotErrs, m.Err.Error())
					}
				}
			}
			if len(gotErrs) != len(tc.wantErrs) {
				t.Fatalf("mutation errors %q, want %q", gotErrs, tc.wantErrs)
			}
			for i := range gotErrs {
				if !strings.HasSuffix(gotErrs[i], tc.wantErrs[i]) {
					t.Errorf("mutation error %d = %q, want …%q", i, gotErrs[i], tc.wantErrs[i])
				}
			}
			// The invocation's error is the first, as the denial under Fail
			// names the first.
			if len(tc.wantErrs) > 0 {
				if inv := res.Invocations[0]; inv.Err == nil || !strings.HasPrefix(inv.Err.Error(), "mutation 0: ") {
					t.Errorf("invocation error = %v, want the first mutation's", inv.Err)
				}
			}
		})
	}
}

// TestIgnoredMatchConditionErrorIsInTheTrace: an Ignore policy skipped
// because its matchConditions failed says why in its trace.
func TestIgnoredMatchConditionErrorIsInTheTrace(t *testing.T) {
	p := mapPolicy("c", admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.Ignore, counter, "object.nope == 1")
	res, err := admitFrozen(t, newEvaluator(t, p), createConfigMap())
	if err != nil {
		t.Fatal(err)
	}
	inv := res.Invocations[0]
	if inv.Skip != chain.SkipMatchConditionsErrorIgnored || inv.Err == nil || !strings.Contains(inv.Err.Error(), "no such key: nope") {
		t.Fatalf("trace = %+v, want skipped with the matchConditions error", inv)
	}
}
