package chain

import (
	"strings"
	"testing"
)

// TestSkipReasonsHaveWords: every reason but NotSkipped has its own words,
// and a false matchCondition is named in the message.
func TestSkipReasonsHaveWords(t *testing.T) {
	seen := map[string]Skip{}
	for r := NotSkipped + 1; r <= SkipExempt; r++ {
		w := r.String()
		if w == "" || strings.HasPrefix(w, "skip reason ") {
			t.Errorf("reason %d has no words", r)
		}
		if other, ok := seen[w]; ok {
			t.Errorf("reasons %d and %d both read %q", r, other, w)
		}
		seen[w] = r
	}
	if (Invocation{}).SkipMessage() != "" || !(Invocation{}).Ran() {
		t.Error("an invocation that ran has a skip message")
	}
	inv := Invocation{Record: Record{Skip: SkipMatchConditionFalse, Condition: "not-injected"}}
	if inv.Ran() || inv.SkipMessage() != "matchCondition not-injected is false" {
		t.Errorf("Ran %v, SkipMessage %q", inv.Ran(), inv.SkipMessage())
	}
	// A webhook's record says it in the same words.
	call := Call{Record: inv.Record}
	if call.Ran() || call.SkipMessage() != inv.SkipMessage() {
		t.Errorf("a call: Ran %v, SkipMessage %q", call.Ran(), call.SkipMessage())
	}
}
