package modsrc

import (
	"context"
	"strings"
	"testing"
)

func TestDownloadNamesTheModuleItCannotGet(t *testing.T) {
	for _, mod := range []string{"not a module path@v1.0.0", "example.invalid/mutatis/none@vX"} {
		dir, err := Download(context.Background(), mod)
		if err == nil || dir != "" || !strings.Contains(err.Error(), "go mod download "+mod) {
			t.Errorf("Download(%q) = %q, %v; want an error naming it", mod, dir, err)
		}
	}
}
