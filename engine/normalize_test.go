package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
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

	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// normalizeObjects are real objects of several kinds, typed.
func normalizeObjects() []runtime.Object {
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

// crGVK is a kind the scheme does not know: Normalize leaves it alone.
var crGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

// normalizeInputs are the unstructured forms of the real objects: as
// ToUnstructured writes them, as JSON decodes them, and a custom resource.
func normalizeInputs(t testing.TB) []normalizeInput {
	var out []normalizeInput
	for _, obj := range normalizeObjects() {
		gvk := gvkOf(t, obj)
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, normalizeInput{name: gvk.Kind + " (ToUnstructured)", gvk: gvk, obj: u})
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		var fromJSON map[string]any
		if err := utiljson.Unmarshal(data, &fromJSON); err != nil {
			t.Fatal(err)
		}
		out = append(out, normalizeInput{name: gvk.Kind + " (JSON)", gvk: gvk, obj: fromJSON})
	}
	out = append(out, normalizeInput{name: "custom resource", gvk: crGVK, obj: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": int64(3), "x": nil}}})
	return out
}

type normalizeInput struct {
	name string
	gvk  schema.GroupVersionKind
	obj  map[string]any
}

// checkAgainstOracle normalizes obj both ways and fails unless results
// (exact Go values) and errors agree and obj is left unchanged.
func checkAgainstOracle(t *testing.T, pt *Patcher, obj map[string]any, gvk schema.GroupVersionKind) (fast bool) {
	t.Helper()
	before := deepCopy(obj)
	want, wantErr := pt.normalizeTyped(deepCopy(obj).(map[string]any), gvk)
	if !pt.Scheme.Recognizes(gvk) {
		want, wantErr = obj, nil
	}
	got, err := pt.Normalize(obj, gvk)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		// The converter walks maps in Go's random order, so an input with
		// several faults can give one error or another: ours must be one
		// the typed round trip gives too.
		seen := false
		for i := 0; i < 100 && !seen && err != nil && wantErr != nil; i++ {
			_, again := pt.normalizeTyped(deepCopy(obj).(map[string]any), gvk)
			seen = fmt.Sprint(again) == fmt.Sprint(err)
		}
		if !seen {
			t.Fatalf("error %v, want %v\ninput: %#v", err, wantErr, before)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("normalized differently from the typed round trip\ninput: %#v\n got: %#v\nwant: %#v", before, got, want)
	}
	if !sameValue(obj, before) {
		t.Fatalf("the input was modified: %#v, was %#v", obj, before)
	}
	if pt.Scheme.Recognizes(gvk) {
		_, fast = pt.normalizer.normalize(pt.Scheme, obj, nil, gvk)
	}
	return fast
}

// checkDecodeAgainstOracle decodes obj as a JSON patch result both ways
// (Patcher.decode and jsonpatch.Decode) and fails unless results and errors
// agree and obj is left unchanged.
func checkDecodeAgainstOracle(t *testing.T, pt *Patcher, obj map[string]any, gvk schema.GroupVersionKind) (fast bool) {
	t.Helper()
	before := deepCopy(obj)
	want, wantErr := jsonpatch.Decode(deepCopy(obj).(map[string]any), gvk, pt.Scheme)
	got, err := pt.decode(obj, gvk)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("error %v, want %v\ninput: %#v", err, wantErr, before)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded differently from jsonpatch.Decode\ninput: %#v\n got: %#v\nwant: %#v", before, got, want)
	}
	if !sameValue(obj, before) {
		t.Fatalf("the input was modified: %#v, was %#v", obj, before)
	}
	if pt.Scheme.Recognizes(gvk) {
		_, fast = pt.normalizer.decode(pt.Scheme, obj, gvk)
	}
	return fast
}

func TestDecodeIsJSONPatchDecode(t *testing.T) {
	pt := &Patcher{Scheme: scheme.Scheme}
	for _, in := range normalizeInputs(t) {
		t.Run(in.name, func(t *testing.T) {
			fast := checkDecodeAgainstOracle(t, pt, in.obj, in.gvk)
			if in.gvk != crGVK && !fast {
				t.Error("a real object took jsonpatch.Decode: the normalizer should model it")
			}
		})
	}
}

func TestNormalizeIsTheTypedRoundTrip(t *testing.T) {
	pt := &Patcher{Scheme: scheme.Scheme}
	for _, in := range normalizeInputs(t) {
		t.Run(in.name, func(t *testing.T) {
			fast := checkAgainstOracle(t, pt, in.obj, in.gvk)
			if in.gvk != crGVK && !fast {
				t.Error("a real object took the typed round trip: the normalizer should model it")
			}
		})
	}
}

func TestNormalizeReturnsNormalizedObjectsAsTheyAre(t *testing.T) {
	pt := &Patcher{Scheme: scheme.Scheme}
	for _, in := range normalizeInputs(t) {
		if in.gvk == crGVK {
			continue
		}
		t.Run(in.name, func(t *testing.T) {
			normalized, err := pt.normalizeTyped(in.obj, in.gvk)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pt.Normalize(normalized, in.gvk)
			if err != nil {
				t.Fatal(err)
			}
			if !sameMap(got, normalized) {
				t.Fatal("a normalized object was copied")
			}
			allocs := testing.AllocsPerRun(20, func() { _, _ = pt.Normalize(normalized, in.gvk) })
			if allocs != 0 {
				t.Errorf("normalizing a normalized object allocates %v times, want 0", allocs)
			}
		})
	}
}

// TestNormalizeOddInputs covers the inputs the typed round trip changes or
// refuses: unknown fields, nulls, wrong types, numbers to convert or
// truncate, empty values under omitempty.
func TestNormalizeOddInputs(t *testing.T) {
	pt := &Patcher{Scheme: scheme.Scheme}
	podGVK := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	pod := func(spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}, "spec": spec}
	}
	container := func(kv ...any) map[string]any {
		c := map[string]any{"name": "c", "image": "i"}
		for i := 0; i < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return pod(map[string]any{"containers": []any{c}})
	}
	cases := map[string]map[string]any{
		"empty object":                 {},
		"no apiVersion and kind":       {"metadata": map[string]any{"name": "p"}},
		"wrong apiVersion and kind":    {"apiVersion": "v2", "kind": "Thing"},
		"apiVersion not a string":      {"apiVersion": int64(1)},
		"unknown top-level field":      {"apiVersion": "v1", "kind": "Pod", "bogus": "x"},
		"unknown nested field":         pod(map[string]any{"containers": []any{}, "bogus": map[string]any{"a": int64(1)}}),
		"null metadata":                {"apiVersion": "v1", "kind": "Pod", "metadata": nil},
		"null spec":                    pod(nil),
		"null containers":              pod(map[string]any{"containers": nil}),
		"null list item":               pod(map[string]any{"containers": []any{nil}}),
		"empty containers":             pod(map[string]any{"containers": []any{}}),
		"empty omitempty list":         pod(map[string]any{"containers": []any{}, "volumes": []any{}}),
		"empty omitempty map":          pod(map[string]any{"containers": []any{}, "nodeSelector": map[string]any{}}),
		"null label":                   {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"labels": map[string]any{"a": nil}}},
		"label not a string":           {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"labels": map[string]any{"a": int64(1)}}},
		"labels not a map":             {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"labels": "x"}},
		"typed nil labels":             {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"labels": map[string]any(nil)}},
		"empty string omitempty":       {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "", "namespace": ""}},
		"string for an int":            container("ports", []any{map[string]any{"containerPort": "80"}}),
		"whole float for an int":       container("ports", []any{map[string]any{"containerPort": float64(80)}}),
		"fractional float for an int":  container("ports", []any{map[string]any{"containerPort": 80.5}}),
		"int32 overflow":               container("ports", []any{map[string]any{"containerPort": int64(math.MaxInt32) + 1}}),
		"float overflow":               container("ports", []any{map[string]any{"containerPort": 1e300}}),
		"zero int omitempty":           container("ports", []any{map[string]any{"containerPort": int64(80), "hostPort": int64(0)}}),
		"Go int":                       container("ports", []any{map[string]any{"containerPort": 80}}),
		"json.Number":                  container("ports", []any{map[string]any{"containerPort": json.Number("80")}}),
		"bool for a string":            container("image", true),
		"false omitempty":              container("stdin", false),
		"pointer to false":             container("securityContext", map[string]any{"privileged": false}),
		"pointer to zero":              pod(map[string]any{"containers": []any{}, "terminationGracePeriodSeconds": int64(0)}),
		"pointer to empty string":      pod(map[string]any{"containers": []any{}, "schedulerName": "", "runtimeClassName": ""}),
		"quantity":                     container("resources", map[string]any{"limits": map[string]any{"cpu": "0.5", "memory": "1Gi"}}),
		"quantity as number":           container("resources", map[string]any{"limits": map[string]any{"cpu": int64(2), "memory": 1.5}}),
		"bad quantity":                 container("resources", map[string]any{"limits": map[string]any{"cpu": "lots"}}),
		"null quantity":                container("resources", map[string]any{"limits": map[string]any{"cpu": nil}}),
		"int-or-string":                container("livenessProbe", map[string]any{"httpGet": map[string]any{"port": int64(80)}}),
		"int-or-string as float":       container("livenessProbe", map[string]any{"httpGet": map[string]any{"port": 80.0}}),
		"int-or-string as bool":        container("livenessProbe", map[string]any{"httpGet": map[string]any{"port": true}}),
		"timestamp":                    {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"creationTimestamp": "2026-11-23T10:00:00+02:00"}},
		"bad timestamp":                {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"creationTimestamp": "yesterday"}},
		"empty timestamp":              {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"creationTimestamp": ""}},
		"timestamp as number":          {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"creationTimestamp": int64(0)}},
		"deletion timestamp":           {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"deletionTimestamp": "2026-11-23T10:00:00Z"}},
		"managed fields":               {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"managedFields": []any{map[string]any{"manager": "m", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:metadata": map[string]any{}}}}}},
		"managed fields with values":   {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"managedFields": []any{map[string]any{"fieldsV1": map[string]any{"f:a": "x", "f:b": 1.0, "f:c": []any{}, "f:d": nil}}}}},
		"managed fields, odd keys":     {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"managedFields": []any{map[string]any{"fieldsV1": map[string]any{"\xff": map[string]any{}, "<&>": map[string]any{}}}}}},
		"managed fields not an object": {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"managedFields": []any{map[string]any{"fieldsV1": "x"}}}},
		"list for a struct":            {"apiVersion": "v1", "kind": "Pod", "spec": []any{}},
		"map for a list":               pod(map[string]any{"containers": map[string]any{}}),
	}
	cmGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	cm := func(kv ...any) map[string]any {
		m := map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	cmCases := map[string]map[string]any{
		"binary data":              cm("binaryData", map[string]any{"a": "AAECAw==", "b": "", "c": "AA==", "d": "AAA="}),
		"non-canonical base64":     cm("binaryData", map[string]any{"a": "AAECAx=="}),
		"base64 without padding":   cm("binaryData", map[string]any{"a": "AAECAw"}),
		"base64 with a line break": cm("binaryData", map[string]any{"a": "AAEC\nAw=="}),
		"not base64":               cm("binaryData", map[string]any{"a": "!!!!"}),
		"bytes as a list":          cm("binaryData", map[string]any{"a": []any{int64(1)}}),
		"null data value":          cm("data", map[string]any{"a": nil}),
		"empty data":               cm("data", map[string]any{}),
		"immutable false":          cm("immutable", false),
	}
	cases["invalid UTF-8 string"] = container("image", "a\xffb")
	cases["invalid UTF-8 map key"] = map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"labels": map[string]any{"a\xff": "b"}}}
	cases["key differing in case"] = map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"Name": "p"}}
	cases["null timestamp in a condition"] = map[string]any{"apiVersion": "v1", "kind": "Pod", "status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "lastTransitionTime": nil}}}}
	cases["null plain fields"] = map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"labels": nil, "name": nil}, "spec": map[string]any{"containers": nil, "priority": nil}}
	cases["NaN"] = container("resources", map[string]any{"limits": map[string]any{"cpu": math.NaN()}})
	cases["infinite quantity"] = container("resources", map[string]any{"limits": map[string]any{"cpu": math.Inf(1)}})
	cases["patched kind"] = map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "p"}}
	cases["patched apiVersion"] = map[string]any{"apiVersion": "apps/v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}}
	for name, obj := range cases {
		t.Run("Pod/"+name, func(t *testing.T) {
			checkAgainstOracle(t, pt, obj, podGVK)
			checkDecodeAgainstOracle(t, pt, obj, podGVK)
		})
	}
	for name, obj := range cmCases {
		t.Run("ConfigMap/"+name, func(t *testing.T) {
			checkAgainstOracle(t, pt, obj, cmGVK)
			checkDecodeAgainstOracle(t, pt, obj, cmGVK)
		})
	}
}

