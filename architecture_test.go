package mutatis

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

const modulePath = "github.com/mutatis-dev/mutatis"

// outsideModules are the short names docs/architecture.md gives the
// outside modules, and the import path prefixes they stand for. An item
// of the "depends on" column that is not a project package is one of
// these, or a path fragment (k8s.io/kubernetes, evanphx/json-patch, …)
// that some import of the package contains.
var outsideModules = map[string]string{
	"api":                     "k8s.io/api/",
	"apimachinery":            "k8s.io/apimachinery/",
	"apiserver":               "k8s.io/apiserver/",
	"apiextensions-apiserver": "k8s.io/apiextensions-apiserver/",
	"client-go":               "k8s.io/client-go/",
	"cel-go":                  "github.com/google/cel-go/",
	"cobra":                   "github.com/spf13/cobra",
	"prometheus":              "github.com/prometheus/client_golang/",
}

// TestArchitectureTable holds docs/architecture.md's table of packages to
// the code: every package of the module (but the root, which only pins
// tool dependencies) has a row; the "depends on" column names exactly the
// project packages its non-test files import, and every outside module it
// names is imported.
func TestArchitectureTable(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := packageRows(t, string(doc))
	imports := packageImports(t)
	for pkg, imps := range imports {
		if pkg == "" {
			continue
		}
		items, ok := rows[pkg]
		if !ok {
			t.Errorf("docs/architecture.md: no row for package %s", pkg)
			continue
		}
		var wantProject, gotProject []string
		for _, imp := range imps {
			if p, ok := strings.CutPrefix(imp, modulePath+"/"); ok {
				wantProject = append(wantProject, p)
			}
		}
		for _, item := range items {
			if _, ok := imports[item]; ok {
				gotProject = append(gotProject, item)
				continue
			}
			prefix, short := outsideModules[item]
			found := false
			for _, imp := range imps {
				if short && strings.HasPrefix(imp+"/", prefix) || !short && strings.Contains(imp, item) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("docs/architecture.md: %s depends on %q, which it does not import (a project package, a name of outsideModules, or a fragment of an import path)", pkg, item)
			}
		}
		slices.Sort(wantProject)
		slices.Sort(gotProject)
		if !slices.Equal(wantProject, gotProject) {
			t.Errorf("docs/architecture.md: %s depends on the project packages %v; it imports %v", pkg, gotProject, wantProject)
		}
	}
	for pkg := range rows {
		if _, ok := imports[pkg]; !ok {
			t.Errorf("docs/architecture.md: a row for %s, which is no package of the module", pkg)
		}
	}
}

// packageRows reads the "## Packages" table: package → the items of its
// "depends on" column ("—" is none).
func packageRows(t *testing.T, doc string) map[string][]string {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## Packages\n")
	if !ok {
		t.Fatal("docs/architecture.md has no \"## Packages\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 3 {
			t.Fatalf("docs/architecture.md: a row without 3 cells: %s", line)
		}
		pkg := strings.Trim(cells[0], "`")
		if _, dup := rows[pkg]; dup {
			t.Errorf("docs/architecture.md: two rows for %s", pkg)
		}
		var items []string
		for _, item := range strings.Split(cells[2], ",") {
			if item = strings.Trim(strings.TrimSpace(item), "`"); item != "" && item != "—" {
				items = append(items, item)
			}
		}
		rows[pkg] = items
	}
	return rows
}

// packageImports lists the module's packages (relative to the module, ""
// for the root) with the imports of their non-test files.
func packageImports(t *testing.T) map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], modulePath), "/")
		pkgs[pkg] = fields[1:]
	}
	return pkgs
}
