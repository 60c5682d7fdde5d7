//go:build linux

package e2e

import (
	"context"
	"testing"

	"github.com/mutatis-dev/mutatis/manifest"
)

// unreachableCRD is a CRD in a group kube-apiserver serves built in
// (storage.k8s.io), for a version it does not serve, with a policy on its
// resource and an object of it last.
const unreachableCRD = `apiVersion: v1
kind: Namespace
metadata:
  name: e2e-unreachable
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.storage.k8s.io
  annotations:
    api-approved.kubernetes.io: "unapproved, mutatis e2e test only"
spec:
  group: storage.k8s.io
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, listKind: GizmoList}
  versions:
  - name: v1alpha9
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: e2e-unreachable
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["storage.k8s.io"], apiVersions: ["*"], operations: ["CREATE"], resources: ["gizmos"]}
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "add", path: "/metadata/labels", value: {"seen": "yes"}}]'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: e2e-unreachable
spec:
  policyName: e2e-unreachable
---
apiVersion: storage.k8s.io/v1alpha9
kind: Gizmo
metadata:
  name: g
  namespace: e2e-unreachable
spec:
  size: 1
`

// runUnreachableCRD: kube-apiserver accepts a CRD in a group it serves built
// in, and answers every request for its resources with the 404 of a route
// it does not have (the group's discovery handler owns /apis/<group>/);
// mutatis, given the same CRD, refuses the object with the same status
// (matching.Table.Unreachable, docs/fidelity.md).
func runUnreachableCRD(t *testing.T, ctx context.Context, c *Cluster) {
	docs, data, err := readDocsString(unreachableCRD)
	if err != nil {
		t.Fatal(err)
	}
	object := docs[len(docs)-1]
	createResources(t, ctx, c, docs[:2])
	_, serverErr := c.Create(ctx, object, true)
	want, err := outcomeOf(nil, serverErr)
	if err != nil || serverErr == nil {
		t.Fatalf("kube-apiserver's dry-run create of %s: %v (want its 404)", kindKey(object), serverErr)
	}
	set, err := manifest.Parse("unreachable.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := admitRawByMutatis(t, set, nil)
	if d := diff("kube-apiserver", want, "mutatis", got); d != "" {
		t.Errorf("a CRD in a group kube-apiserver serves built in:\n%s", d)
	}
	if want.Error == nil || want.Error.Code != 404 {
		t.Errorf("kube-apiserver's outcome is not a 404: %s", want.yaml())
	}
}
