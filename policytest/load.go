package policytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// NoSuitesError is RunFiles' error when no suite file is found: a run
// that tests nothing must not pass.
type NoSuitesError struct {
	// Paths are the paths searched.
	Paths []string
}

func (e *NoSuitesError) Error() string {
	return fmt.Sprintf("no test suites (*%s or *%s files) found under %s", FileSuffix, FileSuffixYML, strings.Join(e.Paths, ", "))
}

// Discover returns the suite files under paths: files are taken as they
// are, directories are searched recursively for files named
// *.mutatis-test.yaml or *.mutatis-test.yml, for the tests/ directories
// of kat's convention (IsKatTestsDir), for the Kyverno CLI's test files
// of MutatingAdmissionPolicies (IsKyvernoTestFile) and for kaptest's
// manifests with MutatingAdmissionPolicy tests (IsKaptestFile), which are
// suites too (KatSuite, KyvernoSuite, KaptestSuite). The result is sorted and has no duplicates.
func Discover(paths []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			add(p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && IsKatTestsDir(path) {
				// kat's convention: the tests of the policies beside it.
				add(path)
				return filepath.SkipDir
			}
			if d.IsDir() && path != p && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" && !strings.Contains(p, "testdata")) {
				// Like go test: testdata holds fixtures, e.g. broken suites
				// that tests expect to fail, unless asked for explicitly.
				return filepath.SkipDir
			}
			if !d.IsDir() && (IsSuiteFile(d.Name()) || IsKyvernoTestFile(path) || IsKaptestFile(path)) {
				add(path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

// Loaded is a suite read from disk with everything it refers to: the
// policies, the simulated cluster and the objects of every case.
type Loaded struct {
	// File is the suite's path; Name its metadata.name (or file name).
	File, Name string
	Suite      *Suite
	// Policies and Bindings are the policies under test.
	Policies []*admissionregistrationv1.MutatingAdmissionPolicy
	Bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	// ValidatingPolicies and ValidatingBindings are the
	// ValidatingAdmissionPolicies under test, run by the validating stage
	// on what the registry would store.
	ValidatingPolicies []*admissionregistrationv1.ValidatingAdmissionPolicy
	ValidatingBindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// Webhooks are the suite's MutatingWebhookConfigurations, called
	// after the policies; ServiceURLs where their services are reached.
	Webhooks    []webhookclient.Configuration
	ServiceURLs webhookclient.ServiceURLs
	// Files lists every file the suite read (for --watch).
	Files []string

	objects []manifest.Object // the suite's cluster objects
	cluster *cluster.Cluster
	cases   []*loadedCase
	// clusterOptions are those of the suite's clusters.
	clusterOptions cluster.Options
	// runPluginsErr is the refusal of the run's admission plugins
	// (clusterOptions), which the suite's clusters then leave out.
	runPluginsErr error
}

type loadedCase struct {
	c                 *Case
	cluster           *cluster.Cluster
	object, oldObject *unstructured.Unstructured
	operation         admission.Operation
	namespace         string
	user              user.Info
	expect            expectations
}

// LoadSuite reads a suite file (or a kat tests/ directory, KatSuite) and
// everything it refers to. Problems are returned as an *InputError naming
// the file and the field path.
func LoadSuite(ctx context.Context, file string) (*Loaded, error) {
	return loadSuite(ctx, file, nil, clusterOptions{})
}

// loadSuite is LoadSuite with the policies of suites that name none
// (Options.Policies, as given: not relative to the suite).
func loadSuite(ctx context.Context, file string, policies []string, co clusterOptions) (*Loaded, error) {
	if info, err := os.Stat(file); err == nil && info.IsDir() {
		return loadKat(ctx, file, policies, co)
	}
	if IsKyvernoTestFile(file) {
		return loadKyverno(ctx, file, policies, co)
	}
	if IsKaptestFile(file) {
		return loadKaptest(ctx, file, policies, co)
	}
	s, err := readSuiteFile(file)
	if err != nil {
		return nil, err
	}
	return load(ctx, file, s, policies, co)
}

// clusterOptions are what a run (Options.NoValidate,
// Options.AdmissionPlugins) chooses of its suites' simulated clusters.
type clusterOptions struct {
	noValidate bool
	// plugins are the admission plugins of the suites that choose none
	// (Suite.AdmissionPlugins); nil for kube-apiserver's default set.
	plugins *admissionplugins.Flags
}

// load resolves s, whose relative paths are relative to file's directory;
// a suite without policies tests defaultPolicies. Its simulated clusters
// are built with co.
func load(ctx context.Context, file string, s *Suite, defaultPolicies []string, co clusterOptions) (*Loaded, error) {
	dir := filepath.Dir(file)
	l := &Loaded{File: file, Name: s.Metadata.Name, Suite: s, Files: []string{file}}
	var errs field.ErrorList
	policyPaths := s.Policies
	if len(policyPaths) == 0 {
		if len(defaultPolicies) == 0 {
			return nil, &InputError{File: file, Errs: field.ErrorList{field.Required(field.NewPath("policies"), "at least one file or directory of policies (or mutatis test --policies)")}}
		}
		policyPaths = defaultPolicies
	}
	// kube-apiserver refuses to create a policy whose CEL does not compile:
	// such a suite is bad input, not a policy to evaluate. The policies'
	// API validation runs on another goroutine while the suite's other
	// inputs load and its cases decode, as if they were valid; the
	// validation's errors are reported where and as the policies' load
	// errors are, and a suite with any is refused with them alone, as if
	// nothing after the policies had been loaded (refused).
	type policyFile struct {
		i   int
		set *manifest.Set
	}
	var loaded []policyFile
	policyErrs := make([]*field.Error, len(policyPaths)) // by path: its load or validation error
	for i, p := range policyPaths {
		path := p
		if len(s.Policies) > 0 {
			path = resolve(dir, p)
		}
		set, err := manifest.Load(ctx, []string{path}, nil)
		if err != nil {
			policyErrs[i] = field.Invalid(policiesPath(s, i), p, err.Error())
			continue
		}
		l.Files = append(l.Files, manifestFiles(path)...)
		loaded = append(loaded, policyFile{i, set})
		for _, mp := range set.Policies {
			l.Policies = append(l.Policies, mp.Policy)
		}
		for _, b := range set.Bindings {
			l.Bindings = append(l.Bindings, b.Binding)
		}
		vps, vbs := set.ValidatingAPIObjects()
		l.ValidatingPolicies = append(l.ValidatingPolicies, vps...)
		l.ValidatingBindings = append(l.ValidatingBindings, vbs...)
		l.objects = append(l.objects, set.Objects...)
	}
	validated := make(chan []error, 1)
	go func() {
		verrs := make([]error, len(loaded))
		comp, err := compiler.New()
		for j, f := range loaded {
			if verrs[j] = err; err == nil {
				verrs[j] = cluster.ValidatePolicies(comp, f.set.Policies)
			}
		}
		validated <- verrs
	}()
	// refused waits for the validation and returns the policies' errors in
	// their order, nil when there are none.
	refused := sync.OnceValue(func() field.ErrorList {
		for j, err := range <-validated {
			if err != nil {
				i := loaded[j].i
				policyErrs[i] = field.Invalid(policiesPath(s, i), policyPaths[i], err.Error())
			}
		}
		var out field.ErrorList
		for _, e := range policyErrs {
			if e != nil {
				out = append(out, e)
			}
		}
		return out
	})
	for i, p := range s.Webhooks {
		path := resolve(dir, p)
		set, err := manifest.Load(ctx, []string{path}, nil)
		if err == nil {
			var configs []webhookclient.Configuration
			if configs, err = webhookclient.LoadOnly(set); err == nil {
				l.Webhooks = append(l.Webhooks, configs...)
			}
		}
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath("webhooks").Index(i), p, err.Error()))
		}
		l.Files = append(l.Files, manifestFiles(path)...)
	}
	l.ServiceURLs = webhookclient.ServiceURLs{}
	for _, m := range s.ServiceURLs {
		_ = l.ServiceURLs.Add(m) // validated with the suite
	}
	objs, files, rerrs := loadManifests(ctx, file, field.NewPath("resources"), s.Resources)
	errs = append(errs, rerrs...)
	l.objects = append(l.objects, objs...)
	l.Files = append(l.Files, files...)
	if len(errs) > 0 || len(loaded) < len(policyPaths) {
		return nil, &InputError{File: file, Errs: append(refused(), errs...)}
	}
	// From here on, what goes wrong is reported only for valid policies.
	fail := func(errs field.ErrorList) error {
		if perrs := refused(); len(perrs) > 0 {
			return &InputError{File: file, Errs: perrs}
		}
		return &InputError{File: file, Errs: errs}
	}
	if len(l.Policies) == 0 && len(l.ValidatingPolicies) == 0 && len(s.Webhooks) == 0 {
		return nil, fail(field.ErrorList{field.Invalid(field.NewPath("policies"), policyPaths, "no MutatingAdmissionPolicy or ValidatingAdmissionPolicy found")})
	}
	if s.Bindings == BindingsAuto {
		l.Bindings = append(l.Bindings, autoBindings(l.Policies, l.Bindings)...)
		l.ValidatingBindings = append(l.ValidatingBindings, autoValidatingBindings(l.ValidatingPolicies, l.ValidatingBindings)...)
	}
	suitePluginsErr := l.chooseClusterOptions(co)
	var err error
	if l.cluster, err = cluster.New(l.objects, l.clusterOptions); err != nil {
		return nil, fail(field.ErrorList{fieldProblem(field.NewPath("resources"), err.Error())})
	}
	if suitePluginsErr != nil {
		return nil, fail(field.ErrorList{fieldProblem(field.NewPath("admissionPlugins"), suitePluginsErr.Error())})
	}
	for i := range s.Cases {
		p := field.NewPath("cases").Index(i)
		lc, files, cerrs := l.loadCase(ctx, p, &s.Cases[i])
		errs = append(errs, cerrs...)
		l.Files = append(l.Files, files...)
		l.cases = append(l.cases, lc)
	}
	if len(errs) > 0 || len(refused()) > 0 {
		return nil, fail(errs)
	}
	l.Files = dedupe(l.Files)
	return l, nil
}

