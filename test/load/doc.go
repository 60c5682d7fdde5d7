// Package load measures the admission webhook under a fixed request rate:
// AdmissionReviews sent over TLS (HTTP/2, the CA verified) at a constant
// rate, every answer checked, latency percentiles reported.
//
// The generator is open-loop: request i is due at start + i/rate whatever
// happened to the requests before it, and its latency is measured from that
// intended time, so a server (or a generator) that falls behind shows up in
// the latency instead of silently lowering the rate ("coordinated
// omission"). Service time, from the actual send, is reported next to it.
// At most Plan.MaxInFlight requests are outstanding; a request that comes
// due when all slots are taken is not sent and counts as an error.
//
// The pieces, in the order of a run:
//
//   - StartProcess runs `mutatis serve --policies DIR --self-signed-dir DIR`
//     as its own process (what `make load` measures), ProcessCPU reads its
//     CPU time; StartServer serves a policy directory in this process as
//     that command does;
//   - NewReviews builds the AdmissionReview kube-apiserver would send for
//     an object, once, and Reviews.Body gives it a new request uid per send;
//   - Target.Send posts one review and Expect.Verify checks the answer
//     (allowed, a JSON patch, the uid echoed, every policy applied);
//   - Run drives a Sender at Plan.Rate for Plan.Duration;
//   - Result.Summarize computes the counts and percentiles, and Markdown
//     renders the table of docs/performance.md.
//
// cmd/loadgen is the command line (`make load`); see docs/performance.md,
// "Webhook under load".
package load
