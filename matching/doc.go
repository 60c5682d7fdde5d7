// Package matching decides which admission hooks apply to a request, the way kube-apiserver
// 1.37 does for MutatingAdmissionPolicies, their bindings and MutatingWebhookConfiguration
// webhooks.
//
// The package has four parts:
//
//   - Table: the Kubernetes built-in API resources (group, version, plural, kind, scope,
//     subresources and their kinds), generated from the OpenAPI v3 spec committed in
//     k8s.io/kubernetes at the tag named by BuiltinVersion, plus CustomResourceDefinitions added
//     at load time. The table also answers kube-apiserver's "equivalent resources" question
//     for matchPolicy Equivalent and implements runtime.EquivalentResourceMapper.
//   - Attributes: the parts of an admission request that matching looks at.
//   - Matcher: namespaceSelector, objectSelector, resourceRules, excludeResourceRules,
//     resourceNames, scope and matchPolicy with the semantics and error texts of
//     k8s.io/apiserver's policy/matching and webhook/predicates packages.
//   - Index: match criteria keyed by (group, resource, operation) so that a request only looks
//     at the entries that can match it.
//
// Equivalence. kube-apiserver keys its EquivalentResourceRegistry by the etcd storage prefix of
// a resource, so two group/resources are equivalent exactly when they share storage: every
// served version of one group/resource, and the cohabitating resources of
// pkg/kubeapiserver/default_storage_factory_builder.go (in 1.37 only events in the core group
// and events.k8s.io are both served). Equivalents are listed in kube-apiserver's registration
// order: the core group first, then the other groups by name, versions by priority (GA, beta,
// alpha; higher first). All versions of a CustomResourceDefinition are equivalent to each
// other, including versions that are not served, as apiextensions-apiserver registers them.
//
// Regenerate the table with `go generate ./matching`: internal/gen downloads k8s.io/kubernetes
// at the tag through the Go module proxy and reads api/openapi-spec/v3 (resources, kinds,
// scope, subresources), pkg/controlplane/instance.go (group/versions served by default) and
// pkg/kubeapiserver/default_storage_factory_builder.go (storage prefixes and cohabitating
// resources). Feature gates that switch single resources off inside a served group/version
// are not modelled: such resources stay in the table, which only matters if a request could
// reach them.
//
// Exemptions. Policies never see the admission policy resources (VAP, VAPB, MAP, MAPB) nor the
// authentication and authorization review resources; webhooks never see webhook
// configurations or admission policies (by kind) nor the review resources. See PolicyExempt
// and WebhookExempt.
package matching
