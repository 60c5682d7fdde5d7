// Package policytest runs unit-test suites of MutatingAdmissionPolicies
// offline: a suite (YAML, docs/schema/policytest.schema.json) names
// policies, bindings, params and cluster objects, and cases that send a
// request (object, old object, operation, subresource, user) through a
// simulated cluster (package cluster) and state what must come out: the
// object or a part of it, a patch, a denial and its message, the 422 of
// validation, warnings, which policies ran. `mutatis test` and `go test`
// (Run) drive it; reports are text, JSON and JUnit; Watch reruns on change.
package policytest