// chooseClusterOptions chooses the options of the suite's clusters under
// the run's co: the suite's admission plugins if it names them, else the
// run's. Flags that admissionplugins.Enabled refuses are left out: the
// suite's error is returned, the run's kept for suiteJobs to report.
func (l *Loaded) chooseClusterOptions(co clusterOptions) error {
	l.clusterOptions = cluster.Options{NoValidate: co.noValidate}
	var flags admissionplugins.Flags
	switch {
	case l.Suite.AdmissionPlugins != nil:
		flags = l.Suite.AdmissionPlugins.flags(filepath.Dir(l.File))
		if _, err := admissionplugins.Enabled(flags); err != nil {
			return err
		}
	case co.plugins != nil:
		flags = *co.plugins
		if _, l.runPluginsErr = admissionplugins.Enabled(flags); l.runPluginsErr != nil {
			return nil
		}
	}
	l.clusterOptions.AdmissionPlugins = flags
	return nil
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	out := s[:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func resolve(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// manifestFiles lists the files manifest.Load reads for path (for
// --watch); unreadable paths give none.
func manifestFiles(path string) []string {
	info, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if !info.IsDir() {
		return []string{path}
	}
	var out []string
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			switch strings.ToLower(filepath.Ext(p)) {
			case ".yaml", ".yml", ".json":
				out = append(out, p)
			}
		}
		return nil
	})
	return out
}

