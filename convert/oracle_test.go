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
	Engine string `json:"engine"`
	Policy string `json:"policy"`
	// Refused is the engine's own refusal of the policy (Kyverno's policy
	// validation), which no cluster would take.
	Refused string `json:"refused"`
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
// The Kyverno differences TestOracle found (docs/migrate.md, "Known
// differences"); the entries below name them by engine, file and object.
const (
	knownKyverno0  = "Kyverno v1.19 applies a Pod MutatingPolicy to the Pod controllers (its autogen: the template mutated, or an error where an expression reads a Pod field); the converted MAP matches what the policy names"
	knownKyverno1  = "Kyverno's MutatingPolicy adds an annotation whose parent (metadata.annotations) is missing; kube-apiserver's JSONPatch fails and the converted policy denies"
	knownKyverno2  = "the test cluster has no RuntimeClass prodclass: kube-apiserver's RuntimeClass plugin rejects the Pod after any mutation, Kyverno's too (not a converter difference)"
	knownKyverno3  = "Kyverno's MutatingPolicy applies a JSONPatch add whose parent (resources.limits) is missing; kube-apiserver's JSONPatch fails, and the converted policy denies"
	knownKyverno4  = "converter: the `<(image)` conditional anchor of a containers element guards the sibling imagePullSecrets in Kyverno (no container image is corp.reg.com/*: Kyverno adds nothing); the converted policy adds the secret"
	knownKyverno5  = "converter: the JSON pointer's -1 (Kyverno's negative index: the last element, a new list when missing) is read as a field name, so nodeSelectorTerms is created as an object and the patched Deployment fails to decode"
	knownKyverno6  = "converter: a conditional anchor inside a list element's map (volumes: - hostPath: {<(path): \"*\"}) is written as a field, and the patched object fails to decode"
	knownKyverno7  = "Kyverno's precondition on a missing annotation ends in an error (JMESPath Unknown key), so its webhook denies (failurePolicy Fail); the converted precondition is false and admits"
	knownKyverno9  = "Kyverno applies a containers element with +() anchors to every container (the app container gets the sidecar's image and mount) and adds no varlog volume next to the projected one; the converter merges the element by name (docs/migrate.md)"
	knownKyverno10 = "Kyverno applies a list element with anchors to every element of the list; the converter merges the element by name (docs/migrate.md)"
	knownKyverno11 = "converter: the generated CEL for the rule's preconditions/anchors errors on these objects and the converted policy denies"
)

