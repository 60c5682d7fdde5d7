package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EWrapperVersions holds the kube-apiserver wrapper module
// (build/kube-apiserver/go.mod) to mutatis' go.mod: every module both
// require is required at the same version (after their replace directives).
// build.sh builds kube-apiserver with -trimpath and CGO_ENABLED=0, as `make
// dist` builds mutatis, so that with the same versions it reuses the
// packages compiled for the host's release archive (about 1,570 of its
// 2,080 packages; .ci/run, docs/ci.md). One module at another version
// changes every package above it. Runs without the e2e binaries.
func TestE2EWrapperVersions(t *testing.T) {
	main := requiredVersions(t, filepath.Join("..", "..", "go.mod"))
	wrapper := requiredVersions(t, filepath.Join("build", "kube-apiserver", "go.mod"))
	shared := 0
	for mod, v := range wrapper {
		mv, ok := main[mod]
		if !ok {
			continue
		}
		shared++
		if mv != v {
			t.Errorf("%s: %s in test/e2e/build/kube-apiserver/go.mod, %s in go.mod: require %s there too (cd test/e2e/build/kube-apiserver && go get %s@%s && go mod tidy)", mod, v, mv, mv, mod, mv)
		}
	}
	if shared < 100 {
		t.Errorf("only %d modules in both go.mod files: parsing went wrong", shared)
	}
}

// requiredVersions reads the require and replace directives of a go.mod:
// module path → the version built (the replacement's when replaced).
func requiredVersions(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	required, replaced := map[string]string{}, map[string]string{}
	block := ""
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "//")
		f := strings.Fields(line)
		kind := block
		switch {
		case len(f) == 0:
			continue
		case len(f) == 2 && f[1] == "(":
			block = f[0]
			continue
		case f[0] == ")":
			block = ""
			continue
		case block == "":
			kind, f = f[0], f[1:]
		}
		switch {
		case kind == "require" && len(f) == 2:
			required[f[0]] = f[1]
		case kind == "replace" && len(f) >= 4 && f[len(f)-3] == "=>":
			// old [version] => new version
			replaced[f[0]] = f[len(f)-1]
		}
	}
	for mod, v := range replaced {
		if _, ok := required[mod]; ok {
			required[mod] = v
		}
	}
	return required
}