// loadManifests reads paths and inline objects; only non-policy objects
// are kept (policies belong in `policies`).
func loadManifests(ctx context.Context, file string, p *field.Path, ms []Manifest) ([]manifest.Object, []string, field.ErrorList) {
	var objs []manifest.Object
	var files []string
	var errs field.ErrorList
	dir := filepath.Dir(file)
	for i, m := range ms {
		var set *manifest.Set
		var err error
		if m.Inline != nil {
			data, merr := json.Marshal(m.Inline)
			if merr != nil {
				errs = append(errs, fieldProblem(p.Index(i), merr.Error()))
				continue
			}
			set, err = manifest.Parse(fmt.Sprintf("%s (%s)", file, p.Index(i)), data)
		} else {
			path := resolve(dir, m.Path)
			set, err = manifest.Load(ctx, []string{path}, nil)
			files = append(files, manifestFiles(path)...)
		}
		if err != nil {
			errs = append(errs, field.Invalid(p.Index(i), m.Path, err.Error()))
			continue
		}
		if len(set.Policies)+len(set.Bindings) > 0 {
			errs = append(errs, field.Invalid(p.Index(i), m.Path, "holds MutatingAdmissionPolicies or bindings: list them under policies"))
			continue
		}
		objs = append(objs, set.Objects...)
	}
	return objs, files, errs
}

