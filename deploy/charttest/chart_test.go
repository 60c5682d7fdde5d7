package charttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const (
	chartDir  = "../chart"
	namespace = "mutatis-system"
)

// helmLabels are the labels the chart adds to the Kustomize manifests'
// app.kubernetes.io/name, Helm's conventions.
var helmLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart"}

// renderChart renders the chart with values over its defaults, as
// `helm template mutatis deploy/chart -n mutatis-system` would.
func renderChart(t *testing.T, values string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
		t.Fatalf("values: %v", err)
	}
	top, err := chartutil.ToRenderValues(ch, vals, common.ReleaseOptions{Name: "mutatis", Namespace: namespace, IsInstall: true}, nil)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return nil, err
	}
	if notes := files["mutatis/templates/NOTES.txt"]; !strings.Contains(notes, "rollout status deployment/mutatis") {
		t.Errorf("NOTES.txt:\n%s", notes)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		if path.Ext(n) == ".yaml" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []*unstructured.Unstructured
	for _, n := range names {
		objs, err := decodeAll(files[n])
		if err != nil {
			t.Fatalf("%s: %v\n%s", n, err, files[n])
		}
		out = append(out, objs...)
	}
	return out, nil
}

// decodeAll decodes the objects of a multi-document YAML stream.
func decodeAll(s string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(s), 4096)
	for {
		var m map[string]any
		if err := d.Decode(&m); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		// Through JSON, for the numbers of unstructured objects (int64).
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(b); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
}

// renderKustomize builds a kustomization as `kubectl apply -k` would.
func renderKustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		content, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: content})
	}
	return out
}

func key(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// byKey indexes objects by kind, namespace and name, the chart's without
// Helm's labels.
func byKey(t *testing.T, objs []*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		// A JSON round trip: a copy with JSON's numbers, whatever the
		// decoder gave.
		b, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		o = &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		for _, fields := range [][]string{{"metadata", "labels"}, {"spec", "template", "metadata", "labels"}} {
			labels, ok, _ := unstructured.NestedStringMap(o.Object, fields...)
			if !ok {
				continue
			}
			for _, l := range helmLabels {
				delete(labels, l)
			}
			if err := unstructured.SetNestedStringMap(o.Object, labels, fields...); err != nil {
				t.Fatal(err)
			}
		}
		norm := o.Object
		if _, dup := out[key(o)]; dup {
			t.Errorf("%s rendered twice", key(o))
		}
		out[key(o)] = norm
	}
	return out
}

