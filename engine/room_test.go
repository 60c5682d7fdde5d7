package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
)

// recordsStage is a stage that records without the run's rooms: its own
// Invocations array, made for each Admit, and no object change.
type recordsStage struct{}

func (recordsStage) Name() string { return "Records" }

func (recordsStage) Admit(_ context.Context, a *matching.Attributes, rc *chain.Context) (chain.Outcome, error) {
	o := chain.Outcome{Object: a.Object.Object}
	round := 0
	if rc.IsReinvoke() {
		round = 1
	}
	o.Invocations = []chain.Invocation{{Record: chain.Record{Configuration: "records", Hook: "own", Round: round}}}
	return o, nil
}

// TestRecordsInALentRoomAreTheRun's: a run whose records are written in a
// lent chain.Room (Runner.RunIn, what the webhook's reviews do) leaves the
// Result a run with new arrays (Runner.Run) leaves — the object, the
// denial, the rounds, every invocation's record and its mutations'
// outcomes in order —, over 300 random chains of one to three stages
// (evaluators of one to eight IfNeeded and Never policies of one to three
// mutations each, behind matchConditions or not, failing under Fail and
// Ignore; a stage with records of its own), every run lending the same
// Room, whose arrays the runs must then reuse.
func TestRecordsInALentRoomAreTheRun(t *testing.T) {
	exprs := []string{
		counter,
		`Object{metadata: Object.metadata{annotations: {"stamp": object.metadata.name}}}`,
		`Object{}`,
		`Object{metadata: Object.metadata{labels: {"bad": string(1/0)}}}`,
		`Object{metadata: Object.metadata{labels: {"parity": string(int(object.metadata.?annotations[?"count"].orValue("0")) % 2)}}}`,
	}
	conditions := []string{
		`int(object.metadata.?annotations[?"count"].orValue("0")) <= 1`,
		`!("parity" in object.metadata.?labels.orValue({}))`,
		`1/0 == 1`,
	}
	reinvocation := func(rng *rand.Rand) admissionregistrationv1.ReinvocationPolicyType {
		if rng.IntN(2) == 0 {
			return admissionregistrationv1.IfNeededReinvocationPolicy
		}
		return admissionregistrationv1.NeverReinvocationPolicy
	}
	failure := func(rng *rand.Rand) admissionregistrationv1.FailurePolicyType {
		if rng.IntN(3) == 0 {
			return admissionregistrationv1.Fail
		}
		return admissionregistrationv1.Ignore
	}
	rng := rand.New(rand.NewPCG(29, 4))
	sets := 300
	if testing.Short() {
		sets = 60
	}
	var room chain.Room
	var runner, reference chain.Runner
	reused, reinvoked, outcomes := 0, 0, 0
	for set := range sets {
		var stages []chain.Stage
		for s := range 1 + rng.IntN(3) {
			if s > 0 && rng.IntN(3) == 0 {
				stages = append(stages, recordsStage{})
				continue
			}
			var ps []*admissionregistrationv1.MutatingAdmissionPolicy
			for i := range 1 + rng.IntN(8) {
				var conds []string
				if rng.IntN(3) == 0 {
					conds = append(conds, conditions[rng.IntN(len(conditions))])
				}
				p := mapPolicy(fmt.Sprintf("s%dp%d", s, i), reinvocation(rng), failure(rng), exprs[rng.IntN(len(exprs))], conds...)
				for range rng.IntN(3) {
					p.Spec.Mutations = append(p.Spec.Mutations, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
						ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: exprs[rng.IntN(len(exprs))]}})
				}
				ps = append(ps, p)
			}
			stages = append(stages, NewEvaluator(testConfig(), testHooks(t, ps...)))
		}
		for run := range 2 { // recycled states and contexts too
			want, wantErr := reference.Run(context.Background(), createConfigMap(), stages...)
			got, gotErr := runner.RunIn(context.Background(), createConfigMap(), &room, stages...)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("set %d run %d: error %v, want %v", set, run, gotErr, wantErr)
			}
			if !reflect.DeepEqual(got.Object, want.Object) || fmt.Sprint(got.Denied) != fmt.Sprint(want.Denied) ||
				got.DeniedBy != want.DeniedBy || got.Reinvoked != want.Reinvoked || got.Reinvoke != want.Reinvoke {
				t.Fatalf("set %d run %d: result %v (denied %v by %q, reinvoked %v, reinvoke %v), want %v (denied %v by %q, reinvoked %v, reinvoke %v)",
					set, run, got.Object, got.Denied, got.DeniedBy, got.Reinvoked, got.Reinvoke, want.Object, want.Denied, want.DeniedBy, want.Reinvoked, want.Reinvoke)
			}
			if g, w := traceOf(got), traceOf(want); g != w {
				t.Fatalf("set %d run %d: trace\n%s\nwant\n%s", set, run, g, w)
			}
			if (got.Invocations == nil) != (want.Invocations == nil) || len(got.Invocations) != len(want.Invocations) {
				t.Fatalf("set %d run %d: %d invocations (nil %v), want %d (nil %v)", set, run, len(got.Invocations), got.Invocations == nil, len(want.Invocations), want.Invocations == nil)
			}
			for i := range got.Invocations {
				if g, w := got.Invocations[i].Mutations, want.Invocations[i].Mutations; (g == nil) != (w == nil) || len(g) != len(w) {
					t.Fatalf("set %d run %d: invocation %d has %d outcomes (nil %v), want %d (nil %v)", set, run, i, len(g), g == nil, len(w), w == nil)
				}
				outcomes += len(got.Invocations[i].Mutations)
			}
			if len(got.Invocations) > 0 && cap(room.Invocations) > 0 && &room.Invocations[:1][0] == &got.Invocations[0] {
				reused++
			}
			if got.Reinvoked {
				reinvoked++
			}
		}
	}
	if reused < sets/2 || reinvoked == 0 || outcomes == 0 {
		t.Fatalf("%d runs wrote in the room's array, %d reinvoked, %d outcomes: the runs no longer test the room", reused, reinvoked, outcomes)
	}
}
