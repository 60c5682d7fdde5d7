package differential

import (
	"context"
	"testing"

	kubescheme "github.com/mutatis-dev/mutatis/scheme"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/compiler"
	mut "github.com/mutatis-dev/mutatis/mutation"
)

// BenchmarkMutation measures one mutation end to end (evaluate the CEL
// expression, convert its result, patch, normalize) in mutatis and in
// k8s.io/apiserver's patchers, on the same small Deployment. The
// "upstream-compile" figure includes compiling the expression on every
// iteration (the oracle harness compiles per call), so it is an upper bound
// of upstream's cost, not a like-for-like comparison: mutatis reuses its
// compiled policy, as kube-apiserver does.
func BenchmarkMutation(b *testing.B) {
	schemas := applyconfig.NewSchemas()
	comp, err := compiler.New()
	if err != nil {
		b.Fatal(err)
	}
	pt := &mut.Patcher{Schemas: schemas, Scheme: kubescheme.New()}
	dep := deployment()
	gvk := dep.GroupVersionKind()
	tconv, err := schemas.TypeConverter(gvk)
	if err != nil {
		b.Fatal(err)
	}
	obj, err := toUnstructured(dep)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		m    mutation
	}{
		{"AC-label", ac(`Object{metadata: Object.metadata{labels: {"team": "shop"}}}`)},
		{"AC-sidecar", ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "sidecar", image: "busybox"}]}}}}`)},
		{"JSONPatch-label", jp(`[JSONPatch{op: "add", path: "/metadata/labels/team", value: "shop"}]`)},
		{"JSONPatch-escapeKey", jp(`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/team"), value: "shop"}]`)},
		// Values read from the object: cel-go's views of its Go maps.
		{"JSONPatch-copy-from-object", jp(`[JSONPatch{op: "add", path: "/spec/template/spec/initContainers", value: object.spec.template.spec.containers},
			JSONPatch{op: "add", path: "/spec/template/metadata/labels", value: object.metadata.labels}]`)},
	} {
		policy, err := comp.Compile(bc.m.policy())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name+"/mutatis", func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				if _, _, err := pt.Mutate(ctx, policy, policy.Mutations[0], compiler.Input{Object: obj}, gvk); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/upstream-compile", func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				if _, err := upstreamMutate(ctx, bc.m, dep, gvk, deploymentGVR, kubeScheme(), tconv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
