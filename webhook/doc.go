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
//   - handler.go and server.go: the HTTP layer — decode, call the engine,
//     encode — with limits, deadlines, TLS, metrics and graceful shutdown.
//
// See docs/webhook.md for the endpoints, flags and the mapping of MAP
// semantics onto a webhook.
package webhook
