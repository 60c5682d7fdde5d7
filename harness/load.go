package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

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
	ev, err := sim.Evaluator(comp, policies, bindings)
	if err != nil {
		return nil, err
	}
	vpolicies, vbindings := policySet.ValidatingAPIObjects()
	sur, err := newSurrogates(sim, comp, policies, vpolicies, vbindings)
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
	fixtures := FixturesFromObjects(objs, names)
	ms, err := Run(ctx, sim, ev, fixtures, opts)
	if err != nil {
		return nil, &InputError{err}
	}
	vms, err := sur.run(ctx, sim, ev, fixtures, opts)
	if err != nil {
		return nil, &InputError{err}
	}
	return append(ms, vms...), nil
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
		surs := map[*cluster.Cluster]*surrogates{}
		for _, cr := range l.Requests() {
			ev, ok := evaluators[cr.Cluster]
			if !ok {
				if ev, err = cr.Cluster.Evaluator(nil, l.Policies, l.Bindings); err != nil {
					return nil, err
				}
				evaluators[cr.Cluster] = ev
				if surs[cr.Cluster], err = newSurrogates(cr.Cluster, nil, l.Policies, l.ValidatingPolicies, l.ValidatingBindings); err != nil {
					return nil, err
				}
			}
			fixtures := []Fixture{{Name: cr.Name, Request: cr.Request}}
			got, err := Run(ctx, cr.Cluster, ev, fixtures, opts)
			if err != nil {
				return nil, &InputError{fmt.Errorf("%s: %w", file, err)}
			}
			vgot, err := surs[cr.Cluster].run(ctx, cr.Cluster, ev, fixtures, opts)
			if err != nil {
				return nil, &InputError{fmt.Errorf("%s: %w", file, err)}
			}
			ms = append(append(ms, got...), vgot...)
		}
	}
	return ms, nil
}

// surrogates measure ValidatingAdmissionPolicies through their cost
// surrogates (costs.Surrogate), on the object the validating stage sees:
// the fixture admitted by the mutating chain (built-in plugins and
// MutatingAdmissionPolicies) as the registry would store it. A fixture the
// chain, the registry or a built-in plugin's validate half (PodSecurity …)
// refuses is not measured.
type surrogates struct {
	ev *engine.Evaluator
	// roles name, per policy, the surrogate's field path of each
	// expression → its own field.
	roles map[string]map[string]costs.Role
}

// newSurrogates builds the surrogates of vpolicies and their bindings over
// sim, compiled with comp (nil: the cluster's). A ValidatingAdmissionPolicy
// named as one of policies is left out: measurements name policies. nil
// when there is none.
func newSurrogates(sim *cluster.Cluster, comp *compiler.Compiler, policies []*admissionregistrationv1.MutatingAdmissionPolicy,
	vpolicies []*admissionregistrationv1.ValidatingAdmissionPolicy, vbindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*surrogates, error) {
	mutating := map[string]bool{}
	for _, p := range policies {
		mutating[p.Name] = true
	}
	s := &surrogates{roles: map[string]map[string]costs.Role{}}
	var sp []*admissionregistrationv1.MutatingAdmissionPolicy
	var sb []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for _, vp := range vpolicies {
		if mutating[vp.Name] {
			continue
		}
		sur := costs.SurrogateOf(vp)
		byPath := map[string]costs.Role{}
		for k, v := range sur.Policy.Spec.Variables {
			if r, ok := sur.Roles[v.Name]; ok {
				byPath[fmt.Sprintf("spec.variables[%d].expression", k)] = r
			}
		}
		s.roles[vp.Name] = byPath
		sp = append(sp, sur.Policy)
	}
	for _, vb := range vbindings {
		if _, ok := s.roles[vb.Spec.PolicyName]; ok {
			sb = append(sb, costs.SurrogateBinding(vb))
		}
	}
	if len(sp) == 0 {
		return nil, nil
	}
	var err error
	if s.ev, err = sim.Evaluator(comp, sp, sb); err != nil {
		return nil, err
	}
	return s, nil
}

// run admits every fixture through sim's mutating chain with the
// MutatingAdmissionPolicies of mutating, then measures the surrogates on
// what the registry would store, each expression named by its own field.
func (s *surrogates) run(ctx context.Context, sim *cluster.Cluster, mutating *engine.Evaluator, fixtures []Fixture, opts Options) ([]Measurement, error) {
	if s == nil {
		return nil, nil
	}
	var admitted []Fixture
	for _, f := range fixtures {
		d, err := sim.DecodeSteps(f.Request)
		if err != nil {
			continue // refused before admission: never validated
		}
		adm, err := sim.Admit(ctx, cluster.Chain{Policies: mutating}, d)
		if err != nil {
			return nil, fmt.Errorf("fixture %s: %w", f.Name, err)
		}
		if status, _ := adm.Refusal(); status != nil {
			continue // refused first (PodSecurity among others)
		}
		obj := adm.Stored
		if obj == nil {
			obj = adm.Object
		}
		req := f.Request
		req.SkipAdmissionPlugins = true // admitted already
		if obj != nil {
			req.Object = &unstructured.Unstructured{Object: obj}
		}
		admitted = append(admitted, Fixture{Name: f.Name, Request: req})
	}
	ms, err := Run(ctx, sim, s.ev, admitted, opts)
	for i := range ms {
		if role, ok := s.roles[ms[i].Policy][ms[i].Path]; ok {
			ms[i].Path, ms[i].Kind = role.Path, role.Kind
		}
	}
	return ms, err
}
