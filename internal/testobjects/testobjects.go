// Package testobjects holds real Kubernetes objects of several built-in
// kinds and a custom resource, in the unstructured forms the engine meets
// them in, for the tests of the packages that present, patch and compare
// objects (scheme, engine).
package testobjects

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

// Typed are real objects of several kinds, typed.
func Typed() []runtime.Object {
	created := metav1.Date(2026, 11, 23, 10, 0, 0, 0, metav1.Now().Location())
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"note": "x"}, CreationTimestamp: created, UID: "1234", ResourceVersion: "7",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "r1", Controller: ptr.To(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
				Time: &created, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:app":{}}}}`)}}}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "web", Image: "nginx:1.27", Args: []string{"-g", "daemon off;"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env:   []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.1"), corev1.ResourceMemory: resource.MustParse("64M")},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
					PeriodSeconds: 5, FailureThreshold: 0},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(1000)), AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr.To(int32(0o644))}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Gi"))}}},
			},
			NodeSelector:                  map[string]string{"kubernetes.io/os": "linux"},
			TerminationGracePeriodSeconds: ptr.To(int64(30)),
			Tolerations:                   []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To(int64(0))}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", StartTime: &created,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: created}}},
	}
	replicas := int32(3)
	deploy := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: map[string]string{"app": "web"}, Generation: 2},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: pod.Spec},
		},
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.10",
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}, {Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090), NodePort: 0}}},
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "shop"},
		Data:       map[string]string{"a": "1", "empty": ""}, BinaryData: map[string][]byte{"bin": {0, 1, 2, 3, 4}},
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "shop"},
		Type:       corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("hunter2"), "one": {1}, "two": {1, 2}, "none": {}},
		Immutable: ptr.To(false),
	}
	job := &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(2)), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "run", Image: "busybox"}}}}}}},
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 10, ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"},
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("1.5Gi"))}}}}},
	}
	pathType := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}},
	}
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	return []runtime.Object{pod, deploy, svc, cm, secret, job, hpa, ing, ns}
}

func gvkOf(t testing.TB, obj runtime.Object) schema.GroupVersionKind {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	return gvks[0]
}

// CRGVK is the kind of the custom resource, which the scheme does not know.
var CRGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

// Inputs are the unstructured forms of the real objects: as
// ToUnstructured writes them, as JSON decodes them, and a custom resource.
func Inputs(t testing.TB) []Input {
	var out []Input
	for _, obj := range Typed() {
		gvk := gvkOf(t, obj)
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Input{Name: gvk.Kind + " (ToUnstructured)", GVK: gvk, Obj: u})
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		var fromJSON map[string]any
		if err := utiljson.Unmarshal(data, &fromJSON); err != nil {
			t.Fatal(err)
		}
		out = append(out, Input{Name: gvk.Kind + " (JSON)", GVK: gvk, Obj: fromJSON})
	}
	out = append(out, Input{Name: "custom resource", GVK: CRGVK, Obj: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": int64(3), "x": nil}}})
	return out
}

// Input is one object of the tests: a name for t.Run, its kind and its
// unstructured content.
type Input struct {
	Name string
	GVK  schema.GroupVersionKind
	Obj  map[string]any
}

// WebDeployment is the small Deployment the patch tests of jsonpatch and
// scheme share: one replica, one nginx container, labelled app=web.
func WebDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
			},
		},
	}
}

// BenchDeployment is the small Deployment of test/bench's mutation and
// dispatcher scenarios, as written: two replicas, two containers (one with
// an env var, one with a port), a toleration and an emptyDir volume.
func BenchDeployment() *appsv1.Deployment {
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
