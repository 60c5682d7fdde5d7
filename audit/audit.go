// Package audit runs MutatingAdmissionPolicies over the objects of a live
// cluster, read only, and reports what they would do to each object if it
// were re-created (CREATE) or updated without change (UPDATE): change it
// (with the patch), deny it, make it invalid (the 422 of validation),
// fail under failurePolicy Ignore, or leave it alone.
//
// The audit reads the cluster through a Lister (pages, retries from the
// continue token, a client that can only GET), builds the simulated
// cluster of package cluster from what the evaluation needs (Namespaces,
// CRDs, RBAC, param objects, the objects kube-apiserver's admission
// plugins read), and evaluates every object through cluster.Decode and
// cluster.Admit — exactly what `mutatis apply` does to one object — in a
// bounded worker pool while the next pages are read. The Report keeps
// counts, per-policy counts, the heaviest runtime costs and one Finding
// per object that would not be left unchanged (Pods of one controller
// that would change the same way are one Finding). ValidatingAdmissionPolicies
// audited beside them (Options.ValidatingPolicies) run in the validating
// stage with PodSecurity and the other built-in plugins' validating halves:
// a refusal there is a deny, and every failing validation is reported
// with its binding's actions (what Deny would refuse).
package audit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// Options say what to audit and how.
type Options struct {
	// Lister reads the cluster.
	Lister *Lister
	// MaxClusterObjects bounds the cluster's objects read around the
	// policies and held for the whole audit (Namespaces, ServiceAccounts,
	// CRDs, params …; not the audited objects, which are evaluated page by
	// page): 0 is DefaultMaxClusterObjects, negative none. Past it the
	// audit ends with an error wrapping ErrTooManyClusterObjects.
	MaxClusterObjects int
	// Policies and Bindings are the policy set audited (--policies), or,
	// with ClusterPolicies, nil: the cluster's own are read.
	Policies        []*admissionregistrationv1.MutatingAdmissionPolicy
	Bindings        []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	ClusterPolicies bool
	// ValidatingPolicies and ValidatingBindings are
	// ValidatingAdmissionPolicies and their bindings audited beside them
	// (--policies): the validating stage of every object's admission runs
	// them after the registry's validation, with the built-in plugins'
	// validating halves (PodSecurity …), as kube-apiserver does; each
	// object's Finding says which bindings' validations fail on it, with
	// their validationActions, whatever those are (what switching an Audit
	// binding to Deny would refuse).
	ValidatingPolicies []*admissionregistrationv1.ValidatingAdmissionPolicy
	ValidatingBindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// PodSecurity, when set (ParsePodSecurity), is the PodSecurity level
	// every Namespace is audited at: its enforce label (and version) in
	// place of the Namespace's own, the Pods and the kinds with a pod
	// template audited (PodSecurity refuses the Pods and warns about the
	// templates): what labelling the Namespaces would refuse.
	PodSecurity *PodSecurityLevel
	// ClusterValidatingPolicies adds the cluster's own
	// ValidatingAdmissionPolicies and bindings to them (read as stored,
	// admissionregistration.k8s.io/v1).
	ClusterValidatingPolicies bool
	// Resources are objects read from files that join the cluster's own
	// around the policies (params or Namespaces not created yet).
	Resources []manifest.Object
	// Namespaces restricts the audit to namespaced objects of these
	// namespaces; empty audits every namespace and the cluster-scoped
	// objects.
	Namespaces []string
	// Selector is a label selector the audited objects must match.
	Selector string
	// Kinds restricts the audited resources (ParseKinds).
	Kinds []Kind
	// Operation is CREATE (default: every object as if re-created) or
	// UPDATE (updated without change: the old object is the object).
	Operation admission.Operation
	// User is the user of the requests; nil: cluster.DefaultUser.
	User user.Info
	// Workers evaluate objects in parallel; 0: GOMAXPROCS.
	Workers int
	// Prefetch is how many pages the lister reads ahead of the page
	// whose objects are being handed to the workers; 0: DefaultPrefetch.
	// Up to Prefetch+1 pages of listed objects are held at once.
	Prefetch int
	// AllPods lists every Pod, not one line per controller (Group).
	AllPods bool
	// AdmissionPlugins choose kube-apiserver's admission plugins before
	// the policies.
	AdmissionPlugins admissionplugins.Flags
	// Compiler compiles the policies; nil for a new one.
	Compiler *compiler.Compiler
	// Progress, when set, is told how the audit goes, from one goroutine.
	Progress func(Progress)
	// Webhooks are MutatingWebhookConfigurations called after the
	// policies, as kube-apiserver's chain calls them (docs/chain.md); their
	// services are reached at ServiceURLs. Each object is admitted through
	// the whole chain (cluster.Admit) in any case: built-in plugins,
	// policies, webhooks and the reinvocation round.
	Webhooks    []*admissionregistrationv1.MutatingWebhookConfiguration
	ServiceURLs webhookclient.ServiceURLs
	// ValidatingWebhooks are ValidatingWebhookConfigurations called in the
	// validating stage, after the ValidatingAdmissionPolicies, as
	// kube-apiserver calls them (concurrently; a refusal is a deny).
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration
	// Notice receives what the run tells a person (a resource skipped, a
	// page retried); may be nil.
	Notice func(string)
}