// readObject reads exactly one object from a Manifest.
func readObject(ctx context.Context, file string, p *field.Path, m *Manifest) (*unstructured.Unstructured, []string, *field.Error) {
	objs, files, errs := loadManifests(ctx, file, p, []Manifest{*m})
	if len(errs) > 0 {
		e := errs[0]
		e.Field = p.String()
		return nil, files, e
	}
	if len(objs) != 1 {
		return nil, files, field.Invalid(p, m.Path, fmt.Sprintf("want exactly one object, found %d", len(objs)))
	}
	return objs[0].Object, files, nil
}

// findRef finds the object ref names among objs.
func findRef(objs []manifest.Object, ref *ObjectRef) (*unstructured.Unstructured, error) {
	var found []*unstructured.Unstructured
	for _, o := range objs {
		u := o.Object
		if u.GetKind() != ref.Kind || u.GetName() != ref.Name {
			continue
		}
		if ref.APIVersion != "" && u.GetAPIVersion() != ref.APIVersion {
			continue
		}
		if ref.Namespace != "" && u.GetNamespace() != ref.Namespace {
			continue
		}
		found = append(found, u)
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no %s in the resources", ref)
	case 1:
		return found[0].DeepCopy(), nil
	}
	return nil, fmt.Errorf("%d objects match %s: give apiVersion and namespace", len(found), ref)
}

