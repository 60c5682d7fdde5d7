// Package lint holds the schema-aware static checks of `mutatis lint`: what
// kube-apiserver would find only at run time, found before a policy is
// deployed, in the words the runtime would use.
//
// For every policy it works out the kinds the policy can match (its
// matchConstraints' resource rules expanded over the resources Kubernetes
// 1.37 serves and the CustomResourceDefinitions loaded beside it, without
// wildcards, as kube-apiserver's ValidatingAdmissionPolicy type checking
// does) and, for each kind, checks every expression against the kind's
// schema (the structured-merge-diff schema MutatingAdmissionPolicy merges
// with: client-go's embedded schema for built-in kinds, the served OpenAPI
// of a CRD):
//
//   - Object{…} constructions (objects.go): undeclared fields, values of
//     the wrong type, writes into atomic lists, maps and structs, type
//     names that do not follow the field path;
//   - reads (reads.go): every expression compiled again with object,
//     oldObject and params typed by the schema (k8s.io/apiserver's
//     composited compiler, as its type checking does), so that undeclared
//     fields and type errors are the CEL checker's own; and reads of fields
//     real objects often omit without a has() or ?. guard;
//   - JSON patches with literal paths (jsonpatch.go);
//   - the policy set (policyset.go): bindings, params, resources.
//
// A finding is an Error only when every evaluation that reaches it fails at
// run time and it is reached on every evaluation; anything that can still
// succeed is a Warning. Findings carry the file, the field path, the CEL
// position and the YAML line and column of the field (position.go); they
// are rendered as text, JSON or SARIF 2.1.0 (report.go).
package lint
