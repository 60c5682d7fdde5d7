package scheme

import (
	"go/ast"
	gobuild "go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoStateInTheScheme holds scheme and jsonpatch to "no global mutable
// state", in the style of TestNoStateInTheChain: no package-level variable
// of a type from sync or sync/atomic (a pool, a lock, a cache) and no
// exported package-level variable but errors (a knob such as a size limit)
// in their non-test files. What the fast paths build and recycle belongs
// to the Scheme (its planner: plans, emit's pool); a limit is a constant
// or an argument. The exceptions are named here and, with their reasons,
// in docs/architecture.md.
func TestNoStateInTheScheme(t *testing.T) {
	allowed := map[string]bool{
		// k8s.io/kubernetes's legacyscheme.Scheme is process-wide upstream
		// (the registry strategies hold it): registered once per process.
		"scheme.kubeOnce": true,
		// The default Service registry, used only for dry runs: built once,
		// it holds no request's state.
		"scheme.serviceStore": true,
	}
	fset := token.NewFileSet()
	for _, dir := range []string{".", "../jsonpatch"} {
		for _, v := range packageVars(t, fset, dir) {
			if allowed[v.qualified] {
				continue
			}
			if v.name.IsExported() && !strings.HasPrefix(v.name.Name, "Err") {
				t.Errorf("%s: exported package-level variable %s: make it a constant or an argument", fset.Position(v.name.Pos()), v.qualified)
			}
			ast.Inspect(v.spec, func(n ast.Node) bool {
				if _, isFunc := n.(*ast.FuncLit); isFunc {
					return false // what a function body uses is not the variable's type
				}
				sel, isSel := n.(*ast.SelectorExpr)
				if !isSel {
					return true
				}
				if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "sync" || pkg.Name == "atomic") {
					t.Errorf("%s: package-level %s of type %s.%s: give it to a value its caller owns", fset.Position(v.name.Pos()), v.qualified, pkg.Name, sel.Sel.Name)
					return false
				}
				return true
			})
		}
	}
}

// packageVar is a package-level variable and its declaration.
type packageVar struct {
	qualified string // package.name
	name      *ast.Ident
	spec      *ast.ValueSpec
}

// packageVars lists the package-level variables of the non-test Go files
// of the package in dir.
func packageVars(t *testing.T, fset *token.FileSet, dir string) []packageVar {
	t.Helper()
	pkg, err := gobuild.ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []packageVar
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			if gd, isGen := decl.(*ast.GenDecl); isGen && gd.Tok == token.VAR {
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for _, id := range vs.Names {
						out = append(out, packageVar{pkg.Name + "." + id.Name, id, vs})
					}
				}
			}
		}
	}
	return out
}
