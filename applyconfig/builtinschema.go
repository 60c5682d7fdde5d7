package applyconfig

import (
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

//go:generate go run ./internal/schemagen -client-go v0.37.1 -out zz_generated_builtin_schema.go

// builtinSchemaTypes (zz_generated_builtin_schema.go) is client-go's
// structured-merge-diff schema of the built-in kinds (the one
// applyconfigurations.NewTypeConverter parses from YAML, validating it
// first), parsed and validated by the generator and written as a Go
// literal that the compiler lays out in the binary: a process that merges
// one ApplyConfiguration of a built-in kind or checks a policy against a
// built-in schema no longer spends most of its start-up parsing YAML, or
// decoding a copy of it (docs/performance.md). TestBuiltinSchemaIsClientGos
// holds it to the client-go module of the build. Never modified: parsers
// copy the slice header, structured-merge-diff reads the types.

// builtinParser returns a parser of the built-in kinds' schema whose
// Schema is reflect.DeepEqual to that of client-go's internal.Parser().
func builtinParser() (*typed.Parser, error) {
	p := &typed.Parser{}
	p.Schema.Types = builtinSchemaTypes
	return p, nil
}