func keys(m map[string]map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sameObjects requires the chart's objects to be the kustomization's.
func sameObjects(t *testing.T, chart, kustomize []*unstructured.Unstructured) {
	t.Helper()
	c, k := byKey(t, chart), byKey(t, kustomize)
	if !slices.Equal(keys(c), keys(k)) {
		t.Fatalf("objects differ:\nchart:     %v\nkustomize: %v", keys(c), keys(k))
	}
	for _, n := range keys(c) {
		if !reflect.DeepEqual(c[n], k[n]) {
			cy, _ := yaml.Marshal(c[n])
			ky, _ := yaml.Marshal(k[n])
			t.Errorf("%s differs:\n--- chart\n%s\n--- kustomize\n%s", n, cy, ky)
		}
	}
}

func TestChartIsTheKustomization(t *testing.T) {
	cases := []struct {
		overlay string
		values  string
	}{
		{"../self-signed", "namespace: {create: true}"},
		{"../cert-manager", "namespace: {create: true}\ncertificates: {mode: cert-manager}"},
	}
	for _, tc := range cases {
		t.Run("the defaults with "+tc.values+" render the objects of deploy/"+path.Base(tc.overlay), func(t *testing.T) {
			chart, err := renderChart(t, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			sameObjects(t, chart, renderKustomize(t, tc.overlay))
		})
	}
}

// find returns the object of kind and name, or nil.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func args(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	d := find(objs, "Deployment", "mutatis")
	if d == nil {
		t.Fatal("no Deployment")
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	var out []string
	for _, a := range cs[0].(map[string]any)["args"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

func TestChartValues(t *testing.T) {
	const static = `
mode: static
certificates: {mode: cert-manager}
static:
  policies:
    add-team.yaml: |
      apiVersion: admissionregistration.k8s.io/v1
      kind: MutatingAdmissionPolicy
      metadata: {name: add-team}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
`
	cases := []struct {
		name    string
		values  string
		check   func(t *testing.T, objs []*unstructured.Unstructured)
		wantErr string
	}{
		{
			name:   "native mode reads admissionregistration.k8s.io, installs no CRDs and acknowledges the disabled plugin",
			values: "mode: native\nnative: {pluginDisabled: true}",
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if find(objs, "CustomResourceDefinition", "mutatingadmissionpolicies.mutatis.dev") != nil {
					t.Error("native mode installs the shadow CRDs")
				}
				a := args(t, objs)
				if !slices.Contains(a, "--source=native") || !slices.Contains(a, "--native-plugin-disabled") {
					t.Errorf("args %v", a)
				}
				rules, _, _ := unstructured.NestedSlice(find(objs, "ClusterRole", "mutatis").Object, "rules")
				first := rules[0].(map[string]any)
				if !reflect.DeepEqual(first["apiGroups"], []any{"admissionregistration.k8s.io"}) || !reflect.DeepEqual(first["verbs"], []any{"list", "watch"}) {
					t.Errorf("the first rule is %v, want list and watch of admissionregistration.k8s.io", first)
				}
				for _, r := range rules {
					if slices.Contains(r.(map[string]any)["apiGroups"].([]any), any("mutatis.dev")) {
						t.Errorf("native mode keeps a mutatis.dev rule: %v", r)
					}
				}
			},
		},
		{
			name:    "native mode without the acknowledgement is refused, saying why",
			values:  "mode: native",
			wantErr: "set native.pluginDisabled=true only when kube-apiserver runs with --disable-admission-plugins=MutatingAdmissionPolicy",
		},
		{
			name:   "static mode mounts the policies, routes static.rules to /mutate and runs no controller",
			values: static,
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				a := args(t, objs)
				if !slices.Contains(a, "--policies=/etc/mutatis/policies/add-team.yaml") || slices.ContainsFunc(a, func(s string) bool {
					return strings.HasPrefix(s, "--source") || strings.HasPrefix(s, "--webhook-service") || strings.HasPrefix(s, "--self-signed")
				}) {
					t.Errorf("args %v", a)
				}
				cm := find(objs, "ConfigMap", "mutatis-policies")
				if cm == nil || !strings.Contains(cm.Object["data"].(map[string]any)["add-team.yaml"].(string), "name: add-team") {
					t.Fatalf("no ConfigMap with the policies: %v", cm)
				}
				wh := find(objs, "MutatingWebhookConfiguration", "mutatis-static")
				if wh == nil {
					t.Fatal("no webhook configuration")
				}
				if wh.GetAnnotations()["cert-manager.io/inject-ca-from"] != namespace+"/mutatis-serving" {
					t.Errorf("annotations %v", wh.GetAnnotations())
				}
				for _, k := range []string{"ClusterRole/mutatis", "CustomResourceDefinition/mutatingadmissionpolicies.mutatis.dev", "Role/mutatis-leader-election", "Secret/mutatis-tls"} {
					if slices.Contains(kinds(objs), k) {
						t.Errorf("static mode renders %s", k)
					}
				}
			},
		},
		{
			name:    "static mode with self-signed certificates is refused",
			values:  "mode: static\nstatic: {policies: {a.yaml: x}, rules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}",
			wantErr: "mode static: certificates.mode must be cert-manager",
		},
		{
			name:    "static mode without rules is refused",
			values:  "mode: static\ncertificates: {mode: cert-manager}\nstatic: {policies: {a.yaml: x}}",
			wantErr: "static.rules is empty",
		},
		{
			name:   "replicas, resources, leader election, the PDB and the image tag follow the values",
			values: "replicas: 3\nresources: {limits: {memory: 1Gi}}\nleaderElection: {enabled: false}\npodDisruptionBudget: {enabled: false}\nimage: {tag: v9.9.9}",
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				d := find(objs, "Deployment", "mutatis")
				if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 3 {
					t.Errorf("replicas %d", r)
				}
				c := d.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
				if c["image"] != "ghcr.io/mutatis-dev/mutatis:v9.9.9" {
					t.Errorf("image %v", c["image"])
				}
				// Helm merges maps of values with the defaults.
				if !reflect.DeepEqual(c["resources"], map[string]any{"limits": map[string]any{"memory": "1Gi"},
					"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}}) {
					t.Errorf("resources %v", c["resources"])
				}
				if !slices.Contains(args(t, objs), "--leader-elect=false") {
					t.Errorf("args %v", args(t, objs))
				}
				for _, k := range []string{"Role/mutatis-leader-election", "PodDisruptionBudget/mutatis"} {
					if slices.Contains(kinds(objs), k) {
						t.Errorf("renders %s", k)
					}
				}
			},
		},
		{
			name:   "the ServiceMonitor scrapes /metrics over HTTPS with the serving CA",
			values: "metrics: {serviceMonitor: {enabled: true, labels: {release: prom}}}",
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				sm := find(objs, "ServiceMonitor", "mutatis")
				if sm == nil {
					t.Fatalf("no ServiceMonitor in %v", kinds(objs))
				}
				eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
				ep := eps[0].(map[string]any)
				if ep["path"] != "/metrics" || ep["scheme"] != "https" || ep["port"] != "https" {
					t.Errorf("endpoint %v", ep)
				}
				if sm.GetLabels()["release"] != "prom" {
					t.Errorf("labels %v", sm.GetLabels())
				}
			},
		},
		{
			name:   "the defaults ship no NetworkPolicy, no client CA and a params role over every kind",
			values: "",
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if np := find(objs, "NetworkPolicy", "mutatis"); np != nil {
					t.Errorf("a NetworkPolicy by default: %v", np)
				}
				if slices.ContainsFunc(args(t, objs), func(a string) bool { return strings.HasPrefix(a, "--client-ca-file") }) {
					t.Errorf("args %v", args(t, objs))
				}
				rules, _, _ := unstructured.NestedSlice(find(objs, "ClusterRole", "mutatis-params").Object, "rules")
				if len(rules) != 1 || !reflect.DeepEqual(rules[0].(map[string]any)["resources"], []any{"*"}) {
					t.Errorf("mutatis-params rules %v", rules)
				}
			},
		},
		{
			name:   "networkPolicy admits only the API server's CIDRs and extraFrom to the webhook's port",
			values: "networkPolicy: {enabled: true, apiServerCIDRs: [10.0.0.0/28, 172.16.0.2/32], extraFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]}",
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				np := find(objs, "NetworkPolicy", "mutatis")
				if np == nil {
					t.Fatalf("no NetworkPolicy in %v", kinds(objs))
				}
				if np.GetNamespace() != namespace {
					t.Errorf("namespace %q", np.GetNamespace())
				}
				sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
				types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes")
				ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
				if sel["app.kubernetes.io/name"] != "mutatis" || !reflect.DeepEqual(types, []string{"Ingress"}) || len(ingress) != 1 {
					t.Fatalf("spec %v", np.Object["spec"])
				}
				rule := ingress[0].(map[string]any)
				want := []any{
					map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/28"}},
					map[string]any{"ipBlock": map[string]any{"cidr": "172.16.0.2/32"}},
					map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}},
				}
				if !reflect.DeepEqual(rule["from"], want) {
					t.Errorf("from %v, want %v", rule["from"], want)
				}
				if !reflect.DeepEqual(rule["ports"], []any{map[string]any{"port": int64(8443), "protocol": "TCP"}}) {
					t.Errorf("ports %v", rule["ports"])
				}
			},
		},
		{
			name:    "networkPolicy without the API server's CIDRs is refused, saying why",
			values:  "networkPolicy: {enabled: true}",
			wantErr: "set networkPolicy.apiServerCIDRs to the addresses kube-apiserver calls webhooks from",
		},
		{name: "a CIDR that is not one is refused by the schema", values: "networkPolicy: {enabled: true, apiServerCIDRs: [apiserver]}", wantErr: "apiServerCIDRs"},
		{
			name:   "clientCA mounts the ConfigMap and requires client certificates",
			values: "clientCA: {configMap: apiserver-webhook-ca}",
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if a := args(t, objs); !slices.Contains(a, "--client-ca-file=/etc/mutatis/client-ca/ca.crt") {
					t.Errorf("args %v", a)
				}
				vols, _, _ := unstructured.NestedSlice(find(objs, "Deployment", "mutatis").Object, "spec", "template", "spec", "volumes")
				if !slices.ContainsFunc(vols, func(v any) bool {
					return reflect.DeepEqual(v, map[string]any{"name": "client-ca", "configMap": map[string]any{"name": "apiserver-webhook-ca"}})
				}) {
					t.Errorf("volumes %v", vols)
				}
			},
		},
		{
			name:   "params.kinds narrows mutatis-params to the paramKinds named",
			values: `params: {kinds: [{apiGroup: "", resources: [configmaps]}, {apiGroup: example.com, resources: [settings]}]}`,
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				rules, _, _ := unstructured.NestedSlice(find(objs, "ClusterRole", "mutatis-params").Object, "rules")
				want := []any{
					map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get", "list", "watch"}},
					map[string]any{"apiGroups": []any{"example.com"}, "resources": []any{"settings"}, "verbs": []any{"get", "list", "watch"}},
				}
				if !reflect.DeepEqual(rules, want) {
					t.Errorf("rules %v, want %v", rules, want)
				}
			},
		},
		{name: "an unknown mode is refused by the schema", values: "mode: shadowy", wantErr: "mode"},
		{name: "zero replicas are refused by the schema", values: "replicas: 0", wantErr: "replicas"},
		{name: "an unknown value is refused by the schema", values: "replica: 2", wantErr: "replica"},
		{name: "a memory limit is required by the schema", values: "resources: {limits: {memory: null}}", wantErr: "memory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := renderChart(t, tc.values)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, objs)
			strictlyValid(t, objs)
		})
	}
}

