package validating

import (
	"sync/atomic"

	"github.com/mutatis-dev/mutatis/compiler"
)

// Sharing turns the sharing of evaluations across policies (share.go) on
// or off in e and returns the counter of the shared results e uses from
// now on.
func Sharing(e *Evaluator, on bool) *atomic.Int64 {
	e.noShare = !on
	e.replays = new(atomic.Int64)
	return e.replays
}

// CachedCompilations is the number of compilations comp's compiler keeps.
func CachedCompilations(comp *Compiler) int {
	c, err := comp.comp()
	if err != nil {
		return 0
	}
	return c.CachedValidating()
}

// CompiledOf is the compilation e holds of the named policy, nil for none.
func CompiledOf(e *Evaluator, name string) *compiler.ValidatingPolicy {
	for i := range e.hooks {
		if e.hooks[i].Policy.Name == name {
			return e.hooks[i].compiled
		}
	}
	return nil
}

// RememberedParams is the number of params binding j of the named policy
// remembers of its last collection, -1 for none.
func RememberedParams(e *Evaluator, name string, j int) int {
	for i := range e.hooks {
		if e.hooks[i].Policy.Name == name {
			if c := e.hooks[i].collections[j].Load(); c != nil {
				return len(c.params)
			}
		}
	}
	return -1
}
