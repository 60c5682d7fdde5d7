package applyconfig

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkMerge compares Merge with upstream's ApplyStructuredMergeDiff (plus
// the patcher's apiVersion/kind stamping) on the same inputs and converters.
func BenchmarkMerge(b *testing.B) {
	s := sharedSchemas(b)
	for _, bc := range []struct {
		name, live, patch string
	}{
		{name: "deployment", live: liveDeployment, patch: `
metadata: {labels: {team: a}, annotations: {note: x}}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: app
        env: [{name: C, value: "3"}]
        resources: {limits: {memory: 64Mi}}`},
		{name: "widget", live: liveWidget, patch: `
spec:
  ports: [{name: https, protocol: TCP, port: 443}]
  items: [{name: a, tags: [z]}]
  settings: {s2: v2}
  config: {extra: {more: 1}}`},
		{name: "atomic-refused", live: liveDeployment, patch: `spec: {template: {spec: {tolerations: [{key: b}]}}}`},
	} {
		live := &unstructured.Unstructured{Object: fromYAML(b, bc.live)}
		p := fromYAML(b, bc.patch)
		tc, err := s.TypeConverter(live.GroupVersionKind())
		if err != nil {
			b.Fatal(err)
		}
		m, err := s.Merger(live.GroupVersionKind())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name+"/mutatis", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = m.Merge(live, p, nil)
			}
		})
		b.Run(bc.name+"/upstream", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				// Upstream stamps apiVersion/kind into the CEL result it owns;
				// a shallow copy gives it the same fresh map.
				pc := make(map[string]any, len(p)+2)
				for k, v := range p {
					pc[k] = v
				}
				_, _ = upstreamMerge(tc, live, pc)
			}
		})
	}
}
