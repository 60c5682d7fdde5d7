package policytest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/explain"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/validating"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// Options configure a run of suites.
type Options struct {
	// Run, when set, selects the cases whose "suite/case" name it matches.
	Run *regexp.Regexp
	// Parallel bounds the cases evaluated at once; 0 means GOMAXPROCS.
	Parallel int
	// NewCompiler returns the compiler every suite of the run is compiled
	// with (e.g. one instrumented for coverage); nil means compiler.New.
	NewCompiler func() (*compiler.Compiler, error)
	// NewValidatingCompiler returns the compiler of the run's
	// ValidatingAdmissionPolicies (e.g. one observed for coverage,
	// coverage.Recorder.ValidatingCompiler); nil means
	// validating.NewCompiler.
	NewValidatingCompiler func() *validating.Compiler
	// Observe, when set, is handed the chain.Result of every case's
	// admission (not the extra admissions of Shuffle and Idempotence),
	// and then that of its validating stage when ValidatingAdmissionPolicies
	// evaluated it (Result.Validations). It is called from several
	// goroutines at once.
	Observe func(chain.Result)
	// Done, when set, is handed every case's result as soon as the case
	// has run (e.g. to stream events, WriteEvents). It is called from
	// several goroutines at once.
	Done func(*CaseResult)
	// Loaded, when set, is handed every suite that loads and that the
	// report will hold (one with a case Run selects, or one that fails
	// before its cases run), as soon as it has loaded and before its cases
	// run (e.g. to check its policies beside the run). It is called from
	// the goroutine that called Run, in the order of the files, and must
	// not modify the suite.
	Loaded func(*Loaded)
	// Shuffle re-runs every case with the policies in other orders (the
	// reverse order, then Orders-1 random ones drawn from Seed) and fails
	// the cases whose result depends on the order.
	Shuffle bool
	Seed    uint64
	// Orders is the number of orders Shuffle tries; 0 means 5.
	Orders int
	// Idempotence re-admits every final object with the case's request and
	// fails the cases where a policy changes it again.
	Idempotence bool
	// NoValidate skips the API validation of the admitted objects.
	NoValidate bool
	// Strict fails a case with an error that failurePolicy Ignore dropped
	// and expect.ignoredErrors does not name (otherwise a warning).
	Strict bool
	// Policies are files or directories of policies and bindings that the
	// suites naming no policies test (`mutatis test --policies`).
	Policies []string
	// AdmissionPlugins choose kube-apiserver's admission plugins that run
	// before the policies in the suites that do not choose them
	// (Suite.AdmissionPlugins); nil means kube-apiserver 1.37's default
	// set.
	AdmissionPlugins *admissionplugins.Flags
	// Webhooks are the MutatingWebhookConfigurations called after the
	// policies in the suites that name none (Suite.Webhooks).
	Webhooks []webhookclient.Configuration
	// ServiceURLs reach the webhooks' services, overriding a suite's own
	// serviceURLs for the services they map (the command line wins).
	ServiceURLs webhookclient.ServiceURLs
}

// Status is the outcome of a case.
type Status string

// The statuses of a case.
const (
	Pass  Status = "pass"
	Fail  Status = "fail"
	Error Status = "error" // the evaluator failed, not an expectation
)

// Report is the result of a run.
type Report struct {
	Suites []*SuiteResult `json:"suites"`
	// Seed is the seed of Shuffle's random orders (0 without Shuffle).
	Seed    uint64        `json:"seed,omitempty"`
	Elapsed time.Duration `json:"elapsed"`
}

// SuiteResult is the result of one suite file.
type SuiteResult struct {
	File string `json:"file"`
	Name string `json:"name"`
	// Err is set when the suite could not be read or is invalid (bad
	// input); it then has no cases.
	Err     error         `json:"-"`
	Cases   []*CaseResult `json:"cases"`
	Elapsed time.Duration `json:"elapsed"`
	// Loaded is the suite as read (nil when Err is set).
	Loaded *Loaded `json:"-"`
}

