package bench

import (
	"context"
	"strings"
	"syscall"
	"testing"

	kubescheme "github.com/mutatis-dev/mutatis/scheme"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/compiler"
	mut "github.com/mutatis-dev/mutatis/mutation"
	"github.com/mutatis-dev/mutatis/test/upstream"
)

// BenchmarkMutation measures one compiled mutation on the small Deployment:
// upstream's patcher (NewApplyConfigurationPatcher / NewJSONPatcher, with
// the dispatcher's dispatchOne post-processing: conversion back to the
// typed object and defaulting) against mutation.Patcher.Mutate (evaluation,
// merge or patch, normalization through the Go type). Both compile once,
// outside the loop.
func BenchmarkMutation(b *testing.B) {
	for _, f := range mutationFixtures() {
		benchmarkMutation(b, f.suffix, f.dep)
	}
}

// mutationFixture is the Deployment a mutation case runs on.
type mutationFixture struct {
	// suffix is appended to the case name.
	suffix string
	dep    *appsv1.Deployment
}

// mutationFixtures are the small Deployment as written (the case names of
// the tables in docs/performance.md) and the same Deployment defaulted, as
// kube-apiserver decodes a request body before admission: what a mutation
// meets in a cluster (case names ending in -defaulted). On the defaulted
// one the defaulting after the mutation is a fixed point.
func mutationFixtures() []mutationFixture {
	defaulted := deployment()
	kubeScheme().Default(defaulted)
	return []mutationFixture{{"", deployment()}, {"-defaulted", defaulted}}
}

