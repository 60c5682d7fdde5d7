package mutation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
	"github.com/mutatis-dev/mutatis/jsonpatch"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme"
)

// TestStandaloneMergeIsTheAdmissions holds Patcher.Mutate of an
// ApplyConfiguration, whose merge result's own top-level map is normalized
// and defaulted in place (ownRoot, scheme.Scheme.NormalizeDefaultOwn), to
// the same mutation as an admission's first (Cache.Mutate: the merge
// result normalized, then DefaultNormalized, into new maps), bit for bit,
// on every real built-in object of testobjects normalized, as written and
// defaulted: merges that add entries (a fresh patch), that change nothing
// (the root is the object's own, never written), that set what the object
// has beside what it lacks, that go through params (FromCEL's patch
// without a fresh conversion); and the object, the old object and the
// params left as they were.
func TestStandaloneMergeIsTheAdmissions(t *testing.T) {
	s, pt, policies := applyConfigurationPolicies(t, &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
		`Object{metadata: Object.metadata{labels: {"team": "shop"}}}`,
		`Object{metadata: Object.metadata{name: object.metadata.name}}`,
		`Object{metadata: Object.metadata{labels: object.metadata.?labels.orValue({}), annotations: {"touched": "yes"}}}`,
		`Object{metadata: Object.metadata{annotations: {"from": params.metadata.name}}}`,
	)
	params := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "defaults", "namespace": "shop"}}
	ctx := context.Background()
	checked, inPlace := 0, 0
	for _, in := range testobjects.Inputs(t) {
		if !s.Recognizes(in.GVK) || s.CustomResources().Recognizes(in.GVK) {
			continue
		}
		n, err := s.Normalize(in.Obj, in.GVK)
		if err != nil {
			continue
		}
		objs := []map[string]any{in.Obj, n}
		if d, err := s.Default(n, in.GVK); err == nil {
			objs = append(objs, d)
		}
		for _, obj := range objs {
			for i, p := range policies {
				input := compiler.Input{Object: obj, OldObject: n, Params: params}
				frozen := valuetest.Freeze([]any{obj, n, params})
				got, _, gotErr := pt.Mutate(ctx, p, p.Mutations[0], input, in.GVK)
				want, _, wantErr := new(Cache).Mutate(ctx, pt, p, p.Mutations[0], compiler.Input{Object: valuetest.DeepCopy(obj).(map[string]any), OldObject: n, Params: params}, in.GVK)
				if frozen.Modified() {
					t.Fatalf("%s, expression %d: Patcher.Mutate modified its input", in.Name, i)
				}
				if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
					t.Fatalf("%s, expression %d: error %v, the admission's %v", in.Name, i, gotErr, wantErr)
				}
				if gotErr != nil {
					continue
				}
				if !valuetest.BitsEqual(got, want) {
					t.Fatalf("%s, expression %d: Patcher.Mutate\n%#v\nthe admission's\n%#v", in.Name, i, got, want)
				}
				checked++
				if !jsonvalue.SameMap(got, obj) {
					inPlace++
				}
			}
		}
	}
	t.Logf("%d mutations checked, %d results not the object itself", checked, inPlace)
	if checked < 100 {
		t.Errorf("only %d mutations checked", checked)
	}
}

// TestOwnRoot: the object, old object and params of the input are never a
// merge result's own root; any other map is.
func TestOwnRoot(t *testing.T) {
	obj, old, params := map[string]any{"a": 1}, map[string]any{"b": 2}, map[string]any{"c": 3}
	in := compiler.Input{Object: obj, OldObject: old, Params: params}
	for _, m := range []map[string]any{obj, old, params, nil} {
		if ownRoot(m, in) {
			t.Errorf("ownRoot(%v) = true", m)
		}
	}
	if !ownRoot(map[string]any{"a": 1}, in) {
		t.Error("ownRoot of a new map = false")
	}
}

