package scheme

import (
	"flag"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// update rewrites the golden files under testdata/ with what the tests
// produce (go test ./scheme/ -run ... -update); review the diff.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// kubeScheme is Kube(), or the test fails.
func kubeScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	ks, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// versionedKinds are the versioned kinds of kube-apiserver's scheme that
// an admission request can carry: not internal versions, lists, options or
// the meta kinds every group version registers, and only kinds client-go's
// scheme (the typed form of the engine) knows too.
func versionedKinds(t testing.TB) []schema.GroupVersionKind {
	t.Helper()
	var out []schema.GroupVersionKind
	for gvk := range kubeScheme(t).AllKnownTypes() {
		switch {
		case gvk.Version == runtime.APIVersionInternal,
			strings.HasSuffix(gvk.Kind, "List"),
			strings.HasSuffix(gvk.Kind, "Options"),
			gvk.Kind == "WatchEvent", gvk.Kind == "Status",
			!clientgoscheme.Scheme.Recognizes(gvk):
			continue
		}
		out = append(out, gvk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// typedOf is a new typed object of kind gvk holding u (FromUnstructured).
func typedOf(t testing.TB, u map[string]any, gvk schema.GroupVersionKind) runtime.Object {
	t.Helper()
	typed, err := kubeScheme(t).New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, typed); err != nil {
		t.Fatalf("%s: FromUnstructured: %v", gvk, err)
	}
	return typed
}

// toUnstructured is typed's unstructured content with kind gvk.
func toUnstructured(t testing.TB, typed runtime.Object, gvk schema.GroupVersionKind) map[string]any {
	t.Helper()
	typed.GetObjectKind().SetGroupVersionKind(gvk)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		t.Fatalf("%s: ToUnstructured: %v", gvk, err)
	}
	return u
}

// upstreamDefault is the oracle of Default: u as the typed object of kind
// gvk, kube-apiserver's scheme's defaulters on it, and back.
func upstreamDefault(t testing.TB, u map[string]any, gvk schema.GroupVersionKind) map[string]any {
	t.Helper()
	typed := typedOf(t, u, gvk)
	kubeScheme(t).Default(typed)
	return toUnstructured(t, typed, gvk)
}

// checkDefault checks Default on u, of kind gvk, against the oracle: the
// same result, the input untouched, and an already defaulted object
// returned as it is. It tells whether defaulting changed u's typed form.
func checkDefault(t *testing.T, s *Scheme, u map[string]any, gvk schema.GroupVersionKind) (changed bool) {
	t.Helper()
	before := runtime.DeepCopyJSON(u)
	got, err := s.Default(u, gvk)
	if err != nil {
		t.Fatalf("%s: Default: %v", gvk, err)
	}
	if !reflect.DeepEqual(u, before) {
		t.Fatalf("%s: Default modified its input:\nbefore %s\nafter  %s", gvk, mustJSON(before), mustJSON(u))
	}
	want := upstreamDefault(t, u, gvk)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: Default\n got %s\nwant %s", gvk, mustJSON(got), mustJSON(want))
	}
	// Defaulting is idempotent on typed objects: an object the oracle
	// leaves as it is comes back as the very same map.
	if again := upstreamDefault(t, want, gvk); reflect.DeepEqual(again, want) {
		defaulted := runtime.DeepCopyJSON(want)
		got2, err := s.Default(defaulted, gvk)
		if err != nil {
			t.Fatalf("%s: Default of a defaulted object: %v", gvk, err)
		}
		if !sameMap(got2, defaulted) {
			t.Fatalf("%s: Default of an already defaulted object allocated a new one", gvk)
		}
	}
	// Defaulting changed u when the oracle's result is not u's typed form.
	return !reflect.DeepEqual(want, toUnstructured(t, typedOf(t, u, gvk), gvk))
}

// TestDefaultIsUpstreamDefaultingOnRandomObjectsOfEveryKind fills objects
// of every versioned built-in kind at random (a fixed seed, bounded sizes,
// meta fields as upstream's fuzzer fills them) and checks Default against
// kube-apiserver's defaulters on the typed object.
func TestDefaultIsUpstreamDefaultingOnRandomObjectsOfEveryKind(t *testing.T) {
	s := New()
	ks := kubeScheme(t)
	kinds := versionedKinds(t)
	if len(kinds) < 150 {
		t.Fatalf("only %d versioned kinds: %v", len(kinds), kinds)
	}
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(1), serializer.NewCodecFactory(ks)).
		NilChance(0.5).NumElements(0, 2).MaxDepth(12)
	const perKind = 12
	defaulted := map[schema.GroupVersionKind]bool{}
	for _, gvk := range kinds {
		t.Run(gvk.GroupVersion().String()+"/"+gvk.Kind, func(t *testing.T) {
			for range perKind {
				typed, err := ks.New(gvk)
				if err != nil {
					t.Fatal(err)
				}
				f.Fill(typed)
				// The object as a request carries it: unstructured with its
				// kind. What the unstructured form does not keep (random
				// values that do not round-trip) is left out of the
				// comparison by starting from that form.
				u := toUnstructured(t, typed, gvk)
				if checkDefault(t, s, u, gvk) {
					defaulted[gvk] = true
				}
			}
		})
	}
	// The kinds with defaulters must have shown them.
	for _, want := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Pod"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "batch", Version: "v1", Kind: "CronJob"},
		{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
		{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	} {
		if !defaulted[want] {
			t.Errorf("%s: no random object was defaulted", want)
		}
	}
	t.Logf("%d kinds, %d of them defaulted", len(kinds), len(defaulted))
}

// realObject is a built-in object as a user writes it in a manifest.
type realObject struct {
	name string
	gvk  schema.GroupVersionKind
	json string
}

var (
	podV1         = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	serviceV1     = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	configMapV1   = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	namespaceV1   = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	secretV1      = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	eventV1       = schema.GroupVersionKind{Version: "v1", Kind: "Event"}
	eventsV1      = schema.GroupVersionKind{Group: "events.k8s.io", Version: "v1", Kind: "Event"}
	deploymentV1  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	statefulSetV1 = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	daemonSetV1   = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}
	replicaSetV1  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
	jobV1         = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	cronJobV1     = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}
	hpaV1         = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"}
	hpaV2         = schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
	ingressV1     = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}
	pdbV1         = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}
)

