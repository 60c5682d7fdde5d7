// Package webhook serves MutatingAdmissionPolicies as a Kubernetes mutating
// admission webhook: an HTTPS server that answers AdmissionReview requests
// (admission.k8s.io/v1 and v1beta1) with the decision and JSON patch of the
// policy engine, plus health, readiness and Prometheus endpoints.
//
// The package reads in three layers, as controller-runtime's admission
// webhook does:
//
//   - review.go: decoding an AdmissionReview and turning its request into
//     matching.Attributes (Decode, Attributes);
//   - response.go: turning the engine's Result into an AdmissionResponse,
//     with the RFC 6902 patch from the request object to the result
//     (Respond);
//   - handler.go: the review layer — decode, call the engine, encode —
//     with the review's deadline, the in-flight slots and panic recovery;
//   - limits.go and server.go: the transport layer — what a client
//     controls bounded in time and bytes before the review layer sees it
//     (body read timeout, body size, the body-bytes budget), TLS, metrics,
//     net/http's error log (errorlog.go) and the draining shutdown.
//
// See docs/webhook.md for the endpoints, flags and the mapping of MAP
// semantics onto a webhook.
package webhook