// sameValue is reflect.DeepEqual, but NaN equals NaN (%#v prints maps
// sorted).
func sameValue(a, b any) bool {
	return reflect.DeepEqual(a, b) || fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b)
}

// deepCopy copies maps and slices, whatever their leaves.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for k, item := range x {
			out[k] = deepCopy(item)
		}
		return out
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = deepCopy(item)
		}
		return out
	}
	return v
}

// oddValues are what the property test plants in real objects.
var oddValues = []func() any{
	func() any { return nil },
	func() any { return "x" },
	func() any { return "" },
	func() any { return "25%" },
	func() any { return "2026-11-23T10:00:00Z" },
	func() any { return "100m" },
	func() any { return "AAECAw==" },
	func() any { return int64(0) },
	func() any { return int64(7) },
	func() any { return int64(math.MaxInt32) + 1 },
	func() any { return float64(3) },
	func() any { return 2.5 },
	func() any { return true },
	func() any { return false },
	func() any { return map[string]any{} },
	func() any { return map[string]any{"name": "n", "x": int64(1)} },
	func() any { return []any{} },
	func() any { return []any{"a"} },
	func() any { return []any{map[string]any{"name": "n"}} },
	func() any { return []any{nil} },
	func() any { return 3 },
}

// perturb changes one random place of v (a deep copy) and returns it.
func perturb(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		switch op := r.IntN(10); {
		case len(keys) == 0 || op == 0:
			x["bogus"] = oddValues[r.IntN(len(oddValues))]()
		case op == 1:
			delete(x, keys[r.IntN(len(keys))])
		case op == 2:
			x[keys[r.IntN(len(keys))]] = oddValues[r.IntN(len(oddValues))]()
		default:
			k := keys[r.IntN(len(keys))]
			x[k] = perturb(r, x[k])
		}
		return x
	case []any:
		if len(x) == 0 || r.IntN(8) == 0 {
			return append(x, oddValues[r.IntN(len(oddValues))]())
		}
		i := r.IntN(len(x))
		x[i] = perturb(r, x[i])
		return x
	default:
		return oddValues[r.IntN(len(oddValues))]()
	}
}

