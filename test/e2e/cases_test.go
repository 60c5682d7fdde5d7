//go:build linux

package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/manifest"
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
// ConfigMaps), and it has a golden file.
func TestDifferentialCasesAreValid(t *testing.T) {
	for _, f := range caseFiles(t) {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			_, data, err := readDocs(f)
			if err != nil {
				t.Fatal(err)
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
			var pols []*admissionregistrationv1.MutatingAdmissionPolicy
			for _, p := range set.Policies {
				pols = append(pols, p.Policy)
				if pk := p.Policy.Spec.ParamKind; pk != nil && (pk.APIVersion != "v1" || pk.Kind != "ConfigMap") {
					t.Errorf("policy %s: paramKind %s/%s; the barrier only covers ConfigMap params", p.Policy.Name, pk.APIVersion, pk.Kind)
				}
				for _, r := range p.Policy.Spec.MatchConstraints.ResourceRules {
					if slices.Contains(r.Resources, "podtemplates") || slices.Contains(r.Resources, "*") {
						t.Errorf("policy %s matches podtemplates, which the barrier uses", p.Policy.Name)
					}
				}
			}
			var binds []*admissionregistrationv1.MutatingAdmissionPolicyBinding
			for _, b := range set.Bindings {
				binds = append(binds, b.Binding)
			}
			sim, err := cluster.New(set.Objects[:len(set.Objects)-1])
			if err != nil {
				t.Fatal(err)
			}
			ev, err := sim.Evaluator(nil, pols, binds)
			if err != nil {
				t.Fatal(err)
			}
			obj := set.Objects[len(set.Objects)-1].Object.DeepCopy()
			attrs, err := sim.Attributes(cluster.Request{Object: obj, User: adminInfo()})
			if err != nil {
				t.Fatal(err)
			}
			res, err := ev.Admit(context.Background(), attrs)
			if err != nil {
				t.Fatal(err)
			}
			for _, inv := range res.Invocations {
				if inv.Err == nil {
					continue
				}
				// A typo must not turn a case into a compile-error case.
				if strings.Contains(inv.Err.Error(), "compilation failed") && !strings.Contains(f, "compile-error") {
					t.Errorf("policy %s does not compile (name the case *compile-error* if intended): %v", inv.Policy, inv.Err)
				} else {
					t.Logf("policy %s: %v", inv.Policy, inv.Err)
				}
			}
			if res.Denied != nil {
				t.Logf("denied: %s", res.Denied.ErrStatus.Message)
			} else if testing.Verbose() {
				t.Logf("mutatis (undefaulted input): %s", outcome{Object: normalize((&unstructured.Unstructured{Object: res.Object}).Object)}.yaml())
			}
		})
	}
}
