package costs

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzProfile: --assume and profile files never panic, and what they accept
// sizes its key's path.
func FuzzProfile(f *testing.F) {
	f.Add("spec.containers=20", []byte("containers[*].env: 50\n"))
	f.Add("object.spec.template.spec.containers=7", []byte("{\"list\": 3}"))
	f.Add("a[*][*].b=1", []byte("- 1\n"))
	f.Add("=", []byte("x: 1.5\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, assume string, file []byte) {
		p := DefaultProfile()
		if err := p.Assume(assume); err == nil {
			for _, e := range p.Entries() {
				if e.Size < 0 {
					t.Fatalf("negative size %+v", e)
				}
			}
		}
		path := filepath.Join(dir, "profile.yaml")
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = p.LoadProfileFile(path)
		p.lookup([]string{"object", "spec", "containers", "@items", "env"}, "list")
		p.lookup(nil, "")
	})
}
