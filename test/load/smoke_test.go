package load

import (
	"context"
	"testing"
	"time"
)

// TestSmokeRunAgainstTheInProcessWebhook sends the fixture's Pod to the
// webhook serving testdata/policies at a low rate: every answer must be
// correct (allowed, a patch, the uid, all 20 policies applied). No timed
// assertion: the in-flight bound and the deadlines are far beyond what
// the race detector on a busy machine needs.
func TestSmokeRunAgainstTheInProcessWebhook(t *testing.T) {
	ctx := context.Background()
	target, srv := inProcessTarget(ctx, t, 5*time.Minute)
	if srv.Summary != "20 policies, 20 bindings, 2 other objects" {
		t.Errorf("loaded %s", srv.Summary)
	}

	x, err := target.Probe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if x.Proto != "HTTP/2.0" || x.Policies != 20 || x.PatchOperations == 0 {
		t.Errorf("first exchange %+v: want HTTP/2.0, 20 policies and a patch", x)
	}

	if target.answers.last.Load() == nil {
		t.Error("the webhook's answer was not remembered: every answer is decoded in full (an escape in it, or the uid twice?)")
	}

	p := Plan{Rate: 50, Duration: time.Second, MaxInFlight: 1000}
	res, err := Run(ctx, p, target.Send)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summarize()
	if s.Sent != p.Count() || s.OK != p.Count() || s.Errors != 0 {
		t.Errorf("sent %d, ok %d, errors %d (%v, first: %q); want all %d correct", s.Sent, s.OK, s.Errors, s.ErrorKinds, s.FirstErrors, p.Count())
	}
	t.Logf("%d requests: latency p50 %s p99 %s (race detector and machine load included)", s.Sent, Millis(s.Latency.P50), Millis(s.Latency.P99))
}
