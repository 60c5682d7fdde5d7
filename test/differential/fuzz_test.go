package differential

import (
	"context"
	"testing"

	kubescheme "github.com/mutatis-dev/mutatis/scheme"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/compiler"
	mut "github.com/mutatis-dev/mutatis/mutation"
)

// FuzzCELResultConversion feeds arbitrary JSON values through CEL into both
// result conversions — ApplyConfiguration (Object → SMD) and JSONPatch
// (list(JSONPatch) → RFC 6902) — and requires mutatis and k8s.io/apiserver to
// agree on the object or the error. The value lands in a
// preserve-unknown-fields field of a custom resource, so any JSON shape is
// legal there and the conversion itself is what is compared.
func FuzzCELResultConversion(f *testing.F) {
	for _, seed := range []string{
		`{"a": 1}`, `{"big": 9007199254740993}`, `{"f": 1.5, "neg": -0.0}`, `[1, "x", null, true]`,
		`{"nested": {"list": [{"k": "v"}, {"k": "w"}]}}`, `"just a string"`, `null`, `{"": {"~/": [[]]}}`,
		`{"huge": 1e308, "tiny": 5e-324}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	schemas := applyconfig.NewSchemas()
	loadCRD(f, schemas, "testdata/widgets-crd.yaml")
	comp, err := compiler.New()
	if err != nil {
		f.Fatal(err)
	}
	pt := &mut.Patcher{Schemas: schemas, Scheme: kubescheme.New()}
	tconv, err := schemas.TypeConverter(widgetGVK)
	if err != nil {
		f.Fatal(err)
	}
	acMutation := ac(`Object{spec: Object.spec{extra: object.spec.extra.v}}`)
	jpMutation := jp(`[JSONPatch{op: "add", path: "/spec/extra", value: object.spec.extra.v}]`)
	f.Fuzz(func(t *testing.T, data []byte, jsonPatch bool) {
		var v any
		if err := utiljson.Unmarshal(data, &v); err != nil {
			return
		}
		obj := widget(map[string]any{"extra": map[string]any{"v": v}})
		m := acMutation
		if jsonPatch {
			m = jpMutation
		}
		ctx := context.Background()
		theirs, theirErr := upstreamMutate(ctx, m, obj.DeepCopy(), widgetGVK, widgetGVR, scheme.Scheme, tconv)
		policy, err := comp.Compile(m.policy())
		if err != nil {
			t.Fatal(err)
		}
		ours, _, ourErr := pt.Mutate(ctx, policy, policy.Mutations[0], compiler.Input{Object: obj.DeepCopy().Object}, widgetGVK)
		if err := sameOutcome(ours, ourErr, theirs, theirErr); err != nil {
			t.Fatalf("input %s: %v", data, err)
		}
	})
}
