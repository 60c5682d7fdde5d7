package convert

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
)

// The oracle: the source engines' answers on the corpus objects, recorded
// by the nested module convert/oracle (`make convert-oracle`), and the
// inputs they were given — the corpus objects as kube-apiserver hands them
// to a mutating webhook: decoded, defaulted, through the built-in plugins
// (TestOracleInputs writes them with -update).

func corpusObjects(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "objects", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

func readObject(t *testing.T, f string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var o map[string]any
	if err := yaml.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: o}
}

func newTestCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	c, err := cluster.New(nil, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// admit is the object after the mutating chain (built-in plugins unless
// skip, then the policies of ev) as kube-apiserver admits a CREATE.
func admit(t *testing.T, c *cluster.Cluster, ev cluster.Chain, o *unstructured.Unstructured, skip bool) (map[string]any, string) {
	t.Helper()
	d, err := c.DecodeSteps(cluster.Request{Object: o.DeepCopy(), SkipAdmissionPlugins: skip})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Admit(context.Background(), ev, d)
	if err != nil {
		t.Fatal(err)
	}
	if a.Result.Denied != nil {
		return nil, a.Result.Denied.Error()
	}
	return a.Result.Object, ""
}

func TestOracleInputs(t *testing.T) {
	c := newTestCluster(t)
	for _, f := range corpusObjects(t) {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			got, denied := admit(t, c, cluster.Chain{}, readObject(t, f), false)
			if denied != "" {
				t.Fatalf("denied: %s", denied)
			}
			b, err := yaml.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "oracle", "inputs", name)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(want) != string(b) {
				t.Errorf("%s is not what admission gives the object now (go test -update, then make convert-oracle)", golden)
			}
		})
	}
}

// oracleAnswers are one corpus file's recorded answers.
type oracleAnswers struct {
	Engine  string `json:"engine"`
	Policy  string `json:"policy"`
	Answers []struct {
		Object  string         `json:"object"`
		Mutated bool           `json:"mutated"`
		Error   string         `json:"error"`
		Result  map[string]any `json:"result"`
	} `json:"answers"`
}

// oracleKnown are the differences from the engine TestOracle found and
// that the converter does not repair yet (docs/migrate.md, "Known
// differences"), by corpus file and object.
var oracleKnown = map[string]string{
	"bats-dummy_modifyset/service": "the mutator writes spec.foo, which a Service does not have: kube-apiserver drops the unknown field of a webhook's patch, but a MAP's patched object is decoded strictly and the request fails (lint warns: field not declared in the schema)",
}

// TestOracle checks, for every corpus file the oracle answered and every
// object, that mutatis' admission of the converted policies gives the
// source engine's object (both as kube-apiserver would go on: defaulted),
// or that the converter named the difference.
func TestOracle(t *testing.T) {
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, engine := range []string{"gatekeeper", "kyverno"} {
		answers, _ := filepath.Glob(filepath.Join("testdata", "oracle", engine, "*.yaml"))
		for _, af := range answers {
			name := strings.TrimSuffix(filepath.Base(af), ".yaml")
			t.Run(engine+"/"+name, func(t *testing.T) {
				var ans oracleAnswers
				b, err := os.ReadFile(af)
				if err != nil {
					t.Fatal(err)
				}
				if err := yaml.Unmarshal(b, &ans); err != nil {
					t.Fatal(err)
				}
				r := convertFiles(t, filepath.Join("testdata", ans.Policy))
				if len(r.Refused) > 0 {
					t.Skipf("refused: %v", r.Refused)
				}
				c := newTestCluster(t)
				ev := evaluator(t, c, comp, r)
				for _, a := range ans.Answers {
					if why, ok := oracleKnown[name+"/"+a.Object]; ok {
						t.Logf("%s: a known difference: %s", a.Object, why)
						continue
					}
					in := readObject(t, filepath.Join("testdata", "objects", a.Object+".yaml"))
					got, denied := admit(t, c, ev, in, false)
					if a.Error != "" {
						// The engine failed: its webhook's failurePolicy (Gatekeeper's
						// Ignore) admits the object unchanged; so must the converted
						// policy (its failurePolicy is the engine's).
						unchanged, _ := admit(t, c, cluster.Chain{}, in, false)
						if denied != "" || !apiequality.Semantic.DeepEqual(got, unchanged) {
							t.Errorf("%s: the engine failed (%s): mutatis denied %q or changed the object", a.Object, a.Error, denied)
						}
						continue
					}
					if denied != "" {
						t.Errorf("%s: denied: %s", a.Object, denied)
						continue
					}
					var want map[string]any
					if a.Mutated {
						want, denied = admit(t, c, cluster.Chain{}, &unstructured.Unstructured{Object: a.Result}, true)
					} else {
						want, denied = admit(t, c, cluster.Chain{}, in, false)
					}
					if denied != "" {
						t.Fatalf("%s: the engine's answer is denied: %s", a.Object, denied)
					}
					if !apiequality.Semantic.DeepEqual(got, want) {
						gb, _ := yaml.Marshal(got)
						wb, _ := yaml.Marshal(want)
						t.Errorf("%s: mutatis gives\n%s\n%s gives\n%s", a.Object, gb, ans.Engine, wb)
					}
				}
			})
		}
	}
}

func evaluator(t *testing.T, c *cluster.Cluster, comp *compiler.Compiler, r *Result) cluster.Chain {
	t.Helper()
	var ps []*admissionregistrationv1.MutatingAdmissionPolicy
	var bs []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	dir := t.TempDir()
	files, err := r.Files()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for n, b := range files {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	set, err := manifest.Load(context.Background(), paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range set.Policies {
		ps = append(ps, p.Policy)
	}
	for _, b := range set.Bindings {
		bs = append(bs, b.Binding)
	}
	ev, err := c.Evaluator(comp, ps, bs)
	if err != nil {
		t.Fatal(fmt.Errorf("evaluator: %w", err))
	}
	return cluster.Chain{Policies: ev}
}
