package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/lint"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/policytest"
)

// suiteLinter runs the schema-aware checks of mutatis lint on the
// policies of every suite of a run as soon as the suite has loaded
// (policytest.Options.Loaded), one suite at a time beside the run's cases,
// and prints the findings after the report (print).
type suiteLinter struct {
	ctx  context.Context
	comp *compiler.Compiler
	err  error
	// sem lets one suite's checks run at a time.
	sem chan struct{}
	wg  sync.WaitGroup
	mu  sync.Mutex
	// found holds the finding lines of each suite checked.
	found map[*policytest.Loaded][]string
}

// newSuiteLinter returns a suiteLinter that compiles with comp, or with a
// compiler of its own when comp is nil.
func newSuiteLinter(ctx context.Context, comp *compiler.Compiler) *suiteLinter {
	var err error
	if comp == nil {
		comp, err = compiler.New()
	}
	return &suiteLinter{ctx: ctx, comp: comp, err: err, sem: make(chan struct{}, 1), found: map[*policytest.Loaded][]string{}}
}

// loaded starts the checks of the suite l (policytest.Options.Loaded).
func (sl *suiteLinter) loaded(l *policytest.Loaded) {
	if sl.err != nil || l.Suite == nil {
		return
	}
	sl.wg.Go(func() {
		sl.sem <- struct{}{}
		defer func() { <-sl.sem }()
		set, objects := suiteManifests(sl.ctx, l)
		if set == nil {
			return
		}
		var lines []string
		lintFindings(sl.comp, set, objects, len(l.Suite.Resources) > 0, func(line string) { lines = append(lines, line) })
		sl.mu.Lock()
		sl.found[l] = lines
		sl.mu.Unlock()
	})
}

// wait waits for the checks started.
func (sl *suiteLinter) wait() { sl.wg.Wait() }

// print waits for the checks and prints, on w, the findings of the suites
// of rep in their order, with the wording of mutatis apply (lintWarnings),
// and returns how many it printed. A policy file shared by several suites
// is reported once per distinct set of findings. Suites that could not be
// loaded are skipped (they are bad input already), and so are suites rep
// does not hold (none of their cases selected).
func (sl *suiteLinter) print(w io.Writer, rep *policytest.Report) int {
	sl.wait()
	if rep == nil {
		return 0
	}
	printed := map[string]bool{}
	for _, s := range rep.Suites {
		if s.Loaded == nil {
			continue
		}
		for _, line := range sl.found[s.Loaded] {
			if !printed[line] {
				printed[line] = true
				io.WriteString(w, line)
			}
		}
	}
	return len(printed)
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

// lintFindings runs the schema-aware checks of mutatis lint on the policies
// of set (objects are the cluster's objects, CRDs and params among them;
// resources tells that the user gave them) and emits each finding as one
// warning line, "warning: lint SEVERITY: FINDING\n".
func lintFindings(comp *compiler.Compiler, set *manifest.Set, objects []manifest.Object, resources bool, emit func(line string)) {
	checker := lint.NewChecker(objects, resources)
	var findings []lint.Finding
	for _, p := range set.Policies {
		cp, err := comp.Compile(p.Policy)
		if err != nil {
			continue
		}
		findings = append(findings, checker.Policy(p, cp)...)
	}
	findings = append(findings, checker.Set(set)...)
	lint.Locate(findings)
	for _, f := range findings {
		emit(fmt.Sprintf("warning: lint %s: %s\n", f.Severity, f))
	}
}

func resolveSuitePath(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}
