// Package jsonpatch is RFC 6902 both ways, as kube-apiserver 1.37 and its
// webhooks meet it: the JSON Patch mutations of MutatingAdmissionPolicy
// applied, and the patch that turns one object into another (Diff,
// CreatePatch).
//
// Upstream (k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch) turns
// the CEL result into a gopkg.in/evanphx/json-patch.v4 Patch, encodes the
// object to JSON, applies the patch to the bytes and strictly decodes the
// result back into the object's type. This package reproduces the first two
// steps without the JSON round trip of the patch itself; the strict decode
// is the scheme's (scheme.Scheme.Patch applies with this package, then
// decodes):
//
//   - FromCEL converts the evaluated list(JSONPatch) into Operations, with
//     upstream's value conversion (through structpb.Value) and error texts.
//   - Apply runs the operations directly on unstructured Go values,
//     copying only the containers it writes to, with the results and error
//     texts of evanphx/json-patch v4 (including its quirks: "replace" of a
//     missing object key adds it, paths not starting with "/" ignore their
//     first segment, negative array indexes, null values that equal {} and
//     [] in "test", ...).
//   - ApplyUnnormalized is Apply without normalizing the whole document
//     first, for callers that check its result instead (IsNormalized):
//     it vouches for add, remove and replace patches that succeed.
//
// A failed "test" operation makes Apply return an error matching
// ErrTestFailed; kube-apiserver then leaves the object unchanged without
// reporting an error. Other Apply errors are reported by kube-apiserver as
// "JSON Patch: <err>".
package jsonpatch
