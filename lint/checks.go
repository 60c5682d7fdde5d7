package lint

import (
	"sync"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
)

// Checks are what `mutatis apply` checks of its policies beside the
// loading of its other inputs and the first object's decoding, each on a
// goroutine of its own: the API validation (cluster.ValidatePolicies),
// whose error is the one reported whatever else is wrong, and the
// schema-aware checks (Findings).
type Checks struct {
	comp     *compiler.Compiler
	set      *manifest.Set
	validate func() error
	linted   chan struct{}
	findings []Finding
}

// StartChecks starts the API validation of the policies of set, compiled
// with comp.
func StartChecks(comp *compiler.Compiler, set *manifest.Set) *Checks {
	validated := make(chan error, 1)
	go func() { validated <- cluster.ValidatePolicies(comp, set.Policies) }()
	return &Checks{comp: comp, set: set, validate: sync.OnceValue(func() error { return <-validated })}
}

// Validation waits for the API validation and returns its error.
func (c *Checks) Validation() error { return c.validate() }

// Preceded returns the API validation's error when there is one (the
// error kube-apiserver's API validation would answer first), err
// otherwise.
func (c *Checks) Preceded(err error) error {
	if verr := c.validate(); verr != nil {
		return verr
	}
	return err
}

// Lint starts the schema-aware checks of the policies (Findings; objects
// are the cluster's objects, resources tells that the user gave them).
// It is called once.
func (c *Checks) Lint(objects []manifest.Object, resources bool) {
	c.linted = make(chan struct{})
	go func() {
		c.findings = Findings(c.comp, c.set, objects, resources)
		close(c.linted)
	}()
}

// Findings waits for the checks Lint started and returns their findings;
// none when Lint was not called.
func (c *Checks) Findings() []Finding {
	if c.linted == nil {
		return nil
	}
	<-c.linted
	return c.findings
}
