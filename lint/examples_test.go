package lint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mutatis-dev/mutatis/manifest"
)

// The policies of examples/ are what users copy first: no check may find
// anything in them.
func TestExamplesLintClean(t *testing.T) {
	findings, set := lintFiles(t, false, "../examples")
	if len(set.Policies) == 0 {
		t.Fatal("no example policies")
	}
	if len(findings) > 0 {
		t.Fatalf("examples/ has findings:\n%s", renderFindings(findings))
	}
}

func TestLocate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	data := "# header\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    labels:\n      app.kubernetes.io/name: x\n  data:\n    k: v\n"
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		field     string
		line, col int
	}{
		{"data.k", 13, 8},
		{"metadata.labels[app.kubernetes.io/name]", 11, 31},
		{"metadata.name", 9, 11},
		{"spec.absent", 6, 3}, // the deepest node the path reaches: the item
	}
	for _, c := range cases {
		fs := []Finding{{Source: manifest.Source{File: file, Doc: 0, Item: 0}, Field: c.field}}
		Locate(fs)
		if fs[0].Line != c.line || fs[0].Column != c.col {
			t.Errorf("%s: line %d:%d, want %d:%d", c.field, fs[0].Line, fs[0].Column, c.line, c.col)
		}
	}
}

func FuzzLocate(f *testing.F) {
	f.Add([]byte("a: 1\n---\nspec:\n  mutations:\n  - x: 1\n"), "spec.mutations[0].x", 1)
	f.Add([]byte("{\"items\": [{\"a\": 1}]}"), "a", 0)
	f.Add([]byte("---\n--- x\n"), "[", 3)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, field string, doc int) {
		file := filepath.Join(dir, "f.yaml")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fs := []Finding{
			{Source: manifest.Source{File: file, Doc: doc, Item: -1}, Field: field},
			{Source: manifest.Source{File: file, Doc: doc, Item: doc}, Field: field},
		}
		Locate(fs) // must not panic
		for _, f := range fs {
			if f.Line < 0 || f.Column < 0 {
				t.Fatalf("negative position %d:%d", f.Line, f.Column)
			}
		}
	})
}
