package scheme

import (
	"go/ast"
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
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for _, name := range vs.Names {
						qualified := f.Name.Name + "." + name.Name
						if allowed[qualified] {
							continue
						}
						if name.IsExported() && !strings.HasPrefix(name.Name, "Err") {
							t.Errorf("%s: exported package-level variable %s: make it a constant or an argument", fset.Position(name.Pos()), qualified)
						}
						ast.Inspect(vs, func(n ast.Node) bool {
							if _, isFunc := n.(*ast.FuncLit); isFunc {
								return false // what a function body uses is not the variable's type
							}
							if sel, ok := n.(*ast.SelectorExpr); ok {
								if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "sync" || pkg.Name == "atomic") {
									t.Errorf("%s: package-level %s of type %s.%s: give it to a value its caller owns", fset.Position(name.Pos()), qualified, pkg.Name, sel.Sel.Name)
									return false
								}
							}
							return true
						})
					}
				}
			}
		}
	}
}
