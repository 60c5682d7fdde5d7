// Package chain is kube-apiserver's admission chain as a list of stages
// and one loop (k8s.io/apiserver v0.37.1 pkg/admission: chainAdmissionHandler
// in chain.go, the reinvoker of reinvocation.go): a Stage is one admission
// plugin as kube-apiserver names it (the built-in plugins, the
// MutatingAdmissionPolicy plugin, the MutatingAdmissionWebhook plugin), a
// Runner runs a list of them with kube-apiserver's reinvocation rule, and
// Result is what the whole run left, read whole by the tools that show it.
//
// A stage keeps its own state across the rounds of one request in the
// Context (upstream's ReinvocationContext.SetValue/Value, keyed by the
// stage), never in a struct the caller owns: a new stage is one more value
// in the list, never a new branch in the loop.
//
// The mutating chain reinvokes; a validating list (ValidatingAdmissionPolicy,
// PodSecurity, validating webhooks, after the registry's validation) is a
// second list run once with Runner.RunOnce: the same stages, outcome and result,
// no reinvocation.
package chain

import (
	"context"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// Stage is one admission plugin of a chain.
type Stage interface {
	// Name is the plugin's name as kube-apiserver names it
	// ("MutatingAdmissionPolicy", "MutatingAdmissionWebhook", a built-in
	// plugin's): Result.DeniedBy names the stage that refused.
	Name() string
	// Admit runs the stage once for the request a, whose Object is the
	// object as the stages before left it. rc is the request's
	// reinvocation context: IsReinvoke in the reinvocation round; the
	// stage calls SetShouldReinvoke when it changed the object, and keeps
	// its own state across rounds with rc.Value and rc.SetValue. A
	// refusal of the request is Outcome.Denied; the error is for failures
	// of mutatis itself.
	Admit(ctx context.Context, a *matching.Attributes, rc *Context) (Outcome, error)
}

// Admitter runs a whole chain for one request and answers with what it
// left: what a server answers with (source.Engine, the MutatingAdmissionPolicy
// stage alone inside kube-apiserver's reinvoker, and its per-failure-policy
// views).
type Admitter interface {
	Admit(ctx context.Context, a *matching.Attributes) (Result, error)
}

// RoomAdmitter is an Admitter that can also write the run's records in
// memory its caller lends: a server answering many requests one after
// the other (webhook.Handler, from each review's scratch) lends the same
// Room to each, so that a run's records take no new arrays once the Room
// has grown to a review's usual number.
type RoomAdmitter interface {
	Admitter
	// AdmitIn is Admit whose Result's Invocations (and their Mutations)
	// may be written in room's arrays: the caller must not lend room to
	// another run while it reads the Result. On return, room holds the
	// arrays the run wrote its records in, for the next run (RunIn).
	AdmitIn(ctx context.Context, a *matching.Attributes, room *Room) (Result, error)
}

// Room is the memory a caller lends a run for its records (Runner.RunIn):
// the array of its Invocations and the one of their MutationOutcomes. The
// zero value is an empty room; a Room must not be copied while a run
// writes in it.
type Room struct {
	Invocations []Invocation
	Outcomes    []MutationOutcome
}

// Bounds of what a Room keeps for the next run (RunIn): a larger array (a
// request matched by many params) is left to the collector.
const (
	maxRoomInvocations = 256
	maxRoomOutcomes    = 1024
)

// take keeps inv and out, the arrays a run ended with, for the next run
// (their records are the run's Result's until then), within the bounds.
func (r *Room) take(inv []Invocation, out []MutationOutcome) {
	if cap(inv) > maxRoomInvocations {
		inv = nil
	}
	if cap(out) > maxRoomOutcomes {
		out = nil
	}
	r.Invocations, r.Outcomes = inv[:0], out[:0]
}

// lend is r's arrays for a run, cleared (nothing of the last run's records
// is held past it), and r empty until the run gives them back (take).
func (r *Room) lend() ([]Invocation, []MutationOutcome) {
	inv, out := r.Invocations[:0], r.Outcomes[:0]
	clear(inv[:cap(inv)])
	clear(out[:cap(out)])
	r.Invocations, r.Outcomes = nil, nil
	return inv, out
}

// Context is the reinvocation context of one request through a chain
// (upstream's admission.ReinvocationContext): whether this is the
// reinvocation round, whether a stage asked for it, and each stage's own
// state. A Runner makes one per request.
type Context struct {
	reinvoke, shouldReinvoke bool
	// values are the stages' states: few, so a slice.
	values []value
	// attrs and object are the request as the next stage sees it, when a
	// stage changed its object (withObject).
	attrs  matching.Attributes
	object unstructured.Unstructured
	// invocations are the run's Invocations so far (its Result's), for
	// InvocationRoom, while a stage runs.
	invocations []Invocation
	// lending tells that the run writes its records in a lent Room
	// (RunIn): room is the largest array of Invocations the run owns (the
	// Room's, or one InvocationRoom grew), outcomes the array of
	// MutationOutcomes (MutationRoom), its length what the records took.
	lending  bool
	room     []Invocation
	outcomes []MutationOutcome
}

// MutationRoom is a slice of n zero MutationOutcomes for the running stage
// to keep its invocations' mutation outcomes in (each record's Mutations a
// share of it): in a run with a lent Room (RunIn), the next n of the run's
// array, grown when it has no room for n; else a new array. The run's
// records own what it returns until the run's Result is dropped.
func (c *Context) MutationRoom(n int) []MutationOutcome {
	if c == nil || !c.lending {
		return make([]MutationOutcome, n)
	}
	if cap(c.outcomes)-len(c.outcomes) < n {
		c.outcomes = make([]MutationOutcome, 0, max(n, 2*cap(c.outcomes)))
	}
	l := len(c.outcomes)
	c.outcomes = c.outcomes[:l+n]
	return c.outcomes[l : l+n : l+n]
}

// InvocationRoom is an empty slice with room for n records, for the
// running stage to append its Outcome's Invocations to: its array is the
// run's, right after the run's records so far, so that the run keeps the
// stage's records where the stage wrote them (Result.add's append finds
// them in place) instead of copying them into a larger array. When the
// run's array has no room for n, the run's records move to one with room
// for n+extra (extra: what the stage expects to append in a later round,
// the reinvocation's). A stage that appends past the room gets a new array
// from append, which the run then copies, as any Outcome's records. A
// stage calls it at most once per Admit.
func (c *Context) InvocationRoom(n, extra int) []Invocation {
	if c == nil {
		return nil
	}
	if cap(c.invocations)-len(c.invocations) < n {
		c.invocations = slices.Grow(c.invocations, n+extra)
		if cap(c.invocations) > cap(c.room) {
			c.room = c.invocations
		}
	}
	l := len(c.invocations)
	return c.invocations[l:l]
}

type value struct{ key, val any }

// IsReinvoke tells that this is the reinvocation round.
func (c *Context) IsReinvoke() bool { return c.reinvoke }

// SetShouldReinvoke asks for the reinvocation round: a stage changed the
// object.
func (c *Context) SetShouldReinvoke() { c.shouldReinvoke = true }

// ShouldReinvoke tells that a stage asked for the reinvocation round.
func (c *Context) ShouldReinvoke() bool { return c.shouldReinvoke }

// Value is the state a stage kept under key (SetValue), or nil.
func (c *Context) Value(key any) any {
	for _, v := range c.values {
		if v.key == key {
			return v.val
		}
	}
	return nil
}

// SetValue keeps a stage's state under key, its own (the stage itself, or
// a key type only it knows), for the rest of the request; a state that is
// a Releaser is released when the run ends.
func (c *Context) SetValue(key, val any) {
	for i := range c.values {
		if c.values[i].key == key {
			c.values[i].val = val
			return
		}
	}
	c.values = append(c.values, value{key, val})
}

// Releaser is a stage's state that wants to know when the run ends (to
// be recycled): Run calls Release on every value that is one.
type Releaser interface {
	Release()
}

// release empties c (releasing the stages' states) and recycles it into
// contexts.
func (c *Context) release(contexts *sync.Pool) {
	for _, v := range c.values {
		if r, ok := v.val.(Releaser); ok {
			r.Release()
		}
	}
	clear(c.values)
	*c = Context{values: c.values[:0]}
	contexts.Put(c)
}

// Outcome is what one run of a stage left: the object, a refusal, and
// the stage's records.
type Outcome struct {
	// Object is the object after the stage (nil for requests without
	// one). It may share maps with the object the stage was given: treat
	// both as read-only.
	Object map[string]any
	// Denied is the stage's refusal of the request, the Status
	// kube-apiserver would answer with, or nil.
	Denied *apierrors.StatusError
	// DeniedBy names, for a stage of several plugins, the plugin that
	// refused (Result.DeniedBy); "": the stage's Name.
	DeniedBy string
	// Reinvoke tells that a policy changed the object in this run: the
	// chain would be reinvoked after this round (what explain reports
	// after the last round). The MutatingAdmissionPolicy stage sets it.
	Reinvoke bool
	// Records: what the stage did, in order.
	Records
}

// Records are the trace of a chain, each stage's in its own vocabulary,
// in order: what explain, policytest, audit and migrate read.
type Records struct {
	// Invocations are the policies' (policy × binding × param), both
	// rounds.
	Invocations []Invocation
	// Ignored are the policies' errors that failurePolicy Ignore dropped.
	Ignored []IgnoredError
	// Calls are the webhooks': one per webhook and round.
	Calls []Call
	// Validations are the ValidatingAdmissionPolicies' (policy × binding
	// × param).
	Validations []Validation
	// PluginSteps are the built-in plugins' steps that ran in the chain:
	// the reinvocation round's (the first round's ran when the request was
	// decoded).
	PluginSteps []admissionplugins.Step
	// Warnings are the stages' warnings, in order.
	Warnings []string
	// AuditAnnotations are the stages' audit annotations.
	AuditAnnotations map[string]string
}

// Result is what Run left for one request.
type Result struct {
	// Object is the final object (nil for requests without one; for a
	// refused request, the object as the refusing stage left it). It may
	// share maps with the request's object: treat both as read-only.
	Object map[string]any
	// Denied is the refusal (kube-apiserver's Status) of the stage
	// DeniedBy names, or nil.
	Denied   *apierrors.StatusError
	DeniedBy string
	// Reinvoked tells that the reinvocation round ran.
	Reinvoked bool
	// Reinvoke tells that a stage of the last round changed the object
	// (Outcome.Reinvoke): kube-apiserver's chain would be reinvoked.
	Reinvoke bool
	// Records are every stage's records of every round, in order.
	Records
}

// Runner runs lists of stages, one request at a time or many at once,
// recycling the Contexts of its finished runs: a run that no stage keeps
// state for (a request no policy or webhook matches) allocates nothing.
// Whoever serves requests owns one (webhook.Engine, cluster.Cluster); the
// zero value is ready for use, and a Runner must not be copied after its
// first run. A stage must not keep its Context beyond its Admit.
type Runner struct {
	contexts sync.Pool
}

// Run runs a through stages as admission.reinvoker runs
// chainAdmissionHandler: the first round through every stage, each on the
// object as the stage before left it; if any stage asked for it
// (SetShouldReinvoke), the whole list once more on the current object;
// never a third round. A refusal ends the run (Result.Denied, DeniedBy).
// The error is a stage's own failure.
func (r *Runner) Run(ctx context.Context, a *matching.Attributes, stages ...Stage) (Result, error) {
	return r.run(ctx, a, 2, nil, stages)
}

// RunIn is Run writing the run's Invocations and their MutationOutcomes in
// room's arrays (grown when they are too small): the Result's records are
// in room until the caller lends it to another run. On return, room holds
// the largest arrays the run wrote in, emptied, for the next run. A nil
// room is Run.
func (r *Runner) RunIn(ctx context.Context, a *matching.Attributes, room *Room, stages ...Stage) (Result, error) {
	return r.run(ctx, a, 2, room, stages)
}

// RunOnce runs a through stages once, without reinvocation: a validating
// list.
func (r *Runner) RunOnce(ctx context.Context, a *matching.Attributes, stages ...Stage) (Result, error) {
	return r.run(ctx, a, 1, nil, stages)
}

func (r *Runner) run(ctx context.Context, a *matching.Attributes, rounds int, room *Room, stages []Stage) (res Result, err error) {
	if a.Object != nil {
		res.Object = a.Object.Object
	}
	rc, _ := r.contexts.Get().(*Context)
	if rc == nil {
		rc = new(Context)
	}
	defer rc.release(&r.contexts)
	if room != nil {
		// The run's records start in the lent arrays (empty); the room
		// gets back the ones the run ended with.
		rc.lending = true
		rc.room, rc.outcomes = room.lend()
		defer func() { room.take(rc.room, rc.outcomes) }()
	}
	for round := 1; round <= rounds; round++ {
		if round == 2 {
			if !rc.shouldReinvoke {
				break
			}
			rc.reinvoke, res.Reinvoked = true, true
		}
		res.Reinvoke = false
		for _, s := range stages {
			rc.invocations = res.Invocations
			if rc.invocations == nil && rc.lending {
				// The run's first records go in the lent array.
				rc.invocations = rc.room[:0]
			}
			o, err := s.Admit(ctx, rc.withObject(a, res.Object), rc)
			// InvocationRoom may have moved the run's records.
			res.Invocations, rc.invocations = rc.invocations, nil
			res.add(o)
			if err != nil {
				return res, err
			}
			res.Object = o.Object
			res.Reinvoke = res.Reinvoke || o.Reinvoke
			if o.Denied != nil {
				res.Denied, res.DeniedBy = o.Denied, o.DeniedBy
				if res.DeniedBy == "" {
					res.DeniedBy = s.Name()
				}
				return res, nil
			}
		}
	}
	return res, nil
}

// add appends o's records to res's (taking o's slices over when res has
// none yet).
func (res *Result) add(o Outcome) {
	res.Invocations = appendTo(res.Invocations, o.Invocations)
	res.Ignored = appendTo(res.Ignored, o.Ignored)
	res.Calls = appendTo(res.Calls, o.Calls)
	res.Validations = appendTo(res.Validations, o.Validations)
	res.PluginSteps = appendTo(res.PluginSteps, o.PluginSteps)
	res.Warnings = appendTo(res.Warnings, o.Warnings)
	if len(o.AuditAnnotations) > 0 {
		if res.AuditAnnotations == nil {
			res.AuditAnnotations = make(map[string]string, len(o.AuditAnnotations))
		}
		for k, v := range o.AuditAnnotations {
			res.AuditAnnotations[k] = v
		}
	}
}

// withObject is a with obj as its object: a itself when it already is,
// else c's copy of a (a stage keeps neither beyond its Admit).
func (c *Context) withObject(a *matching.Attributes, obj map[string]any) *matching.Attributes {
	if obj == nil || a.Object != nil && jsonvalue.SameMap(a.Object.Object, obj) {
		return a
	}
	c.attrs = *a
	c.object.Object = obj
	c.attrs.Object = &c.object
	return &c.attrs
}

// appendTo is append(to, from...), from itself when to is empty.
func appendTo[T any](to, from []T) []T {
	if len(to) == 0 {
		return from
	}
	return append(to, from...)
}
