package scheme

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand"
	randv2 "math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/valuetest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
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
		if !jsonvalue.SameMap(got2, defaulted) {
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

// missing stands for a field a result must not have.
var missing = &struct{ missing bool }{true}

// at is the value at path in m (dot-separated fields, [i] for list
// items), or missing.
func at(m map[string]any, path string) any {
	var v any = m
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			mm, ok := v.(map[string]any)
			if !ok {
				return missing
			}
			if v, ok = mm[name]; !ok {
				return missing
			}
		}
		for rest != "" {
			var idx string
			idx, rest, _ = strings.Cut(rest, "]")
			rest = strings.TrimPrefix(rest, "[")
			l, ok := v.([]any)
			i, err := strconv.Atoi(idx)
			if !ok || err != nil || i >= len(l) {
				return missing
			}
			v = l[i]
		}
	}
	return v
}

// checkFields fails unless each path of want has its value in got.
func checkFields(t *testing.T, got map[string]any, want map[string]any) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(want)) {
		if g := at(got, p); !reflect.DeepEqual(g, want[p]) {
			if want[p] == missing {
				t.Errorf("%s: %#v, want it absent", p, g)
			} else {
				t.Errorf("%s: %#v, want %#v", p, g, want[p])
			}
		}
	}
}

// golden compares got with testdata/<name>.json, or writes it there under
// -update.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	data, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	path := filepath.Join("testdata", filepath.FromSlash(name)+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(want) != string(data) {
		t.Errorf("%s differs from %s:\n%s", name, path, data)
	}
}

// slug is a test name as a file name.
func slug(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return '-'
	}, name)
}

// realObjectNamed is the real object of that name.
func realObjectNamed(t testing.TB, name string) realObject {
	for _, ro := range realObjects {
		if ro.name == name {
			return ro
		}
	}
	t.Fatalf("no real object %q", name)
	return realObject{}
}

const podWith = `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"}, "spec": %s}`

// TestDecodeRequestOfBuiltInKinds decodes request bodies as kube-apiserver's
// create handler does: kube-apiserver's defaults, the internal round trip,
// unknown fields as warnings, and its 400 for bodies the decoder refuses.
func TestDecodeRequestOfBuiltInKinds(t *testing.T) {
	s := New()
	for _, tc := range []struct {
		name     string
		gvk      schema.GroupVersionKind
		body     string
		fields   map[string]any
		warnings []string
		err      string
	}{{
		name: "a pod gets kube-apiserver's defaults and serviceAccountName from serviceAccount",
		gvk:  podV1, body: realObjectNamed(t, "a pod with two containers, ports and a volume").json,
		fields: map[string]any{
			"spec.dnsPolicy":                     "ClusterFirst",
			"spec.restartPolicy":                 "Always",
			"spec.terminationGracePeriodSeconds": int64(30),
			"spec.schedulerName":                 "default-scheduler",
			"spec.enableServiceLinks":            true,
			"spec.securityContext":               map[string]any{},
			"spec.serviceAccount":                "builder",
			"spec.serviceAccountName":            "builder",
			"spec.priority":                      missing, // the Priority admission plugin's, not a default
			// An untagged image and :latest are pulled Always, a tag IfNotPresent.
			"spec.containers[0].imagePullPolicy":          "Always",
			"spec.containers[1].imagePullPolicy":          "IfNotPresent",
			"spec.initContainers[0].imagePullPolicy":      "Always",
			"spec.containers[0].terminationMessagePath":   "/dev/termination-log",
			"spec.containers[0].terminationMessagePolicy": "File",
			"spec.containers[0].ports[0].protocol":        "TCP",
			"spec.containers[1].ports[0].protocol":        "TCP",
			// Requests default to the limits.
			"spec.containers[0].resources.requests": map[string]any{"cpu": "500m", "memory": "128Mi"},
			"spec.containers[0].readinessProbe": map[string]any{
				"httpGet":        map[string]any{"path": "/healthz", "port": "http", "scheme": "HTTP"},
				"timeoutSeconds": int64(1), "periodSeconds": int64(10),
				"successThreshold": int64(1), "failureThreshold": int64(3),
			},
			"spec.containers[1].env[0].valueFrom.fieldRef.apiVersion":  "v1",
			"spec.volumes[1].configMap.defaultMode":                    int64(0o644),
			"spec.volumes[2].projected.sources[0].serviceAccountToken": map[string]any{"path": "token", "expirationSeconds": int64(3600)},
			"status": map[string]any{},
		},
	}, {
		name: "a pod naming only serviceAccountName gets serviceAccount too",
		gvk:  podV1, body: fmt.Sprintf(podWith, `{"serviceAccountName": "deployer", "containers": [{"name": "web", "image": "nginx:1.27"}]}`),
		fields: map[string]any{"spec.serviceAccount": "deployer", "spec.serviceAccountName": "deployer"},
	}, {
		name: "a pod on the host network gets host ports equal to its container ports",
		gvk:  podV1, body: fmt.Sprintf(podWith, `{"hostNetwork": true, "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 8080}]}]}`),
		fields: map[string]any{"spec.containers[0].ports[0]": map[string]any{"containerPort": int64(8080), "hostPort": int64(8080), "protocol": "TCP"}},
	}, {
		name: "a deployment gets replicas, a rolling update strategy, history and deadline, and pod template defaults",
		gvk:  deploymentV1, body: realObjectNamed(t, "a deployment with a rolling update").json,
		fields: map[string]any{
			"spec.replicas":                                           int64(1),
			"spec.strategy":                                           map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}},
			"spec.revisionHistoryLimit":                               int64(10),
			"spec.progressDeadlineSeconds":                            int64(600),
			"spec.template.spec.dnsPolicy":                            "ClusterFirst",
			"spec.template.spec.restartPolicy":                        "Always",
			"spec.template.spec.containers[0].imagePullPolicy":        "IfNotPresent",
			"spec.template.spec.containers[0].ports[0].protocol":      "TCP",
			"spec.template.spec.terminationGracePeriodSeconds":        int64(30),
			"spec.template.spec.enableServiceLinks":                   missing, // a Pod's default, not a PodSpec's
			"spec.template.spec.containers[0].terminationMessagePath": "/dev/termination-log",
		},
	}, {
		name: "a service gets session affinity, type, traffic policy and target ports from its ports",
		gvk:  serviceV1, body: realObjectNamed(t, "a service with a named and a numbered port").json,
		fields: map[string]any{
			"spec.sessionAffinity":       "None",
			"spec.type":                  "ClusterIP",
			"spec.internalTrafficPolicy": "Cluster",
			"spec.ipFamilyPolicy":        missing, // the registry's, at allocation
			"spec.clusterIP":             missing,
			"spec.ports[0]":              map[string]any{"name": "http", "port": int64(80), "targetPort": int64(80), "protocol": "TCP"},
			"spec.ports[1].targetPort":   "metrics",
			"status":                     map[string]any{"loadBalancer": map[string]any{}},
		},
	}, {
		name: "a load balancer service gets its external traffic policy and node port allocation",
		gvk:  serviceV1, body: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
			"spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "ports": [{"port": 443, "targetPort": 8443}]}}`,
		fields: map[string]any{
			"spec.externalTrafficPolicy":         "Cluster",
			"spec.allocateLoadBalancerNodePorts": true,
			"spec.ports[0].targetPort":           int64(8443),
		},
	}, {
		name: "a job gets its completions, parallelism, backoff limit and modes",
		gvk:  jobV1, body: realObjectNamed(t, "a job").json,
		fields: map[string]any{
			"spec.completions":                                 int64(1),
			"spec.parallelism":                                 int64(1),
			"spec.backoffLimit":                                int64(6),
			"spec.completionMode":                              "NonIndexed",
			"spec.suspend":                                     false,
			"spec.manualSelector":                              false,
			"spec.podReplacementPolicy":                        "TerminatingOrFailed",
			"spec.selector":                                    missing, // the registry's, at PrepareForCreate
			"spec.template.spec.restartPolicy":                 "Never",
			"spec.template.spec.containers[0].imagePullPolicy": "IfNotPresent",
		},
	}, {
		name: "a cron job gets its concurrency policy and history limits, and its job template the pod defaults",
		gvk:  cronJobV1, body: realObjectNamed(t, "a cron job").json,
		fields: map[string]any{
			"spec.concurrencyPolicy":          "Allow",
			"spec.suspend":                    false,
			"spec.successfulJobsHistoryLimit": int64(3),
			"spec.failedJobsHistoryLimit":     int64(1),
			"spec.jobTemplate.spec.template.spec.containers[0].imagePullPolicy": "Always",
			"spec.jobTemplate.spec.template.spec.dnsPolicy":                     "ClusterFirst",
			// The job defaults are the Job's, not the template's.
			"spec.jobTemplate.spec.backoffLimit": missing,
		},
	}, {
		name: "unknown fields are dropped with a warning each",
		gvk:  podV1, body: fmt.Sprintf(podWith, `{"foo": 1, "containers": [{"name": "web", "image": "nginx:1.27", "bar": {"baz": true}}]}`),
		fields:   map[string]any{"spec.foo": missing, "spec.containers[0].bar": missing, "spec.containers[0].name": "web"},
		warnings: []string{`unknown field "spec.containers[0].bar"`, `unknown field "spec.foo"`},
	}, {
		name: "an unknown field of the metadata is dropped with a warning",
		gvk:  configMapV1, body: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "namespace": "shop", "label": {"app": "web"}}, "data": {"a": "1"}}`,
		fields:   map[string]any{"metadata": map[string]any{"name": "web-config", "namespace": "shop"}, "data.a": "1"},
		warnings: []string{`unknown field "metadata.label"`},
	}, {
		name: "an int32 out of range is refused with the number of the body",
		gvk:  podV1, body: fmt.Sprintf(podWith, `{"priority": 3000000000, "containers": [{"name": "web", "image": "nginx"}]}`),
		err: `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number 3000000000 into Go struct field PodSpec.spec.priority of type int32`,
	}, {
		name: "an int64 out of range is refused with the number of the body",
		gvk:  podV1, body: fmt.Sprintf(podWith, `{"terminationGracePeriodSeconds": 9223372036854775808, "containers": [{"name": "web", "image": "nginx"}]}`),
		err: `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number 9223372036854775808 into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64`,
	}, {
		name: "a negative int64 out of range is refused with the number of the body",
		gvk:  podV1, body: fmt.Sprintf(podWith, `{"activeDeadlineSeconds": -18446744073709551616, "containers": [{"name": "web", "image": "nginx"}]}`),
		err: `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number -18446744073709551616 into Go struct field PodSpec.spec.activeDeadlineSeconds of type int64`,
	}, {
		name: "a fraction where an integer belongs is refused",
		gvk:  podV1, body: fmt.Sprintf(podWith, `{"priority": 1.5, "containers": [{"name": "web", "image": "nginx"}]}`),
		err: `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number 1.5 into Go struct field PodSpec.spec.priority of type int32`,
	}, {
		name: "a string where an integer belongs is refused",
		gvk:  deploymentV1, body: `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": "3"}}`,
		err: `Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32`,
	}, {
		name: "a string where a service port belongs is refused",
		gvk:  serviceV1, body: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {"ports": [{"port": "80"}]}}`,
		err: `Service in version "v1" cannot be handled as a Service: json: cannot unmarshal string into Go struct field ServicePort.spec.ports.port of type int32`,
	}, {
		name: "a number where an environment value belongs is refused",
		gvk:  deploymentV1, body: `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"template": {"spec": {"containers": [{"name": "web", "env": [{"name": "PORT", "value": 8080}]}]}}}}`,
		err: `Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number into Go struct field EnvVar.spec.template.spec.containers.env.value of type string`,
	}, {
		name: "an object where the containers belong is refused",
		gvk:  deploymentV1, body: `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"template": {"spec": {"containers": {"name": "web"}}}}}`,
		err: `Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container`,
	}, {
		name: "an object where a config map value belongs is refused",
		gvk:  configMapV1, body: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config"}, "data": {"nginx.conf": {"worker_processes": 1}}}`,
		err: `ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal object into Go struct field ConfigMap.data of type string`,
	}, {
		name: "a refusal wins over unknown fields",
		gvk:  podV1, body: fmt.Sprintf(podWith, `{"foo": 1, "priority": "high", "containers": [{"name": "web", "image": "nginx"}]}`),
		err: `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field PodSpec.spec.priority of type int32`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in := obj(t, tc.body)
			before := runtime.DeepCopyJSON(in)
			out, warnings, err := s.DecodeRequest(in, tc.gvk)
			if !reflect.DeepEqual(in, before) {
				t.Fatalf("DecodeRequest modified its input")
			}
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error\n%v\nwant\n%s", err, tc.err)
				}
				if !apierrors.IsBadRequest(err) || apierrors.ReasonForError(err) != metav1.StatusReasonBadRequest {
					t.Fatalf("%v is not a 400", err)
				}
				if out != nil || warnings != nil {
					t.Fatalf("a refusal with an object %v or warnings %q", out, warnings)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(warnings, tc.warnings) {
				t.Errorf("warnings %q, want %q", warnings, tc.warnings)
			}
			checkFields(t, out, tc.fields)
			golden(t, "kube/decode/"+slug(tc.name), out)
			// The object is as admission presents it: decoding it again
			// changes nothing and warns of nothing.
			again, w, err := s.DecodeRequest(out, tc.gvk)
			if err != nil || w != nil || !reflect.DeepEqual(again, out) {
				t.Errorf("decoding the result again: %v, %q,\n%s", err, w, mustJSON(again))
			}
		})
	}
}

