package validating

import "sync/atomic"

// Sharing turns the sharing of evaluations across policies (share.go) on
// or off in e and returns the counter of the shared results e uses from
// now on.
func Sharing(e *Evaluator, on bool) *atomic.Int64 {
	e.noShare = !on
	e.replays = new(atomic.Int64)
	return e.replays
}
