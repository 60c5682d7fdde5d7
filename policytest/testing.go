package policytest

import (
	"testing"
)

// Run runs the suites under paths (see Discover) as Go subtests: one
// t.Run per suite and, inside it, one per case. A failing case reports the
// same text as `mutatis test`: each failed expectation with its diff, then
// the explain trace. An invalid suite fails its subtest with the file and
// field path. Options, when given, configure the run (only the first is
// used; Run and Parallel are ignored, go test's -run and -parallel apply).
//
//	func TestPolicies(t *testing.T) {
//		policytest.Run(t, "testdata")
//	}
func Run(t *testing.T, paths ...string) {
	t.Helper()
	RunWith(t, Options{}, paths...)
}

// RunWith is Run with options (Shuffle, Idempotence, NewCompiler, Observe).
func RunWith(t *testing.T, opts Options, paths ...string) {
	t.Helper()
	files, err := Discover(paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal(&NoSuitesError{Paths: paths})
	}
	opts.Run, opts.Parallel = nil, 1
	r, err := NewRunner(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.closeDispatchers)
	for _, f := range files {
		l, err := loadSuite(t.Context(), f, nil, r.clusterOptions())
		name := f
		if l != nil {
			name = l.Name
		}
		t.Run(name, func(t *testing.T) {
			if err != nil {
				t.Fatal(err)
			}
			sr := &SuiteResult{File: f, Name: l.Name, Loaded: l}
			jobs := r.suiteJobs(t.Context(), l, sr)
			if sr.Err != nil {
				t.Fatal(sr.Err)
			}
			for i, job := range jobs {
				c := sr.Cases[i]
				t.Run(c.Name, func(t *testing.T) {
					job()
					if c.Status != Pass {
						t.Error("\n" + CaseText(c, false))
					}
				})
			}
		})
	}
}
