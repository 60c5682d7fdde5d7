// Package modsrc finds the source of a Go module version through the Go
// module proxy, for the code generators (matching/internal/gen and
// deploy/internal/crdgen) that read Kubernetes' OpenAPI documents from
// k8s.io/kubernetes and k8s.io/api.
package modsrc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
)

// Download runs `go mod download -json mod` (mod is path@version) outside
// any module, so that the caller's go.mod is never touched, and returns the
// directory of the module's source in the module cache.
func Download(ctx context.Context, mod string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GO111MODULE=on")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	// With -json, a failed download still reports its error on stdout.
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		if runErr != nil {
			return "", fmt.Errorf("go mod download %s: %v\n%s", mod, runErr, stderr.String())
		}
		return "", fmt.Errorf("go mod download %s: %v", mod, err)
	}
	if info.Error != "" || info.Dir == "" || runErr != nil {
		return "", fmt.Errorf("go mod download %s: %s %v", mod, info.Error, runErr)
	}
	return info.Dir, nil
}
