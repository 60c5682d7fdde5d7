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
	set, err := manifest.Load(context.Background(), []string{filepath.Join("testdata", "cluster", "runtimeclass.yaml")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.New(set.Objects, cluster.Options{})
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

// A known is a difference from the engine that the converter keeps and
// reports: the note (its field and a part of its text) it writes for the
// corpus file.
type known struct{ field, text string }

var (
	knownEmpty0 = known{"spec.mutations[0].jsonPatch.expression", "drops an empty map"}
	knownEmpty1 = known{"spec.mutations[1].jsonPatch.expression", "drops an empty map"}
)

// oracleKnown are the differences TestOracle finds, by engine, corpus
// file and object (docs/migrate.md, "Known differences"): each is one the
// converter reports (a note on the file, which TestOracle requires), and
// each still differs (else TestOracle asks to remove it).
var oracleKnown = map[string]known{
	"bats-dummy_modifyset/service":                           {"spec.location", "spec.foo is not a field of /v1 Service"},
	"kyverno-mpol/add-apparmor/example-pod-has-sidecar":      knownEmpty0,
	"kyverno-mpol/add-apparmor/example-pod-web":              knownEmpty0,
	"kyverno-mpol/add-apparmor/pod-multi":                    knownEmpty0,
	"kyverno-mpol/add-apparmor/pod-plain":                    knownEmpty0,
	"kyverno-mpol/set-karpenter-non-cpu-limits/pod-existing": knownEmpty1,
}

func init() {
	// A Pod field written on the controllers Kyverno's policy matches too.
	for _, o := range []string{"cronjob", "deployment", "statefulset"} {
		oracleKnown["kyverno-mpol/add-nodeSelector/"+o] = known{"spec.mutations[0].jsonPatch.expression", "writes spec.nodeSelector, not a field of"}
	}
}

// reported tells that r has the note k on file.
func reported(r *Result, k known) bool {
	for _, n := range r.Notes {
		if n.Field == k.field && strings.Contains(n.Text, k.text) {
			return true
		}
	}
	return false
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
					diff := oracleDiff(t, c, ev, a.Object, a.Error, a.Mutated, a.Result, failClosed, ans.Engine)
					k, isKnown := oracleKnown[key]
					switch {
					case isKnown && diff == "":
						t.Errorf("%s: a known difference (%s) no longer differs: remove it from oracleKnown", a.Object, k.text)
					case isKnown && !reported(r, k):
						t.Errorf("%s: the difference is not reported by the converter (want a note %s: %s…); it gives %v\n%s", a.Object, k.field, k.text, r.Notes, diff)
					case isKnown:
						t.Logf("%s: a known difference the converter reports: %s: %s", a.Object, k.field, k.text)
					case diff != "":
						t.Errorf("%s", diff)
					}
				}
			})
		}
	}
}

// oracleDiff is how mutatis' admission of the converted policies (ev)
// differs from the engine's answer on object, "" when it does not.
func oracleDiff(t *testing.T, c *cluster.Cluster, ev cluster.Chain, object, engineErr string, mutated bool, result map[string]any, failClosed bool, engine string) string {
	t.Helper()
	in := readObject(t, filepath.Join("testdata", "objects", object+".yaml"))
	got, denied := admit(t, c, ev, in, false)
	if engineErr != "" && failClosed {
		// A Kyverno rule ended in an error: with the policy's
		// failurePolicy Fail (Kyverno's default) its webhook denies the
		// request; so must the converted policy.
		if denied == "" {
			return fmt.Sprintf("%s: the engine failed (%s) and its policy fails closed: mutatis admitted it", object, engineErr)
		}
		return ""
	}
	if engineErr != "" {
		// The engine failed: its webhook's failurePolicy (Gatekeeper's
		// Ignore) admits the object unchanged; so must the converted
		// policy (its failurePolicy is the engine's).
		unchanged, _ := admit(t, c, cluster.Chain{}, in, false)
		if denied != "" || !apiequality.Semantic.DeepEqual(got, unchanged) {
			return fmt.Sprintf("%s: the engine failed (%s): mutatis denied %q or changed the object", object, engineErr, denied)
		}
		return ""
	}
	if denied != "" {
		return fmt.Sprintf("%s: denied: %s", object, denied)
	}
	var want map[string]any
	if mutated {
		// The engine's webhook changed the object: kube-apiserver runs its
		// mutating plugins again (the reinvocation round: the
		// ServiceAccount plugin mounts the token into an added container),
		// as it does after the converted policy.
		want, denied = admit(t, c, cluster.Chain{}, &unstructured.Unstructured{Object: result}, false)
	} else {
		want, denied = admit(t, c, cluster.Chain{}, in, false)
	}
	if denied != "" {
		t.Fatalf("%s: the engine's answer is denied: %s", object, denied)
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		gb, _ := yaml.Marshal(got)
		wb, _ := yaml.Marshal(want)
		return fmt.Sprintf("%s: mutatis gives\n%s\n%s gives\n%s", object, gb, engine, wb)
	}
	return ""
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
