// Package source holds where the policies a webhook serves come from: the
// Source interface, which serve runs whatever the policies' origin, and
// Files, the source of manifests on disk (`mutatis serve --policies …
// --resources …`). The other Source is controller.Controller: a live
// cluster's informers.
//
// The shape is kube-apiserver's manifest-based policy source
// (k8s.io/apiserver pkg/admission/plugin/policy/manifest/source):
// LoadInitial reads and compiles the first policy set, or fails before
// anything is served; Run is the reload loop (RunReloadLoop upstream, Run
// of upstream's informer source), which swaps a changed set in and keeps
// the last good one when a change does not load.
package source

import (
	"context"
)

// Source keeps an Engine current with a set of policies and
// bindings. Call LoadInitial once, then Run until the context is done;
// Engine may be served once LoadInitial has returned, and answers with a
// complete policy set once Ready is true.
type Source interface {
	// LoadInitial loads the first policy set where that can fail before
	// serving: Files reads and compiles its files and fails on what
	// kube-apiserver would refuse; a controller loads its first set from
	// informers in Run and returns nil here.
	LoadInitial(ctx context.Context) error
	// Engine returns the Engine the source keeps current.
	Engine() *Engine
	// Run keeps the Engine current until ctx is done: the reload loop of
	// Files, the informers of a controller. It returns nil when ctx ends
	// it, an error when the source cannot go on.
	Run(ctx context.Context) error
	// Ready tells whether the Engine holds a complete policy set.
	Ready() bool
}
