package scheme

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// BenchmarkPatchDefaultWritten is PatchDefault of a label added to the
// small Deployment of test/bench's BenchmarkMutation, as written and
// defaulted: the whole-object strict decode, typed build, defaulters and
// emit that every standalone JSON patch mutation of it pays.
func BenchmarkPatchDefaultWritten(b *testing.B) {
	s := New()
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	written := benchDeployment()
	defaulted := benchDeployment()
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

// benchDeployment is test/bench's small Deployment.
func benchDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{
						{Name: "app", Image: "docker.io/library/nginx:1.27", Env: []corev1.EnvVar{{Name: "MODE", Value: "prod"}}},
						{Name: "proxy", Image: "envoy:1.30", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}},
					},
					Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}},
					Volumes:     []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}
