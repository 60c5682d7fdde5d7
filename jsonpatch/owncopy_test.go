package jsonpatch

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// TestOneGroupReadsTheRuntime holds oneGroup to the runtime of the build:
// maps of one to eight entries made without a size hint (or one of at most
// eight), after deletions too, are held in one group; maps made with a
// larger hint, or grown past eight entries, are not; an empty map is
// never said to be. A runtime that lays out its maps otherwise fails it
// (ownMap's copies would then only be slower, never different).
func TestOneGroupReadsTheRuntime(t *testing.T) {
	if oneGroup(map[string]any{}) || oneGroup(nil) {
		t.Error("an empty map said to be held in one group")
	}
	for n := 1; n <= 20; n++ {
		plain := map[string]any{}
		hinted := make(map[string]any, n)
		large := make(map[string]any, 64)
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("key%d", i)
			plain[k], hinted[k], large[k] = i, i, i
		}
		small := n <= groupPlaces
		if got := oneGroup(plain); got != small {
			t.Errorf("%d entries, no hint: oneGroup %v, want %v", n, got, small)
		}
		if got := oneGroup(hinted); got != small {
			t.Errorf("%d entries, hint %d: oneGroup %v, want %v", n, n, got, small)
		}
		if oneGroup(large) {
			t.Errorf("%d entries, hint 64: said to be held in one group", n)
		}
		delete(plain, "key0")
		if got := oneGroup(plain); got != (small && n > 1) {
			t.Errorf("%d entries less one: oneGroup %v, want %v", n, got, small && n > 1)
		}
	}
	// JSON decoding's maps.
	var decoded map[string]any
	if err := json.Unmarshal([]byte(`{"a":1,"b":{"c":"d"}}`), &decoded); err != nil {
		t.Fatal(err)
	}
	if !oneGroup(decoded) || !oneGroup(decoded["b"].(map[string]any)) {
		t.Error("JSON decoding's small maps not said to be held in one group")
	}
}

// randomMap is a map of up to 20 entries made in one of the ways the
// objects Apply sees are: without a size hint, with one of its size, with a
// large one (the converter's), with entries deleted after they were added,
// or decoded from JSON.
func randomMap(r *rand.Rand) map[string]any {
	n := r.IntN(21)
	var m map[string]any
	switch r.IntN(4) {
	case 0:
		m = map[string]any{}
	case 1:
		m = make(map[string]any, n)
	default:
		m = make(map[string]any, 64)
	}
	for i := 0; i < n; i++ {
		switch r.IntN(4) {
		case 0:
			m[fmt.Sprintf("k%d", i)] = map[string]any{"x": int64(i)}
		case 1:
			m[fmt.Sprintf("k%d", i)] = []any{"a", nil}
		case 2:
			m[fmt.Sprintf("k%d", i)] = nil
		default:
			m[fmt.Sprintf("k%d", i)] = float64(i) + 0.5
		}
	}
	for i := r.IntN(3); i > 0 && len(m) > 0; i-- {
		delete(m, fmt.Sprintf("k%d", r.IntN(n)))
	}
	if r.IntN(4) == 0 {
		b, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		m = nil
		if err := json.Unmarshal(b, &m); err != nil {
			panic(err)
		}
	}
	return m
}

// TestOwnMapIsACopy holds ownMap's copies, by maps.Clone of a map held in
// one group and entry by entry otherwise, to what its callers do with them:
// the copy holds m's entries bit for bit, is not m, is the call's own (a
// second ownMap returns it as it is), and writing it (an entry added,
// replaced, removed) leaves m frozen as it was.
func TestOwnMapIsACopy(t *testing.T) {
	n := valuetest.Sweep(20000, 2000)
	cloned := 0
	for i := 0; i < n; i++ {
		r := rand.New(rand.NewPCG(uint64(i), 31))
		m := randomMap(r)
		frozen := valuetest.Freeze(m)
		last := r.IntN(2) == 0
		if len(m) > 0 && (len(m) < groupPlaces || !last) && oneGroup(m) {
			cloned++
		}
		a := &applier{}
		c := a.ownMap(m, last)
		if !valuetest.BitsEqual(c, m) {
			t.Fatalf("copy %#v of %#v", c, m)
		}
		if c == nil || (len(m) > 0 || m != nil) && mapID(c) == mapID(m) {
			t.Fatalf("the copy of %#v is not a map of its own", m)
		}
		if !a.isOwned(mapID(c)) || mapID(a.ownMap(c, last)) != mapID(c) {
			t.Fatal("the copy is not the call's own")
		}
		c["new"] = "entry"
		for k := range c {
			if r.IntN(3) == 0 {
				delete(c, k)
			} else {
				c[k] = "replaced"
			}
		}
		frozen.Check(t, "the copied map")
	}
	t.Logf("%d of %d copies by maps.Clone", cloned, n)
	if cloned < n/10 {
		t.Errorf("only %d of %d copies by maps.Clone", cloned, n)
	}
}

// TestApplyUnnormalizedChainsLeaveTheirInputs applies chains of random
// patches (add, remove and replace) to the real objects of the tests, each
// patch to the result of the one before as the mutations of an admission
// do, and holds every result to Apply's and every input — the object each
// patch started from, and every operation's value — frozen bit for bit as
// it was until the chain's end (an admission keeps the request's object,
// each invocation's input and the last patch result it proved).
func TestApplyUnnormalizedChainsLeaveTheirInputs(t *testing.T) {
	inputs := testobjects.Inputs(t)
	chains := valuetest.Sweep(3000, 300)
	kinds := []string{"add", "remove", "replace"}
	applied := 0
	for i := 0; i < chains; i++ {
		r := rand.New(rand.NewPCG(uint64(i), 37))
		g := gen{r}
		doc := inputs[r.IntN(len(inputs))].Obj
		var frozen []valuetest.Frozen
		for step := 0; step < 8; step++ {
			ops := g.ops(doc)
			for j := range ops {
				ops[j].Op = kinds[r.IntN(len(kinds))]
				ops[j].From = ""
				frozen = append(frozen, valuetest.Freeze(ops[j].Value))
			}
			frozen = append(frozen, valuetest.Freeze(doc))
			want, err := Apply(doc, ops)
			got, ok := ApplyUnnormalized(doc, ops)
			if ok && IsNormalized(got) {
				if err != nil {
					t.Fatalf("ApplyUnnormalized vouched for %#v, Apply failed: %v", got, err)
				}
				if !valuetest.BitsEqual(got, want) {
					t.Fatalf("ApplyUnnormalized vouched for\n%#v\nApply gave\n%#v\nops: %+v", got, want, ops)
				}
			}
			if err == nil && want != nil {
				applied++
				if ok {
					doc = got
				} else {
					doc = want
				}
			}
		}
		for j, f := range frozen {
			f.Check(t, fmt.Sprintf("chain %d: input %d", i, j))
		}
	}
	t.Logf("%d of %d patches applied", applied, 8*chains)
	if applied < chains {
		t.Errorf("only %d of %d patches applied", applied, 8*chains)
	}
}