// TestAdmissionMergesShareTheLiveObject holds an admission's chain of
// ApplyConfiguration merges through one Cache, whose merges share its
// live Unstructured (Cache.live), to each mutation run alone on a copy of
// its input (a new Cache): bit for bit, with the same errors, on every real
// built-in object of testobjects as written and normalized, the chain's
// inputs left as they were, and the live object emptied after every
// merge (nothing of the request held past it).
func TestAdmissionMergesShareTheLiveObject(t *testing.T) {
	s, pt, policies := applyConfigurationPolicies(t, nil,
		`Object{metadata: Object.metadata{labels: {"team": "shop"}}}`,
		`Object{metadata: Object.metadata{annotations: {"a": "1"}}}`,
		`Object{metadata: Object.metadata{name: object.metadata.name}}`,
		`Object{metadata: Object.metadata{labels: {"team": "web", "tier": "front"}}}`,
		`Object{metadata: Object.metadata{annotations: {"b": string(size(object.metadata.?labels.orValue({})))}}}`,
	)
	ctx := context.Background()
	steps := 0
	for _, in := range requestInputs(t, s) {
		var c Cache
		obj := in.normalized
		for round := range 2 {
			for i, p := range policies {
				frozen := valuetest.Freeze(obj)
				want, _, wantErr := new(Cache).Mutate(ctx, pt, p, p.Mutations[0], compiler.Input{Object: valuetest.DeepCopy(obj).(map[string]any)}, in.GVK)
				got, _, gotErr := c.Mutate(ctx, pt, p, p.Mutations[0], compiler.Input{Object: obj}, in.GVK)
				if c.live == nil || c.live.Object != nil {
					t.Fatalf("%s, round %d, expression %d: the live object is held after the merge", in.Name, round, i)
				}
				if frozen.Modified() {
					t.Fatalf("%s, round %d, expression %d: the mutation modified its input", in.Name, round, i)
				}
				if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
					t.Fatalf("%s, round %d, expression %d: error %v, alone %v", in.Name, round, i, gotErr, wantErr)
				}
				if gotErr != nil {
					continue
				}
				if !valuetest.BitsEqual(got, want) {
					t.Fatalf("%s, round %d, expression %d: in the chain\n%#v\nalone\n%#v", in.Name, round, i, got, want)
				}
				obj = got
				steps++
			}
		}
	}
	t.Logf("%d chained merges checked", steps)
	if steps < 100 {
		t.Errorf("only %d chained merges checked", steps)
	}
}

// requestInput is a real built-in object of testobjects normalized as a
// request (scheme.Scheme.NormalizeRequest).
type requestInput struct {
	testobjects.Input
	normalized map[string]any
}

// requestInputs are the real built-in objects of testobjects (not custom
// resources) that s normalizes as a request, normalized.
func requestInputs(t *testing.T, s *scheme.Scheme) []requestInput {
	t.Helper()
	var out []requestInput
	for _, in := range testobjects.Inputs(t) {
		if !s.Recognizes(in.GVK) || s.CustomResources().Recognizes(in.GVK) {
			continue
		}
		if n, err := s.NormalizeRequest(in.Obj, in.GVK); err == nil {
			out = append(out, requestInput{Input: in, normalized: n})
		}
	}
	return out
}

