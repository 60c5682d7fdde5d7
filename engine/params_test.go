package engine

import (
	"context"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
	"github.com/mutatis-dev/mutatis/params"
)

// configMapParam is a ConfigMap param in namespace shop.
func configMapParam(name, team string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "shop", "labels": map[string]any{"role": "defaults"}},
		"data":     map[string]any{"team": team}}}
}

// TestEvaluatorFollowsParamChanges: the Evaluator presents each param
// object once (params.Memo), and a param replaced by a changed copy (a new
// object, as a Source hands out) is what the next admission of the same
// Evaluator sees, by name and by selector; a param added or removed too.
func TestEvaluatorFollowsParamChanges(t *testing.T) {
	deny := admissionregistrationv1.DenyAction
	for _, tc := range []struct {
		name string
		ref  admissionregistrationv1.ParamRef
		// others tells whether the selector also finds the param "other".
		others bool
	}{
		{"name", admissionregistrationv1.ParamRef{Name: "team", ParameterNotFoundAction: &deny}, false},
		{"selector", admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "defaults"}}, ParameterNotFoundAction: &deny}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mapPolicy("team-from-params", admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.Fail,
				`Object{metadata: Object.metadata{labels: {"team-" + params.metadata.name: params.data.team}}}`)
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			b := bindingFor(p.Name)
			b.Spec.ParamRef = &tc.ref
			hooks := paramHooks(t, p, b)
			cfg := testConfig()
			source := params.NewMemory(configMapParam("team", "blue"), configMapParam("other", "green"))
			cfg.Params.Source = source
			ev := NewEvaluator(cfg, hooks)
			if ev.cfg.Params.Memo == nil || cfg.Params.Memo != nil {
				t.Fatal("the Evaluator's collector has no Memo of its own")
			}

			admit := func(want map[string]any) {
				t.Helper()
				for range 2 { // the second admission presents the params from the Memo
					res, err := admitFrozen(t, ev, createConfigMap())
					if err != nil {
						t.Fatal(err)
					}
					if res.Denied != nil {
						t.Fatalf("denied: %v", res.Denied)
					}
					got, _, _ := unstructured.NestedMap(res.Object, "metadata", "labels")
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("labels = %v, want %v", got, want)
					}
				}
			}
			labels := func(team, other string) map[string]any {
				m := map[string]any{}
				if team != "" {
					m["team-team"] = team
				}
				if tc.others && other != "" {
					m["team-other"] = other
				}
				return m
			}
			admit(labels("blue", "green"))
			// team replaced by a changed copy: red, then yellow.
			for _, team := range []string{"red", "yellow"} {
				source.Put(configMapParam("team", team))
				admit(labels(team, "green"))
			}
			// other replaced, then removed; then team removed.
			source.Put(configMapParam("other", "white"))
			admit(labels("yellow", "white"))
			source.Delete(configMapParam("other", "").GroupVersionKind(), "shop", "other")
			admit(labels("yellow", ""))
			source.Delete(configMapParam("team", "").GroupVersionKind(), "shop", "team")
			// No param left: parameterNotFoundAction Deny.
			if res, err := admitFrozen(t, ev, createConfigMap()); err == nil && res.Denied == nil {
				t.Fatalf("no params: admitted %v", res.Object)
			}
			source.Put(configMapParam("team", "black"))
			admit(labels("black", ""))
		})
	}
}

// TestMutationsNeverModifyParams: the presented params are shared by the
// admissions of an Evaluator (params.Memo), so a mutation that copies a
// param's content into the object and changes it afterwards must leave the
// param, and its presentation, as they were.
func TestMutationsNeverModifyParams(t *testing.T) {
	p := mapPolicy("data-from-params", admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.Fail,
		`Object{data: params.data}`)
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	p.Spec.Mutations = append(p.Spec.Mutations,
		admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{data: {"merged": "yes"}}`}},
		admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/data/patched", value: "yes"}]`}})
	b := bindingFor(p.Name)
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "team"}
	hooks := paramHooks(t, p, b)
	cfg := testConfig()
	param := configMapParam("team", "blue")
	cfg.Params.Source = params.NewMemory(param)
	ev := NewEvaluator(cfg, hooks)
	frozenParam := valuetest.FreezeObject(param)
	ps, err := ev.cfg.Params.CollectRef(context.Background(), p.Spec.ParamKind, params.NewRef(b.Spec.ParamRef), "shop")
	if err != nil || len(ps) != 1 {
		t.Fatalf("params: %v, %v", ps, err)
	}
	frozenPresented := valuetest.Freeze(ps[0].Object)
	want := map[string]any{"team": "blue", "merged": "yes", "patched": "yes"}
	for range 3 {
		res, err := admitFrozen(t, ev, createConfigMap())
		if err != nil || res.Denied != nil {
			t.Fatalf("admission: %v, %v", err, res.Denied)
		}
		if got, _, _ := unstructured.NestedMap(res.Object, "data"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("data = %v, want %v", got, want)
		}
		frozenParam.Check(t, "the param")
		frozenPresented.Check(t, "the presented param")
	}
}

// paramHooks compiles one policy and its binding into Hooks.
func paramHooks(t *testing.T, p *admissionregistrationv1.MutatingAdmissionPolicy, b *admissionregistrationv1.MutatingAdmissionPolicyBinding) []Hook {
	t.Helper()
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := NewHooks(comp, []*admissionregistrationv1.MutatingAdmissionPolicy{p}, []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b})
	if err != nil {
		t.Fatal(err)
	}
	return hooks
}
