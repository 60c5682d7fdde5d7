package jsonpatch

import (
	"math/rand/v2"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// TestApplyUnnormalizedOwnRootIsItsOwn holds ApplyUnnormalizedOwn's own to
// what its callers write on it: when it says the result's root is its own,
// the root is neither doc nor any operation's value, and clearing it and
// writing it anew leaves doc and the operations' values as they were. Over
// the randomized cases of TestApplyUnnormalizedRandomized, and patches
// that replace the whole document (whose root is the operation's value,
// never its own) before and after other operations.
func TestApplyUnnormalizedOwnRootIsItsOwn(t *testing.T) {
	n := valuetest.Sweep(20000, 2000)
	owned, answered := 0, 0
	for i := 0; i < n; i++ {
		r := rand.New(rand.NewPCG(uint64(i), 29))
		doc, ops := unnormalizedCase(r)
		if r.IntN(4) == 0 {
			root := Operation{Op: "replace", Path: "", Value: map[string]any{"a": map[string]any{"b": "c"}, "d": int64(1)}, HasValue: true}
			if r.IntN(2) == 0 {
				ops = append([]Operation{root}, ops...)
			} else {
				ops = append(ops, root)
			}
		}
		docBefore := valuetest.DeepCopy(doc)
		values := make([]any, len(ops))
		for j := range ops {
			values[j] = valuetest.DeepCopy(ops[j].Value)
		}
		got, own, ok := ApplyUnnormalizedOwn(doc, ops)
		plain, plainOK := ApplyUnnormalized(doc, ops)
		if ok != plainOK || !valuetest.BitsEqual(got, plain) {
			t.Fatalf("ApplyUnnormalizedOwn gave %#v (ok %v), ApplyUnnormalized %#v (ok %v)", got, ok, plain, plainOK)
		}
		if !ok {
			if own {
				t.Fatal("own without a result")
			}
			continue
		}
		answered++
		if !own {
			continue
		}
		owned++
		if mapID(got) == mapID(doc) {
			t.Fatalf("the document itself said to be the call's own\ndoc: %#v\nops: %+v", docBefore, ops)
		}
		for j := range ops {
			if m, isMap := ops[j].Value.(map[string]any); isMap && m != nil && mapID(m) == mapID(got) {
				t.Fatalf("operation %d's value said to be the call's own\nops: %+v", j, ops)
			}
		}
		clear(got)
		got["written"] = "by the caller"
		if !valuetest.BitsEqual(doc, docBefore) {
			t.Fatalf("writing the own root changed the document: %#v, was %#v\nops: %+v", doc, docBefore, ops)
		}
		for j := range ops {
			if !valuetest.BitsEqual(ops[j].Value, values[j]) {
				t.Fatalf("writing the own root changed operation %d's value: %#v, was %#v", j, ops[j].Value, values[j])
			}
		}
	}
	t.Logf("%d of %d cases answered, %d with the root the call's own", answered, n, owned)
	if owned < answered/4 {
		t.Errorf("the root was the call's own in only %d of %d answered cases", owned, answered)
	}
}
