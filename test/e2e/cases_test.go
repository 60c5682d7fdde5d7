//go:build linux

package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// caseFiles lists the policy sets of the differential scenario.
func caseFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "differential", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".golden.yaml") {
			cases = append(cases, f)
		}
	}
	if len(cases) < 20 {
		t.Fatalf("found %d policy sets in testdata/differential, want at least 20", len(cases))
	}
	return cases
}

// TestDifferentialCasesAreValid needs no API server: every policy set of
// the differential scenario loads, passes API validation and compiles in
// mutatis (or, in a *refused* case, is refused as kube-apiserver refuses
// it), its object is admitted offline without an internal error, it
// respects the barrier's rules (no policy matches podtemplates, params are
// ConfigMaps), its CustomResourceDefinitions are its own (CRDs, like
// namespaces, are never deleted: no other case, nor TestPolyfill, may
// create one of the same name; an UPDATE set may redefine its own), and it
// has a golden file. mutatis' outcome
// from the case object (admitRawByMutatis) must be the golden one.
func TestDifferentialCasesAreValid(t *testing.T) {
	crds := map[string]string{"widgets.e2e.mutatis.dev": "TestPolyfill"}
	for _, f := range caseFiles(t) {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			docs, data, err := readDocs(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range docs[:len(docs)-1] {
				if d.GetKind() != "CustomResourceDefinition" {
					continue
				}
				if other, ok := crds[d.GetName()]; ok && other != filepath.Base(f) {
					t.Errorf("CustomResourceDefinition %s is also created by %s", d.GetName(), other)
				}
				crds[d.GetName()] = filepath.Base(f)
			}
			set, err := manifest.Parse(f, data)
			if err != nil {
				t.Fatal(err)
			}
			if len(set.Rejected) > 0 || len(set.Policies) == 0 || len(set.Bindings) == 0 || len(set.Objects) == 0 {
				t.Fatalf("%d policies (%d rejected), %d bindings, %d objects", len(set.Policies), len(set.Rejected), len(set.Bindings), len(set.Objects))
			}
			golden := strings.TrimSuffix(f, ".yaml") + ".golden.yaml"
			if _, _, err := readDocs(golden); err != nil {
				t.Errorf("no golden file: %v (MUTATIS_E2E=1 go test ./test/e2e -run TestDifferential -update)", err)
			}
			// A case whose policy kube-apiserver refuses to create says so
			// in its name; no other case may have one.
			if o, refused := refusedByMutatis(t, set); refused != strings.Contains(f, "refused") {
				t.Fatalf("mutatis refuses a policy: %v (%s); only *refused* cases may have one", refused, o.yaml())
			} else if refused {
				t.Logf("refused: %s", o.Error.Message)
				return
			}
			for _, p := range set.Policies {
				if pk := p.Policy.Spec.ParamKind; pk != nil && (pk.APIVersion != "v1" || pk.Kind != "ConfigMap") {
					t.Errorf("policy %s: paramKind %s/%s; the barrier only covers ConfigMap params", p.Policy.Name, pk.APIVersion, pk.Kind)
				}
				for _, r := range p.Policy.Spec.MatchConstraints.ResourceRules {
					if slices.Contains(r.Resources, "podtemplates") || slices.Contains(r.Resources, "*") {
						t.Errorf("policy %s matches podtemplates, which the barrier uses", p.Policy.Name)
					}
				}
			}
			// An UPDATE set's old object, as written, stands for the stored
			// one, with the resourceVersion and generation of a first write.
			var stored *unstructured.Unstructured
			if old := oldObjectOf(docs); old != nil {
				stored = old.DeepCopy()
				stored.SetResourceVersion("1")
				if g := firstGeneration(t, set, old); g != 0 {
					stored.SetGeneration(g)
				}
			}
			got, adm := admitRawByMutatis(t, set, stored)
			for _, inv := range adm.Result.Invocations {
				if inv.Err == nil {
					continue
				}
				// A typo must not turn a case into a compile-error case.
				if strings.Contains(inv.Err.Error(), "compilation failed") && !strings.Contains(f, "compile-error") {
					t.Errorf("policy %s does not compile (name the case *compile-error* if intended): %v", inv.Configuration, inv.Err)
				} else {
					t.Logf("policy %s: %v", inv.Configuration, inv.Err)
				}
			}
			// kube-apiserver runs policies in Go map order, a new one for
			// each recomputation of its policy list: a case whose outcome
			// depends on the order would pass or fail by chance.
			if n := len(set.Policies); n > 1 && n <= 4 {
				orders := 1
				for k := 2; k <= n; k++ {
					orders *= k
				}
				for i := 1; i < orders; i++ {
					var names []string
					other, _ := admitRawInOrder(t, set, stored, func(h []engine.Hook) []engine.Hook {
						perm := permutations(h)[i]
						for _, p := range perm {
							names = append(names, p.Policy.Name)
						}
						return perm
					})
					if d := diff("in name order", got, "in order "+strings.Join(names, ", "), other); d != "" {
						t.Errorf("the outcome depends on the order of the policies, which kube-apiserver does not fix (docs/fidelity.md):\n%s", d)
					}
				}
			}
			// The golden file is kube-apiserver's reviewed outcome: the
			// stronger comparison of TestDifferential, without a server.
			if _, _, err := readDocs(golden); err != nil {
				t.Logf("mutatis' outcome:\n%s", got.yaml())
			} else if d := diff("golden (kube-apiserver)", readGolden(t, f), "mutatis", got); d != "" {
				t.Errorf("mutatis (from the case object, as kube-apiserver decodes, admits and stores it) differs from the golden file:\n%s", d)
			}
		})
	}
}

