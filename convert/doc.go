// Package convert is `mutatis convert`: it reads the mutations of
// Kyverno (ClusterPolicy and Policy mutate rules, MutatingPolicy) and
// Gatekeeper (Assign, AssignMetadata, ModifySet, AssignImage) and writes
// MutatingAdmissionPolicies, bindings and params that do the same under
// kube-apiserver's semantics.
//
// The source engines' path semantics become guarded CEL JSONPatch lists:
// MAP's JSONPatch fails on a missing parent where both engines create it,
// so every operation tests what exists (optional selections) and creates
// what is missing (walker, overlay). What has no MAP equivalent is refused
// per rule with its file, document, field path and why (Result.Refused);
// differences the conversion keeps are Result.Notes. Nothing is dropped
// silently: a policy with a refused rule is not converted.
//
// The converted policies are checked against the source engines' own
// answers, recorded by the nested module convert/oracle (`make
// convert-oracle`) into testdata/oracle; docs/migrate.md says what
// converts, what is refused and the path for a live cluster.
package convert