// CaseResult is the result of one case.
type CaseResult struct {
	Suite  string `json:"suite"`
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Failures are the expectations that did not hold.
	Failures []Failure `json:"failures,omitempty"`
	// Err is the evaluator's error (Status Error).
	Err string `json:"error,omitempty"`
	// Warnings are what a person should know of a case that its
	// expectations do not cover: the errors failurePolicy Ignore dropped
	// that expect.ignoredErrors does not name.
	Warnings []string `json:"warnings,omitempty"`
	// Trace is the explain trace of the case's admission.
	Trace   string        `json:"trace,omitempty"`
	Elapsed time.Duration `json:"elapsed"`
	// Result is the engine's result of the case's admission.
	Result chain.Result `json:"-"`
}

// FullName is "suite/case", what Options.Run matches.
func (c *CaseResult) FullName() string { return c.Suite + "/" + c.Name }

// Counts returns the number of passed, failed and errored cases, and of
// suites that were bad input.
func (r *Report) Counts() (passed, failed, errored, badSuites int) {
	for _, s := range r.Suites {
		if s.Err != nil {
			badSuites++
		}
		for _, c := range s.Cases {
			switch c.Status {
			case Pass:
				passed++
			case Fail:
				failed++
			default:
				errored++
			}
		}
	}
	return
}

// Runner runs suites with one compiler.
type Runner struct {
	opts Options
	comp *compiler.Compiler
	// vcomp compiles the ValidatingAdmissionPolicies, once per revision.
	vcomp *validating.Compiler
	// dispatchers and validating are the webhook dispatchers of the
	// current Run, closed when it ends (closeDispatchers).
	dispatchers []*webhookclient.Dispatcher
	validating  []*webhookclient.ValidatingDispatcher
}

// closeDispatchers closes the webhook dispatchers of the current Run.
func (r *Runner) closeDispatchers() {
	for _, d := range r.dispatchers {
		d.Close(nil)
	}
	for _, d := range r.validating {
		d.Close(nil)
	}
	r.dispatchers, r.validating = nil, nil
}

// NewRunner returns a Runner for opts.
func NewRunner(opts Options) (*Runner, error) {
	newCompiler := opts.NewCompiler
	if newCompiler == nil {
		newCompiler = func() (*compiler.Compiler, error) { return compiler.New() }
	}
	comp, err := newCompiler()
	if err != nil {
		return nil, err
	}
	if opts.Parallel <= 0 {
		opts.Parallel = runtime.GOMAXPROCS(0)
	}
	if opts.Orders <= 0 {
		opts.Orders = 5
	}
	vcomp := validating.NewCompiler
	if opts.NewValidatingCompiler != nil {
		vcomp = opts.NewValidatingCompiler
	}
	return &Runner{opts: opts, comp: comp, vcomp: vcomp()}, nil
}

// RunFiles discovers the suites under paths (see Discover), loads and runs
// them. Unreadable or invalid suites are reported in their SuiteResult.Err;
// the error is for paths that do not exist, for finding no suite at all
// (*NoSuitesError), and for a cancelled ctx.
func RunFiles(ctx context.Context, paths []string, opts Options) (*Report, error) {
	files, err := Discover(paths)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, &NoSuitesError{Paths: paths}
	}
	r, err := NewRunner(opts)
	if err != nil {
		return nil, err
	}
	return r.Run(ctx, files)
}

// selects tells whether Run selects a case of the suite l.
func (r *Runner) selects(l *Loaded) bool {
	if r.opts.Run == nil {
		return true
	}
	for _, lc := range l.cases {
		if r.opts.Run.MatchString(l.Name + "/" + lc.c.Name) {
			return true
		}
	}
	return false
}

