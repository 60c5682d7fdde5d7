package applyconfig

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/applyconfig/internal/clientgoschema"
)

// The embedded schema is client-go's, as the build's client-go parses it
// (typed.NewParser of applyconfigurations/internal's schemaYAML): it was
// generated from the same version, and regenerating it gives the same
// bytes.
func TestBuiltinSchemaIsClientGos(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/client-go").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/client-go: %v", err)
	}
	want, err := clientgoschema.Parse(filepath.Join(strings.TrimSpace(string(out)), clientgoschema.File))
	if err != nil {
		t.Fatal(err)
	}
	p, err := builtinParser()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Schema.Types) != len(want.Types) || len(want.Types) < 500 {
		t.Fatalf("%d types embedded, client-go has %d", len(p.Schema.Types), len(want.Types))
	}
	for i := range want.Types {
		if !reflect.DeepEqual(p.Schema.Types[i], want.Types[i]) {
			t.Fatalf("type %s differs from client-go's:\n got %#v\nwant %#v (go generate ./applyconfig)", want.Types[i].Name, p.Schema.Types[i], want.Types[i])
		}
	}
	source, err := clientgoschema.GoSource(want, "applyconfig", clientgoschema.Var, clientgoschema.Generator)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("zz_generated_builtin_schema.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(source) != string(committed) {
		t.Errorf("zz_generated_builtin_schema.go is not what the generator writes from client-go's schema: go generate ./applyconfig")
	}
}
