package source

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/manifest"
)

// Options name the manifest files of a static policy set, as `mutatis
// serve --policies … --resources …` serves it.
type Options struct {
	// Policies are files or directories of MutatingAdmissionPolicies and
	// bindings; the other objects in them count as resources.
	Policies []string
	// Resources are files or directories of the objects around the
	// policies: Namespaces, params, CRDs, RBAC. A path also in Policies is
	// read once.
	Resources []string
	// Compiler compiles the policies; nil for a new one. Reuse one across
	// reloads: it caches the CEL environments.
	Compiler *compiler.Compiler
	// Metrics go into the engine.Config.
	Metrics engine.Metrics
	// OnSynthesize becomes the Cluster's Options.OnSynthesize.
	OnSynthesize func(namespace string)
}

// Set is a policy set read from files with the simulated cluster of the
// files' other objects: what an Engine serves (NewEngine over Config, then
// Swap of Hooks; Engine.Replace on a reload, which rebuilds the
// cluster).
type Set struct {
	// Config is the engine configuration over the simulated cluster, with
	// Options.Metrics.
	Config engine.Config
	// Hooks are the compiled policies with their bindings.
	Hooks []engine.Hook
	// Summary counts what was loaded, for a log line.
	Summary string
}

// Engine returns a new Engine serving s.
func (s *Set) Engine() *Engine {
	eng := NewEngine(s.Config)
	eng.Swap(s.Hooks)
	return eng
}

// Load reads the files of o, refuses the policies kube-apiserver would
// refuse to create (cluster.ValidatePolicies), and compiles every policy
// for the cluster of the files' other objects.
func Load(ctx context.Context, o Options) (*Set, error) {
	comp := o.Compiler
	if comp == nil {
		var err error
		if comp, err = compiler.New(); err != nil {
			return nil, err
		}
	}
	pset, err := manifest.Load(ctx, o.Policies, nil)
	if err != nil {
		return nil, err
	}
	if err := cluster.ValidatePolicies(comp, pset.Policies); err != nil {
		return nil, err
	}
	objects := pset.Objects
	if resources := resourcesApart(o.Policies, o.Resources); len(resources) > 0 {
		rset, err := manifest.Load(ctx, resources, nil)
		if err != nil {
			return nil, err
		}
		objects = append(objects, rset.Objects...)
	}
	sim, err := cluster.New(objects, cluster.Options{OnSynthesize: o.OnSynthesize})
	if err != nil {
		return nil, err
	}
	policies, bindings := pset.APIObjects()
	hooks, err := engine.NewHooks(comp, policies, bindings)
	if err != nil {
		return nil, err
	}
	cfg := sim.Config()
	cfg.Metrics = o.Metrics
	summary := fmt.Sprintf("%d policies, %d bindings, %d other objects", len(policies), len(bindings), len(objects))
	if vps, vbs := len(pset.ValidatingPolicies), len(pset.ValidatingBindings); vps+vbs > 0 {
		// serve is a mutating webhook: the cluster's kube-apiserver runs
		// its ValidatingAdmissionPolicies itself, after mutatis.
		summary += fmt.Sprintf("; %d ValidatingAdmissionPolicies and %d bindings not served (kube-apiserver runs them)", vps, vbs)
	}
	return &Set{
		Config:  cfg,
		Hooks:   hooks,
		Summary: summary,
	}, nil
}

// resourcesApart are the paths of resources not also in policies: a path
// given to both flags (as `make run` does) is read once, its policies
// counting as policies, its other objects as resources.
func resourcesApart(policies, resources []string) []string {
	var apart []string
	for _, r := range resources {
		if !slices.ContainsFunc(policies, func(p string) bool { return filepath.Clean(p) == filepath.Clean(r) }) {
			apart = append(apart, r)
		}
	}
	return apart
}
