package scheme

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// configMapWithFinalizers is a ConfigMap with n invalid finalizers.
func configMapWithFinalizers(n int) map[string]any {
	fs := make([]any, n)
	for i := range fs {
		fs[i] = fmt.Sprintf("bad finalizer %d", i)
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "default", "finalizers": fs}}
}

// TestValidationHasADeadline: the registry's validation of a ConfigMap of
// 450 invalid finalizers (900 errors: under the metadata precheck's bound, which refuses
// more at once; 20,000 took 47 s: quadratic in upstream's
// rest.gatherDeclarativeValidationMismatches) ends at the context's
// deadline with ErrValidationTimeout naming the object, while a ConfigMap
// of a few invalid finalizers still gets kube-apiserver's 422.
func TestValidationHasADeadline(t *testing.T) {
	s := New()
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	few := configMapWithFinalizers(3)
	v, err := s.Validate(context.Background(), requestFor(admission.Create, few, gvk), few, nil)
	if err != nil || v == nil || v.Invalid == nil || v.Invalid.ErrStatus.Code != 422 {
		t.Fatalf("a few invalid finalizers: %v, %+v; want a 422", err, v)
	}

	// The deadline races the validation's goroutine: a millisecond, well
	// under the tens of milliseconds the 450 finalizers take on a fast
	// machine without -race (hundreds with it), so that the deadline wins
	// however the two are scheduled.
	many := configMapWithFinalizers(450)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Validate(ctx, requestFor(admission.Create, many, gvk), many, nil)
	if !errors.Is(err, ErrValidationTimeout) {
		t.Fatalf("error %v, want ErrValidationTimeout", err)
	}
	if want := `validating ConfigMap "default/c": the registry's validation did not finish before the deadline`; err.Error()[:len(want)] != want {
		t.Errorf("error %q, want it to start with %q", err, want)
	}
	t.Logf("returned after %s", time.Since(start))
}