// TestNormalizeAgreesOnPerturbedObjects is a property test: real objects
// with one to three random changes (unknown fields, nulls, wrong types,
// numbers, empty values) normalize as through the typed round trip.
func TestNormalizeAgreesOnPerturbedObjects(t *testing.T) {
	pt := &Patcher{Scheme: scheme.Scheme}
	inputs := normalizeInputs(t)
	r := rand.New(rand.NewPCG(5, 2026))
	n := 4000
	if testing.Short() {
		n = 400
	}
	fast, fastDecode := 0, 0
	for i := 0; i < n; i++ {
		in := inputs[r.IntN(len(inputs))]
		obj := deepCopy(in.obj)
		for k := r.IntN(3); k >= 0; k-- {
			obj = perturb(r, obj)
		}
		if m, ok := obj.(map[string]any); ok {
			t.Run(fmt.Sprintf("%d %s", i, in.name), func(t *testing.T) {
				if checkAgainstOracle(t, pt, m, in.gvk) {
					fast++
				}
				if checkDecodeAgainstOracle(t, pt, m, in.gvk) {
					fastDecode++
				}
			})
		}
	}
	if fast < n/4 || fastDecode < n/20 {
		t.Errorf("only %d (normalize) and %d (decode) of %d perturbed objects took the normalizer", fast, fastDecode, n)
	}
	t.Logf("normalizer: %d (normalize), %d (decode) of %d", fast, fastDecode, n)
}

