package source

import (
	"context"
	"sync"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/matching"
)

// Engine is what `serve` answers with: the policy set most recently
// swapped in, over collaborators built once for the life of the process
// (NewEngine), run as the MutatingAdmissionPolicy plugin alone inside
// kube-apiserver's reinvoker (the Engine's chain.Runner over an
// engine.Evaluator), kube-apiserver owning the rest of the chain. Swapping
// in a new policy set is atomic: in-flight admissions finish with the set
// they started with, new ones use the new one, and nothing blocks. A
// Source keeps it current (the manifest source's and the plugin's Hooks
// swap, upstream); engine/ is the algorithm of one request.
type Engine struct {
	// mu serializes Swap and Replace; Admit only loads current.
	mu      sync.Mutex
	cfg     engine.Config
	current atomic.Pointer[engineState]
	// runner runs the requests (recycling their chain Contexts).
	runner chain.Runner
}

// engineState is one policy set: all of it, and its policies split by
// failure policy (for webhooks registered once per failure policy).
type engineState struct {
	all, fail, ignore *engine.Evaluator
}

// NewEngine returns an Engine over cfg, which lives as long as the Engine:
// its sources, schemas, scheme (and their per-kind plans and caches),
// authorizer and metrics serve every policy set swapped in. It holds no
// policy set yet: Admit answers 503 until the first Swap.
func NewEngine(cfg engine.Config) *Engine {
	return &Engine{cfg: cfg}
}

// Swap installs hooks, a compiled policy set (nil or empty: no policy),
// for every admission that starts from now on. Only what belongs to the
// set is built: the candidate indexes of its evaluators.
func (e *Engine) Swap(hooks []engine.Hook) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.install(hooks)
}

// Replace installs hooks together with new collaborators, for a source
// whose whole world is read again with its policies (serve's static
// files: a reload rebuilds the simulated cluster of the resources). Later
// Swaps keep cfg.
func (e *Engine) Replace(cfg engine.Config, hooks []engine.Hook) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cfg = cfg
	e.install(hooks)
}

// install makes the evaluators of hooks current: all of them, and those of
// each failure policy.
func (e *Engine) install(hooks []engine.Hook) {
	e.current.Store(&engineState{
		all:    engine.NewEvaluator(e.cfg, hooks),
		fail:   engine.NewEvaluator(e.cfg, withFailurePolicy(hooks, admissionregistrationv1.Fail)),
		ignore: engine.NewEvaluator(e.cfg, withFailurePolicy(hooks, admissionregistrationv1.Ignore)),
	})
}

// withFailurePolicy is the hooks whose policy has failure policy fp (an
// unset failurePolicy is Fail), in order.
func withFailurePolicy(hooks []engine.Hook, fp admissionregistrationv1.FailurePolicyType) []engine.Hook {
	var out []engine.Hook
	for _, h := range hooks {
		p := admissionregistrationv1.Fail
		if h.Policy.Spec.FailurePolicy != nil {
			p = *h.Policy.Spec.FailurePolicy
		}
		if p == fp {
			out = append(out, h)
		}
	}
	return out
}

// Admit evaluates a with the current policy set: the MAP plugin alone
// inside kube-apiserver's reinvoker (chain.Runner.Run over the
// Evaluator), what `serve` answers, kube-apiserver owning the rest of the
// chain. Before the first Swap, it answers 503 (the policies are not
// loaded yet), as kube-apiserver does while its policy sources sync.
func (e *Engine) Admit(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
	return e.admitIn(ctx, a, nil, func(s *engineState) *engine.Evaluator { return s.all })
}

// AdmitIn is Admit writing the Result's records in room
// (chain.RoomAdmitter, chain.Runner.RunIn).
func (e *Engine) AdmitIn(ctx context.Context, a *matching.Attributes, room *chain.Room) (chain.Result, error) {
	return e.admitIn(ctx, a, room, func(s *engineState) *engine.Evaluator { return s.all })
}

// Only returns an Admitter that evaluates only the current policies whose
// failurePolicy is fp (Fail includes an unset one). A webhook registered
// once per failure policy serves each registration with one, so that no
// policy runs twice for a request both registrations match. It is a
// chain.RoomAdmitter too.
func (e *Engine) Only(fp admissionregistrationv1.FailurePolicyType) chain.Admitter {
	if fp == admissionregistrationv1.Ignore {
		return only{e, func(s *engineState) *engine.Evaluator { return s.ignore }}
	}
	return only{e, func(s *engineState) *engine.Evaluator { return s.fail }}
}

// only is the Admitter of one failure policy's evaluator (Only).
type only struct {
	e    *Engine
	pick func(*engineState) *engine.Evaluator
}

func (o only) Admit(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
	return o.e.admitIn(ctx, a, nil, o.pick)
}

func (o only) AdmitIn(ctx context.Context, a *matching.Attributes, room *chain.Room) (chain.Result, error) {
	return o.e.admitIn(ctx, a, room, o.pick)
}

// admitIn is Admit with pick's evaluator, writing the records in room
// (nil: new arrays).
func (e *Engine) admitIn(ctx context.Context, a *matching.Attributes, room *chain.Room, pick func(*engineState) *engine.Evaluator) (chain.Result, error) {
	s := e.current.Load()
	if s == nil {
		return chain.Result{}, apierrors.NewServiceUnavailable("mutating admission policies are not loaded yet")
	}
	res, err := e.runner.RunIn(ctx, a, room, pick(s))
	if res.Denied != nil {
		// kube-apiserver reinvokes nothing after a refusal: the answer
		// reports no reinvocation with it.
		res.Reinvoke = false
	}
	return res, err
}
