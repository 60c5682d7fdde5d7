// Command openapigen writes the OpenAPI definitions of the built-in kinds
// that costs sizes CEL expressions by (costs/internal/kindschema): the
// definitions kube-controller-manager's admission policy type checker
// resolves (k8s.io/kubernetes/pkg/generated/openapi of the k8s.io/kubernetes
// version in go.mod), reduced to what common.SchemaDeclType reads.
//
// Only package scheme may import k8s.io/kubernetes, and its generated
// OpenAPI package needs modules mutatis' go.mod does not list; so the half
// that imports it (dump/main.go, excluded from builds) runs with a copy of
// go.mod in a temporary directory, which the go command completes there
// (-mod=mod -modfile): the module's own go.mod and go.sum are never
// touched.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	out := flag.String("out", "zz_generated_definitions.json", "output file")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("openapigen: ")
	abs, err := filepath.Abs(*out)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := generate(ctx, abs); err != nil {
		log.Fatal(err)
	}
}

// generate runs dump/main.go with a temporary copy of the module file.
func generate(ctx context.Context, out string) error {
	gomod, err := goCmd(ctx, "", "env", "GOMOD")
	if err != nil {
		return err
	}
	gomod = strings.TrimSpace(gomod)
	if gomod == "" || gomod == os.DevNull {
		return fmt.Errorf("not inside the mutatis module")
	}
	root := filepath.Dir(gomod)
	tmp, err := os.MkdirTemp("", "openapigen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			return err
		}
	}
	_, err = goCmd(ctx, root, "run", "-mod=mod", "-modfile="+filepath.Join(tmp, "go.mod"),
		filepath.Join(root, "costs", "internal", "openapigen", "dump", "main.go"), "-out", out)
	return err
}

func goCmd(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	os.Stderr.Write(stderr.Bytes())
	return stdout.String(), nil
}
