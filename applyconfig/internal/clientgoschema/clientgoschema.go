// Package clientgoschema reads the structured-merge-diff schema of the
// built-in kinds out of client-go's source (applyconfigurations/internal,
// the string client-go parses on first use), for applyconfig's generator
// and the test that holds applyconfig's copy to it.
package clientgoschema

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"

	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// File is the file of the client-go module that holds the schema.
const File = "applyconfigurations/internal/internal.go"

// Var and Generator are the variable applyconfig's generated file declares
// and the generator its header names.
const (
	Var       = "builtinSchemaTypes"
	Generator = "applyconfig/internal/schemagen"
)

// Parse reads the schemaYAML variable of path (client-go's File) and
// parses it as client-go does (typed.NewParser: validated against
// structured-merge-diff's schema of schemas, then decoded).
func Parse(path string) (*schema.Schema, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var lit *ast.BasicLit
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || spec.Names[0].Name != "schemaYAML" || len(spec.Values) != 1 {
			return lit == nil
		}
		// typed.YAMLObject(`…`)
		if call, ok := spec.Values[0].(*ast.CallExpr); ok && len(call.Args) == 1 {
			lit, _ = call.Args[0].(*ast.BasicLit)
		}
		return false
	})
	if lit == nil || lit.Kind != token.STRING {
		return nil, fmt.Errorf("%s: no schemaYAML string literal", path)
	}
	text, err := strconv.Unquote(lit.Value)
	if err != nil {
		return nil, fmt.Errorf("%s: schemaYAML: %w", path, err)
	}
	p, err := typed.NewParser(typed.YAMLObject(text))
	if err != nil {
		return nil, fmt.Errorf("%s: schemaYAML: %w", path, err)
	}
	return &p.Schema, nil
}
