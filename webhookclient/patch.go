package webhookclient

import (
	"errors"
	"fmt"
	"sync/atomic"

	evanphx "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/jsonpatch"
	"github.com/mutatis-dev/mutatis/scheme"
)

// ApplyPatch applies a webhook's decoded JSON patch to obj, of kind, as
// kube-apiserver's mutating webhook dispatcher does: the object encoded
// as JSON, the patch applied to the bytes by evanphx/json-patch v4 (the
// library kube-apiserver uses, and whose semantics package jsonpatch
// reproduces for CEL patches), and the result decoded back without
// strictness into the kind's Go type (scheme.DecodeWebhookPatchResult).
// It returns the patched object, not yet defaulted, and its kind. The
// errors are the ones kube-apiserver wraps into its 500.
//
// A webhook's patch is bytes a peer sent, not values a CEL program made:
// applying it to the encoded object with the library itself keeps every
// quirk of the bytes (numbers, duplicate keys, unknown operations) as
// kube-apiserver meets them.
//
// evanphx/json-patch panics on some patches (a write below a null an
// earlier operation set, for one); kube-apiserver's handler recovers the
// panic of the whole request as a 500. ApplyPatch recovers it as an error
// wrapping ErrPatchPanicked, which the dispatcher turns into a 500 of the
// request: the outcome is the same refusal, in other words.
func ApplyPatch(s *scheme.Scheme, obj map[string]any, kind schema.GroupVersionKind, patch evanphx.Patch) (out map[string]any, outKind schema.GroupVersionKind, err error) {
	limitCopies()
	defer func() {
		if r := recover(); r != nil {
			out, outKind, err = nil, schema.GroupVersionKind{}, fmt.Errorf("%w: %v", ErrPatchPanicked, r)
		}
	}()
	js, err := jsonvalue.Marshal(obj)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	patched, err := patch.Apply(js)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	return s.DecodeWebhookPatchResult(patched, kind)
}

// ErrPatchPanicked is wrapped by the error of ApplyPatch for a patch on
// which evanphx/json-patch panicked.
var ErrPatchPanicked = errors.New("applying the webhook's JSON patch panicked")

// limitCopies puts on evanphx/json-patch v4's copy operations the limit
// kube-apiserver puts on them (k8s.io/apiserver's server.Config,
// JSONPatchMaxCopyBytes: 3 MiB of accumulated copies per patch), as it
// does: the library's own process-wide setting, lowered to the limit
// unless something set a lower one. kube-apiserver sets it when its
// server is built; ApplyPatch sets it before the first patch it applies,
// so that a webhook's patch is refused past the limit with the library's
// error, as in kube-apiserver (package jsonpatch keeps the same limit for
// CEL patches, as a constant).
func limitCopies() {
	for {
		existing := atomic.LoadInt64(&evanphx.AccumulatedCopySizeLimit)
		if existing > 0 && existing <= jsonpatch.AccumulatedCopySizeLimit {
			return
		}
		if atomic.CompareAndSwapInt64(&evanphx.AccumulatedCopySizeLimit, existing, jsonpatch.AccumulatedCopySizeLimit) {
			return
		}
	}
}
