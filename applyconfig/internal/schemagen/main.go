// Command schemagen writes applyconfig's copy of client-go's structured-merge-diff
// schema of the built-in kinds (applyconfigurations/internal's schemaYAML),
// parsed and validated by structured-merge-diff itself, as Go source: a
// literal the Go compiler lays out in the binary.
//
// client-go parses that YAML (≈ 430 KB) on first use, validating it against
// structured-merge-diff's schema of schemas: about 140 ms of CPU in every
// process that merges an ApplyConfiguration of a built-in kind or checks a
// policy against a built-in schema, most of a one-object `mutatis apply`;
// even a JSON copy took ≈ 23 ms to decode. The literal is the very same
// schema.Schema at no cost (TestBuiltinSchemaIsClientGos checks it against
// the client-go module of the build).
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"path/filepath"

	"github.com/mutatis-dev/mutatis/applyconfig/internal/clientgoschema"
	"github.com/mutatis-dev/mutatis/internal/modsrc"
)

func main() {
	version := flag.String("client-go", "v0.37.1", "k8s.io/client-go version to read")
	out := flag.String("out", "zz_generated_builtin_schema.go", "output file")
	flag.Parse()
	log.SetFlags(0)
	dir, err := modsrc.Download(context.Background(), "k8s.io/client-go@"+*version)
	if err != nil {
		log.Fatal(err)
	}
	s, err := clientgoschema.Parse(filepath.Join(dir, clientgoschema.File))
	if err != nil {
		log.Fatal(err)
	}
	b, err := clientgoschema.GoSource(s, "applyconfig", clientgoschema.Var, clientgoschema.Generator)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		log.Fatal(err)
	}
}