// TestKeptMergeIsTheMergeAndValid holds what Cache.keep keeps for the next
// merge of an admission — since session 28 the last merge result also
// when normalizing or defaulting changed it (the mutation's result is then
// another object, which the next merge's live object is validated beside
// the kept result) — to the merge itself: chains of ApplyConfigurations
// that defaulting completes (a container, an init container with a port,
// a volume, a Deployment's template container, a Service port) or leaves
// alone (a label, a security context), and JSON patches between them,
// through one Cache on every real built-in object normalized as a request,
// twice over. Each step equals the same mutation run alone on a deep copy
// with a new Cache, bit for bit with the same errors; the kept result,
// whenever a merge replaces it, is bit for bit the merge of the step's
// patch (evaluated apart) into a copy of the step's input
// (applyconfig.Merger.Merge); and after every step a kept result the merge
// knows valid (KnownValid) still validates with structured-merge-diff
// (duplicates allowed) and is unchanged since it was kept.
func TestKeptMergeIsTheMergeAndValid(t *testing.T) {
	ac := func(expr string) admissionregistrationv1.Mutation {
		return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expr}}
	}
	jp := func(expr string) admissionregistrationv1.Mutation {
		return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expr}}
	}
	s, pt, policies := mutationPolicies(t, nil,
		ac(`Object{metadata: Object.metadata{labels: {"team": "shop"}}}`),
		ac(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "sidecar", image: "busybox"}]}}`),
		jp(`[JSONPatch{op: "add", path: "/metadata/annotations", value: {"a": "1"}}]`),
		ac(`Object{spec: Object.spec{volumes: [Object.spec.volumes{name: "scratch", emptyDir: Object.spec.volumes.emptyDir{}}]}}`),
		ac(`Object{spec: Object.spec{initContainers: [Object.spec.initContainers{name: "init", image: "busybox", ports: [Object.spec.initContainers.ports{containerPort: 80}]}]}}`),
		ac(`Object{spec: Object.spec{securityContext: Object.spec.securityContext{runAsNonRoot: true}}}`),
		jp(`[JSONPatch{op: "add", path: "/metadata/labels", value: {"tier": "front"}}]`),
		ac(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "sidecar", image: "busybox"}]}}}}`),
		ac(`Object{spec: Object.spec{ports: [Object.spec.ports{port: 8080}]}}`),
		ac(`Object{metadata: Object.metadata{annotations: {"b": string(size(object.metadata.?labels.orValue({})))}}}`),
	)
	ctx := context.Background()
	steps, keptChanged := 0, 0
	for _, in := range requestInputs(t, s) {
		merger, err := pt.Schemas.Merger(in.GVK)
		if err != nil {
			continue
		}
		var c Cache
		var kept valuetest.Frozen
		obj := in.normalized
		for round := range 2 {
			for i, p := range policies {
				m := p.Mutations[0]
				before := c.merged
				want, _, wantErr := new(Cache).Mutate(ctx, pt, p, m, compiler.Input{Object: valuetest.DeepCopy(obj).(map[string]any)}, in.GVK)
				got, _, gotErr := c.Mutate(ctx, pt, p, m, compiler.Input{Object: obj}, in.GVK)
				if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
					t.Fatalf("%s, round %d, mutation %d: error %v, alone %v", in.Name, round, i, gotErr, wantErr)
				}
				if gotErr == nil && !valuetest.BitsEqual(got, want) {
					t.Fatalf("%s, round %d, mutation %d: in the chain\n%#v\nalone\n%#v", in.Name, round, i, got, want)
				}
				if c.merged != before {
					if m.Kind != compiler.KindApplyConfiguration || gotErr != nil {
						t.Fatalf("%s, round %d, mutation %d: a merge kept by a mutation that is no successful merge", in.Name, round, i)
					}
					ref := mergeAlone(t, ctx, merger, p, m, obj)
					if !valuetest.BitsEqual(c.merged.Object.Object, ref) {
						t.Fatalf("%s, round %d, mutation %d: kept\n%#v\nthe merge\n%#v", in.Name, round, i, c.merged.Object.Object, ref)
					}
					if !jsonvalue.SameMap(c.merged.Object.Object, got) {
						keptChanged++
					}
					kept = valuetest.Freeze(c.merged.Object.Object)
				}
				if c.merged != nil {
					if kept.Modified() {
						t.Fatalf("%s, round %d, mutation %d: the kept merge result was modified", in.Name, round, i)
					}
					if c.merged.KnownValid() {
						if _, err := merger.TypeConverter().ObjectToTyped(c.merged.Object, typed.AllowDuplicates); err != nil {
							t.Fatalf("%s, round %d, mutation %d: the kept merge result, known valid, is not: %v", in.Name, round, i, err)
						}
					}
				}
				if gotErr == nil {
					obj = got
				}
				steps++
			}
		}
	}
	t.Logf("%d chained mutations checked, %d merge results kept beside another object", steps, keptChanged)
	if steps < 200 || keptChanged < 10 {
		t.Errorf("only %d chained mutations checked, %d merge results kept beside another object", steps, keptChanged)
	}
}

