package chain

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/matching"
)

// counting is a stage that counts its runs in its own state, changes the
// object (a label per run) when change says so, and refuses on deny.
type counting struct {
	name   string
	change func(run int) bool
	deny   int // the run that refuses; 0: none
}

func (s *counting) Name() string { return s.name }

func (s *counting) Admit(_ context.Context, a *matching.Attributes, rc *Context) (Outcome, error) {
	runs, _ := rc.Value(s).(*int)
	if runs == nil {
		runs = new(int)
		rc.SetValue(s, runs)
	}
	*runs++
	obj := map[string]any{}
	for k, v := range a.Object.Object {
		obj[k] = v
	}
	if s.change != nil && s.change(*runs) {
		obj[s.name] = *runs
		rc.SetShouldReinvoke()
	}
	out := Outcome{Object: obj, Records: Records{Warnings: []string{s.name}}}
	if *runs == s.deny {
		out.Denied = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("no"))
	}
	return out, nil
}

// TestRunReinvokesOnce: a stage's change reruns the whole list once, never
// a third time; each stage's state is its own; a refusal ends the run.
func TestRunReinvokesOnce(t *testing.T) {
	pod := func() *matching.Attributes {
		a := &matching.Attributes{Object: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}}
		a.Kind.Version, a.Kind.Kind = "v1", "Pod"
		return a
	}
	always := func(int) bool { return true }
	var r Runner // one for every case: its recycled Contexts start empty
	for _, tc := range []struct {
		name      string
		stages    func() []Stage
		once      bool
		warnings  int
		reinvoked bool
		deniedBy  string
	}{
		{"nobody asks: one round", func() []Stage { return []Stage{&counting{name: "a"}, &counting{name: "b"}} }, false, 2, false, ""},
		{"a change: the whole list twice, never thrice", func() []Stage { return []Stage{&counting{name: "a"}, &counting{name: "b", change: always}} }, false, 4, true, ""},
		{"RunOnce never reinvokes", func() []Stage { return []Stage{&counting{name: "a", change: always}} }, true, 1, false, ""},
		{"a refusal in round 2 ends the run", func() []Stage {
			return []Stage{&counting{name: "a", deny: 2}, &counting{name: "b", change: always}}
		}, false, 3, true, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := r.Run
			if tc.once {
				run = r.RunOnce
			}
			res, err := run(context.Background(), pod(), tc.stages()...)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) != tc.warnings || res.Reinvoked != tc.reinvoked || res.DeniedBy != tc.deniedBy {
				t.Errorf("warnings %v, reinvoked %v, denied by %q; want %d, %v, %q", res.Warnings, res.Reinvoked, res.DeniedBy, tc.warnings, tc.reinvoked, tc.deniedBy)
			}
		})
	}
}

// recording is a stage that records invocations in round r: wants[r]
// records, n of room asked (-1: no room asked, its own slice), extra
// asked for the later round.
type recording struct {
	name         string
	wants, rooms []int
	extra        int
	// last, shared by a run's stages, is where the stage before put its
	// first record when it wrote within the room it was given.
	last *placement
}

// placement is a record's address, and its index in the run's records.
type placement struct {
	at   *Invocation
	i    int
	seen int
}

// check fails unless the record placed last is where the stage put it
// in invs, the run's records: kept in place, not copied.
func (p *placement) check(invs []Invocation) error {
	if p.at != nil {
		if &invs[p.i] != p.at {
			return errors.New("records written in the run's room were copied")
		}
		p.seen++
		p.at = nil
	}
	return nil
}

func (s *recording) Name() string { return s.name }

func (s *recording) Admit(_ context.Context, a *matching.Attributes, rc *Context) (Outcome, error) {
	round := 0
	if rc.IsReinvoke() {
		round = 1
	}
	if err := s.last.check(rc.invocations); err != nil {
		return Outcome{}, err
	}
	start := len(rc.invocations)
	var invs []Invocation
	if s.rooms[round] >= 0 {
		invs = rc.InvocationRoom(s.rooms[round], s.extra)
		if len(invs) != 0 || cap(invs) < s.rooms[round] {
			return Outcome{}, errors.New("InvocationRoom: not an empty slice with the room asked")
		}
	}
	within := s.rooms[round] >= 0 && cap(invs) >= s.wants[round]
	for i := range s.wants[round] {
		invs = append(invs, Invocation{Record: Record{Configuration: s.name, Hook: string(rune('a' + i)), Round: round}})
	}
	if within && len(invs) > 0 {
		s.last.at, s.last.i = &invs[0], start
	}
	rc.SetShouldReinvoke()
	return Outcome{Object: a.Object.Object, Records: Records{Invocations: invs}}, nil
}

// TestInvocationRoomKeepsEveryRecord: whether stages write their records
// in the run's array (InvocationRoom) or in their own, within the room or
// past it, the run's Invocations are every stage's records in order, as
// appending them one Outcome after the other gives; and records kept in
// place are not copied.
func TestInvocationRoomKeepsEveryRecord(t *testing.T) {
	a := func() *matching.Attributes {
		return &matching.Attributes{Object: &unstructured.Unstructured{Object: map[string]any{"kind": "Pod"}}}
	}
	var r Runner
	rnd := uint32(7)
	next := func(n int) int {
		rnd ^= rnd << 13
		rnd ^= rnd >> 17
		rnd ^= rnd << 5
		return int(rnd % uint32(n))
	}
	inPlace := 0
	for range 2000 {
		var stages []Stage
		var want []Invocation
		last := new(placement)
		for range 1 + next(4) {
			s := &recording{name: string(rune('A' + len(stages))), extra: next(6), last: last}
			for range 2 {
				s.wants = append(s.wants, next(6))
				s.rooms = append(s.rooms, next(8)-1)
			}
			stages = append(stages, s)
		}
		for round := range 2 {
			for _, st := range stages {
				s := st.(*recording)
				for i := range s.wants[round] {
					want = append(want, Invocation{Record: Record{Configuration: s.name, Hook: string(rune('a' + i)), Round: round}})
				}
			}
		}
		res, err := r.Run(context.Background(), a(), stages...)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Invocations) != len(want) {
			t.Fatalf("%d records, want %d", len(res.Invocations), len(want))
		}
		for i := range want {
			if res.Invocations[i].Record != want[i].Record {
				t.Fatalf("record %d: %+v, want %+v", i, res.Invocations[i].Record, want[i].Record)
			}
		}
		if err := last.check(res.Invocations); err != nil {
			t.Fatal(err)
		}
		inPlace += last.seen
	}
	if inPlace < 1000 {
		t.Fatalf("%d records kept in place: the cases no longer test it", inPlace)
	}
}