// FuzzNormalize compares Normalize with the typed round trip, and decode
// with jsonpatch.Decode, on arbitrary JSON objects of a few kinds.
func FuzzNormalize(f *testing.F) {
	kinds := []schema.GroupVersionKind{}
	for _, in := range normalizeInputs(f) {
		if !slices.Contains(kinds, in.gvk) {
			kinds = append(kinds, in.gvk)
		}
		data, err := json.Marshal(in.obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(len(kinds)-1), data)
	}
	f.Add(uint8(0), []byte(`{"spec":{"containers":[{"name":"c","ports":[{"containerPort":1.0}]}]},"metadata":{"labels":null}}`))
	pt := &Patcher{Scheme: scheme.Scheme}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		var obj map[string]any
		if err := utiljson.Unmarshal(data, &obj); err != nil || obj == nil {
			return
		}
		checkAgainstOracle(t, pt, obj, kinds[int(kind)%len(kinds)])
		checkDecodeAgainstOracle(t, pt, obj, kinds[int(kind)%len(kinds)])
	})
}

// perturbShared is perturb without changing v: the maps and slices on the
// path to the change are copied, everything else is shared with v, as in a
// merge result.
func perturbShared(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		y := make(map[string]any, len(x)+1)
		for k, item := range x {
			y[k] = item
		}
		keys := slices.Sorted(maps.Keys(y))
		switch op := r.IntN(10); {
		case len(keys) == 0 || op == 0:
			y["bogus"] = oddValues[r.IntN(len(oddValues))]()
		case op == 1:
			delete(y, keys[r.IntN(len(keys))])
		case op == 2:
			y[keys[r.IntN(len(keys))]] = oddValues[r.IntN(len(oddValues))]()
		default:
			k := keys[r.IntN(len(keys))]
			y[k] = perturbShared(r, y[k])
		}
		return y
	case []any:
		y := append([]any(nil), x...)
		if len(y) == 0 || r.IntN(8) == 0 {
			return append(y, oddValues[r.IntN(len(oddValues))]())
		}
		i := r.IntN(len(y))
		y[i] = perturbShared(r, y[i])
		return y
	default:
		return oddValues[r.IntN(len(oddValues))]()
	}
}

