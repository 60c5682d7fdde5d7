package cluster

import (
	"context"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/webhookclient"
)

// WithWebhooks returns ch with, when configs hold mutating or validating
// configurations, a dispatcher of each kind over this cluster (Webhooks,
// ValidatingWebhooks), calling services at urls; Chain.Close closes them
// after use.
func (c *Cluster) WithWebhooks(ch Chain, configs []webhookclient.Configuration, urls webhookclient.ServiceURLs) (Chain, error) {
	if mutating := webhookclient.APIObjects(configs); len(mutating) > 0 {
		d, err := c.Webhooks(mutating, urls, webhookclient.Options{})
		if err != nil {
			return ch, err
		}
		ch.Webhooks = d
	}
	if validating := webhookclient.ValidatingAPIObjects(configs); len(validating) > 0 {
		d, err := c.ValidatingWebhooks(validating, urls, webhookclient.Options{}, nil)
		if err != nil {
			ch.Close()
			return ch, err
		}
		ch.ValidatingWebhooks = d
	}
	return ch, nil
}

// Close closes the chain's webhook dispatchers (their idle connections),
// if any.
func (ch Chain) Close() {
	if ch.Webhooks != nil {
		ch.Webhooks.Close(nil)
	}
	if d, ok := ch.ValidatingWebhooks.(*webhookclient.ValidatingDispatcher); ok {
		d.Close(nil)
	}
}

// LazyChain is a Chain built on first use and then shared by every
// request that uses it: a run whose requests are all refused before
// admission never compiles its policies nor opens its webhooks'
// connections. It is safe for concurrent use.
type LazyChain struct {
	once  sync.Once
	build func() (Chain, error)
	built atomic.Bool // ch and err are set
	ch    Chain
	err   error
}

// NewLazyChain returns the chain build builds, built on the first call
// of Chain.
func NewLazyChain(build func() (Chain, error)) *LazyChain {
	return &LazyChain{build: build}
}

// Chain builds the chain on its first call and returns it, or the build's
// error, on every call.
func (l *LazyChain) Chain() (Chain, error) {
	l.once.Do(func() {
		l.ch, l.err = l.build()
		l.built.Store(true)
	})
	return l.ch, l.err
}

// Close closes the chain's webhook dispatchers if it was built (also
// what a build that failed had opened).
func (l *LazyChain) Close() {
	if l.built.Load() {
		l.ch.Close()
	}
}

// Outcome is what became of one request of AdmitEach or AdmitDecoded, in
// the order of its steps: the first error ends it.
type Outcome struct {
	// Decoded is the request as kube-apiserver's handler decodes it,
	// built-in admission plugins run (DecodeSteps); it may be set beside
	// DecodeErr (the steps that ran before a refusal).
	Decoded *Decoded
	// DecodeErr is the decoding's error: an *apierrors.StatusError when
	// kube-apiserver refuses the request before the chain (its decoder or
	// a built-in admission plugin), any other error for bad input.
	DecodeErr error
	// ChainErr is the error of building the chain (LazyChain.Chain).
	ChainErr error
	// Before is the request's object before admission, normalised; nil
	// for a request without one (DELETE).
	Before map[string]any
	// ObjectErr tells why the object could not be normalised (bad input).
	ObjectErr error
	// Admission is the request's admission (Admit); nil when Err or an
	// error above is set.
	Admission *Admission
	// Err is a failure of the chain's run (Admit's error).
	Err error
}

// AdmitOptions are the options of AdmitEach and AdmitDecoded.
type AdmitOptions struct {
	// Workers is how many requests AdmitEach admits at a time (0 or 1:
	// one after the other).
	Workers int
	// Warm admits each request through the chain's policies once before
	// its admission, whose trace's times are then those of a warm process
	// (the first admission pays once for building CEL programs, type
	// converters and schemas, which a long-running kube-apiserver has paid
	// long before). The admission is deterministic: the second one is the
	// same admission. Webhooks are not called twice.
	Warm bool
}

// AdmitEach decodes each request (DecodeSteps) and admits it through the
// chain (AdmitDecoded), up to opts.Workers requests at a time, and calls
// yield on the caller's goroutine with each outcome in the order of
// requests. A request's object is decoded in place. It stops, with its
// error, when ctx ends or yield returns an error; it returns after every
// request it started has ended.
func (c *Cluster) AdmitEach(ctx context.Context, requests []Request, ch *LazyChain, opts AdmitOptions, yield func(i int, out *Outcome) error) error {
	one := func(ctx context.Context, r Request) *Outcome {
		d, err := c.DecodeSteps(r)
		if err != nil {
			return &Outcome{Decoded: d, DecodeErr: err}
		}
		return c.AdmitDecoded(ctx, ch, r.Object, d, opts)
	}
	if opts.Workers <= 1 {
		for i, r := range requests {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := yield(i, one(ctx, r)); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	var started sync.WaitGroup
	defer started.Wait()
	defer cancel()
	outcomes := make([]chan *Outcome, len(requests))
	for i := range outcomes {
		outcomes[i] = make(chan *Outcome, 1)
	}
	slots := make(chan struct{}, opts.Workers)
	started.Go(func() {
		for i, r := range requests {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			started.Go(func() {
				defer func() { <-slots }()
				outcomes[i] <- one(ctx, r)
			})
		}
	})
	for i := range requests {
		select {
		case out := <-outcomes[i]:
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := yield(i, out); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// AdmitDecoded admits d, decoded from a request of object (nil for none),
// through the chain ch builds: Before normalises object (decoded in
// place) as it came in, Admission is Admit's.
func (c *Cluster) AdmitDecoded(ctx context.Context, ch *LazyChain, object *unstructured.Unstructured, d *Decoded, opts AdmitOptions) *Outcome {
	out := &Outcome{Decoded: d}
	chain, err := ch.Chain()
	if err != nil {
		out.ChainErr = err
		return out
	}
	if object != nil {
		if out.Before, err = c.Patcher().Normalize(object.DeepCopy().Object, d.Attributes.Kind); err != nil {
			out.ObjectErr = err
			return out
		}
	}
	if opts.Warm {
		if _, err := c.Admit(ctx, Chain{Policies: chain.Policies}, d); err != nil {
			out.Err = err
			return out
		}
	}
	out.Admission, out.Err = c.Admit(ctx, chain, d)
	return out
}