// admitRawByMutatis is mutatis' whole request path for the case object as
// written, with no help from an API server: the simulated cluster decodes
// it as kube-apiserver's handler decodes a body (defaulting included),
// admits it through the chain and runs the registry strategy
// (Cluster.DecodeSteps, Cluster.Admit).
// The outcome is the object the registry would store, or the refusal
// (the engine's denial, the 422 of validation, the 400 of decoding).
func admitRawByMutatis(t *testing.T, set *manifest.Set, stored *unstructured.Unstructured) (outcome, *cluster.Admission) {
	t.Helper()
	return admitRawInOrder(t, set, stored, nil)
}

// admitRawInOrder is admitRawByMutatis with the policies run in the order
// order gives them (nil: mutatis' order, by name).
func admitRawInOrder(t *testing.T, set *manifest.Set, stored *unstructured.Unstructured, order func([]engine.Hook) []engine.Hook) (outcome, *cluster.Admission) {
	t.Helper()
	return admitRawWith(t, set, stored, order, admissionplugins.Flags{Disable: harnessDisabledPlugins})
}

// admitRawWith is admitRawInOrder with the admission plugins plugins
// choose (the zero value: kube-apiserver's default set).
func admitRawWith(t *testing.T, set *manifest.Set, stored *unstructured.Unstructured, order func([]engine.Hook) []engine.Hook, plugins admissionplugins.Flags) (outcome, *cluster.Admission) {
	t.Helper()
	if o, refused := refusedByMutatis(t, set); refused {
		return o, &cluster.Admission{}
	}
	sim, ev := simulateWith(t, set, order, plugins)
	obj := set.Objects[len(set.Objects)-1].Object.DeepCopy()
	req := cluster.Request{Object: obj, User: adminInfo()}
	if stored != nil {
		// An UPDATE of the stored object, at its resourceVersion.
		obj.SetResourceVersion(stored.GetResourceVersion())
		req.OldObject = stored.DeepCopy()
	}
	d, err := sim.DecodeSteps(req)
	if err != nil {
		if o, oerr := outcomeOf(nil, err); oerr == nil {
			return o, &cluster.Admission{}
		}
		t.Fatalf("mutatis: %v", err)
	}
	// The whole chain, as `mutatis apply` runs it: the reinvocation round
	// runs the built-in plugins again.
	adm, err := sim.Admit(context.Background(), cluster.Chain{Policies: ev}, d)
	if err != nil {
		t.Fatalf("mutatis: %v", err)
	}
	switch {
	case adm.Result.Denied != nil:
		return outcomeOfStatus(adm.Result.Denied), adm
	case adm.Invalid != nil:
		return outcomeOfStatus(adm.Invalid), adm
	case adm.Stored != nil:
		return outcome{Object: normalize(adm.Stored)}, adm
	}
	return outcome{Object: normalize(adm.Object)}, adm
}

// simulate is the simulated cluster of a policy set (every object but the
// last, the case object) and the evaluator of its policies.
func simulate(t *testing.T, set *manifest.Set) (*cluster.Cluster, *engine.Evaluator) {
	t.Helper()
	return simulateInOrder(t, set, nil)
}

// simulateInOrder is simulate with the hooks reordered by order (nil: by
// policy name, mutatis' order).
func simulateInOrder(t *testing.T, set *manifest.Set, order func([]engine.Hook) []engine.Hook) (*cluster.Cluster, *engine.Evaluator) {
	t.Helper()
	// The admission plugins of the harness's kube-apiserver.
	return simulateWith(t, set, order, admissionplugins.Flags{Disable: harnessDisabledPlugins})
}

// simulateWith is simulateInOrder with the admission plugins plugins
// choose.
func simulateWith(t *testing.T, set *manifest.Set, order func([]engine.Hook) []engine.Hook, plugins admissionplugins.Flags) (*cluster.Cluster, *engine.Evaluator) {
	t.Helper()
	sim, err := cluster.New(set.Objects[:len(set.Objects)-1], cluster.Options{AdmissionPlugins: plugins})
	if err != nil {
		t.Fatal(err)
	}
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	pols, binds := set.APIObjects()
	hooks, err := engine.NewHooks(comp, pols, binds)
	if err != nil {
		t.Fatalf("mutatis: %v", err)
	}
	if order != nil {
		hooks = order(hooks)
	}
	return sim, engine.NewEvaluator(sim.Config(), hooks)
}

// permutations returns every order of hooks (the first is hooks' own).
func permutations(hooks []engine.Hook) [][]engine.Hook {
	if len(hooks) <= 1 {
		return [][]engine.Hook{hooks}
	}
	var out [][]engine.Hook
	for i := range hooks {
		rest := append(append([]engine.Hook{}, hooks[:i]...), hooks[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]engine.Hook{hooks[i]}, p...))
		}
	}
	return out
}

// firstGeneration is the metadata.generation the registry gives old on
// its CREATE (without the set's policies): 1 where the strategy sets one,
// 0 where it does not (a Service). An object the set's objects make
// invalid (a CRD redefined after its object was stored) is taken to have
// 1, as every custom resource has.
func firstGeneration(t *testing.T, set *manifest.Set, old *unstructured.Unstructured) int64 {
	t.Helper()
	sim, _ := simulate(t, set)
	d, err := sim.DecodeSteps(cluster.Request{Object: old.DeepCopy(), User: adminInfo()})
	if err != nil {
		return 1
	}
	adm, err := sim.Admit(context.Background(), cluster.Chain{}, d)
	if err != nil || adm.Stored == nil {
		return 1
	}
	g, _, _ := unstructured.NestedInt64(adm.Stored, "metadata", "generation")
	return g
}
