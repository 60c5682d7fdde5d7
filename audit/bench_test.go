package audit

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme"
)

// BenchmarkEvaluate is the evaluation of one object of the audit
// benchmark's mix (test/e2e TestAuditScale: a ConfigMap, a Deployment or a
// Pod with 20 policies), without the listing.
func BenchmarkEvaluate(b *testing.B) {
	var docs strings.Builder
	resources := []struct{ group, resource string }{{"", "configmaps"}, {"apps", "deployments"}, {"", "pods"}}
	for i := range 20 {
		r := resources[i%3]
		fmt.Fprintf(&docs, `---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: scale-%02d}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [%q], apiVersions: ["v1"], operations: ["CREATE"], resources: [%q]}
  variables:
  - {name: team, expression: "namespaceObject.metadata.name"}
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"scale-%02d": variables.team}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: scale-%02d}
spec: {policyName: scale-%02d}
`, i, r.group, r.resource, i, i, i)
	}
	set, err := manifest.Parse("bench.yaml", []byte(docs.String()))
	if err != nil {
		b.Fatal(err)
	}
	p, bd := set.APIObjects()
	client := fakeCluster(&testing.T{})
	a, err := New(context.Background(), Options{Lister: &Lister{Client: client}, Policies: p, Bindings: bd,
		AdmissionPlugins: scheme.AdmissionPluginFlags{Disable: []string{"ServiceAccount"}}})
	if err != nil {
		b.Fatal(err)
	}
	objects := map[string]string{
		"configmap":  `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, uid: u, resourceVersion: "1", creationTimestamp: "2026-01-01T00:00:00Z", labels: {app: cm}}, data: {index: "1", payload: "` + strings.Repeat("v", 200) + `"}}`,
		"deployment": `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: ns, uid: u, resourceVersion: "1", generation: 1, creationTimestamp: "2026-01-01T00:00:00Z", labels: {app: web}}, spec: {replicas: 2, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}], resources: {requests: {cpu: 10m, memory: 16Mi}}}]}}}, status: {replicas: 2}}`,
		"pod":        `{apiVersion: v1, kind: Pod, metadata: {name: web-1, namespace: ns, uid: u, resourceVersion: "1", creationTimestamp: "2026-01-01T00:00:00Z", labels: {app: web}}, spec: {containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}], resources: {requests: {cpu: 10m, memory: 16Mi}}}]}, status: {phase: Running}}`,
	}
	for name, text := range objects {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(text), &m); err != nil {
			b.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: m}
		res := a.Cluster().Table.ResourcesForKind(obj.GroupVersionKind())[0]
		b.Run(name, func(b *testing.B) {
			start := cpuTime(b)
			for b.Loop() {
				if f := a.finding(context.Background(), res, obj); f.Outcome != OutcomeChange {
					b.Fatalf("%+v", f)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the CPU time (user and system) the process has used so far:
// on a shared machine, the CPU time per operation (cpu-ns/op, garbage
// collection included, whichever thread ran it) varies much less with the
// load than the wall time (as test/bench's BenchmarkMutation).
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