// mergeAlone is the merge of the ApplyConfiguration m of p, evaluated on a
// copy of obj, into another copy of obj (applyconfig.Merger.Merge).
func mergeAlone(t *testing.T, ctx context.Context, merger *applyconfig.Merger, p *compiler.Policy, m *compiler.Expression, obj map[string]any) map[string]any {
	t.Helper()
	act := p.NewActivation(ctx, compiler.Input{Object: valuetest.DeepCopy(obj).(map[string]any)})
	defer act.Release()
	res, _, err := act.Eval(m, compiler.MutationBudget)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	patch, err := applyconfig.FromCEL(res.Value)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := merger.Merge(&unstructured.Unstructured{Object: valuetest.DeepCopy(obj).(map[string]any)}, patch, nil)
	if err != nil {
		t.Fatal(err)
	}
	return merged.Object.Object
}

// TestSchemaOfIsTheLookup holds Cache.schemaOf, which answers from the
// admission's last lookup of the same built-in kind, to the lookup itself
// (Patcher.schemaOf) on 3,000 lookups: every built-in resource's kind,
// kinds their documents lack (Scale, Eviction, Binding, WatchEvent), a
// CRD's kind, a kind nobody serves, for both patch types, the same kind
// several times in a row and others between, while a CRD of a new group
// and one that serves a built-in group/version's WatchEvent are added and
// removed, and the admission's Patcher is swapped for one of other
// schemas: the same answers, the same Merger, the same errors.
func TestSchemaOfIsTheLookup(t *testing.T) {
	var gvks []schema.GroupVersionKind
	for _, r := range matching.BuiltinResources() {
		gvks = append(gvks, schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind})
	}
	gvks = append(gvks,
		schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
		schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"},
		schema.GroupVersionKind{Version: "v1", Kind: "Binding"},
		schema.GroupVersionKind{Version: "v1", Kind: "WatchEvent"},
		schema.GroupVersionKind{Group: "internal.apiserver.k8s.io", Version: "v1alpha1", Kind: "WatchEvent"},
		schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
		schema.GroupVersionKind{Group: "nope.example", Version: "v1", Kind: "Thing"},
	)
	crds := []struct {
		name string
		obj  *unstructured.Unstructured
	}{
		{"widgets.example.com", loadCRD(t, "../applyconfig/testdata/widgets.crd.yaml")},
		{"watchevents.internal.apiserver.k8s.io", loadCRD(t, "../scheme/testdata/crd/watchevents.yaml")},
	}
	pts := []*Patcher{{Schemas: applyconfig.NewSchemas()}, {Schemas: applyconfig.NewSchemas()}}
	added := make([][]bool, len(pts))
	for i := range added {
		added[i] = make([]bool, len(crds))
	}
	r := rand.New(rand.NewPCG(29, 28))
	var c Cache
	which, gvk, hits := 0, gvks[0], 0
	for i := range 3000 {
		switch n := r.IntN(30); {
		case n < len(crds):
			// A CRD added to or removed from the current schemas.
			s := pts[which].Schemas
			if added[which][n] {
				s.RemoveCRD(crds[n].name)
			} else if err := s.AddCRD(crds[n].obj); err != nil {
				t.Fatal(err)
			}
			added[which][n] = !added[which][n]
		case n == len(crds):
			which = 1 - which
		}
		if r.IntN(3) == 0 {
			gvk = gvks[r.IntN(len(gvks))]
		}
		pt, jsonPatch := pts[which], r.IntN(2) == 0
		if c.kind.schemas == pt.Schemas && c.kind.gvk == gvk {
			hits++
		}
		defined, builtin, merger, err := c.schemaOf(pt, gvk, jsonPatch)
		wDefined, wBuiltin, wMerger, wErr := pt.schemaOf(gvk, jsonPatch)
		if defined != wDefined || builtin != wBuiltin || merger != wMerger || (err == nil) != (wErr == nil) || err != nil && err.Error() != wErr.Error() {
			t.Fatalf("lookup %d of %v (JSON patch %v): %v %v %p %v, the lookup %v %v %p %v", i, gvk, jsonPatch, defined, builtin, merger, err, wDefined, wBuiltin, wMerger, wErr)
		}
	}
	t.Logf("%d of 3,000 lookups of the kept kind", hits)
	if hits < 1000 {
		t.Errorf("only %d lookups of the kept kind", hits)
	}
}