// TestNormalizeFromANormalizedBase is a property test of normalizing with a
// base: objects that share all but one to three changed paths with an
// object in normalized form (as merge results do) normalize, skipping what
// they share, as through the typed round trip.
func TestNormalizeFromANormalizedBase(t *testing.T) {
	pt := &Patcher{Scheme: scheme.Scheme}
	inputs := normalizeInputs(t)
	r := rand.New(rand.NewPCG(7, 2026))
	n := 3000
	if testing.Short() {
		n = 300
	}
	fast := 0
	for i := 0; i < n; i++ {
		in := inputs[r.IntN(len(inputs))]
		if !pt.Scheme.Recognizes(in.gvk) {
			continue
		}
		base, err := pt.Normalize(deepCopy(in.obj).(map[string]any), in.gvk)
		if err != nil {
			continue
		}
		baseBefore := deepCopy(base)
		var obj any = base
		for k := r.IntN(3); k >= 0; k-- {
			obj = perturbShared(r, obj)
		}
		m, ok := obj.(map[string]any)
		if !ok {
			continue
		}
		t.Run(fmt.Sprintf("%d %s", i, in.name), func(t *testing.T) {
			want, wantErr := pt.normalizeTyped(deepCopy(m).(map[string]any), in.gvk)
			got, err := pt.normalize(m, base, in.gvk)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				seen := false
				for i := 0; i < 100 && !seen && err != nil && wantErr != nil; i++ {
					_, again := pt.normalizeTyped(deepCopy(m).(map[string]any), in.gvk)
					seen = fmt.Sprint(again) == fmt.Sprint(err)
				}
				if !seen {
					t.Fatalf("error %v, want %v\ninput: %#v", err, wantErr, m)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("normalized differently from the typed round trip\ninput: %#v\n got: %#v\nwant: %#v", m, got, want)
			}
			if !sameValue(base, baseBefore) {
				t.Fatal("the base was modified")
			}
			if _, ok := pt.normalizer.normalize(pt.Scheme, m, base, in.gvk); ok {
				fast++
			}
		})
	}
	if fast < n/4 {
		t.Errorf("only %d of %d objects took the normalizer", fast, n)
	}
	t.Logf("normalizer: %d of %d", fast, n)
}

// TestNormalizeFromABaseSkipsWhatItShares shows that the walk does skip
// shared subtrees: a shared subtree in a form the walk would refuse (a null
// in a list, which sends normalize to the typed round trip) is not looked at.
func TestNormalizeFromABaseSkipsWhatItShares(t *testing.T) {
	pt := &Patcher{Scheme: scheme.Scheme}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	odd := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "finalizers": []any{nil}}}
	if _, ok := pt.normalizer.normalize(pt.Scheme, odd, nil, gvk); ok {
		t.Fatal("the walk models a null in a list: pick another odd input")
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": odd["metadata"], "data": map[string]any{"k": "v"}}
	if _, ok := pt.normalizer.normalize(pt.Scheme, obj, odd, gvk); !ok {
		t.Fatal("the shared metadata was walked")
	}
}
