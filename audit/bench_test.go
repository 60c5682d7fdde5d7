package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// benchmarkAuditor is an Auditor with the 20 policies of the audit
// benchmark (test/e2e TestAuditScale) and one object of each kind of its
// mix, as listed.
func benchmarkAuditor(b *testing.B) (*Auditor, map[string]*unstructured.Unstructured) {
	b.Helper()
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
		AdmissionPlugins: admissionplugins.Flags{Disable: []string{"ServiceAccount"}}})
	if err != nil {
		b.Fatal(err)
	}
	objects := map[string]string{
		"configmap":  `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, uid: u, resourceVersion: "1", creationTimestamp: "2026-01-01T00:00:00Z", labels: {app: cm}}, data: {index: "1", payload: "` + strings.Repeat("v", 200) + `"}}`,
		"deployment": `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: ns, uid: u, resourceVersion: "1", generation: 1, creationTimestamp: "2026-01-01T00:00:00Z", labels: {app: web}}, spec: {replicas: 2, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}], resources: {requests: {cpu: 10m, memory: 16Mi}}}]}}}, status: {replicas: 2}}`,
		"pod":        `{apiVersion: v1, kind: Pod, metadata: {name: web-1, namespace: ns, uid: u, resourceVersion: "1", creationTimestamp: "2026-01-01T00:00:00Z", labels: {app: web}}, spec: {containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}], resources: {requests: {cpu: 10m, memory: 16Mi}}}]}, status: {phase: Running}}`,
	}
	out := map[string]*unstructured.Unstructured{}
	for name, text := range objects {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(text), &m); err != nil {
			b.Fatal(err)
		}
		out[name] = &unstructured.Unstructured{Object: m}
	}
	return a, out
}

// BenchmarkEvaluate is the evaluation of one object of the audit
// benchmark's mix (a ConfigMap, a Deployment or a Pod with 20 policies),
// without the listing.
func BenchmarkEvaluate(b *testing.B) {
	a, objects := benchmarkAuditor(b)
	for name, obj := range objects {
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

// BenchmarkReportAdd is the report's side of one object of the mix: its
// finding counted, its policies' counts and costs, its texts shared, and
// kept (a Pod grouped with its ReplicaSet's), for 100,000 objects of 1,000
// namespaces as in the benchmark's cluster.
func BenchmarkReportAdd(b *testing.B) {
	a, objects := benchmarkAuditor(b)
	var findings []Finding
	for _, name := range []string{"configmap", "deployment", "pod"} {
		obj := objects[name]
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d4f8", UID: "u", Controller: ptr.To(true)}})
		res := a.Cluster().Table.ResourcesForKind(obj.GroupVersionKind())[0]
		findings = append(findings, a.finding(context.Background(), res, obj))
	}
	namespaces := make([]string, 1000)
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("scale-%04d", i)
	}
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("obj-%02d", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		rep := newReport(a)
		for i := range 100_000 {
			f := findings[i%3]
			f.Policies = slices.Clone(f.Policies)
			f.Namespace, f.Name = namespaces[i/100], names[i%100]
			rep.add(f)
		}
		rep.finish(0)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100_000, "ns/finding")
}

// BenchmarkEvaluateListed is BenchmarkEvaluate with the objects as
// kube-apiserver lists them (defaulted, with managedFields and status: the
// items of BenchmarkListDecode's pages).
func BenchmarkEvaluateListed(b *testing.B) {
	a, _ := benchmarkAuditor(b)
	for _, p := range benchmarkPages {
		list := &unstructured.UnstructuredList{}
		if _, _, err := (listDecoder{clientGoDecoder(b)}).Decode(p.data, nil, list); err != nil {
			b.Fatal(err)
		}
		obj := &list.Items[0]
		obj.SetNamespace("ns")
		res := a.Cluster().Table.ResourcesForKind(obj.GroupVersionKind())[0]
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				if f := a.finding(context.Background(), res, obj); f.Outcome != OutcomeChange {
					b.Fatalf("%+v", f)
				}
			}
		})
	}
}
