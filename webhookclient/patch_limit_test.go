package webhookclient

import (
	"context"
	"strings"
	"testing"

	evanphx "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/scheme"
)

// TestApplyPatchLimitsCopies: a webhook's patch whose copy operations
// accumulate more than 3 MiB is refused with evanphx/json-patch's error,
// as kube-apiserver (server.Config.JSONPatchMaxCopyBytes) refuses it; one
// below the limit applies.
func TestApplyPatchLimitsCopies(t *testing.T) {
	big := strings.Repeat("x", 1<<20) // 1 MiB
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "default"},
		"data":     map[string]any{"a": big}}
	kind := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	patch := func(copies int) evanphx.Patch {
		var ops []string
		for i := range copies {
			ops = append(ops, `{"op":"copy","from":"/data/a","path":"/data/c`+string(rune('0'+i))+`"}`)
		}
		p, err := evanphx.DecodePatch([]byte("[" + strings.Join(ops, ",") + "]"))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	s := scheme.New()
	if _, _, err := ApplyPatch(context.Background(), s, obj, kind, patch(2)); err != nil {
		t.Fatalf("2 MiB of copies: %v", err)
	}
	_, _, err := ApplyPatch(context.Background(), s, obj, kind, patch(4))
	if err == nil || !strings.Contains(err.Error(), "exceeding the limit 3145728") {
		t.Fatalf("4 MiB of copies: got %v, want evanphx's limit error", err)
	}
}
