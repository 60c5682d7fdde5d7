package convert

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/lint"
	"github.com/mutatis-dev/mutatis/manifest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// corpusFiles are the Kyverno and Gatekeeper policies of the corpus.
func corpusFiles(t testing.TB, engine string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", engine, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

func convertFiles(t testing.TB, files ...string) *Result {
	t.Helper()
	var in []Input
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, Input{Name: filepath.ToSlash(f), Data: b})
	}
	r, err := Convert(in)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// lintKnown are the converted policies whose lint errors are the source's
// own CEL, copied as it is (a Kyverno MutatingPolicy maps field for
// field): lint checks every branch against every kind the policy matches,
// kube-apiserver only the branch taken.
var lintKnown = map[string]string{
	"kyverno-add-castai-removal-disabled": "Object.spec.template in the branch for Jobs, checked for CronJobs too",
	// Kyverno's autogen for the Pod controllers, as Kyverno writes it: it
	// rewrites neither jsonPatch expressions nor Object.metadata{…}, so
	// they fail on the controllers in Kyverno as in kube-apiserver; the
	// converter notes each (lintClean holds it to that).
	"kyverno-add-capabilities-autogen-cronjobs":        "object.spec.containers of a Pod, not rewritten",
	"kyverno-add-capabilities-autogen-defaults":        "object.spec.containers of a Pod, not rewritten",
	"kyverno-remove-hostpath-volumes-autogen-cronjobs": "object.spec.volumes of a Pod, not rewritten",
	"kyverno-remove-hostpath-volumes-autogen-defaults": "object.spec.volumes of a Pod, not rewritten",
	"kyverno-add-safe-to-evict-autogen-cronjobs":       "Object.metadata{…} in the template, not rewritten",
	"kyverno-add-safe-to-evict-autogen-defaults":       "Object.metadata{…} in the template, not rewritten",
}

// lintClean fails t when mutatis lint finds problems in the converted
// policies (API validation, CEL compilation, the schema-aware checks).
func lintClean(t *testing.T, comp *compiler.Compiler, r *Result) {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	if b.Len() == 0 {
		return
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "converted.yaml")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := manifest.Load(context.Background(), []string{p}, nil)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, b.String())
	}
	if len(set.Rejected) > 0 {
		for _, p := range set.Rejected {
			errs, _ := comp.Validate(p.Policy)
			t.Errorf("%s rejected: %v", p.Policy.Name, errs)
		}
	}
	for _, p := range set.Policies {
		errs, err := comp.Validate(p.Policy)
		if err != nil || len(errs) > 0 {
			t.Errorf("%s: %v %v", p.Policy.Name, err, errs)
		}
	}
	for _, f := range lint.Findings(comp, set, set.Objects, false) {
		if f.Severity == lint.Error && lintKnown[f.Name] == "" {
			t.Errorf("%s %s: %s: %s", f.Name, f.Field, f.Message, f.Expression)
		}
		// Kyverno's autogen, kept as Kyverno writes it, is never silent.
		if f.Severity == lint.Error && strings.Contains(f.Name, "-autogen-") && !slices.ContainsFunc(r.Notes, func(n Note) bool { return strings.Contains(n.Text, f.Name) }) {
			t.Errorf("%s: lint finds %s, and the converter says nothing of it: %v", f.Name, f.Message, r.Notes)
		}
	}
}

func TestCorpusGolden(t *testing.T) {
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, engine := range []string{"kyverno", "kyverno-mpol", "gatekeeper"} {
		for _, f := range corpusFiles(t, engine) {
			name := strings.TrimSuffix(filepath.Base(f), ".yaml")
			t.Run(engine+"/"+name, func(t *testing.T) {
				r := convertFiles(t, f)
				lintClean(t, comp, r)
				var got bytes.Buffer
				if err := r.WriteYAML(&got); err != nil {
					t.Fatal(err)
				}
				for _, s := range r.Summary() {
					got.WriteString("# " + s + "\n")
				}
				golden := filepath.Join("testdata", "golden", engine, name+".yaml")
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want) {
					t.Errorf("%s differs from the golden file (go test -update)\n%s", golden, got.String())
				}
			})
		}
	}
}