// loadCRD reads the CustomResourceDefinition of the YAML file at path.
func loadCRD(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// applyConfigurationPolicies compiles one policy of params of kind
// paramKind (none when nil) per expression, each an ApplyConfiguration
// mutation, and gives the scheme and the Patcher that mutate with them.
func applyConfigurationPolicies(t *testing.T, paramKind *admissionregistrationv1.ParamKind, exprs ...string) (*scheme.Scheme, *Patcher, []*compiler.Policy) {
	t.Helper()
	mutations := make([]admissionregistrationv1.Mutation, len(exprs))
	for i, expr := range exprs {
		mutations[i] = admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expr}}
	}
	return mutationPolicies(t, paramKind, mutations...)
}

// mutationPolicies compiles one policy of params of kind paramKind (none
// when nil) per mutation, and gives the scheme and the Patcher that mutate
// with them.
func mutationPolicies(t *testing.T, paramKind *admissionregistrationv1.ParamKind, mutations ...admissionregistrationv1.Mutation) (*scheme.Scheme, *Patcher, []*compiler.Policy) {
	t.Helper()
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	s := scheme.New()
	var policies []*compiler.Policy
	for i, m := range mutations {
		p, err := comp.Compile(&admissionregistrationv1.MutatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				ParamKind: paramKind,
				Mutations: []admissionregistrationv1.Mutation{m},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		policies = append(policies, p)
	}
	return s, &Patcher{Schemas: applyconfig.NewSchemas(), Scheme: s}, policies
}

// BenchmarkSchemaOf is the dispatcher's lookup of an admission's kind before
// each mutation: the lookup itself (Patcher.schemaOf) against the
// admission's kept answer (Cache.schemaOf), for an ApplyConfiguration of a
// core kind and of a kind further down the built-in tables.
func BenchmarkSchemaOf(b *testing.B) {
	pt := &Patcher{Schemas: applyconfig.NewSchemas()}
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Pod"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
	} {
		b.Run("impl=lookup/kind="+gvk.Kind, func(b *testing.B) {
			for b.Loop() {
				if _, _, m, _ := pt.schemaOf(gvk, false); m == nil {
					b.Fatal("no merger")
				}
			}
		})
		b.Run("impl=cache/kind="+gvk.Kind, func(b *testing.B) {
			var c Cache
			for b.Loop() {
				if _, _, m, _ := c.schemaOf(pt, gvk, false); m == nil {
					b.Fatal("no merger")
				}
			}
		})
	}
}

// TestKeptOperationsBounded: the operations slice a Cache keeps for the
// next JSON patch of its admission is emptied of the last patch's values
// and kept only up to maxKeptOps; a standalone Cache keeps none.
func TestKeptOperationsBounded(t *testing.T) {
	fill := func(n int) []jsonpatch.Operation {
		ops := make([]jsonpatch.Operation, n)
		for i := range ops {
			ops[i] = jsonpatch.Operation{Op: "add", Path: "/metadata/labels/a", Value: map[string]any{"k": "v"}}
		}
		return ops
	}
	var c Cache
	if room := c.opsRoom(); len(room) != 0 || cap(room) != minKeptOps {
		t.Fatalf("a new admission's room: %d/%d, want 0/%d", len(room), cap(room), minKeptOps)
	}
	small := fill(maxKeptOps)
	c.keepOps(small)
	if room := c.opsRoom(); len(room) != 0 || cap(room) != maxKeptOps {
		t.Fatalf("after %d operations the room is %d/%d, want them kept, emptied", maxKeptOps, len(room), cap(room))
	}
	for i, op := range small {
		if op.Op != "" || op.Path != "" || op.Value != nil {
			t.Fatalf("kept operation %d still holds %s %s %v", i, op.Op, op.Path, op.Value)
		}
	}
	c.keepOps(fill(maxKeptOps + 1))
	if room := c.opsRoom(); cap(room) != maxKeptOps {
		t.Fatalf("after %d operations the room is %d, want the last one within the bound (%d) kept", maxKeptOps+1, cap(room), maxKeptOps)
	}
	standalone := Cache{standalone: true}
	standalone.keepOps(fill(3))
	if room := standalone.opsRoom(); room != nil {
		t.Fatalf("a standalone Cache kept %d operations' room", cap(room))
	}
}
