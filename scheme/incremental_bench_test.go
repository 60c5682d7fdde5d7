package scheme

import (
	"os"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/internal/valuetest"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// BenchmarkDefaultFrom is DefaultFrom after the kinds of mutation
// test/load's policies make to its Pod (testdata/pod.yaml there, as
// kube-apiserver sends it, defaulted): a label (inert), an env var and
// resource limits of a container, a sidecar container (elements alone),
// terminationGracePeriodSeconds (a context field), a volume of a name and
// an empty emptyDir (an element alone, new). Each case's result is
// first held to Default of the whole object.
func BenchmarkDefaultFrom(b *testing.B) {
	s := New()
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	raw, err := os.ReadFile("../test/load/testdata/pod.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var pod map[string]any
	if err := yaml.Unmarshal(raw, &pod); err != nil {
		b.Fatal(err)
	}
	norm, err := s.Normalize(pod, gvk)
	if err != nil {
		b.Fatal(err)
	}
	base, err := s.Default(norm, gvk)
	if err != nil {
		b.Fatal(err)
	}
	spec := base["spec"].(map[string]any)
	// container is base with container i of spec.containers replaced by
	// its copy changed by f (or appended when i is past the end).
	container := func(i int, f func(c map[string]any)) map[string]any {
		list := append([]any(nil), spec["containers"].([]any)...)
		c := map[string]any{}
		if i < len(list) {
			c = cloneMap(list[i].(map[string]any))
		} else {
			list = append(list, c)
		}
		f(c)
		list[i] = c
		out, _ := withPath(base, "spec.containers", list, true)
		return out
	}
	labels := cloneMap(base["metadata"].(map[string]any)["labels"].(map[string]any))
	labels["touched"] = "yes"
	label, _ := withPath(base, "metadata.labels", labels, true)
	grace, _ := withPath(base, "spec.terminationGracePeriodSeconds", int64(45), true)
	volumes, _ := spec["volumes"].([]any)
	volumes = append(append([]any(nil), volumes...), map[string]any{"name": "app-logs", "emptyDir": map[string]any{}})
	volume, _ := withPath(base, "spec.volumes", volumes, true)
	// op is the JSON patch's operation that makes a case's object, which
	// DefaultPatched is told.
	op := func(kind, path string) []jsonpatch.Operation {
		return []jsonpatch.Operation{{Op: kind, Path: path, HasValue: true}}
	}
	cases := []struct {
		name string
		obj  map[string]any
		ops  []jsonpatch.Operation
	}{
		{"label", label, op("add", "/metadata/labels/touched")},
		{"env", container(0, func(c map[string]any) {
			c["env"] = append(append([]any(nil), c["env"].([]any)...), map[string]any{"name": "REGION", "value": "eu-west-1"})
		}), op("add", "/spec/containers/0/env/-")},
		{"limits", container(0, func(c map[string]any) {
			r := cloneMap(c["resources"].(map[string]any))
			r["limits"] = map[string]any{"cpu": "500m", "memory": "512Mi"}
			c["resources"] = r
		}), op("add", "/spec/containers/0/resources/limits")},
		{"sidecar", container(2, func(c map[string]any) {
			c["name"], c["image"] = "log-shipper", "docker.io/fluent/fluent-bit:3.1"
		}), op("add", "/spec/containers/-")},
		{"grace", grace, op("replace", "/spec/terminationGracePeriodSeconds")},
		{"volume", volume, op("add", "/spec/volumes/-")},
	}
	// run benchmarks f, checked first to give want.
	run := func(name string, want map[string]any, f func() (map[string]any, error)) {
		if got, err := f(); err != nil || !valuetest.BitsEqual(got, want) {
			b.Fatalf("%s: differs from Default (error %v)", name, err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start := processCPU(b)
			for b.Loop() {
				if _, err := f(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
	for _, c := range cases {
		want, err := s.Default(valuetest.DeepCopy(c.obj).(map[string]any), gvk)
		if err != nil {
			b.Fatal(err)
		}
		run("mutation="+c.name, want, func() (map[string]any, error) { return s.DefaultFrom(c.obj, base, gvk) })
		// DefaultPatched, told the operation's path instead of diffing.
		run("mutation="+c.name+"-told", want, func() (map[string]any, error) { return s.DefaultPatched(c.obj, base, c.ops, gvk) })
	}
}

// processCPU is the CPU time (user and system) of the process so far, in
// nanoseconds: on a shared machine it varies much less with the load than
// the wall time.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