// Run loads and runs the suite files, cases in parallel.
func (r *Runner) Run(ctx context.Context, files []string) (*Report, error) {
	start := time.Now()
	rep := &Report{Seed: r.seed()}
	var jobs []func()
	for _, f := range files {
		sr := &SuiteResult{File: f}
		rep.Suites = append(rep.Suites, sr)
		l, err := loadSuite(ctx, f, r.opts.Policies, r.clusterOptions())
		if err != nil {
			sr.Err = err
			sr.Name = f
			continue
		}
		sr.Name, sr.Loaded = l.Name, l
		selected := r.selects(l)
		if selected && r.opts.Loaded != nil {
			r.opts.Loaded(l)
		}
		jobs = append(jobs, r.suiteJobs(ctx, l, sr)...)
		if !selected && sr.Err != nil && r.opts.Loaded != nil {
			r.opts.Loaded(l) // reported for its error
		}
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	sem := make(chan struct{}, r.opts.Parallel)
	var wg sync.WaitGroup
	for _, job := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			job()
		})
	}
	wg.Wait()
	r.closeDispatchers()
	if r.opts.Run != nil {
		// Suites without a selected case are not part of the run.
		kept := rep.Suites[:0]
		for _, s := range rep.Suites {
			if s.Err != nil || len(s.Cases) > 0 {
				kept = append(kept, s)
			}
		}
		rep.Suites = kept
	}
	for _, s := range rep.Suites {
		for _, c := range s.Cases {
			s.Elapsed += c.Elapsed
		}
	}
	rep.Elapsed = time.Since(start)
	return rep, ctx.Err()
}

func (r *Runner) seed() uint64 {
	if !r.opts.Shuffle {
		return 0
	}
	return r.opts.Seed
}

// suiteRun is what the cases of one suite share.
type suiteRun struct {
	l          *Loaded
	hooks      []engine.Hook
	evaluators map[*cluster.Cluster]*engine.Evaluator
	// webhooks and validating are the dispatchers of the suite's
	// mutating and validating webhooks, per cluster (none without
	// webhooks).
	webhooks   map[*cluster.Cluster]*webhookclient.Dispatcher
	validating map[*cluster.Cluster]*webhookclient.ValidatingDispatcher
	// vaps are the stages of the suite's ValidatingAdmissionPolicies, per
	// cluster (none without them).
	vaps map[*cluster.Cluster]*validating.Evaluator
}

// chain is the admission chain of a case in cl with the policies of ev.
func (run *suiteRun) chain(cl *cluster.Cluster, ev *engine.Evaluator) cluster.Chain {
	ch := cluster.Chain{Policies: ev, Webhooks: run.webhooks[cl]}
	if v := run.vaps[cl]; v != nil {
		ch.ValidatingPolicies = v
	}
	if d := run.validating[cl]; d != nil {
		ch.ValidatingWebhooks = d
	}
	return ch
}

// webhooksOf are the configurations a suite calls (its own, or the
// run's) and where their services are (the run's mappings, then the
// suite's).
func (r *Runner) webhooksOf(l *Loaded) ([]webhookclient.Configuration, webhookclient.ServiceURLs) {
	configs := l.Webhooks
	if len(l.Suite.Webhooks) == 0 {
		configs = r.opts.Webhooks
	}
	urls := webhookclient.ServiceURLs{}
	maps.Copy(urls, l.ServiceURLs)
	maps.Copy(urls, r.opts.ServiceURLs)
	return configs, urls
}

// clusterOptions are the run's options of the suites' simulated clusters.
func (r *Runner) clusterOptions() clusterOptions {
	return clusterOptions{noValidate: r.opts.NoValidate, plugins: r.opts.AdmissionPlugins}
}

