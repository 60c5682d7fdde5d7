package scheme

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	vfield "k8s.io/apimachinery/pkg/util/validation/field"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
)

// MaxValidationErrors bounds the errors a refusal of the registry's
// validation lists: past it, the message names the first
// MaxValidationErrors and "… and M more", and the Status's causes are the
// first MaxValidationErrors. kube-apiserver's own 422 lists every error
// (apierrors.NewInvalid has no bound; the only "(and N more)" in
// k8s.io/apiserver is the corrupt-object deleter's); docs/fidelity.md
// (#20) names the difference.
const MaxValidationErrors = 100

// metadataPrecheckErrors is how many errors the metadata alone may give
// before Validate refuses a CREATE without running the registry's
// validation: upstream's validation compares its errors with each other
// (rest.gatherDeclarativeValidationMismatches), in time that grows with
// their square (20,000 invalid finalizers: 47 s); up to this many it takes
// under a second.
const metadataPrecheckErrors = 1000

// boundInvalid returns status bounded to MaxValidationErrors distinct
// errors, or status itself when it has no more: the message lists the
// first ones as kube-apiserver's aggregate does (`[a, b, …]`, duplicates
// left out) and ends with `… and M more`.
func boundInvalid(status *apierrors.StatusError) *apierrors.StatusError {
	if status == nil || status.ErrStatus.Details == nil || len(status.ErrStatus.Details.Causes) <= MaxValidationErrors {
		return status
	}
	d := status.ErrStatus.Details
	items := make([]boundItem, len(d.Causes))
	for i, c := range d.Causes {
		// A cause's message is its error's body (field.Error.ErrorBody).
		items[i] = boundItem{text: c.Field + ": " + c.Message, cause: c}
	}
	if bounded, more := boundedInvalid(schema.GroupKind{Group: d.Group, Kind: d.Kind}, d.Name, items, ""); more > 0 {
		return bounded
	}
	return status
}

// boundItem is one error of a refusal: its text in the message and its
// cause.
type boundItem struct {
	text  string
	cause metav1.StatusCause
}

func itemsOf(errs vfield.ErrorList) []boundItem {
	items := make([]boundItem, len(errs))
	for i, e := range errs {
		items[i] = boundItem{text: e.Error(), cause: metav1.StatusCause{Type: metav1.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field}}
	}
	return items
}

// boundedInvalid is the 422 of apierrors.NewInvalid(gk, name, …) with
// the first MaxValidationErrors distinct items of items, the message
// ending with "… and M more" and tail; more is M.
func boundedInvalid(gk schema.GroupKind, name string, items []boundItem, tail string) (status *apierrors.StatusError, more int) {
	seen := map[string]bool{}
	var shown []string
	status = apierrors.NewInvalid(gk, name, nil)
	status.ErrStatus.Details.Causes = nil
	for _, it := range items {
		if seen[it.text] {
			continue
		}
		seen[it.text] = true
		if len(shown) == MaxValidationErrors {
			more++
			continue
		}
		shown = append(shown, it.text)
		status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, it.cause)
	}
	status.ErrStatus.Message = fmt.Sprintf("%s %q is invalid: [%s, … and %d more%s]", gk.String(), name, strings.Join(shown, ", "), more, tail)
	return status, more
}

// distinct counts the distinct errors of errs as the aggregate of a 422
// does.
func distinct(errs vfield.ErrorList) int {
	seen := map[string]bool{}
	for _, e := range errs {
		seen[e.Error()] = true
	}
	return len(seen)
}

// metadataPrecheck refuses the CREATE of an object whose metadata alone
// has more than metadataPrecheckErrors errors (finalizers, labels,
// annotations, ownerReferences, managedFields: core's ValidateObjectMeta
// for a built-in kind, apimachinery's ValidateObjectMetaAccessor for a
// custom resource, which their validation runs first, so that the first
// errors are kube-apiserver's unless the name is invalid too: the name is
// not checked here),
// distinct ones, before upstream's validation spends the square of them: the first
// MaxValidationErrors of them and "… and M more in metadata alone". nil
// when the metadata has no more.
func metadataPrecheck(req Request, obj map[string]any, builtin bool) *apierrors.StatusError {
	u := &unstructured.Unstructured{Object: obj}
	anyName := func(string, bool) []string { return nil }
	path := vfield.NewPath("metadata")
	var errs vfield.ErrorList
	if builtin {
		// A built-in kind's validation runs core's, which adds its own
		// check of each finalizer after apimachinery's.
		var meta metav1.ObjectMeta
		m, _ := obj["metadata"].(map[string]any)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &meta); err != nil {
			return nil // the registry's decoding will say
		}
		errs = corevalidation.ValidateObjectMeta(&meta, meta.Namespace != "", anyName, path)
	} else {
		errs = apimachineryvalidation.ValidateObjectMetaAccessor(u, u.GetNamespace() != "", anyName, path)
	}
	if len(errs) <= metadataPrecheckErrors || distinct(errs) <= metadataPrecheckErrors {
		// Duplicates cost upstream no more than one each.
		return nil
	}
	status, _ := boundedInvalid(req.Kind.GroupKind(), u.GetName(), itemsOf(errs), " in metadata alone: the rest of the object was not validated")
	return status
}
