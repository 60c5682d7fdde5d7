package jsonpatch

import (
	"encoding/json"
	"testing"
)

// BenchmarkApplyDecoded is ApplyUnnormalized of the JSON patches of the
// load test's policies (test/load) to a Deployment as JSON decoding gives
// it, whose small maps are held in one group each (ownMap's maps.Clone):
// a label added, a container's capabilities added below its
// securityContext, and three operations under one container.
func BenchmarkApplyDecoded(b *testing.B) {
	data, err := json.Marshal(testDeployment())
	if err != nil {
		b.Fatal(err)
	}
	var doc map[string]any
	if err := unmarshalObject(data, &doc); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		ops  []Operation
	}{
		{"label", []Operation{{Op: "add", Path: "/metadata/labels/example.com~1team", Value: "shop", HasValue: true}}},
		{"capabilities", []Operation{{Op: "add", Path: "/spec/template/spec/containers/0/securityContext",
			Value: map[string]any{"capabilities": map[string]any{"drop": []any{"ALL"}}}, HasValue: true}}},
		{"three-under-one", []Operation{
			{Op: "add", Path: "/spec/template/spec/containers/0/securityContext", Value: map[string]any{}, HasValue: true},
			{Op: "add", Path: "/spec/template/spec/containers/0/securityContext/runAsNonRoot", Value: true, HasValue: true},
			{Op: "add", Path: "/spec/template/spec/containers/0/securityContext/readOnlyRootFilesystem", Value: true, HasValue: true}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := ApplyUnnormalized(doc, c.ops); !ok {
					b.Fatal("not ok")
				}
			}
		})
	}
}