// TestRequestJSONWritesOverflowingIntegersAsTheyWere checks the encoding of
// a decoded body for the request decoder: integers beyond int64's range
// (float64 after Kubernetes' JSON decoding) as the integers they are,
// everything else as encoding/json writes it, and a body without such
// numbers as it is.
func TestRequestJSONWritesOverflowingIntegersAsTheyWere(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"2^63 is written in full", `{"a": 9223372036854775808}`, `{"a":9223372036854775808}`},
		{"2^64 in a list is written in full", `{"a": [1, 18446744073709551616]}`, `{"a":[1,18446744073709551616]}`},
		{"-2^63-1 (the float -2^63) is written in full", `{"a": {"b": -9223372036854775809}}`, `{"a":{"b":-9223372036854775808}}`},
		{"1e19 is written as the integer", `{"a": 1e19}`, `{"a":10000000000000000000}`},
		{"fractions are written as encoding/json writes them", `{"a": 1.5, "b": 1e300}`, `{"a":1.5,"b":1e+300}`},
		{"int64 bounds stay integers", `{"a": 9223372036854775807, "b": -9223372036854775808}`, `{"a":9223372036854775807,"b":-9223372036854775808}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := obj(t, tc.body)
			before := runtime.DeepCopyJSON(in)
			out, _ := requestJSON(in)
			data, err := json.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != tc.want {
				t.Errorf("%s, want %s", data, tc.want)
			}
			if !reflect.DeepEqual(in, before) {
				t.Errorf("requestJSON modified its input")
			}
		})
	}
	pod := obj(t, realObjectNamed(t, "a pod with two containers, ports and a volume").json)
	if out, changed := requestJSON(pod); changed || !jsonvalue.SameMap(out.(map[string]any), pod) {
		t.Errorf("a body without overflowing integers was copied")
	}
}

// withLabels etc.
func podSpecWith(spec string) string { return fmt.Sprintf(podWith, spec) }

const nginx = `{"name": "web", "image": "nginx:1.27"}`

func deploymentWith(spec string) string {
	return `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}, "spec": ` + spec + `}`
}

func serviceWith(spec string) string {
	return `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"}, "spec": ` + spec + `}`
}

func jobWith(spec string) string {
	return `{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate", "namespace": "shop"}, "spec": ` + spec + `}`
}

func cronJobWith(name, spec string) string {
	return `{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "` + name + `", "namespace": "shop"}, "spec": ` + spec + `}`
}

func ingressWith(spec string) string {
	return `{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web", "namespace": "shop"}, "spec": ` + spec + `}`
}

const (
	webTemplate = `{"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}`
	jobTemplate = `{"spec": {"restartPolicy": "Never", "containers": [{"name": "migrate", "image": "migrate:2.3"}]}}`
	webSelector = `{"matchLabels": {"app": "web"}}`
	webBackend  = `{"service": {"name": "web", "port": {"number": 80}}}`
)

