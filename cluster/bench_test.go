package cluster

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/manifest"
)

// benchMAP is a MutatingAdmissionPolicy that labels every Pod it is
// asked to create.
const benchMAP = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: team-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{labels: {"team": "shop"}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: team-label}
spec: {policyName: team-label}
`

// benchVAP is a ValidatingAdmissionPolicy that admits every Pod whose
// containers all name an image (so the benchmark's Pod).
const benchVAP = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: images}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "object.spec.containers.all(c, c.image != '')"
    message: every container names an image
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: images}
spec: {policyName: images, validationActions: [Deny]}
`

// BenchmarkClusterAdmit measures one Pod CREATE through the simulated
// cluster, as `mutatis` admits a request: DecodeSteps (decoding, the
// built-in plugins' first round) and Admit (the mutating chain, the
// registry's conversion and validation, then the validating stage:
// PodSecurity and the built-in plugins' validating halves, and the
// ValidatingAdmissionPolicies when there are). The Pod is in the default
// namespace, which has no pod-security labels. Profile the stages with
//
//	go test -run '^$' -bench ClusterAdmit -benchmem -cpuprofile cpu.out ./cluster
func BenchmarkClusterAdmit(b *testing.B) {
	for _, bc := range []struct {
		name       string
		maps, vaps string
	}{
		{name: "no-policies"},
		{name: "one-MAP", maps: benchMAP},
		{name: "one-MAP-one-VAP", maps: benchMAP, vaps: benchVAP},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			c, err := New(nil, Options{})
			if err != nil {
				b.Fatal(err)
			}
			var ch Chain
			if bc.maps != "" {
				set, err := manifest.Load(ctx, []string{"-"}, strings.NewReader(bc.maps))
				if err != nil {
					b.Fatal(err)
				}
				policies, bindings := set.APIObjects()
				if ch.Policies, err = c.Evaluator(nil, policies, bindings); err != nil {
					b.Fatal(err)
				}
			}
			if bc.vaps != "" {
				withValidatingPolicies(b, c, &ch, bc.vaps)
			}
			admit := func() *Admission {
				d, err := c.DecodeSteps(Request{Object: benchPod()})
				if err != nil {
					b.Fatal(err)
				}
				adm, err := c.Admit(ctx, ch, d)
				if err != nil {
					b.Fatal(err)
				}
				return adm
			}
			adm := admit()
			if adm.Result.Denied != nil || adm.Invalid != nil || adm.Object == nil {
				b.Fatalf("not admitted: %v, %v", adm.Result.Denied, adm.Invalid)
			}
			if labels, _, _ := unstructured.NestedStringMap(adm.Object, "metadata", "labels"); (labels["team"] == "shop") != (bc.maps != "") {
				b.Fatalf("labels %v: the policy ran = %v, want %v", labels, labels["team"] == "shop", bc.maps != "")
			}
			if n := validations(adm); (n > 0) != (bc.vaps != "") {
				b.Fatalf("%d validations recorded, want them = %v", n, bc.vaps != "")
			}
			b.ReportAllocs()
			for b.Loop() {
				admit()
			}
		})
	}
}

// benchPod is the Pod BenchmarkClusterAdmit creates, new each time (the
// decoding takes it over).
func benchPod() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "default", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27",
			"ports": []any{map[string]any{"containerPort": int64(8080)}}}}},
	}}
}