// Progress is the state of a running audit.
type Progress struct {
	// Resource is being listed.
	Resource string
	// Listed and Evaluated count objects.
	Listed, Evaluated int64
	// Remaining is the API server's estimate of the objects of Resource
	// still to list, or -1.
	Remaining int64
	// Elapsed since the listing of the audited objects began.
	Elapsed time.Duration
}

// Auditor evaluates objects of the cluster. Build one with New.
type Auditor struct {
	opts      Options
	sim       *cluster.Cluster
	chain     cluster.Chain
	policies  []*admissionregistrationv1.MutatingAdmissionPolicy
	bindings  []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	vpolicies []*admissionregistrationv1.ValidatingAdmissionPolicy
	vbindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// validatingWebhooks is the chain's ValidatingWebhooks stage, kept to
	// close its clients.
	validatingWebhooks *webhookclient.ValidatingDispatcher
	targets            []matching.Resource
	operation          admission.Operation
}

// clusterSource names an object read from the cluster in errors.
func clusterSource(u *unstructured.Unstructured) manifest.Source {
	name := u.GetName()
	if ns := u.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return manifest.Source{File: "cluster:" + u.GetKind() + "/" + name, Item: -1}
}

// The resources read around the policies.
var (
	crdsGVR     = schema.GroupVersionResource{Group: apiextensionsv1.GroupName, Version: "v1", Resource: "customresourcedefinitions"}
	policiesGVR = schema.GroupVersionResource{Group: manifest.GroupName, Version: "v1", Resource: "mutatingadmissionpolicies"}
	bindingsGVR = schema.GroupVersionResource{Group: manifest.GroupName, Version: "v1", Resource: "mutatingadmissionpolicybindings"}
	// The cluster's ValidatingAdmissionPolicies (ClusterValidatingPolicies).
	validatingPoliciesGVR = schema.GroupVersionResource{Group: manifest.GroupName, Version: "v1", Resource: "validatingadmissionpolicies"}
	validatingBindingsGVR = schema.GroupVersionResource{Group: manifest.GroupName, Version: "v1", Resource: "validatingadmissionpolicybindings"}
	contextGVRs           = []schema.GroupVersionResource{
		{Version: "v1", Resource: "namespaces"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
		// What kube-apiserver's default admission plugins read.
		{Version: "v1", Resource: "serviceaccounts"},
		{Version: "v1", Resource: "limitranges"},
		{Version: "v1", Resource: "nodes"},
		{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"},
		{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"},
		{Group: "networking.k8s.io", Version: "v1", Resource: "ingressclasses"},
		{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"},
	}
)

// ContextResources are the resources an audit reads besides the audited
// ones: the CRDs, the cluster's policies and bindings (ClusterPolicies;
// its ValidatingAdmissionPolicies and bindings with
// ClusterValidatingPolicies), and the objects around the policies. With the param resources of the
// policies and the audited resources, they are what the least-privilege
// ClusterRole of docs/audit.md grants.
func ContextResources() []schema.GroupVersionResource {
	return append([]schema.GroupVersionResource{crdsGVR, policiesGVR, bindingsGVR, validatingPoliciesGVR, validatingBindingsGVR}, contextGVRs...)
}

// DefaultMaxClusterObjects is Options.MaxClusterObjects' default: about
// 450 MB of held objects at the size of a Namespace as the audit holds it
// (a soft memory limit of 400Mi cannot keep more).
const DefaultMaxClusterObjects = 100000

// ErrTooManyClusterObjects is wrapped by the error of an audit whose
// cluster has more objects around the policies than it may hold.
var ErrTooManyClusterObjects = errors.New("too many objects to hold")

// New reads from the cluster what the evaluation needs and builds the
// simulated cluster and the policies' evaluator.
func New(ctx context.Context, o Options) (*Auditor, error) {
	if o.Operation == "" {
		o.Operation = admission.Create
	}
	if o.Operation != admission.Create && o.Operation != admission.Update {
		return nil, fmt.Errorf("operation must be CREATE or UPDATE, not %q", o.Operation)
	}
	if o.User == nil {
		o.User = cluster.DefaultUser()
	}
	if o.Compiler == nil {
		comp, err := compiler.New()
		if err != nil {
			return nil, err
		}
		o.Compiler = comp
	}
	a := &Auditor{opts: o, operation: o.Operation, policies: o.Policies, bindings: o.Bindings, vpolicies: o.ValidatingPolicies, vbindings: o.ValidatingBindings}
	var objects []manifest.Object
	maxObjects := o.MaxClusterObjects
	if maxObjects == 0 {
		maxObjects = DefaultMaxClusterObjects
	}
	readSelected := func(gvr schema.GroupVersionResource, sel Selector, keep func(*unstructured.Unstructured)) error {
		err := o.Lister.List(ctx, gvr, "", sel, func(p Page) error {
			for i := range p.Items {
				keep(&p.Items[i])
			}
			if maxObjects > 0 && len(objects) > maxObjects {
				return fmt.Errorf("listing %s: %w: the audit holds the cluster's objects around the policies (Namespaces, ServiceAccounts, CRDs, params …) and there are more than %d (--max-cluster-objects; raise it with --memory-limit)", describe(gvr, ""), ErrTooManyClusterObjects, maxObjects)
			}
			return nil
		}, a.retried)
		if NotListable(err) {
			a.notice(fmt.Sprintf("%s is not served: skipped", describe(gvr, "")))
			return nil
		}
		return err
	}
	read := func(gvr schema.GroupVersionResource, keep func(*unstructured.Unstructured)) error {
		return readSelected(gvr, Selector{}, keep)
	}
	addObject := func(u *unstructured.Unstructured) {
		objects = append(objects, manifest.Object{Source: clusterSource(u), Object: u})
	}
	// CRDs first: the table needs them to resolve paramKinds and rules.
	table := matching.DefaultTable()
	if err := read(crdsGVR, func(u *unstructured.Unstructured) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err == nil && table.AddCRD(crd) == nil {
			addObject(u)
		} else {
			a.notice(fmt.Sprintf("CustomResourceDefinition %s cannot be used: skipped", u.GetName()))
		}
	}); err != nil {
		return nil, err
	}
	if o.ClusterPolicies {
		if err := a.readClusterPolicies(read); err != nil {
			return nil, err
		}
	}
	if o.ClusterValidatingPolicies {
		var errs []error
		if err := read(validatingPoliciesGVR, typed(&a.vpolicies, &errs)); err != nil {
			return nil, err
		}
		if err := read(validatingBindingsGVR, typed(&a.vbindings, &errs)); err != nil {
			return nil, err
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	for _, gvr := range contextGVRs {
		if err := read(gvr, addObject); err != nil {
			return nil, err
		}
	}
	// Param objects: those the bindings' paramRefs can name.
	if err := a.readParams(table, readSelected, addObject); err != nil {
		return nil, err
	}
	objects = append(objects, o.Resources...)
	if o.PodSecurity != nil {
		objects = o.PodSecurity.label(objects)
	}
	sim, err := cluster.New(objects, cluster.Options{AdmissionPlugins: o.AdmissionPlugins})
	if err != nil {
		return nil, err
	}
	ev, err := sim.Evaluator(o.Compiler, a.policies, a.bindings)
	if err != nil {
		return nil, err
	}
	a.sim, a.chain = sim, cluster.Chain{Policies: ev}
	if len(o.Webhooks) > 0 {
		if a.chain.Webhooks, err = sim.Webhooks(o.Webhooks, o.ServiceURLs, webhookclient.Options{}); err != nil {
			return nil, err
		}
	}
	if len(o.ValidatingWebhooks) > 0 {
		vd, err := sim.ValidatingWebhooks(o.ValidatingWebhooks, o.ServiceURLs, webhookclient.Options{}, nil)
		if err != nil {
			return nil, err
		}
		a.validatingWebhooks = vd
		a.chain.ValidatingWebhooks = vd
	}
	if len(a.vpolicies) > 0 {
		vev, err := sim.ValidatingPolicies(nil, a.vpolicies, a.vbindings)
		if err != nil {
			return nil, err
		}
		a.chain.ValidatingPolicies = vev
	}
	sels := a.selectors()
	if o.PodSecurity != nil {
		sels = append(sels, podSecuritySelector)
	}
	a.targets = targets(sim.Table, sels, o.Operation, o.Kinds)
	return a, nil
}

// Close releases the connections of the webhooks' clients.
func (a *Auditor) Close() {
	if a.chain.Webhooks != nil {
		a.chain.Webhooks.Close(nil)
	}
	if a.validatingWebhooks != nil {
		a.validatingWebhooks.Close(nil)
	}
}

// readParams reads the param objects the bindings can name: for each
// binding of a policy with a paramKind, the objects of that kind named by
// its paramRef (by name, or by label selector) in its namespace or, when
// it names none, in any (the request's namespace decides at admission).
// Objects already read (a paramKind that is also a context resource) are
// kept once.
func (a *Auditor) readParams(table *matching.Table, read func(schema.GroupVersionResource, Selector, func(*unstructured.Unstructured)) error, add func(*unstructured.Unstructured)) error {
	type ref struct {
		kind *admissionregistrationv1.ParamKind
		ref  *admissionregistrationv1.ParamRef
	}
	var refs []ref
	kinds := map[string]*admissionregistrationv1.ParamKind{}
	for _, p := range a.policies {
		kinds[p.Name] = p.Spec.ParamKind
	}
	for _, b := range a.bindings {
		refs = append(refs, ref{kinds[b.Spec.PolicyName], b.Spec.ParamRef})
	}
	vkinds := map[string]*admissionregistrationv1.ParamKind{}
	for _, p := range a.vpolicies {
		vkinds[p.Name] = p.Spec.ParamKind
	}
	for _, b := range a.vbindings {
		refs = append(refs, ref{vkinds[b.Spec.PolicyName], b.Spec.ParamRef})
	}
	type query struct {
		gvr schema.GroupVersionResource
		sel Selector
	}
	seen := map[query]bool{}
	kept := map[string]bool{}
	for _, r := range refs {
		pk, ref := r.kind, r.ref
		if pk == nil || ref == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(pk.APIVersion)
		if err != nil {
			continue // the policy's own configuration error, reported by the evaluation
		}
		var sel Selector
		switch {
		case ref.Name != "":
			sel.Field = "metadata.name=" + ref.Name
		case ref.Selector != nil:
			s, err := metav1.LabelSelectorAsSelector(ref.Selector)
			if err != nil {
				continue // the binding's own configuration error
			}
			sel.Label = s.String()
		}
		if ref.Namespace != "" {
			sel.Field = strings.Join(slices.DeleteFunc([]string{sel.Field, "metadata.namespace=" + ref.Namespace}, func(s string) bool { return s == "" }), ",")
		}
		for _, r := range table.ResourcesForKind(gv.WithKind(pk.Kind)) {
			q := query{r.GroupVersionResource(), sel}
			if seen[q] || isContext(q.gvr) {
				continue
			}
			seen[q] = true
			if err := read(q.gvr, sel, func(u *unstructured.Unstructured) {
				key := u.GetAPIVersion() + "/" + u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
				if !kept[key] {
					kept[key] = true
					add(u)
				}
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

func isContext(gvr schema.GroupVersionResource) bool {
	for _, c := range contextGVRs {
		if c == gvr {
			return true
		}
	}
	return false
}

// readClusterPolicies reads the cluster's MutatingAdmissionPolicies and
// bindings (admissionregistration.k8s.io/v1), as stored: defaulted and
// validated by the API server.
func (a *Auditor) readClusterPolicies(read func(schema.GroupVersionResource, func(*unstructured.Unstructured)) error) error {
	var errs []error
	if err := read(policiesGVR, typed(&a.policies, &errs)); err != nil {
		return err
	}
	if err := read(bindingsGVR, typed(&a.bindings, &errs)); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// typed appends each object it is given, converted to T, to list; the
// errors to errs.
func typed[T any](list *[]*T, errs *[]error) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		o := new(T)
		if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, o); err != nil {
			*errs = append(*errs, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err))
			return
		}
		*list = append(*list, o)
	}
}

func (a *Auditor) notice(s string) {
	if a.opts.Notice != nil {
		a.opts.Notice(s)
	}
}

func (a *Auditor) retried(err error, wait time.Duration) {
	a.notice(fmt.Sprintf("retrying in %s: %v", wait, err))
}

// Targets are the audited resources: those the policies' rules can match
// (Targets).
func (a *Auditor) Targets() []matching.Resource { return a.targets }

// ValidatingPolicies and ValidatingBindings are the audited
// ValidatingAdmissionPolicies and their bindings.
func (a *Auditor) ValidatingPolicies() []*admissionregistrationv1.ValidatingAdmissionPolicy {
	return a.vpolicies
}

// ValidatingBindings are the audited ValidatingAdmissionPolicyBindings.
func (a *Auditor) ValidatingBindings() []*admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return a.vbindings
}

// selectors are the matchConstraints of every audited policy, mutating
// and validating.
func (a *Auditor) selectors() []matching.Selector {
	var out []matching.Selector
	for _, p := range a.policies {
		out = append(out, matching.SelectorForPolicy(p))
	}
	for _, p := range a.vpolicies {
		out = append(out, matching.SelectorForMatchResources(p.Spec.MatchConstraints))
	}
	return out
}

// Policies and Bindings are the audited policy set.
func (a *Auditor) Policies() []*admissionregistrationv1.MutatingAdmissionPolicy { return a.policies }

// Bindings are the audited bindings.
func (a *Auditor) Bindings() []*admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return a.bindings
}

// Cluster is the simulated cluster built from the live one.
func (a *Auditor) Cluster() *cluster.Cluster { return a.sim }

// Run lists the audited objects and evaluates each in the worker pool,
// the lister reading up to Options.Prefetch pages ahead of the workers.
func (a *Auditor) Run(ctx context.Context) (*Report, error) {
	workers := a.opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	prefetch := a.opts.Prefetch
	if prefetch <= 0 {
		prefetch = DefaultPrefetch
	}
	rep := newReport(a)
	start := time.Now()
	var evaluated int64
	// The lister's side of the progress.
	var mu sync.Mutex
	listing := Progress{Remaining: -1}
	progress := func() {
		mu.Lock()
		p := listing
		mu.Unlock()
		p.Evaluated, p.Elapsed = evaluated, time.Since(start)
		a.opts.Progress(p)
	}
	p := pipeline{
		workers:  workers,
		prefetch: prefetch,
		list: func(ctx context.Context, page func(matching.Resource, Page) error) error {
			return a.list(ctx, func(res matching.Resource, p Page) error {
				mu.Lock()
				listing.Resource, listing.Remaining = resourceName(res), p.Remaining
				listing.Listed += int64(len(p.Items))
				mu.Unlock()
				return page(res, p)
			})
		},
		eval: a.finding,
		add: func(f Finding) {
			evaluated++
			rep.add(f)
		},
	}
	if a.opts.Progress != nil {
		p.tick, p.tickEvery = progress, 200*time.Millisecond
	}
	if err := p.run(ctx); err != nil {
		return nil, err
	}
	if a.opts.Progress != nil {
		mu.Lock()
		listing.Remaining = 0
		mu.Unlock()
		progress()
	}
	rep.finish(time.Since(start))
	return rep, nil
}

// list lists every target in every audited namespace.
func (a *Auditor) list(ctx context.Context, page func(matching.Resource, Page) error) error {
	for _, res := range a.targets {
		namespaces := []string{""}
		if len(a.opts.Namespaces) > 0 {
			if !res.Namespaced {
				continue
			}
			namespaces = a.opts.Namespaces
		}
		for _, ns := range namespaces {
			err := a.opts.Lister.List(ctx, res.GroupVersionResource(), ns, Selector{Label: a.opts.Selector}, func(p Page) error { return page(res, p) }, a.retried)
			if NotListable(err) {
				a.notice(fmt.Sprintf("%s cannot be listed: skipped", describe(res.GroupVersionResource(), ns)))
				continue
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// Get reads one object of the cluster (for --object).
func (a *Auditor) Get(ctx context.Context, res matching.Resource, namespace, name string) (*unstructured.Unstructured, error) {
	ri := a.opts.Lister.Client.Resource(res.GroupVersionResource())
	if res.Namespaced {
		if namespace == "" {
			namespace = metav1.NamespaceDefault
		}
		return ri.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return ri.Get(ctx, name, metav1.GetOptions{})
}
