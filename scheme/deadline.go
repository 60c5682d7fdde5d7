package scheme

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultValidationTimeout bounds the registry's validation of one object
// when the caller's context has no earlier deadline.
//
// Upstream's validation is quadratic in the number of errors it finds:
// rest.gatherDeclarativeValidationMismatches compares every imperative
// error with every declarative one, so a ConfigMap of 20,000 invalid
// finalizers (80 KB) took 47 s (docs/reliability.md, R3-5). kube-apiserver
// pays it too, within its 60 s request timeout; mutatis's commands stop
// waiting after this bound and report it.
const DefaultValidationTimeout = 10 * time.Second

// ErrValidationTimeout is wrapped by the error Validate returns when the
// registry's validation does not finish in time.
var ErrValidationTimeout = errors.New("the registry's validation did not finish")

// validateWithin runs validate and waits for it until ctx's deadline, or
// DefaultValidationTimeout when ctx has none or a later one. The
// validation cannot be interrupted (upstream's code takes no context
// there): past the deadline it is left to finish in the background, its
// result dropped, and an error naming the object is returned.
func validateWithin(ctx context.Context, req Request, validate func() (*Validation, error)) (*Validation, error) {
	timeout, within := DefaultValidationTimeout, fmt.Sprintf("within %s", DefaultValidationTimeout)
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout, within = time.Until(d), "before the deadline"
	}
	type outcome struct {
		v   *Validation
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		v, err := validate()
		done <- outcome{v, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case o := <-done:
		return o.v, o.err
	case <-t.C:
	case <-ctx.Done():
	}
	name := req.Name
	if req.Namespace != "" {
		name = req.Namespace + "/" + name
	}
	return nil, fmt.Errorf("validating %s %q: %w %s (its time grows with the square of the errors it finds: docs/reliability.md)", req.Kind.Kind, name, ErrValidationTimeout, within)
}