// strictlyValid decodes every built-in object strictly (unknown or
// misplaced fields are errors).
func strictlyValid(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
	for _, o := range objs {
		if !s.Recognizes(o.GroupVersionKind()) {
			continue
		}
		b, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := dec.Decode(b, nil, nil); err != nil {
			t.Errorf("%s: %v", key(o), err)
		}
	}
}

// The chart's copies of the shadow CRDs are deploy/base/crds' (go generate
// ./deploy writes both).
func TestChartCRDsAreTheGeneratedOnes(t *testing.T) {
	for _, n := range []string{"mutatis.dev_mutatingadmissionpolicies.yaml", "mutatis.dev_mutatingadmissionpolicybindings.yaml"} {
		a, err := os.ReadFile("../base/crds/" + n)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(chartDir + "/files/crds/" + n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from deploy/base/crds: run go generate ./deploy", n)
		}
	}
}

// The chart's appVersion is the tag `make image` builds (Makefile VERSION).
func TestChartAppVersionIsTheRelease(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VERSION \?= (v\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no VERSION in the Makefile")
	}
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.AppVersion != string(m[1]) || "v"+ch.Metadata.Version != string(m[1]) {
		t.Errorf("Chart.yaml version %s, appVersion %s; the release (Makefile VERSION) is %s", ch.Metadata.Version, ch.Metadata.AppVersion, m[1])
	}
}