func benchmarkMutation(b *testing.B, suffix string, dep *appsv1.Deployment) {
	obj, err := toUnstructured(dep)
	if err != nil {
		b.Fatal(err)
	}
	schemas := applyconfig.NewSchemas()
	upstreamTC := applyconfigurations.NewTypeConverter(scheme.Scheme)
	pt := &mut.Patcher{Schemas: schemas, Scheme: kubescheme.New()}
	comp, err := compiler.New()
	if err != nil {
		b.Fatal(err)
	}
	o := admission.NewObjectInterfacesFromScheme(kubeScheme())
	dryRun := false
	req := &admissionv1.AdmissionRequest{
		Kind: metav1.GroupVersionKind(deploymentGVK), Resource: metav1.GroupVersionResource(deploymentGVR),
		RequestKind: (*metav1.GroupVersionKind)(&deploymentGVK), RequestResource: (*metav1.GroupVersionResource)(&deploymentGVR),
		Name: "web", Namespace: "shop", Operation: admissionv1.Create, DryRun: &dryRun,
	}
	for _, mc := range mutationCases {
		p, _ := policy("bench", "apps", "deployments", mc.m)
		ev := upstream.Compile(p)
		if ev.Error != nil || len(ev.Mutators) != 1 {
			b.Fatalf("%s: upstream compile: %v", mc.name, ev.Error)
		}
		compiled, err := comp.Compile(p)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("impl=upstream/case="+mc.name+suffix, func(b *testing.B) {
			ctx := context.Background()
			attrs := admission.NewAttributesRecord(dep, nil, deploymentGVK, "shop", "web", deploymentGVR, "", admission.Create, &metav1.CreateOptions{}, false, benchUser)
			vAttrs := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: deploymentGVK,
				VersionedObject: admission.NewLazyObject(dep), VersionedOldObject: admission.NewLazyObject(nil)}
			b.ReportAllocs()
			cpu := cpuTime(b)
			for b.Loop() {
				out, err := ev.Mutators[0].Patch(ev.CompositedCompiler.CreateContext(ctx), patch.Request{
					MatchedResource: deploymentGVR, VersionedAttributes: vAttrs, ObjectInterfaces: o,
					OptionalVariables: plugincel.OptionalVariableBindings{}, TypeConverter: upstreamTC,
				}, celconfig.RuntimeCELCostBudget)
				if err != nil {
					b.Fatal(err)
				}
				if out, err = o.GetObjectConvertor().ConvertToVersion(out, deploymentGVK.GroupVersion()); err != nil {
					b.Fatal(err)
				}
				o.GetObjectDefaulter().Default(out)
			}
			reportCPU(b, cpu)
		})
		b.Run("impl=mutatis/case="+mc.name+suffix, func(b *testing.B) {
			ctx := context.Background()
			in := compiler.Input{Object: obj, Request: req}
			b.ReportAllocs()
			cpu := cpuTime(b)
			for b.Loop() {
				if _, _, err := pt.Mutate(ctx, compiled, compiled.Mutations[0], in, deploymentGVK); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// cpuTime is the CPU time (user and system) the process has used so far.
// On a machine shared with other jobs, a benchmark's wall time per
// operation grows with the load; its CPU time per operation (cpu-ns/op,
// reportCPU) much less, which makes the ratio of the two implementations
// readable there.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// reportCPU reports the process's CPU time since start per operation
// (garbage collection included, whichever thread ran it).
func reportCPU(b *testing.B, start int64) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkAdmit measures whole admissions (matching, params,
// matchConditions, mutations, reinvocation) through upstream's
// mutating.NewDispatcher and through mutatis' Evaluator, policies compiled
// once. The upstream figure includes one DeepCopyObject of the request
// object per admission: its dispatcher mutates the attributes in place.
func BenchmarkAdmit(b *testing.B) {
	for _, s := range dispatchScenarios() {
		w, stop := newWorld(b, worldObjects(), s.crds...)
		hooks := w.upstreamHooks(b, s.policies, s.bindings)
		ev, attrs := w.mutatisEvaluator(b, s.policies, s.bindings, s.req)
		b.Run("impl=upstream/case="+s.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			cpu := cpuTime(b)
			for b.Loop() {
				if _, err := w.runUpstream(ctx, hooks, s.req); err != nil {
					b.Fatal(statusOf(err))
				}
			}
			reportCPU(b, cpu)
		})
		b.Run("impl=mutatis/case="+s.name, func(b *testing.B) {
			ctx := context.Background()
			var r chain.Runner
			b.ReportAllocs()
			cpu := cpuTime(b)
			for b.Loop() {
				if _, err := runMutatis(ctx, &r, ev, attrs); err != nil {
					b.Fatal(statusOf(err))
				}
			}
			reportCPU(b, cpu)
		})
		stop()
	}
}

// TestScenariosAgree guards the benchmarks: every scenario admits the same
// object through both implementations, so both sides measure the same work.
func TestScenariosAgree(t *testing.T) {
	for _, s := range dispatchScenarios() {
		t.Run(s.name, func(t *testing.T) {
			w, stop := newWorld(t, worldObjects(), s.crds...)
			defer stop()
			ctx := context.Background()
			theirs, err := w.runUpstream(ctx, w.upstreamHooks(t, s.policies, s.bindings), s.req)
			if err != nil {
				t.Fatalf("upstream: %s", statusOf(err))
			}
			ev, attrs := w.mutatisEvaluator(t, s.policies, s.bindings, s.req)
			ours, err := runMutatis(ctx, new(chain.Runner), ev, attrs)
			if err != nil {
				t.Fatalf("mutatis: %s", statusOf(err))
			}
			if err := sameObject(ours, theirs); err != nil {
				t.Fatal(err)
			}
			// Under a context that can be cancelled (the webhook's), the
			// CEL evaluations of an admission share one frame
			// (compiler.WithSharedFrame): the same object.
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			shared, err := runMutatis(cctx, new(chain.Runner), ev, attrs)
			if err != nil {
				t.Fatalf("mutatis, cancellable context: %s", statusOf(err))
			}
			if err := sameObject(shared, theirs); err != nil {
				t.Fatalf("cancellable context: %v", err)
			}
			before, err := toUnstructured(s.req.obj)
			if err != nil {
				t.Fatal(err)
			}
			if changed := sameObject(ours, s.req.obj) != nil; changed == s.unchanged {
				t.Fatalf("object changed = %v, want %v (before: %d keys)", changed, !s.unchanged, len(before))
			}
		})
	}
}

// TestMutationCasesAgree guards BenchmarkMutation the same way.
func TestMutationCasesAgree(t *testing.T) {
	for _, f := range mutationFixtures() {
		name := "as-written"
		if f.suffix != "" {
			name = strings.TrimPrefix(f.suffix, "-")
		}
		t.Run("fixture="+name, func(t *testing.T) {
			testMutationCasesAgree(t, f.dep)
		})
	}
}

func testMutationCasesAgree(t *testing.T, dep *appsv1.Deployment) {
	obj, err := toUnstructured(dep)
	if err != nil {
		t.Fatal(err)
	}
	schemas := applyconfig.NewSchemas()
	pt := &mut.Patcher{Schemas: schemas, Scheme: kubescheme.New()}
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	o := admission.NewObjectInterfacesFromScheme(kubeScheme())
	for _, mc := range mutationCases {
		t.Run(mc.name, func(t *testing.T) {
			p, _ := policy("bench", "apps", "deployments", mc.m)
			ev := upstream.Compile(p)
			ctx := context.Background()
			attrs := admission.NewAttributesRecord(dep, nil, deploymentGVK, "shop", "web", deploymentGVR, "", admission.Create, &metav1.CreateOptions{}, false, benchUser)
			vAttrs := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: deploymentGVK,
				VersionedObject: admission.NewLazyObject(dep), VersionedOldObject: admission.NewLazyObject(nil)}
			theirs, err := ev.Mutators[0].Patch(ev.CompositedCompiler.CreateContext(ctx), patch.Request{
				MatchedResource: deploymentGVR, VersionedAttributes: vAttrs, ObjectInterfaces: o,
				TypeConverter: applyconfigurations.NewTypeConverter(scheme.Scheme),
			}, celconfig.RuntimeCELCostBudget)
			if err != nil {
				t.Fatal(err)
			}
			if theirs, err = o.GetObjectConvertor().ConvertToVersion(theirs, deploymentGVK.GroupVersion()); err != nil {
				t.Fatal(err)
			}
			o.GetObjectDefaulter().Default(theirs)
			compiled, err := comp.Compile(p)
			if err != nil {
				t.Fatal(err)
			}
			ours, _, err := pt.Mutate(ctx, compiled, compiled.Mutations[0], compiler.Input{Object: obj}, deploymentGVK)
			if err != nil {
				t.Fatal(err)
			}
			if err := sameObject(ours, theirs); err != nil {
				t.Fatal(err)
			}
			if sameObject(ours, dep) == nil {
				t.Fatal("the mutation changed nothing")
			}
		})
	}
}
