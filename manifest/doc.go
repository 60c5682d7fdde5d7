// Package manifest reads MutatingAdmissionPolicy and
// MutatingAdmissionPolicyBinding manifests (and any other Kubernetes objects
// that travel with them) from YAML or JSON files, directories and stdin.
//
// Policies and bindings in admissionregistration.k8s.io v1, v1beta1 and
// v1alpha1 are decoded strictly (unknown and duplicate fields are errors,
// reported as kube-apiserver's strict field validation does), converted to
// the v1 types, defaulted as kube-apiserver defaults them on create, and
// validated with a port of its API validation. A manifest this package
// accepts is one the API server would accept, apart from CEL compilation
// of the expressions, which the compiler package checks. Every other object
// is returned as *unstructured.Unstructured.
//
// Every object and every error carries its Source: the file, the 0-based
// index of the YAML document (or JSON value) in that file, and the 0-based
// index inside a List when the object came from one. Documents are counted
// at "---" separators; text before the first separator that is only
// comments does not count, and empty documents are skipped but counted.
//
// Errors never stop loading: Load and Parse return every object they could
// read together with an ErrorList holding every problem, one *Error per
// document or object, each printing one line per field error:
//
//	policies/bad.yaml#1: MutatingAdmissionPolicy "x": spec.mutations[1].applyConfiguration.expression: Required value
//
// Syntax errors name the line in the file:
//
//	policies/bad.yaml#2 (line 14): yaml: line 14: mapping values are not allowed in this context
//
// ValidatingAdmissionPolicies and their bindings (v1 and v1beta1) go through
// kube-apiserver's own create path instead of a port (scheme/policyconfig:
// the defaulters of their version, the conversion to v1, the registry
// strategy's validation, which compiles and type-checks every expression)
// into Set.ValidatingPolicies and Set.ValidatingBindings.
//
// A policy or binding that fails decoding or validation is left out of the
// Set, as is a policy or binding whose name an earlier one already used.
package manifest
