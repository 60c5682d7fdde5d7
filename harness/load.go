package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/costs"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/policytest"
)

// Files are the inputs of RunFiles: `mutatis bench`'s --policies,
// --resources and --filename.
type Files struct {
	// Policies are the files or directories of the policies and bindings
	// (and any other objects of the simulated cluster).
	Policies []string
	// Resources are more objects of the simulated cluster: CRDs,
	// namespaces, parameter objects.
	Resources []string
	// Fixtures are the objects the policies are measured against.
	Fixtures []string
	// Stdin is read for the path "-".
	Stdin io.Reader
}

// ErrNoFixtures is RunFiles' input error when Files.Fixtures hold no
// object.
var ErrNoFixtures = errors.New("no objects found")

// InputError is a problem of the inputs (a file unreadable or invalid, a
// policy refused, a fixture the cluster cannot admit), as opposed to a
// failure of the measurement itself.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns the problem.
func (e *InputError) Unwrap() error { return e.Err }

// RunFiles measures the policies of f against the objects of f.Fixtures
// in one simulated cluster holding the objects of f.Policies and
// f.Resources.
func RunFiles(ctx context.Context, f Files, opts Options) ([]Measurement, error) {
	policySet, err := manifest.Load(ctx, f.Policies, f.Stdin)
	if err != nil {
		return nil, &InputError{err}
	}
	comp, err := compiler.New()
	if err != nil {
		return nil, err
	}
	if err := cluster.ValidatePolicies(comp, policySet.Policies); err != nil {
		return nil, &InputError{err}
	}
	objects := policySet.Objects
	if len(f.Resources) > 0 {
		rs, err := manifest.Load(ctx, f.Resources, f.Stdin)
		if err != nil {
			return nil, &InputError{err}
		}
		objects = append(objects, rs.Objects...)
	}
	fixtureSet, err := manifest.Load(ctx, f.Fixtures, f.Stdin)
	if err != nil {
		return nil, &InputError{err}
	}
	if len(fixtureSet.Objects) == 0 {
		return nil, &InputError{ErrNoFixtures}
	}
	sim, err := cluster.New(objects, cluster.Options{OnSynthesize: func(string) {}})
	if err != nil {
		return nil, &InputError{err}
	}
	policies, bindings := policySet.APIObjects()
	// ValidatingAdmissionPolicies are measured through their surrogates
	// (costs.Surrogate), each expression named back by its own field.
	// A ValidatingAdmissionPolicy named as a MutatingAdmissionPolicy is
	// left out: measurements name policies.
	mutating := map[string]bool{}
	for _, p := range policies {
		mutating[p.Name] = true
	}
	roles := map[string]map[string]costs.Role{} // policy → variable path → role
	for _, vp := range policySet.ValidatingPolicies {
		if mutating[vp.Policy.Name] {
			continue
		}
		sur := costs.SurrogateOf(vp.Policy)
		byPath := map[string]costs.Role{}
		for k, v := range sur.Policy.Spec.Variables {
			if r, ok := sur.Roles[v.Name]; ok {
				byPath[fmt.Sprintf("spec.variables[%d].expression", k)] = r
			}
		}
		roles[vp.Policy.Name] = byPath
		policies = append(policies, sur.Policy)
	}
	for _, vb := range policySet.ValidatingBindings {
		if _, ok := roles[vb.Binding.Spec.PolicyName]; ok {
			bindings = append(bindings, costs.SurrogateBinding(vb.Binding))
		}
	}
	ev, err := sim.Evaluator(comp, policies, bindings)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	var names []string
	for _, fo := range fixtureSet.Objects {
		objs = append(objs, fo.Object)
		name := fo.Source.String()
		if fo.Object.GetName() != "" {
			name = fmt.Sprintf("%s (%s %s)", filepath.Base(fo.Source.File), fo.Object.GetKind(), fo.Object.GetName())
		}
		names = append(names, name)
	}
	ms, err := Run(ctx, sim, ev, FixturesFromObjects(objs, names), opts)
	if err != nil {
		return nil, &InputError{err}
	}
	for i := range ms {
		if r, ok := roles[ms[i].Policy][ms[i].Path]; ok {
			ms[i].Path, ms[i].Kind = r.Path, r.Kind
		}
	}
	return ms, nil
}

// RunSuites measures every case of the PolicyTest suites in files, each
// in its own simulated cluster with its suite's policies.
func RunSuites(ctx context.Context, files []string, opts Options) ([]Measurement, error) {
	var ms []Measurement
	for _, file := range files {
		l, err := policytest.LoadSuite(ctx, file)
		if err != nil {
			return nil, &InputError{err}
		}
		// Cases share their suite's cluster unless they add resources.
		evaluators := map[*cluster.Cluster]*engine.Evaluator{}
		for _, cr := range l.Requests() {
			ev, ok := evaluators[cr.Cluster]
			if !ok {
				if ev, err = cr.Cluster.Evaluator(nil, l.Policies, l.Bindings); err != nil {
					return nil, err
				}
				evaluators[cr.Cluster] = ev
			}
			got, err := Run(ctx, cr.Cluster, ev, []Fixture{{Name: cr.Name, Request: cr.Request}}, opts)
			if err != nil {
				return nil, &InputError{fmt.Errorf("%s: %w", file, err)}
			}
			ms = append(ms, got...)
		}
	}
	return ms, nil
}
