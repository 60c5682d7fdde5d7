package engine

import (
	"sync"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/mutation"
)

type invocationKey struct{ policy, binding, param string }

// reinvocation is the MutatingAdmissionPolicy plugin's state across the
// rounds of one request (upstream's policyReinvokeContext), kept in the
// request's chain.Context under the Evaluator; the zero value is the state
// before the first round.
type reinvocation struct {
	// changed tells that a policy changed the object in this round: the
	// plugin asks for the reinvocation round (SetShouldReinvoke).
	changed bool

	// lastOutput is the object as the policies last left it
	// (lastPolicyOutput); hasRun tells it is set.
	lastOutput map[string]any
	hasRun     bool
	previous   map[invocationKey]bool // reinvocable invocations since the last change
	reinvoke   map[invocationKey]bool // invocations to run in the reinvocation round
	// cache is what the request's mutations keep for the next ones
	// (mutation.Cache.Mutate).
	cache mutation.Cache
	// pool is where Release recycles the state (its Evaluator's).
	pool *sync.Pool
}

func (s *reinvocation) requireReinvokingPrevious() {
	if len(s.previous) == 0 {
		return
	}
	if s.reinvoke == nil {
		s.reinvoke = map[invocationKey]bool{}
	}
	for k := range s.previous {
		s.reinvoke[k] = true
	}
	clear(s.previous)
}

func (s *reinvocation) addPrevious(k invocationKey) {
	if s.previous == nil {
		s.previous = map[invocationKey]bool{}
	}
	s.previous[k] = true
}

// stateOf is e's state in rc, made on first use (from e's recycled
// states: Release).
func stateOf(rc *chain.Context, e *Evaluator) *reinvocation {
	if st, ok := rc.Value(e).(*reinvocation); ok {
		return st
	}
	st, _ := e.states.Get().(*reinvocation)
	if st == nil {
		st = &reinvocation{}
	}
	st.pool = e.states
	rc.SetValue(e, st)
	return st
}

// Release empties s (keeping its maps' room) and recycles it: the run of
// the chain is over.
func (s *reinvocation) Release() {
	pool := s.pool
	clear(s.previous)
	clear(s.reinvoke)
	*s = reinvocation{previous: s.previous, reinvoke: s.reinvoke}
	pool.Put(s)
}
