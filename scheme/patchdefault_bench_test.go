package scheme

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// BenchmarkPatchDefaultWritten is PatchDefault of a label added to the
// small Deployment of test/bench's BenchmarkMutation, as written and
// defaulted: the whole-object strict decode, typed build, defaulters and
// emit that every standalone JSON patch mutation of it pays.
func BenchmarkPatchDefaultWritten(b *testing.B) {
	s := New()
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	written := testobjects.BenchDeployment()
	defaulted := testobjects.BenchDeployment()
	k, err := s.kube()
	if err != nil {
		b.Fatal(err)
	}
	k.scheme.Default(defaulted)
	ops := []jsonpatch.Operation{{Op: "add", Path: "/metadata/labels/team", Value: "shop", HasValue: true}}
	for _, c := range []struct {
		name string
		dep  *appsv1.Deployment
	}{{"written", written}, {"defaulted", defaulted}} {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c.dep)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			start := processCPU(b)
			for b.Loop() {
				if _, _, err := s.PatchDefault(obj, ops, gvk); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
