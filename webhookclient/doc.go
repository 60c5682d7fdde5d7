// Package webhookclient calls admission webhooks the way kube-apiserver
// 1.37's MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins
// do: it is the client side of MutatingWebhookConfigurations and
// ValidatingWebhookConfigurations (package webhook is the server side,
// mutatis serving as a webhook; the two share nothing).
//
// # Loading
//
// Load takes the MutatingWebhookConfigurations and
// ValidatingWebhookConfigurations out of a manifest.Set (manifest hands
// them back as other objects): admissionregistration.k8s.io v1, or
// v1beta1 with v1beta1's own defaults (failurePolicy Ignore,
// matchPolicy Exact, sideEffects Unknown, timeoutSeconds 30,
// admissionReviewVersions [v1beta1]), strictly decoded, defaulted,
// converted to v1 and validated by kube-apiserver's own registry code
// (scheme/webhookconfig). Errors name the file, document, configuration
// and field path.
//
// # Dispatching
//
// NewDispatcher builds a Dispatcher from the configurations (APIObjects of
// what Load returned, or objects from a cluster). A Dispatcher is the
// MutatingAdmissionWebhook stage of an admission chain (chain.Stage):
// Dispatcher.Admit runs one round of the plugin for one request:
//
//   - configurations in name order, webhooks in list order;
//   - matching through package matching (namespaceSelector, objectSelector,
//     rules and scope, matchPolicy Equivalent with the object converted by
//     scheme to the version the webhook registered), the exemptions of
//     matching.WebhookExempt, then matchConditions compiled in
//     kube-apiserver's webhook CEL environment (object, oldObject, request,
//     authorizer; 2,500,000 cost budget) by k8s.io/apiserver's own
//     matchconditions matcher: a false condition skips the webhook, an
//     error is a 403 under failurePolicy Fail and a skip under Ignore;
//   - dry-run requests refused with a 400 before any call to a webhook
//     whose sideEffects is not None or NoneOnDryRun;
//   - the AdmissionReview in the first of the webhook's
//     admissionReviewVersions the client speaks (v1, v1beta1), posted to
//     clientConfig.url or to https://NAME.NAMESPACE.svc:PORT/PATH for a
//     service (dialed at the address ServiceURLs maps it to, the
//     certificate verified for NAME.NAMESPACE.svc against caBundle, or
//     the system roots when it is empty), with timeoutSeconds as the
//     deadline and the ?timeout= parameter kube-apiserver sends;
//   - the answer checked as kube-apiserver checks it (uid echoed in v1,
//     patch with patchType, JSONPatch only), its warnings and audit
//     annotations ("NAME/key") collected, a denial turned into the
//     webhook's Status (`admission webhook "NAME" denied the request: …`,
//     code at least 400);
//   - the patch applied to the object's JSON by evanphx/json-patch v4,
//     decoded without strictness into the kind's Go type, compared with
//     the object before (a change asks for reinvocation) and defaulted;
//   - failures to call or to use an answer under the failurePolicy: Fail
//     gives kube-apiserver's 500 `failed calling webhook "NAME": …`, Ignore
//     goes on with the next webhook (and stops with a 504 "Timeout: request did not complete within requested timeout" once the
//     request's own context is done).
//
// The chain.Outcome holds the object after the round (in the request's
// kind), a chain.Call per webhook (matched or why not, version, latency,
// patch, reinvocation, outcome), warnings, audit annotations and, in
// Denied, kube-apiserver's refusal.
//
// # In an admission chain
//
// The chain (a chain.Runner) owns the order of the stages and the reinvocation
// round; the dispatcher owns the webhooks' part of it, its state kept in
// the request's chain.Context:
//
//	res, err := runner.Run(ctx, attrs, plugins, policies, dispatcher)
//
// A webhook that changed the object asks for the reinvocation round. In
// it only webhooks with reinvocationPolicy IfNeeded that ran in the first
// round and saw a later change are called again: a change by a later
// webhook, or a change by the other stages between the rounds (the
// dispatcher compares the object it is given with the one it returned).
// attrs.Object must be in typed form (what scheme's normalization and
// defaulting return), as objects are compared semantically.
//
// A Dispatcher is immutable and safe for concurrent use. Build a new one
// when configurations change, with Options.Previous set to the old one:
// the HTTP clients (connections, TLS sessions) of configurations whose
// generation did not change are kept, the others are new; then Close the
// old one.
//
// # Validating webhooks
//
// NewValidatingDispatcher builds the ValidatingAdmissionWebhook stage of a
// validating list (run once, chain.Runner.RunOnce, on the object the
// registry would store or a DELETE's old object): the webhooks matched in
// order as above, then every matching one called concurrently over the
// same clients and AdmissionReviews, each answer checked by upstream's
// VerifyAdmissionResponse for a validating webhook (a patch is an invalid
// answer, under the failurePolicy), the first refusal to arrive the
// request's, warnings and audit annotations (the webhooks' own and
// failed-open.validating.webhook.admission.k8s.io/round_0_index_I) as the
// answers arrive.
//
// kube-apiserver's algorithm and messages are taken from k8s.io/apiserver
// v0.37.1 pkg/admission/plugin/webhook (mutating and validating
// dispatchers, generic, request, errors), which test/differential runs
// side by side with this package as the oracle.
package webhookclient
