package lint

import (
	"context"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/policytest"
)

// Findings runs the schema-aware checks on the policies of set (objects
// are the cluster's objects, CRDs and params among them; resources tells
// that the user gave them) and returns the findings, located. Policies
// comp cannot compile are left out (their errors are reported elsewhere).
func Findings(comp *compiler.Compiler, set *manifest.Set, objects []manifest.Object, resources bool) []Finding {
	checker := NewChecker(objects, resources)
	var findings []Finding
	for _, p := range set.Policies {
		cp, err := comp.Compile(p.Policy)
		if err != nil {
			continue
		}
		findings = append(findings, checker.Policy(p, cp)...)
	}
	findings = append(findings, checker.Set(set)...)
	Locate(findings)
	return findings
}

// Suites runs the checks (Findings) on the policies of every suite of a
// PolicyTest run as soon as the suite has loaded (Loaded, for
// policytest.Options.Loaded), one suite at a time beside the run's cases.
type Suites struct {
	ctx  context.Context
	comp *compiler.Compiler
	err  error
	// sem lets one suite's checks run at a time.
	sem chan struct{}
	wg  sync.WaitGroup
	mu  sync.Mutex
	// found holds the findings of each suite checked.
	found map[*policytest.Loaded][]Finding
}

// NewSuites returns a Suites that compiles with comp, or with a compiler
// of its own when comp is nil.
func NewSuites(ctx context.Context, comp *compiler.Compiler) *Suites {
	var err error
	if comp == nil {
		comp, err = compiler.New()
	}
	return &Suites{ctx: ctx, comp: comp, err: err, sem: make(chan struct{}, 1), found: map[*policytest.Loaded][]Finding{}}
}

// Loaded starts the checks of the suite l (policytest.Options.Loaded).
func (s *Suites) Loaded(l *policytest.Loaded) {
	if s.err != nil || l.Suite == nil {
		return
	}
	s.wg.Go(func() {
		s.sem <- struct{}{}
		defer func() { <-s.sem }()
		set, objects := suiteManifests(s.ctx, l)
		if set == nil {
			return
		}
		findings := Findings(s.comp, set, objects, len(l.Suite.Resources) > 0)
		s.mu.Lock()
		s.found[l] = findings
		s.mu.Unlock()
	})
}

// Wait waits for the checks started.
func (s *Suites) Wait() { s.wg.Wait() }

// Findings waits for the checks and returns the findings of the suite l:
// none when its policy files could not be read again, or when it was not
// checked.
func (s *Suites) Findings(l *policytest.Loaded) []Finding {
	s.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.found[l]
}

// suiteManifests reads the policy files of a loaded suite again, with their
// sources (the suite keeps only the API objects), and its resources.
func suiteManifests(ctx context.Context, l *policytest.Loaded) (*manifest.Set, []manifest.Object) {
	dir := filepath.Dir(l.File)
	var paths []string
	for _, p := range l.Suite.Policies {
		paths = append(paths, resolveSuitePath(dir, p))
	}
	set, err := manifest.Load(ctx, paths, nil)
	if err != nil {
		return nil, nil
	}
	objects := append([]manifest.Object{}, set.Objects...)
	for i, r := range l.Suite.Resources {
		if r.Inline != nil {
			objects = append(objects, manifest.Object{Source: manifest.Source{File: l.File, Item: i}, Object: &unstructured.Unstructured{Object: r.Inline}})
			continue
		}
		rs, err := manifest.Load(ctx, []string{resolveSuitePath(dir, r.Path)}, nil)
		if err != nil {
			continue
		}
		objects = append(objects, rs.Objects...)
	}
	return set, objects
}

func resolveSuitePath(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}
