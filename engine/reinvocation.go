package engine

import (
	"context"
	"reflect"
	"sync"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/matching"
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

	// frame is the context carrying the shared CEL execution frame of the
	// request's passes (compiler.WithSharedFrame), made from frameParent,
	// the context the passes are run under; releaseFrame releases it.
	// The reinvocation round uses it again when it runs under the same
	// context (frameUnder).
	frame, frameParent context.Context
	releaseFrame       func()
	// requests are the AdmissionRequests the passes built, for the
	// request attributes requestsKey (requestsFor): the reinvocation
	// round's request differs from the first's in its object only, which
	// the AdmissionRequests of the policies do not hold.
	requests    requestSet
	requestsKey requestKey
	hasRequests bool

	// attrs are the admission.Attributes of the current pass, built on
	// first use (invoke).
	attrs lazyAttributes

	// invocations is the room of a pass's invocations (dispatch), kept
	// (emptied) when the state is recycled.
	invocations []invocation

	// paramKeys are the "namespace/name" keys of the params the state's
	// requests were invoked with (paramKey), kept when it is recycled.
	paramKeys []paramKey

	// rc is the request's chain.Context while a pass runs (Admit): the
	// run's room for the records' mutation outcomes (MutationRoom).
	rc *chain.Context

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

// frameUnder is ctx carrying a shared CEL execution frame for the
// evaluations of a pass: the one an earlier pass made under the same ctx,
// or a new one (the earlier one released).
func (s *reinvocation) frameUnder(ctx context.Context) context.Context {
	if s.frame != nil && sameContext(s.frameParent, ctx) {
		return s.frame
	}
	s.dropFrame()
	s.frame, s.releaseFrame = compiler.WithSharedFrame(ctx)
	s.frameParent = ctx
	return s.frame
}

// dropFrame releases the shared frame, if there is one.
func (s *reinvocation) dropFrame() {
	if s.releaseFrame != nil {
		s.releaseFrame()
	}
	s.frame, s.frameParent, s.releaseFrame = nil, nil, nil
}

// sameContext tells whether a and b are the same context (equal
// interfaces), without comparing values of a type that is not comparable.
func sameContext(a, b context.Context) bool {
	if a == nil || b == nil {
		return false
	}
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}

// requestKey is what of a request's attributes its AdmissionRequests are
// built from (matching.Attributes.AdmissionRequest): all but its objects.
type requestKey struct {
	attrs matching.Attributes
}

// keyOf is a's requestKey, and false when a's user cannot be compared
// (then no request is carried over).
func keyOf(a *matching.Attributes) (requestKey, bool) {
	k := requestKey{attrs: *a}
	k.attrs.Object, k.attrs.OldObject = nil, nil
	if u := a.UserInfo; u != nil && !reflect.TypeOf(u).Comparable() {
		return requestKey{}, false
	}
	return k, true
}

// requestsFor is the set of AdmissionRequests of a pass over a: the one an
// earlier pass filled for the same attributes (but for the objects), or
// an empty one.
func (s *reinvocation) requestsFor(a *matching.Attributes) *requestSet {
	k, ok := keyOf(a)
	if !ok {
		s.hasRequests = false
		s.requests = requestSet{}
		return &s.requests
	}
	if !s.hasRequests || s.requestsKey != k {
		s.requests, s.requestsKey, s.hasRequests = requestSet{}, k, true
	}
	return &s.requests
}

// maxKeptInvocations bounds the room for invocations a recycled state
// keeps (a request matched by many params is not the usual one).
const maxKeptInvocations = 256

// paramKey is a param's key in the reinvocation records: its namespace,
// "/", its name.
type paramKey struct{ namespace, name, key string }

// maxParamKeys bounds the param keys a state keeps.
const maxParamKeys = 16

// paramKey is namespace + "/" + name, the one the state made before when
// it has it: a binding's params are the same objects from one request to
// the next.
func (s *reinvocation) paramKey(namespace, name string) string {
	for _, k := range s.paramKeys {
		if k.namespace == namespace && k.name == name {
			return k.key
		}
	}
	key := namespace + "/" + name
	if len(s.paramKeys) == maxParamKeys {
		s.paramKeys = s.paramKeys[:0]
	}
	s.paramKeys = append(s.paramKeys, paramKey{namespace, name, key})
	return key
}

// Release empties s (keeping its maps' room) and recycles it: the run of
// the chain is over.
func (s *reinvocation) Release() {
	s.dropFrame()
	pool := s.pool
	clear(s.previous)
	clear(s.reinvoke)
	invocations := s.invocations
	if cap(invocations) > maxKeptInvocations {
		invocations = nil
	}
	clear(invocations[:cap(invocations)])
	*s = reinvocation{previous: s.previous, reinvoke: s.reinvoke, invocations: invocations[:0], paramKeys: s.paramKeys}
	pool.Put(s)
}
