package scheme

import (
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
)

// BenchmarkDefaultNormalizedWritten defaults the real objects of the kinds
// a webhook meets most (Deployment, Pod, StatefulSet, Job, CronJob,
// DaemonSet) as written, in normalized form, through DefaultNormalized:
// the first mutation's whole-object defaulting.
func BenchmarkDefaultNormalizedWritten(b *testing.B) {
	s := New()
	for _, in := range testobjects.Inputs(b) {
		switch in.GVK.Kind {
		case "Deployment", "Pod", "StatefulSet", "Job", "CronJob", "DaemonSet":
		default:
			continue
		}
		if !strings.HasSuffix(in.Name, "(ToUnstructured)") {
			continue
		}
		b.Run(in.GVK.Kind+"/"+strings.TrimSuffix(in.Name, " (ToUnstructured)"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.DefaultNormalized(in.Obj, in.GVK); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
