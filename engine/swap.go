package engine

import (
	"context"
	"sync"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
)

// Admitter evaluates admission requests: *Engine and the views of
// Engine.Only are Admitters.
type Admitter interface {
	Admit(ctx context.Context, a *matching.Attributes) (chain.Result, error)
}

// Engine serves admission requests with the policy set most recently
// swapped in, over collaborators built once for the life of the process
// (New). Swapping in a new policy set is atomic: in-flight admissions
// finish with the set they started with, new ones use the new one, and
// nothing blocks.
type Engine struct {
	// mu serializes Swap and Replace; Admit only loads current.
	mu      sync.Mutex
	cfg     Config
	current atomic.Pointer[engineState]
	// runner runs the requests (recycling their chain Contexts).
	runner chain.Runner
}

// engineState is one policy set: all of it, and its policies split by
// failure policy (for webhooks registered once per failure policy).
type engineState struct {
	all, fail, ignore *Evaluator
}

// New returns an Engine over cfg, which lives as long as the Engine: its
// sources, schemas, scheme (and their per-kind plans and caches), authorizer
// and metrics serve every policy set swapped in. It holds no policy set yet:
// Admit answers 503 until the first Swap.
func New(cfg Config) *Engine {
	return &Engine{cfg: cfg.complete()}
}

// Swap installs hooks, a compiled policy set (nil or empty: no policy),
// for every admission that starts from now on. Only what belongs to the
// set is built: its candidate index.
func (e *Engine) Swap(hooks []Hook) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.install(evaluatorOver(e.cfg, hooks))
}

// Replace installs hooks together with new collaborators, for a source
// whose whole world is read again with its policies (serve's static
// files: a reload rebuilds the simulated cluster of the resources). Later
// Swaps keep cfg.
func (e *Engine) Replace(cfg Config, hooks []Hook) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cfg = cfg.complete()
	e.install(evaluatorOver(e.cfg, hooks))
}

// install makes ev and its failure-policy views current.
func (e *Engine) install(ev *Evaluator) {
	e.current.Store(&engineState{
		all:    ev,
		fail:   ev.subset(admissionregistrationv1.Fail),
		ignore: ev.subset(admissionregistrationv1.Ignore),
	})
}

// subset is the Evaluator of the hooks whose policy has failure policy fp
// (an unset failurePolicy is Fail): a view sharing e's hooks and index.
func (e *Evaluator) subset(fp admissionregistrationv1.FailurePolicyType) *Evaluator {
	sub := *e
	sub.only = fp
	return &sub
}

// Admit evaluates a with the current policy set: the MAP plugin alone
// inside kube-apiserver's reinvoker (chain.Runner.Run over the Evaluator), what
// `serve` answers, kube-apiserver owning the rest of the chain.
// Before the first Swap, it answers 503 (the
// policies are not loaded yet), as kube-apiserver does while its policy
// sources sync.
func (e *Engine) Admit(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
	return e.admit(ctx, a, func(s *engineState) *Evaluator { return s.all })
}

// Only returns an Admitter that evaluates only the current policies whose
// failurePolicy is fp (Fail includes an unset one). A webhook registered
// once per failure policy serves each registration with one, so that no
// policy runs twice for a request both registrations match.
func (e *Engine) Only(fp admissionregistrationv1.FailurePolicyType) Admitter {
	if fp == admissionregistrationv1.Ignore {
		return admitterFunc(func(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
			return e.admit(ctx, a, func(s *engineState) *Evaluator { return s.ignore })
		})
	}
	return admitterFunc(func(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
		return e.admit(ctx, a, func(s *engineState) *Evaluator { return s.fail })
	})
}

func (e *Engine) admit(ctx context.Context, a *matching.Attributes, pick func(*engineState) *Evaluator) (chain.Result, error) {
	s := e.current.Load()
	if s == nil {
		return chain.Result{}, apierrors.NewServiceUnavailable("mutating admission policies are not loaded yet")
	}
	res, err := e.runner.Run(ctx, a, pick(s))
	if res.Denied != nil {
		// kube-apiserver reinvokes nothing after a refusal: the answer
		// reports no reinvocation with it.
		res.Reinvoke = false
	}
	return res, err
}

type admitterFunc func(ctx context.Context, a *matching.Attributes) (chain.Result, error)

func (f admitterFunc) Admit(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
	return f(ctx, a)
}
