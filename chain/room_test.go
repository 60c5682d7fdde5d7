package chain

import (
	"errors"
	"testing"
)

// TestRoomKeepsWithinBounds: a Room lends its arrays cleared (nothing of
// the last run's records held past it) and keeps, of what a run gives
// back, only arrays within its bounds.
func TestRoomKeepsWithinBounds(t *testing.T) {
	var r Room
	inv := make([]Invocation, 3, 8)
	inv[2].Err = errors.New("kept")
	out := make([]MutationOutcome, 5, 16)
	out[4].Err = errors.New("kept")
	r.take(inv, out)
	if len(r.Invocations) != 0 || cap(r.Invocations) != 8 || len(r.Outcomes) != 0 || cap(r.Outcomes) != 16 {
		t.Fatalf("kept %d/%d invocations, %d/%d outcomes", len(r.Invocations), cap(r.Invocations), len(r.Outcomes), cap(r.Outcomes))
	}
	li, lo := r.lend()
	if cap(li) != 8 || cap(lo) != 16 || li[:3][2].Err != nil || lo[:5][4].Err != nil {
		t.Fatal("lent arrays not cleared")
	}
	if r.Invocations != nil || r.Outcomes != nil {
		t.Fatal("a lent room still holds its arrays")
	}
	r.take(make([]Invocation, 0, maxRoomInvocations+1), make([]MutationOutcome, 0, maxRoomOutcomes+1))
	if r.Invocations != nil || r.Outcomes != nil {
		t.Fatalf("kept arrays past the bounds: %d, %d", cap(r.Invocations), cap(r.Outcomes))
	}
}

// TestMutationRoomShares: in a run lending a room, MutationRoom's slices
// are zero, of length and capacity n, and never overlap; without one,
// each is a new array.
func TestMutationRoomShares(t *testing.T) {
	for _, lending := range []bool{false, true} {
		c := &Context{lending: lending, outcomes: make([]MutationOutcome, 0, 4)}
		var got [][]MutationOutcome
		for _, n := range []int{2, 1, 3, 0, 5, 2} {
			s := c.MutationRoom(n)
			if len(s) != n || cap(s) != n {
				t.Fatalf("lending %v: MutationRoom(%d) has length %d, capacity %d", lending, n, len(s), cap(s))
			}
			for i := range s {
				if s[i] != (MutationOutcome{}) {
					t.Fatalf("lending %v: outcome %d not zero", lending, i)
				}
				s[i].Cost = int64(len(got)*10 + i)
			}
			got = append(got, s)
		}
		for k, s := range got {
			for i := range s {
				if s[i].Cost != int64(k*10+i) {
					t.Fatalf("lending %v: slice %d outcome %d written over: %d", lending, k, i, s[i].Cost)
				}
			}
		}
	}
	if (*Context)(nil).MutationRoom(2) == nil {
		t.Fatal("no room from a nil Context")
	}
}
