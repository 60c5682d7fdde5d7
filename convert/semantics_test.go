package convert

import (
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/compiler"
)

// TestExampleSemantics holds the converted example (examples/convert) to
// what the engines do (their recorded answers on the example's Pods are
// TestOracle's): Kyverno's +(…) anchors add only what is missing, its
// strategic merge finds the sidecar by name and puts the patch's elements
// first, autogen reaches a Deployment's template; AssignMetadata never
// overwrites.
func TestExampleSemantics(t *testing.T) {
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	r := convertFiles(t, filepath.Join("..", "examples", "convert", "source", "kyverno-sidecar.yaml"), filepath.Join("..", "examples", "convert", "source", "gatekeeper-owner.yaml"))
	if len(r.Refused) > 0 {
		t.Fatal(r.Refused)
	}
	lintClean(t, comp, r)
	c := newTestCluster(t)
	ev := evaluator(t, c, comp, r)
	get := func(o map[string]any, path ...any) any {
		var cur any = o
		for _, p := range path {
			switch k := p.(type) {
			case string:
				m, _ := cur.(map[string]any)
				cur = m[k]
			case int:
				l, _ := cur.([]any)
				if k >= len(l) {
					return nil
				}
				cur = l[k]
			}
		}
		return cur
	}
	obj := func(s string) *unstructured.Unstructured {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: m}
	}
	tests := []struct {
		name   string
		object string
		check  func(t *testing.T, got map[string]any)
	}{
		{name: "a pod gets the sidecar, its volume, the annotation and the owner label", object: `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec: {containers: [{name: app, image: nginx:1.27}]}`, check: func(t *testing.T, got map[string]any) {
			if n := get(got, "spec", "containers", 0, "name"); n != "log-shipper" {
				t.Errorf("containers[0].name = %v", n)
			}
			if n := get(got, "spec", "containers", 1, "name"); n != "app" {
				t.Errorf("containers[1].name = %v", n)
			}
			if v := get(got, "spec", "volumes", 0, "name"); v != "varlog" {
				t.Errorf("volumes = %v", get(got, "spec", "volumes"))
			}
			if s := get(got, "spec", "shareProcessNamespace"); s != true {
				t.Errorf("shareProcessNamespace = %v", s)
			}
			if a := get(got, "metadata", "annotations", "logging.example.com/sidecar"); a != "injected" {
				t.Errorf("annotation = %v", a)
			}
			if l := get(got, "metadata", "labels", "owner"); l != "shop-team" {
				t.Errorf("owner = %v", l)
			}
		}},
		{name: "a pod with the sidecar keeps its pull policy and shareProcessNamespace (+) but takes the image, and keeps its owner", object: `
apiVersion: v1
kind: Pod
metadata: {name: has-sidecar, namespace: shop, labels: {owner: platform}}
spec: {shareProcessNamespace: false, containers: [{name: app, image: nginx:1.27}, {name: log-shipper, image: "registry.example.com/log-shipper:1.3", imagePullPolicy: Always}]}`, check: func(t *testing.T, got map[string]any) {
			if n := len(get(got, "spec", "containers").([]any)); n != 2 {
				t.Errorf("%d containers", n)
			}
			if p := get(got, "spec", "containers", 0, "imagePullPolicy"); p != "Always" {
				t.Errorf("imagePullPolicy = %v", p)
			}
			if i := get(got, "spec", "containers", 0, "image"); i != "registry.example.com/log-shipper:1.4" {
				t.Errorf("image = %v", i)
			}
			if s := get(got, "spec", "shareProcessNamespace"); s != false {
				t.Errorf("shareProcessNamespace = %v", s)
			}
			if l := get(got, "metadata", "labels", "owner"); l != "platform" {
				t.Errorf("owner = %v", l)
			}
		}},
		{name: "a deployment's template gets the sidecar (autogen)", object: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: nginx:1.27}]}`, check: func(t *testing.T, got map[string]any) {
			if n := get(got, "spec", "template", "spec", "containers", 0, "name"); n != "log-shipper" {
				t.Errorf("template containers[0].name = %v", n)
			}
		}},
		{name: "another namespace is left alone", object: `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: other}
spec: {containers: [{name: app, image: nginx:1.27}]}`, check: func(t *testing.T, got map[string]any) {
			if n := len(get(got, "spec", "containers").([]any)); n != 1 {
				t.Errorf("%d containers", n)
			}
			if l := get(got, "metadata", "labels", "owner"); l != nil {
				t.Errorf("owner = %v", l)
			}
		}},
		{name: "a configmap gets the owner label", object: `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}`, check: func(t *testing.T, got map[string]any) {
			if l := get(got, "metadata", "labels", "owner"); l != "shop-team" {
				t.Errorf("owner = %v", l)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, denied := admit(t, c, ev, obj(tc.object), false)
			if denied != "" {
				t.Fatalf("denied: %s", denied)
			}
			tc.check(t, got)
		})
	}
}

// TestUndeclared: the fields a location names are checked against the
// built-in kind's type (a note where kube-apiserver would fail the MAP's
// strictly decoded object).
func TestUndeclared(t *testing.T) {
	tests := []struct {
		group, version, kind, loc, want string
	}{
		{"", "v1", "Service", "spec.foo", "spec.foo"},
		{"", "v1", "Service", "spec.externalIPs", ""},
		{"", "v1", "Pod", "spec.containers[name:*].securityContext.runAsUser", ""},
		{"", "v1", "Pod", "metadata.labels.owner", ""},
		{"apps", "v1", "Deployment", "spec.nodeSelector", "spec.nodeSelector"},
		{"apps", "v1", "Deployment", "spec.template.spec.nodeSelector.zone", ""},
		{"example.com", "v1", "Widget", "spec.anything", ""},
	}
	for _, tc := range tests {
		segs, err := parseLocation(tc.loc)
		if err != nil {
			t.Fatalf("%s: %v", tc.loc, err)
		}
		if got := undeclared(tc.group, tc.version, tc.kind, segs); got != tc.want {
			t.Errorf("%s %s: undeclared = %q, want %q", tc.kind, tc.loc, got, tc.want)
		}
	}
}

// TestJSONPointerSegs: Kyverno's JSON pointers, negative indexes counted
// from the end.
func TestJSONPointerSegs(t *testing.T) {
	tests := []struct {
		ptr  string
		want []seg
	}{
		{"/spec/a~1b/0", []seg{{field: "spec"}, {field: "a/b"}, {list: true, index: 0}}},
		{"/spec/terms/-1/exprs/-", []seg{{field: "spec"}, {field: "terms"}, {list: true, fromEnd: 1}, {field: "exprs"}, {list: true, index: -1}}},
		{"/spec/-2", []seg{{field: "spec"}, {list: true, fromEnd: 2}}},
	}
	for _, tc := range tests {
		got, err := jsonPointerSegs(tc.ptr, vars{})
		if err != nil {
			t.Fatalf("%s: %v", tc.ptr, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.ptr, got, tc.want)
		}
	}
}
