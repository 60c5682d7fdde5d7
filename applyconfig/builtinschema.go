package applyconfig

import (
	_ "embed" // the generated schema
	"fmt"

	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/mutatis-dev/mutatis/applyconfig/internal/clientgoschema"
)

//go:generate go run ./internal/schemagen -client-go v0.37.1 -out zz_generated_builtin_schema.json

// builtinSchemaJSON is client-go's structured-merge-diff schema of the
// built-in kinds (the one applyconfigurations.NewTypeConverter parses from
// YAML, validating it first), parsed and validated by the generator and
// written as JSON, which decodes many times faster: a process that merges
// one ApplyConfiguration of a built-in kind no longer spends most of its
// start-up parsing YAML (docs/performance.md). TestBuiltinSchemaIsClientGos
// holds it to the client-go module of the build.
//
//go:embed zz_generated_builtin_schema.json
var builtinSchemaJSON []byte

// builtinParser returns a parser of the built-in kinds' schema whose
// Schema is reflect.DeepEqual to that of client-go's internal.Parser().
func builtinParser() (*typed.Parser, error) {
	s, err := clientgoschema.Decode(builtinSchemaJSON)
	if err != nil {
		return nil, fmt.Errorf("the built-in kinds' schema: %w", err)
	}
	p := &typed.Parser{}
	p.Schema.Types = s.Types
	return p, nil
}
