package scheme

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	vfield "k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
)

// TestValidationErrorsAreBounded: a refusal lists at most
// MaxValidationErrors errors and "… and M more" (issue 31, defect 3); a
// ConfigMap of 20,000 invalid finalizers is refused at once by the
// metadata precheck (upstream's validation took 47 s: quadratic in
// rest.gatherDeclarativeValidationMismatches), 150 go through upstream's
// validation and are bounded after it, and a few are kube-apiserver's 422
// unchanged.
func TestValidationErrorsAreBounded(t *testing.T) {
	s := New()
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	first := `ConfigMap "c" is invalid: [metadata.finalizers: Invalid value: "bad finalizer 0": name part must consist of alphanumeric characters`
	for _, c := range []struct {
		name   string
		n      int
		suffix string
		within time.Duration
	}{
		{"a few: kube-apiserver's message", 3, `metadata.finalizers[2]: Invalid value: "bad finalizer 2": name is neither a standard finalizer name nor is it fully qualified]`, 0},
		{"150: upstream's validation, bounded", 150, `, … and 200 more]`, 0},
		{"20,000: refused before upstream's validation", 20000, `, … and 39900 more in metadata alone: the rest of the object was not validated]`, 10 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := configMapWithFinalizers(c.n)
			start := time.Now()
			v, err := s.Validate(context.Background(), requestFor(admission.Create, obj, gvk), obj, nil)
			took := time.Since(start)
			if err != nil || v == nil || v.Invalid == nil {
				t.Fatalf("%v, %+v; want a 422", err, v)
			}
			st := v.Invalid.ErrStatus
			if st.Code != 422 || st.Reason != "Invalid" || st.Details.Kind != "ConfigMap" || st.Details.Name != "c" {
				t.Errorf("status %d %s %+v", st.Code, st.Reason, st.Details)
			}
			if !strings.HasPrefix(st.Message, first) || !strings.HasSuffix(st.Message, c.suffix) {
				t.Errorf("message %.300q … %q", st.Message, st.Message[max(0, len(st.Message)-200):])
			}
			// Two errors a finalizer (apimachinery's and core's).
			if want := min(2*c.n, MaxValidationErrors); len(st.Details.Causes) != want {
				t.Errorf("%d causes, want %d", len(st.Details.Causes), want)
			}
			if got := strings.Count(st.Message, "metadata.finalizers"); got != min(2*c.n, MaxValidationErrors) {
				t.Errorf("%d errors in the message", got)
			}
			if c.within > 0 && took > c.within {
				t.Errorf("took %s, want under %s", took, c.within)
			}
			t.Logf("%d finalizers: %s", c.n, took)
		})
	}
}

// FuzzBoundInvalid: boundInvalid leaves a refusal of up to
// MaxValidationErrors distinct errors as kube-apiserver's, and bounds a
// longer one to a prefix of kube-apiserver's message, its first causes,
// and "… and M more" (M the distinct errors left out).
func FuzzBoundInvalid(f *testing.F) {
	f.Add(3, 1, "bad")
	f.Add(250, 7, "x")
	f.Add(101, 1000, "")
	f.Fuzz(func(t *testing.T, n, mod int, value string) {
		if n < 0 || n > 2000 || mod <= 0 {
			return
		}
		var errs vfield.ErrorList
		for i := range n {
			errs = append(errs, vfield.Invalid(vfield.NewPath("spec").Child("items").Index(i%mod), value, "must be valid"))
		}
		upstream := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "d", errs)
		got := boundInvalid(upstream)
		d := distinct(errs)
		if d <= MaxValidationErrors {
			if got != upstream {
				t.Fatalf("%d distinct errors bounded: %q", d, got.ErrStatus.Message)
			}
			return
		}
		msg := got.ErrStatus.Message
		tail := fmt.Sprintf(", … and %d more]", d-MaxValidationErrors)
		if !strings.HasSuffix(msg, tail) {
			t.Fatalf("message %q does not end with %q", msg, tail)
		}
		if head := strings.TrimSuffix(msg, tail); !strings.HasPrefix(upstream.ErrStatus.Message, head+", ") {
			t.Fatalf("bounded %q is not a prefix of upstream's %q", head, upstream.ErrStatus.Message)
		}
		if len(got.ErrStatus.Details.Causes) != MaxValidationErrors || got.ErrStatus.Code != 422 {
			t.Fatalf("%d causes, code %d", len(got.ErrStatus.Details.Causes), got.ErrStatus.Code)
		}
	})
}
