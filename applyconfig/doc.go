// Package applyconfig applies the ApplyConfiguration results of
// MutatingAdmissionPolicy mutations exactly as kube-apiserver 1.37 does.
//
// It has three parts:
//
//   - Schemas, a registry of the structured-merge-diff type converters (and
//     CEL declaration types) for built-in kinds and for CustomResourceDefinitions.
//     Built-in kinds use the schema embedded in client-go's applyconfigurations;
//     CRD kinds use the OpenAPI v3 document kube-apiserver would serve for them
//     at /openapi/v3, built with apiextensions-apiserver's own builder.
//   - FromCEL, which turns the value of an ApplyConfiguration expression
//     (an Object{...} literal) into a plain map, with upstream's checks.
//   - Merge, which merges that map into the live object with server-side apply
//     semantics (k8s.io/apiserver patch.ApplyStructuredMergeDiff, wrapped the way
//     the upstream ApplyConfiguration patcher wraps it).
//
// A kind without a schema is always an error (the upstream 503 "Resource kind
// ... not found"); nothing falls back to a deduced, schema-less merge.
package applyconfig
