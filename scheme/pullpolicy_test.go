package scheme

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/randfill"
)

// pullImages are image references of every shape: no tag, "latest" and
// other tags, digests with and without a tag, registries with ports,
// invalid references (upper case, spaces, empty, a lone tag).
var pullImages = []string{
	"nginx", "nginx:latest", "nginx:1.25", "busybox:Latest", "nginx:LATEST",
	"nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	"nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	"registry.local:5000/team/app", "registry.local:5000/team/app:latest", "registry.local:5000",
	"docker.io/library/busybox:latest", "a/b/c:latest", "latest", "Nginx:latest", "nginx :latest",
	"", ":latest", "nginx:", "localhost/latest", "x/latest:1",
}

// pullKinds are the kinds podSpecOf knows, each with the path of its pod
// spec.
var pullKinds = []struct {
	gvk  schema.GroupVersionKind
	path []string
}{
	{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, []string{"spec"}},
	{schema.GroupVersionKind{Version: "v1", Kind: "PodTemplate"}, []string{"template", "spec"}},
	{schema.GroupVersionKind{Version: "v1", Kind: "ReplicationController"}, []string{"spec", "template", "spec"}},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, []string{"spec", "template", "spec"}},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, []string{"spec", "template", "spec"}},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, []string{"spec", "template", "spec"}},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}, []string{"spec", "template", "spec"}},
	{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, []string{"spec", "template", "spec"}},
	{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}, []string{"spec", "jobTemplate", "spec", "template", "spec"}},
}

// TestPullPolicyPrefillIsTheDefaulter holds pullPolicies.prefill to its
// premise: on the typed objects of every kind podSpecOf knows, filled at
// random (containers, init and ephemeral containers with images of every
// shape, with and without a pull policy), the defaulters after prefill
// make the very object they make alone; and every kind podSpecOf knows
// is one whose typed object the scheme builds.
func TestPullPolicyPrefillIsTheDefaulter(t *testing.T) {
	s := New()
	k, err := s.kube()
	if err != nil {
		t.Fatal(err)
	}
	prefilled := 0
	for _, pk := range pullKinds {
		for seed := range 60 {
			f := randfill.NewWithSeed(int64(seed)).NilChance(0.3).NumElements(0, 3).MaxDepth(10).Funcs(fillFuncs...).Funcs(
				func(c *corev1.Container, fc randfill.Continue) {
					fc.FillNoCustom(c)
					c.Image = pullImages[fc.Intn(len(pullImages))]
					if fc.Intn(2) == 0 {
						c.ImagePullPolicy = ""
					}
				},
				func(c *corev1.EphemeralContainerCommon, fc randfill.Continue) {
					fc.FillNoCustom(c)
					c.Image = pullImages[fc.Intn(len(pullImages))]
					if fc.Intn(2) == 0 {
						c.ImagePullPolicy = ""
					}
				})
			obj, err := k.scheme.New(pk.gvk)
			if err != nil {
				t.Fatal(err)
			}
			f.Fill(obj)
			if podSpecOf(obj) == nil {
				if pk.gvk.Kind != "ReplicationController" {
					t.Fatalf("%s: podSpecOf does not know the kind", pk.gvk.Kind)
				}
				continue
			}
			want := obj.DeepCopyObject()
			k.scheme.Default(want)
			got := obj.DeepCopyObject()
			var pp pullPolicies
			pp.prefill(got)
			if !reflect.DeepEqual(got, obj) {
				prefilled++
			}
			k.scheme.Default(got)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s seed %d: the defaulters after prefill differ from the defaulters alone", pk.gvk.Kind, seed)
			}
		}
	}
	if prefilled == 0 {
		t.Fatal("prefill wrote nothing")
	}
	t.Logf("%d objects prefilled", prefilled)
}

// TestPullPolicyOnEveryShape defaults workloads as written, containers of
// every image shape without a pull policy, both ways (Default and
// DefaultNormalized against defaultReference: checkDefaultFast), and
// checks that the memo answers what the probe does, twice.
func TestPullPolicyOnEveryShape(t *testing.T) {
	s := New()
	for _, pk := range pullKinds {
		var containers, inits, ephemerals []any
		for i, image := range pullImages {
			containers = append(containers, map[string]any{"name": fmt.Sprintf("c%d", i), "image": image})
			inits = append(inits, map[string]any{"name": fmt.Sprintf("i%d", i), "image": image, "imagePullPolicy": "Never"})
			ephemerals = append(ephemerals, map[string]any{"name": fmt.Sprintf("e%d", i), "image": image})
		}
		spec := map[string]any{"containers": containers, "initContainers": inits}
		if pk.gvk.Kind == "Pod" {
			spec["ephemeralContainers"] = ephemerals
		}
		var v any = spec
		for i := len(pk.path) - 1; i >= 0; i-- {
			v = map[string]any{pk.path[i]: v}
		}
		obj := v.(map[string]any)
		obj["apiVersion"], obj["kind"] = pk.gvk.GroupVersion().String(), pk.gvk.Kind
		obj["metadata"] = map[string]any{"name": "x", "namespace": "ns"}
		for range 2 { // the second time from the memo
			if !checkDefaultFast(t, s, obj, pk.gvk) {
				t.Fatalf("%s: not through the fast path", pk.gvk.Kind)
			}
		}
	}
	var pp pullPolicies
	for range 2 {
		for _, image := range pullImages {
			if got, want := pp.of(image), probePullPolicy(image); got != want {
				t.Fatalf("%q: %q, want %q", image, got, want)
			}
		}
	}
}

// TestPodSpecOfKnowsItsKinds checks podSpecOf's answer on a kind it does
// not list (nil) and on a nil template.
func TestPodSpecOfKnowsItsKinds(t *testing.T) {
	for _, o := range []runtime.Object{&corev1.ConfigMap{}, &corev1.ReplicationController{}, &corev1.Service{}} {
		if podSpecOf(o) != nil {
			t.Fatalf("%T: a pod spec", o)
		}
	}
}

// TestPullPoliciesConcurrently: the memo answers the probe's policy from
// many goroutines at once (run with -race), and stops growing at maxMemo.
func TestPullPoliciesConcurrently(t *testing.T) {
	var pp pullPolicies
	done := make(chan error)
	for g := range 4 {
		go func() {
			for i := range maxMemo/2 + 10 {
				image := fmt.Sprintf("img-%d:%d", g%2, i)
				if got, want := pp.of(image), probePullPolicy(image); got != want {
					done <- fmt.Errorf("%q: %q, want %q", image, got, want)
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if pp.n > maxMemo {
		t.Fatalf("%d images remembered, more than %d", pp.n, maxMemo)
	}
}