// suiteJobs compiles the suite and returns one job per selected case; the
// jobs fill sr.Cases in place.
func (r *Runner) suiteJobs(ctx context.Context, l *Loaded, sr *SuiteResult) []func() {
	hooks, err := engine.NewHooks(r.comp, l.Policies, l.Bindings)
	if err != nil {
		sr.Err = &InputError{File: l.File, Err: fmt.Errorf("compiling the policies: %w", err)}
		return nil
	}
	run := &suiteRun{l: l, hooks: hooks, evaluators: map[*cluster.Cluster]*engine.Evaluator{}, webhooks: map[*cluster.Cluster]*webhookclient.Dispatcher{},
		validating: map[*cluster.Cluster]*webhookclient.ValidatingDispatcher{}, vaps: map[*cluster.Cluster]*validating.Evaluator{}}
	configs, urls := r.webhooksOf(l)
	var jobs []func()
	for _, lc := range l.cases {
		if l.runPluginsErr != nil {
			sr.Err = &InputError{File: l.File, Err: fmt.Errorf("admission plugins: %w", l.runPluginsErr)}
			return nil
		}
		if r.opts.Run != nil && !r.opts.Run.MatchString(l.Name+"/"+lc.c.Name) {
			continue
		}
		if _, ok := run.evaluators[lc.cluster]; !ok {
			run.evaluators[lc.cluster] = engine.NewEvaluator(lc.cluster.Config(), hooks)
			if len(l.ValidatingPolicies) > 0 {
				v, err := lc.cluster.ValidatingPolicies(r.vcomp, l.ValidatingPolicies, l.ValidatingBindings)
				if err != nil {
					sr.Err = &InputError{File: l.File, Err: fmt.Errorf("validating admission policies: %w", err)}
					return nil
				}
				run.vaps[lc.cluster] = v
			}
			if mutating := webhookclient.APIObjects(configs); len(mutating) > 0 {
				d, err := lc.cluster.Webhooks(mutating, urls, webhookclient.Options{})
				if err != nil {
					sr.Err = &InputError{File: l.File, Err: fmt.Errorf("webhooks: %w", err)}
					return nil
				}
				r.dispatchers = append(r.dispatchers, d)
				run.webhooks[lc.cluster] = d
			}
			if validating := webhookclient.ValidatingAPIObjects(configs); len(validating) > 0 {
				d, err := lc.cluster.ValidatingWebhooks(validating, urls, webhookclient.Options{}, nil)
				if err != nil {
					sr.Err = &InputError{File: l.File, Err: fmt.Errorf("webhooks: %w", err)}
					return nil
				}
				r.validating = append(r.validating, d)
				run.validating[lc.cluster] = d
			}
		}
		cr := &CaseResult{Suite: l.Name, Name: lc.c.Name}
		sr.Cases = append(sr.Cases, cr)
		jobs = append(jobs, func() {
			r.runCase(ctx, run, lc, cr)
			if r.opts.Done != nil {
				r.opts.Done(cr)
			}
		})
	}
	return jobs
}