var oracleKnown = map[string]string{
	"kyverno-mpol/add-apparmor/cronjob":                            knownKyverno0,
	"kyverno-mpol/add-apparmor/deployment":                         knownKyverno0,
	"kyverno-mpol/add-apparmor/statefulset":                        knownKyverno0,
	"kyverno-mpol/add-capabilities/cronjob":                        knownKyverno0,
	"kyverno-mpol/add-capabilities/deployment":                     knownKyverno0,
	"kyverno-mpol/add-capabilities/statefulset":                    knownKyverno0,
	"kyverno-mpol/add-default-securitycontext/cronjob":             knownKyverno0,
	"kyverno-mpol/add-default-securitycontext/deployment":          knownKyverno0,
	"kyverno-mpol/add-default-securitycontext/statefulset":         knownKyverno0,
	"kyverno-mpol/add-emptydir-sizelimit/cronjob":                  knownKyverno0,
	"kyverno-mpol/add-emptydir-sizelimit/deployment":               knownKyverno0,
	"kyverno-mpol/add-emptydir-sizelimit/statefulset":              knownKyverno0,
	"kyverno-mpol/add-nodeSelector/cronjob":                        knownKyverno0,
	"kyverno-mpol/add-nodeSelector/deployment":                     knownKyverno0,
	"kyverno-mpol/add-nodeSelector/statefulset":                    knownKyverno0,
	"kyverno-mpol/add-runtimeClassName/cronjob":                    knownKyverno0,
	"kyverno-mpol/add-runtimeClassName/deployment":                 knownKyverno0,
	"kyverno-mpol/add-runtimeClassName/statefulset":                knownKyverno0,
	"kyverno-mpol/disable-service-discovery/cronjob":               knownKyverno0,
	"kyverno-mpol/disable-service-discovery/deployment":            knownKyverno0,
	"kyverno-mpol/disable-service-discovery/statefulset":           knownKyverno0,
	"kyverno-mpol/prepend-image-registry/cronjob":                  knownKyverno0,
	"kyverno-mpol/prepend-image-registry/deployment":               knownKyverno0,
	"kyverno-mpol/prepend-image-registry/statefulset":              knownKyverno0,
	"kyverno-mpol/replace-image-registry/cronjob":                  knownKyverno0,
	"kyverno-mpol/replace-image-registry/deployment":               knownKyverno0,
	"kyverno-mpol/replace-image-registry/statefulset":              knownKyverno0,
	"kyverno-mpol/add-apparmor/example-pod-has-sidecar":            knownKyverno1,
	"kyverno-mpol/add-apparmor/example-pod-web":                    knownKyverno1,
	"kyverno-mpol/add-apparmor/pod-multi":                          knownKyverno1,
	"kyverno-mpol/add-apparmor/pod-plain":                          knownKyverno1,
	"kyverno-mpol/add-runtimeClassName/example-pod-has-sidecar":    knownKyverno2,
	"kyverno-mpol/add-runtimeClassName/example-pod-web":            knownKyverno2,
	"kyverno-mpol/add-runtimeClassName/pod-existing":               knownKyverno2,
	"kyverno-mpol/add-runtimeClassName/pod-multi":                  knownKyverno2,
	"kyverno-mpol/add-runtimeClassName/pod-plain":                  knownKyverno2,
	"kyverno/add-runtimeClassName/example-pod-has-sidecar":         knownKyverno2,
	"kyverno/add-runtimeClassName/example-pod-web":                 knownKyverno2,
	"kyverno/add-runtimeClassName/pod-existing":                    knownKyverno2,
	"kyverno/add-runtimeClassName/pod-multi":                       knownKyverno2,
	"kyverno/add-runtimeClassName/pod-plain":                       knownKyverno2,
	"kyverno-mpol/set-karpenter-non-cpu-limits/pod-existing":       knownKyverno3,
	"kyverno/add-imagepullsecrets/cronjob":                         knownKyverno4,
	"kyverno/add-imagepullsecrets/deployment":                      knownKyverno4,
	"kyverno/add-imagepullsecrets/example-pod-has-sidecar":         knownKyverno4,
	"kyverno/add-imagepullsecrets/example-pod-web":                 knownKyverno4,
	"kyverno/add-imagepullsecrets/pod-existing":                    knownKyverno4,
	"kyverno/add-imagepullsecrets/pod-multi":                       knownKyverno4,
	"kyverno/add-imagepullsecrets/pod-plain":                       knownKyverno4,
	"kyverno/add-imagepullsecrets/statefulset":                     knownKyverno4,
	"kyverno/add-node-affinity/deployment":                         knownKyverno5,
	"kyverno/add-safe-to-evict/cronjob":                            knownKyverno6,
	"kyverno/add-safe-to-evict/deployment":                         knownKyverno6,
	"kyverno/add-safe-to-evict/example-pod-has-sidecar":            knownKyverno6,
	"kyverno/add-safe-to-evict/example-pod-web":                    knownKyverno6,
	"kyverno/add-safe-to-evict/pod-existing":                       knownKyverno6,
	"kyverno/add-safe-to-evict/pod-multi":                          knownKyverno6,
	"kyverno/add-safe-to-evict/pod-plain":                          knownKyverno6,
	"kyverno/add-safe-to-evict/statefulset":                        knownKyverno6,
	"kyverno/add-volume-deployment/deployment":                     knownKyverno7,
	"kyverno/example-sidecar/example-pod-has-sidecar":              knownKyverno9,
	"kyverno/example-sidecar/example-pod-web":                      knownKyverno9,
	"kyverno/inject-sidecar-deployment/deployment":                 knownKyverno10,
	"kyverno/set-karpenter-non-cpu-limits/cronjob":                 knownKyverno11,
	"kyverno/set-karpenter-non-cpu-limits/deployment":              knownKyverno11,
	"kyverno/set-karpenter-non-cpu-limits/example-pod-has-sidecar": knownKyverno11,
	"kyverno/set-karpenter-non-cpu-limits/example-pod-web":         knownKyverno11,
	"kyverno/set-karpenter-non-cpu-limits/pod-existing":            knownKyverno11,
	"kyverno/set-karpenter-non-cpu-limits/pod-multi":               knownKyverno11,
	"kyverno/set-karpenter-non-cpu-limits/pod-plain":               knownKyverno11,
	"kyverno/set-karpenter-non-cpu-limits/statefulset":             knownKyverno11,
	"bats-dummy_modifyset/service":                                 "the mutator writes spec.foo, which a Service does not have: kube-apiserver drops the unknown field of a webhook's patch, but a MAP's patched object is decoded strictly and the request fails (lint warns: field not declared in the schema)",
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
	for _, engine := range []string{"gatekeeper", "kyverno", "kyverno-mpol"} {
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
				if ans.Refused != "" {
					if why, ok := oracleKnown[name]; ok {
						t.Skipf("a known difference: %s", why)
					}
					t.Fatalf("%s refuses the policy (%s); the converter converted it", ans.Engine, ans.Refused)
				}
				failClosed := engine != "gatekeeper" && sourceFailurePolicy(t, filepath.Join("testdata", ans.Policy)) != "Ignore"
				c := newTestCluster(t)
				ev := evaluator(t, c, comp, r)
				for _, a := range ans.Answers {
					key := name + "/" + a.Object
					if engine != "gatekeeper" {
						key = engine + "/" + key
					}
					if why, ok := oracleKnown[key]; ok && os.Getenv("ORACLE_ALL") == "" {
						t.Logf("%s: a known difference: %s", a.Object, why)
						continue
					}
					in := readObject(t, filepath.Join("testdata", "objects", a.Object+".yaml"))
					got, denied := admit(t, c, ev, in, false)
					if a.Error != "" && failClosed {
						// A Kyverno rule ended in an error: with the policy's
						// failurePolicy Fail (Kyverno's default) its webhook
						// denies the request; so must the converted policy.
						if denied == "" {
							t.Errorf("%s: the engine failed (%s) and its policy fails closed: mutatis admitted it", a.Object, a.Error)
						}
						continue
					}
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

// sourceFailurePolicy is the spec.failurePolicy of the Kyverno policy in
// file (its first document; "" when it has none: Kyverno's default, Fail).
func sourceFailurePolicy(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := strings.Cut(strings.TrimPrefix(string(b), "---\n"), "\n---")
	var p struct {
		Spec struct {
			FailurePolicy string `json:"failurePolicy"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(doc), &p); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return p.Spec.FailurePolicy
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