// realObjects are real objects of the kinds policies mutate most, as
// written in manifests: defaults left out.
var realObjects = []realObject{
	{"a pod with two containers, ports and a volume", podV1, `{
	"apiVersion": "v1", "kind": "Pod",
	"metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
	"spec": {
		"serviceAccount": "builder",
		"containers": [
			{"name": "web", "image": "nginx", "ports": [{"containerPort": 80, "name": "http"}],
			 "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
			 "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}},
			 "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]},
			{"name": "sidecar", "image": "envoyproxy/envoy:v1.31.0", "ports": [{"containerPort": 9901, "hostPort": 9901}],
			 "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]}
		],
		"initContainers": [{"name": "migrate", "image": "registry.example.com/shop/migrate:latest"}],
		"volumes": [
			{"name": "cache", "emptyDir": {}},
			{"name": "config", "configMap": {"name": "web-config"}},
			{"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
		]
	}
}`},
	{"a deployment with a rolling update", deploymentV1, `{
	"apiVersion": "apps/v1", "kind": "Deployment",
	"metadata": {"name": "web", "namespace": "shop"},
	"spec": {
		"selector": {"matchLabels": {"app": "web"}},
		"template": {
			"metadata": {"labels": {"app": "web"}},
			"spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 8080}]}]}
		}
	}
}`},
	{"a stateful set with a volume claim template", statefulSetV1, `{
	"apiVersion": "apps/v1", "kind": "StatefulSet",
	"metadata": {"name": "db", "namespace": "shop"},
	"spec": {
		"serviceName": "db", "replicas": 3,
		"selector": {"matchLabels": {"app": "db"}},
		"template": {
			"metadata": {"labels": {"app": "db"}},
			"spec": {"containers": [{"name": "postgres", "image": "postgres:17", "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"}]}]}
		},
		"volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}]
	}
}`},
	{"a daemon set for a node agent", daemonSetV1, `{
	"apiVersion": "apps/v1", "kind": "DaemonSet",
	"metadata": {"name": "node-exporter", "namespace": "monitoring"},
	"spec": {
		"selector": {"matchLabels": {"app": "node-exporter"}},
		"template": {
			"metadata": {"labels": {"app": "node-exporter"}},
			"spec": {"hostNetwork": true, "containers": [{"name": "exporter", "image": "quay.io/prometheus/node-exporter:v1.8.2", "ports": [{"containerPort": 9100}]}]}
		}
	}
}`},
	{"a replica set", replicaSetV1, `{
	"apiVersion": "apps/v1", "kind": "ReplicaSet",
	"metadata": {"name": "web-5d4f8", "namespace": "shop"},
	"spec": {
		"selector": {"matchLabels": {"app": "web"}},
		"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}
	}
}`},
	{"a job", jobV1, `{
	"apiVersion": "batch/v1", "kind": "Job",
	"metadata": {"name": "migrate", "namespace": "shop"},
	"spec": {
		"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "migrate", "image": "registry.example.com/shop/migrate:2.3"}]}}
	}
}`},
	{"a cron job", cronJobV1, `{
	"apiVersion": "batch/v1", "kind": "CronJob",
	"metadata": {"name": "nightly", "namespace": "shop"},
	"spec": {
		"schedule": "0 3 * * *",
		"jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "backup", "image": "busybox"}]}}}}
	}
}`},
	{"a service with a named and a numbered port", serviceV1, `{
	"apiVersion": "v1", "kind": "Service",
	"metadata": {"name": "web", "namespace": "shop"},
	"spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090, "targetPort": "metrics"}]}
}`},
	{"a persistent volume claim", schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}, `{
	"apiVersion": "v1", "kind": "PersistentVolumeClaim",
	"metadata": {"name": "data", "namespace": "shop"},
	"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}
}`},
	{"an autoscaling/v1 horizontal pod autoscaler", hpaV1, `{
	"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
	"metadata": {"name": "web", "namespace": "shop"},
	"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 10}
}`},
	{"an autoscaling/v2 horizontal pod autoscaler with a behavior", hpaV2, `{
	"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
	"metadata": {"name": "web", "namespace": "shop"},
	"spec": {
		"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 10,
		"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}],
		"behavior": {"scaleDown": {"stabilizationWindowSeconds": 120}}
	}
}`},
	{"an ingress", ingressV1, `{
	"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
	"metadata": {"name": "web", "namespace": "shop"},
	"spec": {"rules": [{"host": "shop.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}
}`},
	{"a network policy", schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}, `{
	"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
	"metadata": {"name": "web-ingress", "namespace": "shop"},
	"spec": {"podSelector": {"matchLabels": {"app": "web"}}, "ingress": [{"ports": [{"port": 80}]}]}
}`},
	{"a pod disruption budget", pdbV1, `{
	"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
	"metadata": {"name": "web", "namespace": "shop"},
	"spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}
}`},
	{"a service account", schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, `{
	"apiVersion": "v1", "kind": "ServiceAccount",
	"metadata": {"name": "builder", "namespace": "shop"}, "automountServiceAccountToken": false
}`},
	{"a secret", secretV1, `{
	"apiVersion": "v1", "kind": "Secret",
	"metadata": {"name": "db", "namespace": "shop"}, "data": {"password": "aHVudGVyMg=="}
}`},
	{"a config map", configMapV1, `{
	"apiVersion": "v1", "kind": "ConfigMap",
	"metadata": {"name": "web-config", "namespace": "shop"}, "data": {"nginx.conf": "worker_processes 1;"}
}`},
	{"a namespace", namespaceV1, `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "storefront"}}}`},
	{"a core/v1 event", eventV1, `{
	"apiVersion": "v1", "kind": "Event",
	"metadata": {"name": "web.17f1a2b3c4d5e6f7", "namespace": "shop"},
	"involvedObject": {"kind": "Pod", "namespace": "shop", "name": "web", "apiVersion": "v1"},
	"reason": "Pulled", "message": "Successfully pulled image \"nginx\"", "type": "Normal",
	"source": {"component": "kubelet", "host": "node-1"}, "count": 1
}`},
	{"an events.k8s.io/v1 event", eventsV1, `{
	"apiVersion": "events.k8s.io/v1", "kind": "Event",
	"metadata": {"name": "web.17f1a2b3c4d5e6f8", "namespace": "shop"},
	"eventTime": "2026-11-23T10:00:00.000000Z", "reportingController": "kubelet", "reportingInstance": "node-1",
	"action": "Pulling", "reason": "Pulling", "regarding": {"kind": "Pod", "namespace": "shop", "name": "web"},
	"note": "Pulling image \"nginx\"", "type": "Normal"
}`},
	{"a runtime class", schema.GroupVersionKind{Group: "node.k8s.io", Version: "v1", Kind: "RuntimeClass"}, `{
	"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"}, "handler": "runsc"
}`},
	{"a priority class", schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"}, `{
	"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000000
}`},
	{"a storage class", schema.GroupVersionKind{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"}, `{
	"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
	"provisioner": "ebs.csi.aws.com", "parameters": {"type": "gp3"}
}`},
}

// TestDefaultIsUpstreamDefaultingOnRealObjects checks Default against
// kube-apiserver's defaulters on real objects as manifests write them.
func TestDefaultIsUpstreamDefaultingOnRealObjects(t *testing.T) {
	s := New()
	changed := 0
	for _, tc := range realObjects {
		t.Run(tc.name, func(t *testing.T) {
			if checkDefault(t, s, obj(t, tc.json), tc.gvk) {
				changed++
			}
		})
	}
	// Most of them have defaults to fill.
	if changed < 15 {
		t.Errorf("only %d of %d real objects were defaulted", changed, len(realObjects))
	}
}