// admit runs the case's request (with object instead of the case's object
// when set) through ch in the case's cluster: decoded as kube-apiserver
// decodes a request body, admitted by the whole mutating chain, then
// converted and validated as its registry would before storing the
// object. The outcome's result holds the object kube-apiserver would
// store.
func admit(ctx context.Context, lc *loadedCase, ch cluster.Chain, object *unstructured.Unstructured) (outcome, error) {
	d, err := lc.decodeSteps(object)
	var status *apierrors.StatusError
	if d != nil && errors.As(err, &status) {
		// An admission plugin before MAP refused the request (its 403):
		// kube-apiserver's answer, as a policy's denial is.
		return outcome{gvk: d.Attributes.Kind, schemas: lc.cluster.Schemas, warnings: d.Warnings, plugins: d.Plugins, result: chain.Result{Denied: status}}, nil
	}
	if err != nil {
		return outcome{}, err
	}
	attrs := d.Attributes
	patcher := lc.cluster.Patcher()
	o := outcome{gvk: attrs.Kind, schemas: lc.cluster.Schemas, warnings: d.Warnings, plugins: d.Plugins}
	if attrs.Object != nil {
		if o.before, err = patcher.Normalize(attrs.Object.DeepCopy().Object, attrs.Kind); err != nil {
			return o, err
		}
	}
	ns := attrs.Namespace
	cl := lc.cluster
	namespaced, _ := cl.Namespaced(attrs.Kind)
	o.normalize = func(want map[string]any) (map[string]any, error) {
		u := (&unstructured.Unstructured{Object: want}).DeepCopy()
		// A Namespace's request names it as its namespace; the object
		// has none.
		if ns != "" && namespaced && u.GetNamespace() == "" {
			u.SetNamespace(ns)
		}
		if !cl.Options().NoDefaults {
			// An expected object is read as kube-apiserver would store it:
			// decoded, defaulted, through its internal version, and through
			// the admission plugins that precede MAP (a Pod's service
			// account and token volume, priority, default tolerations …).
			out, _, err := cl.Scheme.DecodeRequest(u.Object, attrs.Kind)
			if err != nil {
				return nil, err
			}
			return cl.AdmitPlugins(ctx, attrs, out)
		}
		return patcher.Normalize(u.Object, attrs.Kind)
	}
	adm, err := lc.cluster.Admit(ctx, ch, d)
	if err != nil {
		return o, err
	}
	o.result = adm.Result
	if adm.Object != nil {
		o.result.Object = adm.Object
	}
	o.invalid = adm.Invalid
	// The warnings as kube-apiserver returns them: the decoder's, the
	// mutating chain's, the registry's and the validating stage's, each
	// text once (explain.Returned, its own warning recorder).
	o.warnings = slices.Concat(explain.Returned(d.Warnings, adm.Result.Warnings, adm.Warnings, adm.Validation.Warnings)...)
	// The validating stage ran when nothing before it refused: its
	// records, and its refusal as the request's.
	o.validation = adm.Validation
	if adm.Validation.Denied != nil {
		o.result.Denied, o.result.DeniedBy = adm.Validation.Denied, adm.Validation.DeniedBy
	}
	return o, nil
}

// traceOf is the explain trace of an outcome: the admission plugins that
// changed the object or refused the request, then the policies (unless a
// plugin refused: they never ran), then the validating stage (unless the
// mutating chain or the registry refused: it never ran).
func traceOf(o outcome) string {
	var b strings.Builder
	refused := explain.PluginSteps(&b, o.plugins) && o.plugins[len(o.plugins)-1].Err != nil
	if !refused {
		explain.Chain(&b, o.result)
	}
	// admit folds the validating stage's refusal into the result: the
	// mutating chain refused when its refusal is another.
	mutatingRefused := o.result.Denied != nil && o.result.Denied != o.validation.Denied
	if !refused && !mutatingRefused && o.invalid == nil {
		explain.ValidatingStage(&b, o.validation)
	}
	return b.String()
}

func (r *Runner) runCase(ctx context.Context, run *suiteRun, lc *loadedCase, cr *CaseResult) {
	start := time.Now()
	defer func() { cr.Elapsed = time.Since(start) }()
	defer func() {
		// A bug of the runner or the engine fails this case, not the run.
		if p := recover(); p != nil {
			cr.Status, cr.Err = Error, fmt.Sprintf("panic: %v", p)
		}
	}()
	o, err := admit(ctx, lc, run.chain(lc.cluster, run.evaluators[lc.cluster]), nil)
	if err != nil {
		cr.Status, cr.Err = Error, err.Error()
		return
	}
	cr.Result = o.result
	cr.Trace = traceOf(o)
	if r.opts.Observe != nil {
		r.opts.Observe(o.result)
		if len(o.validation.Validations) > 0 {
			r.opts.Observe(o.validation)
		}
	}
	cr.Failures = lc.expect.check(o)
	ignored, warnings := lc.expect.checkIgnored(o.result, r.opts.Strict)
	cr.Failures, cr.Warnings = append(cr.Failures, ignored...), warnings
	if idempotence(r.opts.Idempotence, run.l.Suite, lc.c) {
		cr.Failures = append(cr.Failures, checkIdempotence(ctx, run, lc, o)...)
	}
	if r.opts.Shuffle {
		cr.Failures = append(cr.Failures, r.checkShuffle(ctx, run, lc, o)...)
	}
	cr.Status = Pass
	if len(cr.Failures) > 0 {
		cr.Status = Fail
	}
}
