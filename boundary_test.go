package mutatis

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOnlySchemeImportsKubernetes holds the rule of docs/architecture.md
// ("Why k8s.io/kubernetes"): only scheme and its subpackages import
// k8s.io/kubernetes; every other package of the module reaches
// kube-apiserver's code through them.
func TestOnlySchemeImportsKubernetes(t *testing.T) {
	for pkg, imports := range packageImports(t) {
		if pkg == "scheme" || strings.HasPrefix(pkg, "scheme/") {
			continue
		}
		for _, imp := range imports {
			if imp == "k8s.io/kubernetes" || strings.HasPrefix(imp, "k8s.io/kubernetes/") {
				t.Errorf("%s imports %s: only scheme/… may import k8s.io/kubernetes", pkg, imp)
			}
		}
	}
}

// TestNoFastOrReferenceInTheAPI holds the rule that library users see one
// name per operation: no exported identifier of the module's non-test
// files outside internal/ packages ends in Fast or Reference (a fast path
// and its reference are unexported, proven equal by their tests).
func TestNoFastOrReferenceInTheAPI(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == "." {
				return nil
			}
			name := d.Name()
			if name == "internal" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, name := range exportedNames(f) {
			if strings.HasSuffix(name.Name, "Fast") || strings.HasSuffix(name.Name, "Reference") {
				t.Errorf("%s: exported %s: a fast path or a reference belongs unexported or in an internal/ package", fset.Position(name.Pos()), name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// exportedNames are the exported identifiers f declares: functions,
// methods, types, constants, variables, and the fields and interface
// methods of its types.
func exportedNames(f *ast.File) []*ast.Ident {
	var out []*ast.Ident
	add := func(ids ...*ast.Ident) {
		out = append(out, slices.DeleteFunc(ids, func(id *ast.Ident) bool { return !id.IsExported() })...)
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			add(d.Name)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					add(s.Name)
					ast.Inspect(s.Type, func(n ast.Node) bool {
						if fl, ok := n.(*ast.FieldList); ok {
							for _, field := range fl.List {
								add(field.Names...)
							}
						}
						return true
					})
				case *ast.ValueSpec:
					add(s.Names...)
				}
			}
		}
	}
	return out
}

// TestNoStateInTheChain holds the chain and its stages (chain, engine,
// cluster, webhookclient) to "no global mutable state": no package-level
// variable of a type from sync or sync/atomic (a pool, a lock, a counter)
// in their non-test files. What a run recycles belongs to a value its
// caller owns (chain.Runner, an Evaluator's states).
func TestNoStateInTheChain(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range []string{"chain", "engine", "cluster", "webhookclient"} {
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
				ast.Inspect(gd, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok {
						if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "sync" || pkg.Name == "atomic") {
							t.Errorf("%s: package-level %s.%s: state belongs to a value its caller owns", fset.Position(sel.Pos()), pkg.Name, sel.Sel.Name)
						}
					}
					return true
				})
			}
		}
	}
}
