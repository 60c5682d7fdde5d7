// Package jsonpatch applies the JSON Patch mutations of MutatingAdmissionPolicy
// exactly the way kube-apiserver 1.37 does.
//
// Upstream (k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch) turns
// the CEL result into a gopkg.in/evanphx/json-patch.v4 Patch, encodes the
// object to JSON, applies the patch to the bytes and strictly decodes the
// result back into the object's type. This package reproduces the three
// steps without the JSON round trip of the patch itself:
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
//   - Decode reproduces upstream's strict decode of the patched object.
//
// A failed "test" operation makes Apply return an error matching
// ErrTestFailed; kube-apiserver then leaves the object unchanged without
// reporting an error. Other Apply errors are reported by kube-apiserver as
// "JSON Patch: <err>".
package jsonpatch
