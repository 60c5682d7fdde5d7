package mutation

import (
	"context"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
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
	for _, in := range testobjects.Inputs(t) {
		if !s.Recognizes(in.GVK) || s.CustomResources().Recognizes(in.GVK) {
			continue
		}
		n, err := s.NormalizeRequest(in.Obj, in.GVK)
		if err != nil {
			continue
		}
		var c Cache
		obj := n
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

// applyConfigurationPolicies compiles one policy of params of kind
// paramKind (none when nil) per expression, each an ApplyConfiguration
// mutation, and gives the scheme and the Patcher that mutate with them.
func applyConfigurationPolicies(t *testing.T, paramKind *admissionregistrationv1.ParamKind, exprs ...string) (*scheme.Scheme, *Patcher, []*compiler.Policy) {
	t.Helper()
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	s := scheme.New()
	var policies []*compiler.Policy
	for i, expr := range exprs {
		p, err := comp.Compile(&admissionregistrationv1.MutatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				ParamKind: paramKind,
				Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
					ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expr}}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		policies = append(policies, p)
	}
	return s, &Patcher{Schemas: applyconfig.NewSchemas(), Scheme: s}, policies
}