// The explanations of kube-apiserver's name and key formats.
const (
	rfc1123Label     = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	rfc1123Subdomain = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	configKey        = `a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`
)

// invalidObject is an object kube-apiserver refuses on create, with its
// 422 message verbatim.
type invalidObject struct {
	name, body, want string
}

var invalidObjects = []invalidObject{
	{name: "a pod with a label value longer than 63 characters", body: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "` + strings.Repeat("w", 64) + `"}}, "spec": {"containers": [` + nginx + `]}}`,
		want: `Pod "web" is invalid: metadata.labels: Invalid value: "` + strings.Repeat("w", 64) + `": must be no more than 63 bytes`},
	{name: "a pod with an invalid label key", body: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop", "labels": {"app/web/tier": "front"}}, "spec": {"containers": [` + nginx + `]}}`,
		want: `Pod "web" is invalid: metadata.labels: Invalid value: "app/web/tier": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`},
	{name: "a pod with an invalid annotation key", body: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop", "annotations": {"-note": "x"}}, "spec": {"containers": [` + nginx + `]}}`,
		want: `Pod "web" is invalid: metadata.annotations: Invalid value: "-note": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
	{name: "a pod with an invalid container name", body: podSpecWith(`{"containers": [{"name": "Bad_Name", "image": "nginx:1.27"}]}`),
		want: `Pod "web" is invalid: spec.containers[0].name: Invalid value: "Bad_Name": ` + rfc1123Label},
	{name: "a pod with two containers of the same name", body: podSpecWith(`{"containers": [` + nginx + `, {"name": "web", "image": "envoy:1.31"}]}`),
		want: `Pod "web" is invalid: spec.containers[1].name: Duplicate value: "web"`},
	{name: "a pod with a container without an image", body: podSpecWith(`{"containers": [{"name": "web"}]}`),
		want: `Pod "web" is invalid: spec.containers[0].image: Required value`},
	{name: "a pod with a container port out of range", body: podSpecWith(`{"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 70000}]}]}`),
		want: `Pod "web" is invalid: spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`},
	{name: "a pod with an unsupported restart policy", body: podSpecWith(`{"restartPolicy": "Sometimes", "containers": [` + nginx + `]}`),
		want: `Pod "web" is invalid: spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`},
	{name: "a pod with an unsupported dns policy", body: podSpecWith(`{"dnsPolicy": "Google", "containers": [` + nginx + `]}`),
		want: `Pod "web" is invalid: spec.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`},
	{name: "a pod requesting more cpu than its limit", body: podSpecWith(`{"containers": [{"name": "web", "image": "nginx:1.27", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]}`),
		want: `Pod "web" is invalid: spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`},
	{name: "a pod with a name longer than 253 characters", body: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "` + strings.Repeat("w", 254) + `", "namespace": "shop"}, "spec": {"containers": [` + nginx + `]}}`,
		want: `Pod "` + strings.Repeat("w", 254) + `" is invalid: metadata.name: Invalid value: "` + strings.Repeat("w", 254) + `": must be no more than 253 characters`},
	{name: "a pod whose name is not a DNS subdomain", body: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "Web_1", "namespace": "shop"}, "spec": {"containers": [` + nginx + `]}}`,
		want: `Pod "Web_1" is invalid: metadata.name: Invalid value: "Web_1": ` + rfc1123Subdomain},
	{name: "a pod with a bad container name and no image has both errors", body: podSpecWith(`{"containers": [{"name": "Bad_Name"}]}`),
		want: `Pod "web" is invalid: [spec.containers[0].name: Invalid value: "Bad_Name": ` + rfc1123Label + `, spec.containers[0].image: Required value]`},
	{name: "a pod mounting a volume it does not have", body: podSpecWith(`{"containers": [{"name": "web", "image": "nginx:1.27", "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]}]}`),
		want: `Pod "web" is invalid: spec.containers[0].volumeMounts[0].name: Not found: "cache"`},
	{name: "a pod with a negative active deadline", body: podSpecWith(`{"activeDeadlineSeconds": -1, "containers": [` + nginx + `]}`),
		want: `Pod "web" is invalid: spec.activeDeadlineSeconds: Invalid value: -1: must be between 1 and 2147483647, inclusive`},
	{name: "a pod with a nameserver with leading zeros and an IPv4-mapped host alias", body: podSpecWith(`{"hostAliases": [{"ip": "::ffff:1.2.3.4", "hostnames": ["db"]}], "dnsPolicy": "None", "dnsConfig": {"nameservers": ["05.06.07.08"]}, "containers": [` + nginx + `]}`),
		want: `Pod "web" is invalid: [spec.dnsConfig.nameservers[0]: Invalid value: "05.06.07.08": must not have leading 0s, spec.hostAliases[0].ip: Invalid value: "::ffff:1.2.3.4": must not be an IPv4-mapped IPv6 address]`},
	{name: "a deployment with negative replicas", body: deploymentWith(`{"replicas": -1, "selector": ` + webSelector + `, "template": ` + webTemplate + `}`),
		want: `Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
	{name: "a deployment whose selector does not match its template labels", body: deploymentWith(`{"selector": {"matchLabels": {"app": "api"}}, "template": ` + webTemplate + `}`),
		want: "Deployment.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"},
	{name: "a deployment without a selector", body: deploymentWith(`{"template": ` + webTemplate + `}`),
		want: "Deployment.apps \"web\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`]"},
	{name: "a deployment whose rolling update can neither surge nor be unavailable", body: deploymentWith(`{"selector": ` + webSelector + `, "strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}, "template": ` + webTemplate + `}`),
		want: "Deployment.apps \"web\" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"},
	{name: "a deployment with a negative revision history limit", body: deploymentWith(`{"revisionHistoryLimit": -1, "selector": ` + webSelector + `, "template": ` + webTemplate + `}`),
		want: `Deployment.apps "web" is invalid: spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0`},
	{name: "a deployment whose template restarts never", body: deploymentWith(`{"selector": ` + webSelector + `, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"restartPolicy": "Never", "containers": [` + nginx + `]}}}`),
		want: `Deployment.apps "web" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`},
	{name: "a service with a port out of range", body: serviceWith(`{"selector": {"app": "web"}, "ports": [{"port": 70000}]}`),
		want: `Service "web" is invalid: [spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive, spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive]`},
	{name: "a service with a port of zero", body: serviceWith(`{"selector": {"app": "web"}, "ports": [{"port": 0, "targetPort": 80}]}`),
		want: `Service "web" is invalid: spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive`},
	{name: "a service with the same port twice", body: serviceWith(`{"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}, {"name": "alt", "port": 80}]}`),
		want: `Service "web" is invalid: spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}`},
	{name: "a service with two unnamed ports", body: serviceWith(`{"selector": {"app": "web"}, "ports": [{"port": 80}, {"port": 443}]}`),
		want: `Service "web" is invalid: [spec.ports[0].name: Required value, spec.ports[1].name: Required value]`},
	{name: "a service of an unsupported type", body: serviceWith(`{"type": "Internal", "selector": {"app": "web"}, "ports": [{"port": 80}]}`),
		want: `Service "web" is invalid: spec.type: Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`},
	{name: "a cluster IP service with a node port", body: serviceWith(`{"selector": {"app": "web"}, "ports": [{"port": 80, "nodePort": 30080}]}`),
		want: "Service \"web\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"},
	{name: "a service with an invalid target port name", body: serviceWith(`{"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "Http_Port"}]}`),
		want: `Service "web" is invalid: spec.ports[0].targetPort: Invalid value: "Http_Port": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`},
	{name: "a config map with an invalid key", body: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "namespace": "shop"}, "data": {"nginx conf": "worker_processes 1;"}}`,
		want: `ConfigMap "web-config" is invalid: data[nginx conf]: Invalid value: "nginx conf": ` + configKey},
	{name: "a config map whose name is not a DNS subdomain", body: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Web_Config", "namespace": "shop"}, "data": {"a": "1"}}`,
		want: `ConfigMap "Web_Config" is invalid: metadata.name: Invalid value: "Web_Config": ` + rfc1123Subdomain},
	{name: "a config map with a key in both data and binary data", body: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "namespace": "shop"}, "data": {"a": "1"}, "binaryData": {"a": "MQ=="}}`,
		want: `ConfigMap "web-config" is invalid: data[a]: Invalid value: "a": duplicate of key present in binaryData`},
	{name: "a secret with an invalid key", body: `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "shop"}, "data": {"pass word": "aHVudGVyMg=="}}`,
		want: `Secret "db" is invalid: data[pass word]: Invalid value: "pass word": ` + configKey},
	{name: "a namespace whose name is not a DNS label", body: `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop.eu"}}`,
		want: `Namespace "shop.eu" is invalid: metadata.name: Invalid value: "shop.eu": must not contain dots`},
	{name: "a namespace with an upper case name", body: `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Shop"}}`,
		want: `Namespace "Shop" is invalid: metadata.name: Invalid value: "Shop": ` + rfc1123Label},
	{name: "a namespace with a name longer than 63 characters", body: `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "` + strings.Repeat("s", 64) + `"}}`,
		want: `Namespace "` + strings.Repeat("s", 64) + `" is invalid: [metadata.name: Invalid value: "` + strings.Repeat("s", 64) + `": must be no more than 63 characters, metadata.labels: Invalid value: "` + strings.Repeat("s", 64) + `": must be no more than 63 bytes]`},
	{name: "a job with negative completions", body: jobWith(`{"completions": -1, "template": ` + jobTemplate + `}`),
		want: `Job.batch "migrate" is invalid: spec.completions: Invalid value: -1: must be greater than or equal to 0`},
	{name: "a job with negative parallelism", body: jobWith(`{"parallelism": -1, "template": ` + jobTemplate + `}`),
		want: `Job.batch "migrate" is invalid: spec.parallelism: Invalid value: -1: must be greater than or equal to 0`},
	{name: "a job with a negative backoff limit", body: jobWith(`{"backoffLimit": -1, "template": ` + jobTemplate + `}`),
		want: `Job.batch "migrate" is invalid: spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0`},
	{name: "a job whose pods restart always", body: jobWith(`{"template": {"spec": {"containers": [{"name": "migrate", "image": "migrate:2.3"}]}}}`),
		want: `Job.batch "migrate" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
	{name: "a cron job with an invalid schedule", body: cronJobWith("nightly", `{"schedule": "every night", "jobTemplate": {"spec": {"template": `+jobTemplate+`}}}`),
		want: `CronJob.batch "nightly" is invalid: spec.schedule: Invalid value: "every night": expected exactly 5 fields, found 2: [every night]`},
	{name: "a cron job with a time zone in its schedule", body: cronJobWith("nightly", `{"schedule": "TZ=Europe/Paris 0 3 * * *", "jobTemplate": {"spec": {"template": `+jobTemplate+`}}}`),
		want: `CronJob.batch "nightly" is invalid: spec.schedule: Invalid value: "TZ=Europe/Paris 0 3 * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`},
	{name: "a cron job with an unknown time zone", body: cronJobWith("nightly", `{"schedule": "0 3 * * *", "timeZone": "Mars/Olympus", "jobTemplate": {"spec": {"template": `+jobTemplate+`}}}`),
		want: `CronJob.batch "nightly" is invalid: spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`},
	{name: "a cron job with a name longer than 52 characters", body: cronJobWith(strings.Repeat("n", 53), `{"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": `+jobTemplate+`}}}`),
		want: `CronJob.batch "` + strings.Repeat("n", 53) + `" is invalid: metadata.name: Invalid value: "` + strings.Repeat("n", 53) + `": must be no more than 52 characters`},
	{name: "an ingress path without a path type", body: ingressWith(`{"rules": [{"host": "shop.example.com", "http": {"paths": [{"path": "/", "backend": ` + webBackend + `}]}}]}`),
		want: `Ingress.networking.k8s.io "web" is invalid: spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified`},
	{name: "an ingress path with an unsupported path type", body: ingressWith(`{"rules": [{"host": "shop.example.com", "http": {"paths": [{"path": "/", "pathType": "Regex", "backend": ` + webBackend + `}]}}]}`),
		want: `Ingress.networking.k8s.io "web" is invalid: spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", "Prefix"`},
	{name: "an ingress path that is not absolute", body: ingressWith(`{"rules": [{"host": "shop.example.com", "http": {"paths": [{"path": "cart", "pathType": "Prefix", "backend": ` + webBackend + `}]}}]}`),
		want: `Ingress.networking.k8s.io "web" is invalid: spec.rules[0].http.paths[0].path: Invalid value: "cart": must be an absolute path`},
	{name: "an ingress backend without a service or resource", body: ingressWith(`{"rules": [{"host": "shop.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {}}]}}]}`),
		want: `Ingress.networking.k8s.io "web" is invalid: spec.rules[0].http.paths[0].backend: Invalid value: "": resource or service backend is required`},
	{name: "an ingress backend with a service and a resource", body: ingressWith(`{"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}, "resource": {"kind": "Bucket", "name": "static"}}}`),
		want: `Ingress.networking.k8s.io "web" is invalid: spec.defaultBackend: Invalid value: "": cannot set both resource and service backends`},
	{name: "an ingress with a wildcard host of two labels", body: ingressWith(`{"rules": [{"host": "*.*.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": ` + webBackend + `}]}}]}`),
		want: `Ingress.networking.k8s.io "web" is invalid: spec.rules[0].host: Invalid value: "*.*.example.com": a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
	{name: "an ingress backend port with a name and a number", body: ingressWith(`{"defaultBackend": {"service": {"name": "web", "port": {"name": "http", "number": 80}}}}`),
		want: `Ingress.networking.k8s.io "web" is invalid: spec.defaultBackend: Invalid value: "": cannot set both port name & port number`},
	{name: "a pod disruption budget with both min available and max unavailable", body: `{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "shop"}, "spec": {"minAvailable": 1, "maxUnavailable": 1, "selector": ` + webSelector + `}}`,
		want: `PodDisruptionBudget.policy "web" is invalid: spec: Invalid value: {"MinAvailable":1,"Selector":{"matchLabels":{"app":"web"}},"MaxUnavailable":1,"UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set`},
	{name: "a horizontal pod autoscaler with max replicas below min replicas", body: `{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web", "namespace": "shop"}, "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 5, "maxReplicas": 2}}`,
		want: "HorizontalPodAutoscaler.autoscaling \"web\" is invalid: spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"},
	{name: "a priority class with a reserved name", body: `{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "system-high"}, "value": 1000}`,
		want: `PriorityClass.scheduling.k8s.io "system-high" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-high is not a known system priority class`},
	{name: "a network policy with an unsupported protocol", body: `{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "web", "namespace": "shop"}, "spec": {"podSelector": {}, "ingress": [{"ports": [{"protocol": "ICMP", "port": 80}]}]}}`,
		want: `NetworkPolicy.networking.k8s.io "web" is invalid: spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"`},
	{name: "a stateful set without a selector", body: `{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "shop"}, "spec": {"serviceName": "db", "template": ` + webTemplate + `}}`,
		want: "StatefulSet.apps \"db\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`]"},
}

func gvkOfBody(t testing.TB, m map[string]any) schema.GroupVersionKind {
	gv, err := schema.ParseGroupVersion(m["apiVersion"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return gv.WithKind(m["kind"].(string))
}

// resourceOf is the resource of a built-in kind (its lower-case plural).
func resourceOf(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural
}

// decoded is body as admission leaves it for the registry: decoded as
// kube-apiserver decodes a request body.
func decoded(t *testing.T, s *Scheme, body string) (map[string]any, schema.GroupVersionKind) {
	t.Helper()
	in := obj(t, body)
	gvk := gvkOfBody(t, in)
	out, _, err := s.DecodeRequest(in, gvk)
	if err != nil {
		t.Fatal(err)
	}
	return out, gvk
}

// requestFor is the request of op on o, of kind gvk.
func requestFor(op admission.Operation, o map[string]any, gvk schema.GroupVersionKind) Request {
	md, _ := o["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	return Request{Operation: op, Kind: gvk, Resource: resourceOf(gvk), Namespace: ns, Name: name}
}

// validateCreate is Validate of a CREATE of o, which must not fail as a
// simulation.
func validateCreate(t *testing.T, s *Scheme, o map[string]any, gvk schema.GroupVersionKind) *Validation {
	t.Helper()
	before := runtime.DeepCopyJSON(o)
	v, err := s.Validate(context.Background(), requestFor(admission.Create, o, gvk), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v == nil {
		t.Fatalf("%s: not validated", gvk)
	}
	if !reflect.DeepEqual(o, before) {
		t.Fatalf("Validate modified the object")
	}
	return v
}

// checkInvalid fails unless v is kube-apiserver's 422 with message want.
func checkInvalid(t *testing.T, v *Validation, want string) {
	t.Helper()
	if v.Invalid == nil {
		t.Fatalf("accepted, want\n%s", want)
	}
	if got := v.Invalid.Error(); got != want {
		t.Fatalf("refused with\n%s\nwant\n%s", got, want)
	}
	if !apierrors.IsInvalid(v.Invalid) || v.Invalid.Status().Code != 422 {
		t.Fatalf("%v is not a 422", v.Invalid)
	}
	if v.Stored != nil {
		t.Fatalf("a refusal with a stored object")
	}
}

// TestValidateRefusesInvalidBuiltInObjects creates invalid objects of
// built-in kinds: kube-apiserver's 422, message verbatim.
func TestValidateRefusesInvalidBuiltInObjects(t *testing.T) {
	s := New()
	if len(invalidObjects) < 30 {
		t.Fatalf("only %d invalid objects", len(invalidObjects))
	}
	for _, tc := range invalidObjects {
		t.Run(tc.name, func(t *testing.T) {
			o, gvk := decoded(t, s, tc.body)
			checkInvalid(t, validateCreate(t, s, o, gvk), tc.want)
		})
	}
}

// set sets the value at path in m (as at reads it), creating maps on the
// way.
func set(t testing.TB, m map[string]any, path string, v any) {
	t.Helper()
	parts := strings.Split(path, ".")
	parent := at(m, strings.Join(parts[:len(parts)-1], "."))
	if len(parts) == 1 {
		parent = m
	}
	pm, ok := parent.(map[string]any)
	if !ok {
		t.Fatalf("%s: no object at its parent", path)
	}
	last := parts[len(parts)-1]
	if name, idx, ok := strings.Cut(last, "["); ok {
		l, _ := pm[name].([]any)
		i, err := strconv.Atoi(strings.TrimSuffix(idx, "]"))
		if err != nil || i >= len(l) {
			t.Fatalf("%s: no such item", path)
		}
		l[i] = v
		return
	}
	if v == missing {
		delete(pm, last)
		return
	}
	pm[last] = v
}

// stored is the object the registry stores for body (a valid create).
func stored(t *testing.T, s *Scheme, body string) (map[string]any, schema.GroupVersionKind) {
	t.Helper()
	o, gvk := decoded(t, s, body)
	v := validateCreate(t, s, o, gvk)
	if v.Invalid != nil {
		t.Fatalf("creating %s: %v", gvk.Kind, v.Invalid)
	}
	return v.Stored, gvk
}

// jobUID is the uid a stored Job's generated selector names, made the same
// every run: the store gives a new object a random uid.
const jobUID = "0b7c2b5e-6a43-4c1e-9a7e-2f2a4d1c8e11"

// withFixedJobUID is a stored Job with its selector's uid set to jobUID.
func withFixedJobUID(t *testing.T, job map[string]any) map[string]any {
	t.Helper()
	sel, _ := at(job, "spec.selector.matchLabels").(map[string]any)
	uid, _ := sel["batch.kubernetes.io/controller-uid"].(string)
	if uid == "" {
		t.Fatalf("a stored job without a generated selector: %s", mustJSON(job))
	}
	return obj(t, strings.ReplaceAll(mustJSON(job), uid, jobUID))
}

// TestValidateRefusesUpdatesOfImmutableFields updates stored objects of
// built-in kinds: kube-apiserver's 422 for the fields it keeps, and the
// updates it allows.
func TestValidateRefusesUpdatesOfImmutableFields(t *testing.T) {
	s := New()
	const immutableConfigMap = `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "namespace": "shop"}, "immutable": true, "data": {"nginx.conf": "worker_processes 1;"}}`
	for _, tc := range []struct {
		name   string
		body   string
		change map[string]any
		// want is the refusal (golden: in testdata/kube/update/, for the
		// messages that print whole internal objects); "" accepts.
		want string
	}{{
		name: "a job's selector cannot change", body: realObjectNamed(t, "a job").json,
		change: map[string]any{"spec.selector": map[string]any{"matchLabels": map[string]any{"app": "migrate"}}},
		want:   `Job.batch "migrate" is invalid: [spec.template.metadata.labels: Invalid value: {"batch.kubernetes.io/controller-uid":"` + jobUID + `","batch.kubernetes.io/job-name":"migrate","controller-uid":"` + jobUID + `","job-name":"migrate"}: ` + "`selector` does not match template `labels`" + `, spec.selector: Invalid value: {"matchLabels":{"app":"migrate"}}: field is immutable]`,
	}, {
		name: "a running job's pod template cannot change", body: realObjectNamed(t, "a job").json,
		change: map[string]any{"spec.template.spec.containers[0].image": "registry.example.com/shop/migrate:2.4"},
		want:   "golden",
	}, {
		name: "a job's completions cannot change", body: realObjectNamed(t, "a job").json,
		change: map[string]any{"spec.completions": int64(3)},
		want:   `Job.batch "migrate" is invalid: spec.completions: Invalid value: 3: field is immutable`,
	}, {
		name: "a job's parallelism can change", body: realObjectNamed(t, "a job").json,
		change: map[string]any{"spec.parallelism": int64(3)},
	}, {
		name:   "a service's cluster IP cannot change",
		body:   serviceWith(`{"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "selector": {"app": "web"}, "ports": [{"port": 80}]}`),
		change: map[string]any{"spec.clusterIP": "10.96.0.20"},
		// clusterIPs follows clusterIP before validation (the store's
		// normalizeClusterIPs).
		want: `Service "web" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.0.20"]: may not change once set`,
	}, {
		name:   "a service's cluster IPs cannot change",
		body:   serviceWith(`{"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "selector": {"app": "web"}, "ports": [{"port": 80}]}`),
		change: map[string]any{"spec.clusterIP": "10.96.0.20", "spec.clusterIPs": []any{"10.96.0.20"}},
		want:   `Service "web" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.0.20"]: may not change once set`,
	}, {
		name:   "a service updated without its cluster IP keeps it",
		body:   serviceWith(`{"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "selector": {"app": "web"}, "ports": [{"port": 80}]}`),
		change: map[string]any{"spec.clusterIP": missing, "spec.clusterIPs": missing, "spec.selector": map[string]any{"app": "web", "tier": "front"}},
	}, {
		name:   "a node port service updated without its node port keeps it",
		body:   serviceWith(`{"type": "NodePort", "clusterIP": "10.96.0.10", "selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}`),
		change: map[string]any{"spec.ports": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "TCP", "targetPort": int64(8080)}}},
	}, {
		name:   "a service becomes an external name by clearing its cluster IP alone",
		body:   serviceWith(`{"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "selector": {"app": "web"}, "ports": [{"port": 80}]}`),
		change: map[string]any{"spec.type": "ExternalName", "spec.externalName": "web.example.com", "spec.clusterIP": "", "spec.selector": missing, "spec.internalTrafficPolicy": missing},
	}, {
		// The strategy drops the allocated fields a type no longer needs.
		name:   "a service becomes an external name keeping its cluster IP",
		body:   serviceWith(`{"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "selector": {"app": "web"}, "ports": [{"port": 80}]}`),
		change: map[string]any{"spec.type": "ExternalName", "spec.externalName": "web.example.com", "spec.selector": missing, "spec.internalTrafficPolicy": missing},
	}, {
		name:   "a service's type can become a node port",
		body:   serviceWith(`{"clusterIP": "10.96.0.10", "selector": {"app": "web"}, "ports": [{"port": 80}]}`),
		change: map[string]any{"spec.type": "NodePort"},
	}, {
		name: "a deployment's selector cannot change", body: realObjectNamed(t, "a deployment with a rolling update").json,
		change: map[string]any{
			"spec.selector":                 map[string]any{"matchLabels": map[string]any{"app": "web", "tier": "front"}},
			"spec.template.metadata.labels": map[string]any{"app": "web", "tier": "front"},
		},
		want: `Deployment.apps "web" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"front"}}: field is immutable`,
	}, {
		name: "a deployment's replicas and image can change", body: realObjectNamed(t, "a deployment with a rolling update").json,
		change: map[string]any{"spec.replicas": int64(5), "spec.template.spec.containers[0].image": "nginx:1.28"},
	}, {
		name: "a stateful set's service name cannot change", body: realObjectNamed(t, "a stateful set with a volume claim template").json,
		change: map[string]any{"spec.serviceName": "postgres"},
		want:   `StatefulSet.apps "db" is invalid: spec.serviceName: Invalid value: "postgres": field is immutable`,
	}, {
		name: "an immutable config map's data cannot change", body: immutableConfigMap,
		change: map[string]any{"data.nginx.conf": "worker_processes 2;"},
		want:   "ConfigMap \"web-config\" is invalid: data: Forbidden: field is immutable when `immutable` is set",
	}, {
		name: "an immutable config map cannot become mutable", body: immutableConfigMap,
		change: map[string]any{"immutable": false},
		want:   "ConfigMap \"web-config\" is invalid: immutable: Forbidden: field is immutable when `immutable` is set",
	}, {
		name: "an immutable config map's labels can change", body: immutableConfigMap,
		change: map[string]any{"metadata.labels": map[string]any{"app": "web"}},
	}, {
		name:   "a secret's type cannot change",
		body:   `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "shop"}, "type": "Opaque", "data": {"password": "aHVudGVyMg=="}}`,
		change: map[string]any{"type": "kubernetes.io/tls"},
		want:   `Secret "db" is invalid: [type: Invalid value: "kubernetes.io/tls": field is immutable, data[tls.crt]: Required value, data[tls.key]: Required value]`,
	}, {
		name: "a pod's image can change", body: realObjectNamed(t, "a pod with two containers, ports and a volume").json,
		change: map[string]any{"spec.containers[0].image": "nginx:1.27"},
	}, {
		name: "a pod's restart policy cannot change", body: realObjectNamed(t, "a pod with two containers, ports and a volume").json,
		change: map[string]any{"spec.restartPolicy": "Never"},
		want:   "golden",
	}, {
		name: "a namespace cannot be renamed", body: realObjectNamed(t, "a namespace").json,
		change: map[string]any{"metadata.name": "store"},
		want:   `Namespace "store" is invalid: metadata.name: Invalid value: "store": field is immutable`,
	}, {
		name: "a bound claim's access modes cannot change", body: realObjectNamed(t, "a persistent volume claim").json,
		change: map[string]any{"spec.accessModes": []any{"ReadWriteMany"}},
		want:   "golden",
	}, {
		name: "a cron job's schedule must stay valid", body: realObjectNamed(t, "a cron job").json,
		change: map[string]any{"spec.schedule": "61 * * * *"},
		want:   `CronJob.batch "nightly" is invalid: spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			old, gvk := stored(t, s, tc.body)
			if gvk == jobV1 {
				old = withFixedJobUID(t, old)
			}
			nu := runtime.DeepCopyJSON(old)
			for p, v := range tc.change {
				if p == "data.nginx.conf" {
					nu["data"].(map[string]any)["nginx.conf"] = v
					continue
				}
				set(t, nu, p, v)
			}
			// The object as the request's decoding leaves it.
			nu, err := s.Default(nu, gvk)
			if err != nil {
				t.Fatal(err)
			}
			before, oldBefore := runtime.DeepCopyJSON(nu), runtime.DeepCopyJSON(old)
			v, err := s.Validate(context.Background(), requestFor(admission.Update, nu, gvk), nu, old)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(nu, before) || !reflect.DeepEqual(old, oldBefore) {
				t.Fatalf("Validate modified its objects")
			}
			switch tc.want {
			case "":
				if v.Invalid != nil {
					t.Fatalf("refused: %v", v.Invalid)
				}
			case "golden":
				if v.Invalid == nil {
					t.Fatalf("accepted")
				}
				golden(t, "kube/update/"+slug(tc.name), v.Invalid.Error())
				checkInvalid(t, v, v.Invalid.Error())
			default:
				checkInvalid(t, v, tc.want)
			}
		})
	}
}

// TestValidateStoresWhatTheRegistryStores creates valid objects: the
// object the registry would store, after PrepareForCreate (and the Service
// store's hook), without the fields the store sets from its state.
func TestValidateStoresWhatTheRegistryStores(t *testing.T) {
	s := New()
	for _, tc := range []struct {
		name   string
		body   string
		fields map[string]any
	}{{
		name: "a pod is pending, with its quality of service class and generation 1",
		body: realObjectNamed(t, "a pod with two containers, ports and a volume").json,
		fields: map[string]any{
			"status":                     map[string]any{"phase": "Pending", "qosClass": "Burstable"},
			"metadata.generation":        int64(1),
			"metadata.uid":               missing,
			"metadata.creationTimestamp": missing,
			"metadata.resourceVersion":   missing,
			"spec.serviceAccountName":    "builder",
		},
	}, {
		name:   "a pod with equal requests and limits is guaranteed",
		body:   podSpecWith(`{"containers": [{"name": "web", "image": "nginx:1.27", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}`),
		fields: map[string]any{"status": map[string]any{"phase": "Pending", "qosClass": "Guaranteed"}},
	}, {
		name:   "a deployment has generation 1 and an empty status",
		body:   realObjectNamed(t, "a deployment with a rolling update").json,
		fields: map[string]any{"metadata.generation": int64(1), "status": map[string]any{}, "spec.replicas": int64(1)},
	}, {
		name: "a daemon set has generation 1 and template generation 1",
		body: realObjectNamed(t, "a daemon set for a node agent").json,
		fields: map[string]any{
			"metadata.generation":  int64(1),
			"metadata.annotations": map[string]any{"deprecated.daemonset.template.generation": "1"},
		},
	}, {
		name: "a job gets a selector of its uid and its pods the job's labels",
		body: realObjectNamed(t, "a job").json,
		fields: map[string]any{
			"metadata.generation": int64(1),
			"spec.selector":       map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": jobUID}},
			"spec.template.metadata.labels": map[string]any{
				"batch.kubernetes.io/controller-uid": jobUID, "batch.kubernetes.io/job-name": "migrate",
				"controller-uid": jobUID, "job-name": "migrate",
			},
		},
	}, {
		name: "a namespace gets its finalizer, its name label and is active",
		body: realObjectNamed(t, "a namespace").json,
		fields: map[string]any{
			"spec":            map[string]any{"finalizers": []any{"kubernetes"}},
			"status":          map[string]any{"phase": "Active"},
			"metadata.labels": map[string]any{"kubernetes.io/metadata.name": "shop", "team": "storefront"},
		},
	}, {
		name:   "a headless service gets its cluster IPs from its cluster IP",
		body:   serviceWith(`{"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}`),
		fields: map[string]any{"spec.clusterIP": "None", "spec.clusterIPs": []any{"None"}},
	}, {
		name:   "a service naming only its cluster IP gets it as its cluster IPs",
		body:   serviceWith(`{"clusterIP": "10.96.0.10", "selector": {"app": "web"}, "ports": [{"port": 80}]}`),
		fields: map[string]any{"spec.clusterIP": "10.96.0.10", "spec.clusterIPs": []any{"10.96.0.10"}},
	}, {
		// PrepareForCreate resets the status that decoding defaulted; the
		// store decodes what it wrote, which defaults it to Pending again
		// (test/e2e/TestBuiltinPlugins: kube-apiserver returns it so).
		name:   "a persistent volume claim is stored without a status and read back Pending",
		body:   realObjectNamed(t, "a persistent volume claim").json,
		fields: map[string]any{"status": map[string]any{"phase": "Pending"}, "spec.volumeMode": "Filesystem"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			o, gvk := decoded(t, s, tc.body)
			v := validateCreate(t, s, o, gvk)
			if v.Invalid != nil {
				t.Fatalf("refused: %v", v.Invalid)
			}
			got := v.Stored
			if gvk == jobV1 {
				got = withFixedJobUID(t, got)
			}
			checkFields(t, got, tc.fields)
		})
	}
}

// TestValidateWarnsAsTheStrategiesDo creates objects the strategies warn
// about: their warnings, verbatim and in order.
func TestValidateWarnsAsTheStrategiesDo(t *testing.T) {
	s := New()
	for _, tc := range []struct {
		name, body string
		warnings   []string
	}{{
		name:     "a pod with a port defined twice",
		body:     podSpecWith(`{"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}, {"containerPort": 80}]}]}`),
		warnings: []string{"spec.containers[0].ports[1]: duplicate port definition with spec.containers[0].ports[0]"},
	}, {
		name:     "a pod with two containers naming a port the same",
		body:     podSpecWith(`{"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"name": "http", "containerPort": 80}]}, {"name": "proxy", "image": "envoy:1.31", "ports": [{"name": "http", "containerPort": 8080}]}]}`),
		warnings: []string{`spec.containers[1].ports[0]: duplicate port name "http" with spec.containers[0].ports[0], services and probes that select ports by name will use spec.containers[0].ports[0]`},
	}, {
		name: "a pod with deprecated node labels, a git repo volume, fractional memory and a hidden variable",
		body: podSpecWith(`{"volumes": [{"name": "src", "gitRepo": {"repository": "https://example.com/shop.git"}}], "nodeSelector": {"beta.kubernetes.io/arch": "amd64"}, "containers": [{"name": "web", "image": "nginx:1.27", "resources": {"limits": {"memory": "0.5"}}, "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}], "volumeMounts": [{"name": "src", "mountPath": "/src"}]}]}`),
		warnings: []string{
			`spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead`,
			`spec.volumes[0].gitRepo: deprecated in v1.11, and disabled by default in v1.33+`,
			`spec.containers[0].resources.limits[memory]: fractional byte value "500m" is invalid, must be an integer`,
			`spec.containers[0].resources.requests[memory]: fractional byte value "500m" is invalid, must be an integer`,
			`spec.containers[0].env[1]: hides previous definition of "A", which may be dropped when using apply`,
		},
	}, {
		name:     "a pod with an image pull secret named twice",
		body:     podSpecWith(`{"imagePullSecrets": [{"name": "registry"}, {"name": "registry"}], "containers": [` + nginx + `]}`),
		warnings: []string{`spec.imagePullSecrets[1].name: duplicate name "registry"`},
	}, {
		name:     "a pod with the seccomp annotation",
		body:     `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop", "annotations": {"seccomp.security.alpha.kubernetes.io/pod": "runtime/default"}}, "spec": {"containers": [` + nginx + `]}}`,
		warnings: []string{`metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the "seccompProfile" field instead`},
	}, {
		name:     "a pod with node affinity on a deprecated zone label",
		body:     podSpecWith(`{"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "failure-domain.beta.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a"]}]}]}}}, "containers": [` + nginx + `]}`),
		warnings: []string{`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use "topology.kubernetes.io/zone" instead`},
	}, {
		name:     "a deployment whose pods have a negative grace period",
		body:     deploymentWith(`{"selector": ` + webSelector + `, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"terminationGracePeriodSeconds": -1, "containers": [` + nginx + `]}}}`),
		warnings: []string{"spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1"},
	}, {
		name:     "an ingress with the ingress class annotation",
		body:     `{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web", "namespace": "shop", "annotations": {"kubernetes.io/ingress.class": "nginx"}}, "spec": {"defaultBackend": ` + webBackend + `}}`,
		warnings: []string{`annotation "kubernetes.io/ingress.class" is deprecated, please use 'spec.ingressClassName' instead`},
	}, {
		name: "a valid pod has no warnings",
		body: realObjectNamed(t, "a pod with two containers, ports and a volume").json,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			o, gvk := decoded(t, s, tc.body)
			v := validateCreate(t, s, o, gvk)
			if v.Invalid != nil {
				t.Fatalf("refused: %v", v.Invalid)
			}
			if !reflect.DeepEqual(v.Warnings, tc.warnings) {
				t.Errorf("warnings\n%q\nwant\n%q", v.Warnings, tc.warnings)
			}
		})
	}
}

// upstreamConvert is the oracle of Convert: u as the typed object of kind
// from, converted by kube-apiserver's scheme to its internal version and
// from there to the version of to.
func upstreamConvert(t *testing.T, u map[string]any, from, to schema.GroupVersionKind) map[string]any {
	t.Helper()
	ks := kubeScheme(t)
	internal, err := ks.ConvertToVersion(typedOf(t, u, from), schema.GroupVersion{Group: from.Group, Version: runtime.APIVersionInternal})
	if err != nil {
		t.Fatal(err)
	}
	out, err := ks.ConvertToVersion(internal, to.GroupVersion())
	if err != nil {
		t.Fatal(err)
	}
	return toUnstructured(t, out, to)
}

// TestConvertIsUpstreamConversion converts real objects between versions
// and groups through the internal version, against kube-apiserver's
// conversions on the typed objects, and back.
func TestConvertIsUpstreamConversion(t *testing.T) {
	s := New()
	const hpaV2WithMemoryAndBehavior = `{
	"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
	"metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
	"spec": {
		"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 10,
		"metrics": [
			{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
			{"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}}
		],
		"behavior": {"scaleDown": {"stabilizationWindowSeconds": 120, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}
	}
}`
	for _, tc := range []struct {
		name        string
		body        string
		to          schema.GroupVersionKind
		fields      map[string]any
		annotations []string // annotations the result carries
		// back: converting the result back gives the object again;
		// backFields: it gives an object with these fields.
		back       bool
		backFields map[string]any
	}{{
		name: "an autoscaling/v2 autoscaler keeps what v1 lacks in annotations, and comes back whole",
		body: hpaV2WithMemoryAndBehavior, to: hpaV1,
		fields: map[string]any{
			"spec.targetCPUUtilizationPercentage": int64(70),
			"spec.minReplicas":                    int64(2),
			"spec.maxReplicas":                    int64(10),
			"spec.metrics":                        missing,
			"spec.behavior":                       missing,
		},
		annotations: []string{"autoscaling.alpha.kubernetes.io/behavior", "autoscaling.alpha.kubernetes.io/metrics"},
		// Back in v2, the metrics and the behavior are restored from the
		// annotations, which are gone; the cpu metric, v1's own field,
		// comes after those of the annotation.
		backFields: map[string]any{
			"metadata.annotations": missing,
			"spec.metrics": []any{
				map[string]any{"type": "Resource", "resource": map[string]any{"name": "memory", "target": map[string]any{"type": "AverageValue", "averageValue": "1Gi"}}},
				map[string]any{"type": "Resource", "resource": map[string]any{"name": "cpu", "target": map[string]any{"type": "Utilization", "averageUtilization": int64(70)}}},
			},
			"spec.behavior.scaleDown.stabilizationWindowSeconds": int64(120),
			"spec.behavior.scaleDown.policies":                   []any{map[string]any{"type": "Pods", "value": int64(1), "periodSeconds": int64(60)}},
		},
	}, {
		name: "an autoscaling/v1 autoscaler becomes a v2 cpu utilization metric",
		body: `{"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web", "namespace": "shop"},
			"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 10, "targetCPUUtilizationPercentage": 80}}`,
		to: hpaV2,
		fields: map[string]any{
			"spec.metrics":                        []any{map[string]any{"type": "Resource", "resource": map[string]any{"name": "cpu", "target": map[string]any{"type": "Utilization", "averageUtilization": int64(80)}}}},
			"spec.targetCPUUtilizationPercentage": missing,
			"metadata.annotations":                missing,
		},
		back: true,
	}, {
		name: "a core/v1 event becomes an events.k8s.io/v1 event",
		body: realObjectNamed(t, "a core/v1 event").json, to: eventsV1,
		fields: map[string]any{
			"regarding":        map[string]any{"kind": "Pod", "namespace": "shop", "name": "web", "apiVersion": "v1"},
			"note":             `Successfully pulled image "nginx"`,
			"reason":           "Pulled",
			"type":             "Normal",
			"deprecatedSource": map[string]any{"component": "kubelet", "host": "node-1"},
			"deprecatedCount":  int64(1),
			"message":          missing,
			"involvedObject":   missing,
		},
		back: true,
	}, {
		name: "an events.k8s.io/v1 event becomes a core/v1 event",
		body: realObjectNamed(t, "an events.k8s.io/v1 event").json, to: eventV1,
		fields: map[string]any{
			"involvedObject":     map[string]any{"kind": "Pod", "namespace": "shop", "name": "web"},
			"message":            `Pulling image "nginx"`,
			"reportingComponent": "kubelet",
			"reportingInstance":  "node-1",
			"eventTime":          "2026-11-23T10:00:00.000000Z",
			"action":             "Pulling",
			"note":               missing,
		},
		back: true,
	}, {
		name: "an apps/v1 deployment comes back from the internal version as it was",
		body: realObjectNamed(t, "a deployment with a rolling update").json, to: deploymentV1,
		fields: map[string]any{"spec.replicas": int64(1), "spec.strategy.type": "RollingUpdate"},
		back:   true,
	}, {
		name: "an apps/v1 daemon set comes back with its template generation annotation",
		body: realObjectNamed(t, "a daemon set for a node agent").json, to: daemonSetV1,
		fields: map[string]any{"metadata.annotations": map[string]any{"deprecated.daemonset.template.generation": "0"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in, from := decoded(t, s, tc.body)
			before := runtime.DeepCopyJSON(in)
			got, err := s.Convert(in, from, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(in, before) {
				t.Fatalf("Convert modified its input")
			}
			if want := upstreamConvert(t, in, from, tc.to); !reflect.DeepEqual(got, want) {
				t.Fatalf("Convert\n got %s\nwant %s", mustJSON(got), mustJSON(want))
			}
			if at(got, "apiVersion") != tc.to.GroupVersion().String() || at(got, "kind") != tc.to.Kind {
				t.Errorf("converted to %v %v", at(got, "apiVersion"), at(got, "kind"))
			}
			checkFields(t, got, tc.fields)
			annotations, _ := at(got, "metadata.annotations").(map[string]any)
			for _, a := range tc.annotations {
				if _, ok := annotations[a]; !ok {
					t.Errorf("no annotation %s: %v", a, annotations)
				}
			}
			again, err := s.Convert(got, tc.to, from)
			if err != nil {
				t.Fatal(err)
			}
			if want := upstreamConvert(t, got, tc.to, from); !reflect.DeepEqual(again, want) {
				t.Fatalf("converting back\n got %s\nwant %s", mustJSON(again), mustJSON(want))
			}
			if tc.back && !reflect.DeepEqual(again, in) {
				t.Errorf("converting back\n got %s\nwant %s", mustJSON(again), mustJSON(in))
			}
			checkFields(t, again, tc.backFields)
		})
	}
}

// fuzzKinds are the kinds the fuzz targets decode and default bodies as.
var fuzzKinds = []schema.GroupVersionKind{podV1, deploymentV1, serviceV1, jobV1, cronJobV1, configMapV1, hpaV2, ingressV1}

// fuzzObject is a random object of one of fuzzKinds (chosen by k): body
// when it is a JSON object, or else a real object of the kind with n
// random changes (seeded by seed); nil when there is none.
func fuzzObject(t *testing.T, k uint8, seed uint64, n uint8, body []byte) (map[string]any, schema.GroupVersionKind) {
	gvk := fuzzKinds[int(k)%len(fuzzKinds)]
	var m map[string]any
	if err := utiljson.Unmarshal(body, &m); err != nil || m == nil {
		for _, ro := range realObjects {
			if ro.gvk == gvk {
				m = obj(t, ro.json)
				break
			}
		}
		if m == nil {
			return nil, gvk
		}
		r := randv2.New(randv2.NewPCG(seed, uint64(n)))
		for range int(n%8) + 1 {
			m = testobjects.Perturb(r, m).(map[string]any)
		}
	}
	m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	return m, gvk
}

// addFuzzSeeds seeds f with the real objects and the bodies the tests
// refuse.
func addFuzzSeeds(f *testing.F) {
	for _, ro := range realObjects {
		for k, gvk := range fuzzKinds {
			if gvk == ro.gvk {
				f.Add(uint8(k), uint64(k), uint8(0), []byte(ro.json))
				f.Add(uint8(k), uint64(k), uint8(3), []byte(nil))
			}
		}
	}
	f.Add(uint8(0), uint64(0), uint8(0), []byte(fmt.Sprintf(podWith, `{"priority": 3000000000, "terminationGracePeriodSeconds": 9223372036854775808, "containers": [{"name": "web", "image": "nginx"}]}`)))
	f.Add(uint8(0), uint64(0), uint8(0), []byte(fmt.Sprintf(podWith, `{"foo": 1, "containers": [{"name": "web", "bar": {"x": [1, 2.5, "s", null]}}]}`)))
	f.Add(uint8(1), uint64(0), uint8(0), []byte(`{"spec": {"replicas": "3", "template": {"spec": {"containers": {"name": "web"}}}}}`))
	f.Add(uint8(2), uint64(0), uint8(0), []byte(`{"spec": {"type": "LoadBalancer", "clusterIP": "None", "ports": [{"port": 80, "targetPort": "http"}, {"port": 1e3}]}}`))
	f.Add(uint8(5), uint64(0), uint8(0), []byte(`{"data": {"a": {"b": 1}}, "binaryData": {"x": "not base64!"}}`))
	f.Add(uint8(6), uint64(0), uint8(0), []byte(`{"spec": {"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"averageValue": "1.5Gi"}}}], "behavior": {}}}`))
}

// FuzzDecodeRequest decodes random bodies of a few built-in kinds: no
// panic, the same result as kube-apiserver's decoder alone
// (decodeRequestReference), a refusal is kube-apiserver's 400, and an
// accepted object decodes to itself again without warnings.
func FuzzDecodeRequest(f *testing.F) {
	addFuzzSeeds(f)
	s := New()
	ks, err := s.kube()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, k uint8, seed uint64, n uint8, body []byte) {
		in, gvk := fuzzObject(t, k, seed, n, body)
		if in == nil {
			return
		}
		checkDecodeRequestFast(t, s, ks, in, gvk)
		before := valuetest.DeepCopy(in)
		out, _, err := s.DecodeRequest(in, gvk)
		if !reflect.DeepEqual(in, before) {
			t.Fatalf("DecodeRequest modified its input")
		}
		if err != nil {
			prefix := fmt.Sprintf("%s in version %q cannot be handled as a %s: ", gvk.Kind, gvk.Version, gvk.Kind)
			if !apierrors.IsBadRequest(err) || !strings.HasPrefix(err.Error(), prefix) {
				t.Fatalf("not kube-apiserver's 400: %v", err)
			}
			return
		}
		again, warnings, err := s.DecodeRequest(out, gvk)
		if err != nil || warnings != nil {
			t.Fatalf("decoding %s again: %v %q", mustJSON(out), err, warnings)
		}
		if !reflect.DeepEqual(again, out) {
			t.Fatalf("decoding again changed\n%s\ninto\n%s", mustJSON(out), mustJSON(again))
		}
	})
}

// FuzzDefault defaults random bodies of a few built-in kinds: no panic,
// the input untouched, the result kube-apiserver's defaulters' on the
// typed object, and a defaulted object returned as it is.
func FuzzDefault(f *testing.F) {
	addFuzzSeeds(f)
	s := New()
	ks, err := Kube()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, k uint8, seed uint64, n uint8, body []byte) {
		in, gvk := fuzzObject(t, k, seed, n, body)
		if in == nil {
			return
		}
		before := valuetest.DeepCopy(in)
		got, err := s.Default(in, gvk)
		if !reflect.DeepEqual(in, before) {
			t.Fatalf("Default modified its input")
		}
		typed, _ := ks.New(gvk)
		if oerr := runtime.DefaultUnstructuredConverter.FromUnstructured(in, typed); oerr != nil {
			if err == nil {
				t.Fatalf("defaulted %s, which does not convert: %v", mustJSON(in), oerr)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		ks.Default(typed)
		want := toUnstructured(t, typed, gvk)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Default\n got %s\nwant %s", mustJSON(got), mustJSON(want))
		}
		if again := upstreamDefault(t, want, gvk); reflect.DeepEqual(again, want) {
			copied := runtime.DeepCopyJSON(want)
			if out, err := s.Default(copied, gvk); err != nil || !jsonvalue.SameMap(out, copied) {
				t.Fatalf("a defaulted object was not returned as it is: %v", err)
			}
		}
	})
}