func (l *Loaded) loadCase(ctx context.Context, p *field.Path, c *Case) (*loadedCase, []string, field.ErrorList) {
	lc := &loadedCase{c: c, cluster: l.cluster}
	var errs field.ErrorList
	caseObjs, files, rerrs := loadManifests(ctx, l.File, p.Child("resources"), c.Resources)
	errs = append(errs, rerrs...)
	all := append(append([]manifest.Object{}, l.objects...), caseObjs...)
	if (len(caseObjs) > 0 || c.NoDefaults) && len(rerrs) == 0 {
		o := l.clusterOptions
		o.NoDefaults = c.NoDefaults
		cl, err := cluster.New(all, o)
		if err != nil {
			errs = append(errs, fieldProblem(p.Child("resources"), err.Error()))
		}
		lc.cluster = cl
	}
	get := func(name string, m *Manifest, ref *ObjectRef) *unstructured.Unstructured {
		switch {
		case m != nil:
			u, fs, err := readObject(ctx, l.File, p.Child(name), m)
			files = append(files, fs...)
			if err != nil {
				errs = append(errs, err)
			}
			return u
		case ref != nil:
			u, err := findRef(all, ref)
			if err != nil {
				errs = append(errs, field.Invalid(p.Child(name+"Ref"), ref.String(), err.Error()))
			}
			return u
		}
		return nil
	}
	lc.object = get("object", c.Object, c.ObjectRef)
	lc.oldObject = get("oldObject", c.OldObject, c.OldObjectRef)
	lc.operation = admission.Operation(c.operation(l.Suite.Defaults))
	if lc.operation == admission.Delete && lc.oldObject == nil {
		// A DELETE carries the deleted object as its old object, and no
		// object (as kube-apiserver's request does).
		lc.object, lc.oldObject = nil, lc.object
	}
	lc.namespace = c.Namespace
	if lc.namespace == "" {
		lc.namespace = l.Suite.Defaults.Namespace
	}
	u := c.User
	if u == nil {
		u = l.Suite.Defaults.User
	}
	if u != nil {
		name := u.Name
		if name == "" {
			name = "admin"
		}
		lc.user = &user.DefaultInfo{Name: name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	}
	e := c.Expect
	lc.expect = expectations{
		patch: derefPatch(e.Patch), hasPatch: e.Patch != nil, unchanged: e.Unchanged, denied: e.Denied,
		applied: e.Applied, notApplied: e.NotApplied, maxRuntimeCost: e.MaxRuntimeCost,
		auditAnnotations: e.AuditAnnotations, validationFailures: e.ValidationFailures,
	}
	ep := p.Child("expect")
	for i, text := range e.Warnings {
		re, err := regexp.Compile(text)
		if err != nil {
			errs = append(errs, field.Invalid(ep.Child("warnings").Index(i), text, err.Error()))
			continue
		}
		lc.expect.warnings = append(lc.expect.warnings, re)
	}
	for i, text := range e.IgnoredErrors {
		re, err := regexp.Compile(text)
		if err != nil {
			errs = append(errs, field.Invalid(ep.Child("ignoredErrors").Index(i), text, err.Error()))
			continue
		}
		lc.expect.ignoredErrors = append(lc.expect.ignoredErrors, re)
	}
	if e.Invalid != "" {
		re, err := regexp.Compile(e.Invalid)
		if err != nil {
			errs = append(errs, field.Invalid(ep.Child("invalid"), e.Invalid, err.Error()))
		}
		lc.expect.invalid = re
	}
	for _, x := range []struct {
		name string
		m    *Manifest
		dst  *map[string]any
	}{{"object", e.Object, &lc.expect.object}, {"objectContains", e.ObjectContains, &lc.expect.objectContains}} {
		if x.m == nil {
			continue
		}
		if x.m.Inline != nil {
			*x.dst = x.m.Inline
			continue
		}
		u, fs, err := readObject(ctx, l.File, ep.Child(x.name), x.m)
		files = append(files, fs...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		*x.dst = u.Object
	}
	if len(errs) == 0 && (lc.object != nil || lc.oldObject != nil) {
		// Resolve the request now, so that a case the cluster cannot serve
		// is bad input rather than a failure.
		if _, err := lc.resolve(); err != nil {
			errs = append(errs, fieldProblem(p.Child("object"), err.Error()))
		}
	}
	return lc, files, errs
}

// resolve decodes the case's request without the admission plugins
// before MAP, whose refusals are outcomes of the case, not bad input.
func (lc *loadedCase) resolve() (*matching.Attributes, error) {
	req := lc.request(nil)
	req.SkipAdmissionPlugins = true
	return lc.cluster.Attributes(req)
}

// decodeSteps decodes the case's request from copies of its objects (the
// engine's inputs are never shared between runs) as cluster.DecodeSteps
// does: the admission attributes, the decoder's warnings and the steps of
// the admission plugins before MAP (on a plugin's refusal, the Decoded
// beside the error). A non-nil object, an admitted one, replaces the
// case's object.
func (lc *loadedCase) decodeSteps(object *unstructured.Unstructured) (*cluster.Decoded, error) {
	return lc.cluster.DecodeSteps(lc.request(object))
}

// request is the case's request, with object instead of the case's
// object when set.
func (lc *loadedCase) request(object *unstructured.Unstructured) cluster.Request {
	req := cluster.Request{
		Object: lc.object.DeepCopy(), Operation: lc.operation, Subresource: lc.c.Subresource,
		Namespace: lc.namespace, User: lc.user, DryRun: lc.c.DryRun,
		// A failed case prints the trace, what each plugin did included.
		PluginChanges: true,
	}
	if object != nil {
		// An admitted object, admitted again: it went through the
		// admission plugins before MAP already.
		req.Object, req.SkipAdmissionPlugins = object.DeepCopy(), true
	}
	if lc.oldObject != nil {
		req.OldObject = lc.oldObject.DeepCopy()
	}
	return req
}

// CaseRequest is the admission request of one case and the simulated
// cluster it runs in (the suite's, or its own when the case adds
// resources). `mutatis bench --suite` measures policies on them.
type CaseRequest struct {
	// Name is "suite/case".
	Name    string
	Cluster *cluster.Cluster
	Request cluster.Request
}

// Requests returns the requests of every case, in suite order. Each call
// returns fresh copies of the objects.
func (l *Loaded) Requests() []CaseRequest {
	out := make([]CaseRequest, 0, len(l.cases))
	for _, lc := range l.cases {
		req := cluster.Request{
			Object: lc.object.DeepCopy(), Operation: lc.operation, Subresource: lc.c.Subresource,
			Namespace: lc.namespace, User: lc.user, DryRun: lc.c.DryRun,
		}
		if lc.oldObject != nil {
			req.OldObject = lc.oldObject.DeepCopy()
		}
		out = append(out, CaseRequest{Name: l.Name + "/" + lc.c.Name, Cluster: lc.cluster, Request: req})
	}
	return out
}

// validatePolicies runs kube-apiserver's create-time validation of the
// policies' expressions.
func validatePolicies(policies []manifest.Policy) error {
	comp, err := compiler.New()
	if err != nil {
		return err
	}
	return cluster.ValidatePolicies(comp, policies)
}

// policiesPath is the field path of the i-th policy path of s: its
// policies, or --policies when it names none.
func policiesPath(s *Suite, i int) *field.Path {
	if len(s.Policies) == 0 {
		return field.NewPath("--policies").Index(i)
	}
	return field.NewPath("policies").Index(i)
}

// autoBindings are the bindings of `bindings: auto`: one for every policy
// that no binding names, named as the policy, with no matchResources (the
// policy's matchConstraints alone decide) and no paramRef, defaulted as
// kube-apiserver defaults a binding it creates. A name a binding already
// has is left alone (that binding is the user's).
func autoBindings(policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) []*admissionregistrationv1.MutatingAdmissionPolicyBinding {
	bound, taken := map[string]bool{}, map[string]bool{}
	for _, b := range bindings {
		bound[b.Spec.PolicyName], taken[b.Name] = true, true
	}
	var out []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for _, p := range policies {
		if bound[p.Name] || taken[p.Name] {
			continue
		}
		b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name},
			Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: p.Name},
		}
		manifest.DefaultBinding(b)
		out = append(out, b)
	}
	return out
}

// autoValidatingBindings are autoBindings for ValidatingAdmissionPolicies:
// a binding named after each policy no binding names, with the Deny
// action (what a binding must have one of; Deny is what kube-apiserver
// enforces).
func autoValidatingBindings(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) []*admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	bound, taken := map[string]bool{}, map[string]bool{}
	for _, b := range bindings {
		bound[b.Spec.PolicyName], taken[b.Name] = true, true
	}
	var out []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, p := range policies {
		if bound[p.Name] || taken[p.Name] {
			continue
		}
		out = append(out, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        p.Name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		})
	}
	return out
}
