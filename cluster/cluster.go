// Package cluster is a simulated cluster built from manifests: the
// Namespaces, param objects, CustomResourceDefinitions and RBAC objects
// that exist "around" a set of policies. `mutatis apply`, `mutatis test`,
// `mutatis bench` and `mutatis serve` with static files evaluate policies
// against one.
package cluster

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/mutation"
	"github.com/mutatis-dev/mutatis/params"
	"github.com/mutatis-dev/mutatis/rbac"
	"github.com/mutatis-dev/mutatis/scheme"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/validating"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// Cluster is the state of a simulated cluster. Build one with New; it is
// safe for concurrent use once built.
type Cluster struct {
	// Table knows the built-in resources of Kubernetes 1.37 and the CRDs.
	Table *matching.Table
	// Schemas are the structural schemas for ApplyConfiguration merges.
	Schemas *applyconfig.Schemas
	// Scheme is kube-apiserver's scheme: the typed form, defaulting,
	// conversion and validation of the objects.
	Scheme *scheme.Scheme
	// Plugins are kube-apiserver's built-in admission plugins
	// (Options.AdmissionPlugins), reading the cluster's objects: those
	// before the policies, and the validating halves the validating stage
	// runs.
	Plugins *admissionplugins.Chain
	// Params holds every object (params are looked up here).
	Params *params.Memory
	// Authorizer evaluates the RBAC objects; system:masters is allowed all.
	Authorizer authorizer.Authorizer

	opts Options
	// disabled are the admission plugins the options leave out, of those
	// whose stage a Chain brings (ValidatingAdmissionPolicy,
	// ValidatingAdmissionWebhook): validatingStages skips them.
	disabled   map[string]bool
	stores     *admissionplugins.Stores
	mu         sync.Mutex
	namespaces map[string]*corev1.Namespace
	// runner runs the admission chain (Admit), recycling its Contexts.
	runner chain.Runner
}

// Options are how a Cluster admits requests, chosen when it is built.
type Options struct {
	// AdmissionPlugins choose kube-apiserver's admission plugins that run
	// before the policies and in the validating stage
	// (admissionplugins.Enabled), and configure them (ConfigFile:
	// --admission-control-config-file, PodSecurity's defaults and
	// exemptions); the zero value is kube-apiserver 1.37's default set.
	AdmissionPlugins admissionplugins.Flags
	// NoDefaults evaluates objects exactly as written: no decoding as
	// kube-apiserver decodes a request body, no defaulting after mutations,
	// and (validation needs the defaults) no validation.
	NoDefaults bool
	// NoValidate skips the API validation of the admitted object (Admit).
	NoValidate bool
	// OnSynthesize, when set, is called when a request names a namespace
	// that was not supplied and one is synthesized for it.
	OnSynthesize func(name string)
	// ClosedNamespaces makes the Namespaces among the objects all the
	// cluster's (with default, kube-system, kube-public and
	// kube-node-lease, which every cluster has): a request in another
	// namespace is refused by the NamespaceLifecycle plugin with
	// kube-apiserver's 404 (`namespaces "X" not found`) instead of being
	// admitted in a synthesized one. Without the plugins (NoDefaults,
	// SkipAdmissionPlugins, NamespaceLifecycle disabled) namespaces are
	// synthesized all the same.
	ClosedNamespaces bool
}

// New builds a Cluster from objects with options o. Errors name the
// object's source; admission plugin flags it refuses are
// admissionplugins.Enabled's error, reported after the objects' errors.
func New(objects []manifest.Object, o Options) (*Cluster, error) {
	c := &Cluster{
		Table:      matching.DefaultTable(),
		Schemas:    applyconfig.NewSchemas(),
		Scheme:     scheme.New(),
		Params:     params.NewMemory(),
		opts:       o,
		namespaces: map[string]*corev1.Namespace{},
	}
	c.stores = admissionplugins.NewStores(c.Scheme)
	if o.ClosedNamespaces {
		c.stores.CloseNamespaces()
	}
	var rb rbacSet
	for _, r := range objects {
		if err := c.add(r.Object, &rb); err != nil {
			return nil, fmt.Errorf("%s: %w", r.Source, err)
		}
	}
	authz, err := rbac.New(rb.clusterRoles, rb.roles, rb.clusterRoleBindings, rb.roleBindings)
	if err != nil {
		return nil, err
	}
	c.Authorizer = authz
	if enabled, err := admissionplugins.Enabled(o.AdmissionPlugins); err == nil {
		c.disabled = map[string]bool{validating.PluginName: true, webhookclient.ValidatingPluginName: true}
		for _, p := range enabled {
			delete(c.disabled, p.Name)
		}
	}
	if c.Plugins, err = admissionplugins.New(c.stores, o.AdmissionPlugins, admissionplugins.WithAuthorizer(authz), admissionplugins.WithResources(builtinResources())); err != nil {
		return nil, err
	}
	return c, nil
}

// builtinResources are the group/resources of kube-apiserver's built-in
// resources (the ResourceQuota plugin counts their objects).
func builtinResources() []schema.GroupResource {
	var grs []schema.GroupResource
	seen := map[schema.GroupResource]bool{}
	for _, r := range matching.BuiltinResources() {
		if gr := (schema.GroupResource{Group: r.Group, Resource: r.Resource}); !seen[gr] {
			seen[gr] = true
			grs = append(grs, gr)
		}
	}
	return grs
}

// Options are the options the Cluster was built with.
func (c *Cluster) Options() Options { return c.opts }

func (c *Cluster) add(u *unstructured.Unstructured, rb *rbacSet) error {
	if err := rb.add(u); err != nil {
		return err
	}
	switch gvk := u.GroupVersionKind(); {
	case gvk.Group == apiextensionsv1.GroupName && gvk.Kind == "CustomResourceDefinition":
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			return err
		}
		if err := c.Table.AddCRD(crd); err != nil {
			return err
		}
		if err := c.Schemas.AddCRD(u); err != nil {
			return err
		}
		if err := c.Scheme.AddCRD(u); err != nil {
			return err
		}
	case gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == "Namespace":
		ns := &corev1.Namespace{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ns); err != nil {
			return err
		}
		// kube-apiserver always sets this label on Namespaces.
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		if _, ok := ns.Labels[corev1.LabelMetadataName]; !ok {
			ns.Labels[corev1.LabelMetadataName] = ns.Name
			u = u.DeepCopy()
			_ = unstructured.SetNestedStringMap(u.Object, ns.Labels, "metadata", "labels")
		}
		c.namespaces[ns.Name] = ns
	}
	// The objects kube-apiserver's admission plugins read (ServiceAccounts,
	// LimitRanges, PriorityClasses, StorageClasses, IngressClasses,
	// RuntimeClasses, Namespaces, Nodes).
	if _, err := c.stores.Add(u.Object); err != nil {
		return err
	}
	c.Params.Put(u)
	return nil
}

// Namespace implements matching.NamespaceGetter. A namespace that was not
// supplied is synthesized with only the kubernetes.io/metadata.name label
// (OnSynthesize is told).
func (c *Cluster) Namespace(_ context.Context, name string) (*corev1.Namespace, error) {
	c.mu.Lock()
	ns, ok := c.namespaces[name]
	if !ok {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}}}
		c.namespaces[name] = ns
	}
	c.mu.Unlock()
	if !ok && c.opts.OnSynthesize != nil {
		c.opts.OnSynthesize(name)
	}
	return ns, nil
}

// Namespaces returns the names of the supplied and synthesized namespaces,
// sorted.
func (c *Cluster) Namespaces() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.namespaces))
}

// Namespaced implements params.Scopes over the resource table.
func (c *Cluster) Namespaced(gvk schema.GroupVersionKind) (namespaced, known bool) {
	return c.Table.KindScope(gvk)
}

// Config returns the engine configuration over this cluster.
func (c *Cluster) Config() engine.Config {
	pt := c.Patcher()
	return engine.Config{
		Authorizer: c.Authorizer,
		Matcher:    matching.NewMatcher(c, c.Table),
		Params:     &params.Collector{Source: c.Params, Scopes: c},
		Patcher:    pt,
	}
}

// Patcher returns a Patcher over the cluster's schemas.
func (c *Cluster) Patcher() *mutation.Patcher {
	return &mutation.Patcher{Schemas: c.Schemas, Scheme: c.Scheme, SkipDefaulting: c.opts.NoDefaults}
}

// Evaluator compiles policies and bindings (with comp; nil for a new
// compiler) and returns an Evaluator over this cluster.
func (c *Cluster) Evaluator(comp *compiler.Compiler, policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) (*engine.Evaluator, error) {
	if comp == nil {
		var err error
		if comp, err = compiler.New(); err != nil {
			return nil, err
		}
	}
	hooks, err := engine.NewHooks(comp, policies, bindings)
	if err != nil {
		return nil, err
	}
	return engine.NewEvaluator(c.Config(), hooks), nil
}

// Request describes an admission request in the terms a user writes.
type Request struct {
	// Object is the new object (nil for DELETE); OldObject the old one
	// (UPDATE).
	Object, OldObject *unstructured.Unstructured
	// Operation defaults to CREATE, or UPDATE when OldObject is set.
	Operation admission.Operation
	// Subresource, e.g. "status".
	Subresource string
	// Namespace overrides the object's namespace; namespaced objects
	// without one go to "default".
	Namespace string
	// User; nil means DefaultUser.
	User   user.Info
	DryRun bool
	// Options is the operation's options object (CreateOptions …), if any.
	Options *unstructured.Unstructured
	// SkipAdmissionPlugins leaves out the admission plugins before MAP,
	// in both rounds of the chain (Admit): the object already went
	// through them (a re-admission of an admitted object, to see what the
	// policies alone do to their own output).
	SkipAdmissionPlugins bool
	// PluginChanges asks DecodeSteps and Admit to tell, for each
	// step of the admission plugins (Decoded.Plugins,
	// chain.Result.PluginSteps), whether the plugin changed the object
	// (admissionplugins.Step.Changed): what --explain prints, at the price of
	// a copy and a comparison of the object per plugin.
	PluginChanges bool
}

// DefaultUser is the user of requests that name none: a cluster admin.
func DefaultUser() user.Info {
	return &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
}

// Attributes resolves r against the cluster's resource table and decodes
// its objects as kube-apiserver decodes a request body (Decode). The
// object's namespace is set when it is namespaced and has none (r.Object
// is modified).
func (c *Cluster) Attributes(r Request) (*matching.Attributes, error) {
	a, _, err := c.Decode(r)
	return a, err
}

// Decode is Attributes with the warnings of the decoder. Unless
// NoDefaults is set, the object and the old object are presented as
// kube-apiserver's handler decodes a request body before admission: for
// built-in kinds, strict decoding into the Go type (unknown fields are
// warnings, as under fieldValidation Warn), defaulting and conversion
// through the internal version. A body kube-apiserver refuses to decode is
// its 400, an *apierrors.StatusError. The object of a CREATE or UPDATE then
// goes through kube-apiserver's admission plugins that precede
// MutatingAdmissionPolicy (Plugins: kube-apiserver's default set unless
// Options.AdmissionPlugins choose others: a Pod's service account and
// token volume, LimitRange defaults, priority, tolerations, a PVC's
// default StorageClass …), whose refusals are *apierrors.StatusErrors too.
func (c *Cluster) Decode(r Request) (*matching.Attributes, []string, error) {
	d, err := c.decode(r, false)
	if err != nil {
		return nil, nil, err
	}
	return d.Attributes, d.Warnings, nil
}

// Decoded is a request as kube-apiserver presents it to
// MutatingAdmissionPolicy (DecodeSteps).
type Decoded struct {
	// Attributes are the request's, its objects decoded and, for a CREATE
	// or an UPDATE, through the admission plugins before MAP.
	Attributes *matching.Attributes
	// Warnings are the decoder's.
	Warnings []string
	// Plugins are what the admission plugins before MAP did
	// (admissionplugins.Chain.AdmitSteps): their stage of the request.
	Plugins []admissionplugins.Step
	// admitPlugins tells that the admission plugins ran on the object
	// (a CREATE or UPDATE, neither NoDefaults nor SkipAdmissionPlugins):
	// the chain's reinvocation round runs them again (Admit).
	admitPlugins bool
	// pluginChanges is the request's PluginChanges.
	pluginChanges bool
	// validatePlugins tells that the built-in plugins' validating halves
	// run in the validating stage (neither NoDefaults nor
	// SkipAdmissionPlugins: they need the typed, admitted object).
	validatePlugins bool
}

// DecodeSteps is Decode reporting the steps of the admission plugins.
// When a plugin refuses the request, the error is its refusal and the
// Decoded returned beside it holds the steps until it.
func (c *Cluster) DecodeSteps(r Request) (*Decoded, error) {
	return c.decode(r, true)
}

func (c *Cluster) decode(r Request, record bool) (*Decoded, error) {
	a, err := c.attributes(r)
	if err != nil {
		return nil, err
	}
	d := &Decoded{Attributes: a, pluginChanges: r.PluginChanges, validatePlugins: !c.opts.NoDefaults && !r.SkipAdmissionPlugins}
	if c.opts.NoDefaults {
		return d, nil
	}
	if err := c.oldInRequestVersion(a); err != nil {
		return nil, err
	}
	for _, o := range []*unstructured.Unstructured{a.Object, a.OldObject} {
		if o == nil {
			continue
		}
		out, w, err := c.Scheme.DecodeRequest(o.Object, a.Kind)
		if err != nil {
			return nil, err
		}
		o.Object = out
		d.Warnings = append(d.Warnings, w...)
	}
	if a.Object != nil && !r.SkipAdmissionPlugins && (a.Operation == admission.Create || a.Operation == admission.Update) {
		d.admitPlugins = true
		var old map[string]any
		if a.OldObject != nil {
			old = a.OldObject.Object
		}
		var out map[string]any
		if record {
			out, d.Plugins, err = c.Plugins.AdmitSteps(context.Background(), schemeRequest(a), a.Object.Object, old, a.UserInfo, a.DryRun, r.PluginChanges)
		} else {
			out, err = c.Plugins.Admit(context.Background(), schemeRequest(a), a.Object.Object, old, a.UserInfo, a.DryRun)
		}
		if err != nil {
			return d, err
		}
		a.Object.Object = out
	}
	return d, nil
}

// oldInRequestVersion converts the old object of a, given in another
// version of the request's kind (a custom resource created through v1 and
// updated through v2), to the request's version, as kube-apiserver reads
// the stored object in the version of the request: a custom resource with
// the CRD's converter (the None strategy), a built-in kind through its
// internal version. The decoding that follows prunes and defaults it with
// the request version's schema, as that read does.
func (c *Cluster) oldInRequestVersion(a *matching.Attributes) error {
	if a.OldObject == nil || a.Object == nil {
		return nil
	}
	from := a.OldObject.GroupVersionKind()
	if from == a.Kind || from.GroupKind() != a.Kind.GroupKind() {
		return nil
	}
	var out map[string]any
	var err error
	switch {
	case c.Scheme.CustomResources().Recognizes(from):
		out, err = c.Scheme.ConvertToGVK(a.OldObject.Object, from, a.Kind)
	case c.Scheme.Recognizes(from):
		out, err = c.Scheme.Convert(a.OldObject.Object, from, a.Kind)
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("the old object: %w", err)
	}
	a.OldObject = &unstructured.Unstructured{Object: out}
	return nil
}

// AdmitPlugins runs obj, a decoded object for the request a, through
// kube-apiserver's admission plugins that precede
// MutatingAdmissionPolicy (Plugins) when a is a CREATE or an
// UPDATE, and returns it as the MAP plugin receives it.
func (c *Cluster) AdmitPlugins(ctx context.Context, a *matching.Attributes, obj map[string]any) (map[string]any, error) {
	if a.Operation != admission.Create && a.Operation != admission.Update {
		return obj, nil
	}
	var old map[string]any
	if a.OldObject != nil {
		old = a.OldObject.Object
	}
	return c.Plugins.Admit(ctx, schemeRequest(a), obj, old, a.UserInfo, a.DryRun)
}

// schemeRequest is the scheme's view of the request a.
func schemeRequest(a *matching.Attributes) scheme.Request {
	return scheme.Request{Operation: a.Operation, Kind: a.Kind, Resource: a.Resource, Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name, User: a.UserInfo}
}

func (c *Cluster) attributes(r Request) (*matching.Attributes, error) {
	obj := r.Object
	if obj == nil {
		obj = r.OldObject
	}
	if obj == nil {
		return nil, fmt.Errorf("the request has no object")
	}
	gvk := obj.GroupVersionKind()
	res, subresource, err := c.resolve(gvk, r.Subresource)
	if err != nil {
		return nil, err
	}
	namespace := ""
	if gvr := res.GroupVersionResource(); gvr.Group == "" && gvr.Resource == "namespaces" {
		// A Namespace's requests are in the namespace itself: the request
		// path /api/v1/namespaces/{name} names it, and a CREATE gets its
		// name (handlers.createHandler: namespace = name).
		namespace = obj.GetName()
	}
	if res.Namespaced {
		namespace = r.Namespace
		if namespace == "" {
			namespace = obj.GetNamespace()
		}
		if namespace == "" {
			namespace = metav1.NamespaceDefault
		}
		for _, o := range []*unstructured.Unstructured{r.Object, r.OldObject} {
			switch {
			case o == nil:
			case o.GetNamespace() == "":
				o.SetNamespace(namespace)
			case o.GetNamespace() != namespace:
				// kube-apiserver refuses such a request; kubectl says so first.
				return nil, fmt.Errorf("the namespace from the provided object %q does not match the namespace %q", o.GetNamespace(), namespace)
			}
		}
	}
	op := r.Operation
	if op == "" {
		op = admission.Create
		if r.OldObject != nil && r.Object != nil {
			op = admission.Update
		}
	}
	op = admission.Operation(strings.ToUpper(string(op)))
	switch op {
	case admission.Create, admission.Update, admission.Connect, admission.Delete:
	default:
		return nil, fmt.Errorf("operation must be CREATE, UPDATE, DELETE or CONNECT, not %q", r.Operation)
	}
	u := r.User
	if u == nil {
		u = DefaultUser()
	}
	return &matching.Attributes{
		Operation: op, Kind: gvk, Resource: res.GroupVersionResource(), Subresource: subresource,
		Name: obj.GetName(), Namespace: namespace, Object: r.Object, OldObject: r.OldObject, DryRun: r.DryRun,
		UserInfo: u, Options: r.Options,
	}, nil
}

// resolve finds the resource (and subresource) of a request for an object
// of kind gvk on subresource sub, as kube-apiserver's URL names them. sub
// is a subresource name ("status", "scale") or RESOURCE/SUBRESOURCE, with
// RESOURCE a plural, optionally qualified by its group
// ("deployments.apps/scale"). Without a subresource, or with one whose
// kind is the resource's own (pods/status), the resource is the one
// serving gvk. A subresource of another kind (deployments/scale:
// autoscaling/v1 Scale, pods/eviction: policy/v1 Eviction, pods/binding:
// v1 Binding) is looked up among the subresources that serve gvk; several
// resources serving such a subresource (scale) must be told apart by
// RESOURCE.
func (c *Cluster) resolve(gvk schema.GroupVersionKind, sub string) (matching.Resource, string, error) {
	resource := ""
	if i := strings.LastIndex(sub, "/"); i >= 0 {
		resource, sub = sub[:i], sub[i+1:]
	}
	named := func(r matching.Resource) bool {
		return resource == "" || resource == r.Resource || resource == r.Resource+"."+r.Group
	}
	var own []matching.Resource
	for _, r := range c.Table.ResourcesForKind(gvk) {
		if named(r) {
			own = append(own, r)
		}
	}
	if sub == "" {
		if resource != "" {
			return matching.Resource{}, "", fmt.Errorf("subresource %q: no subresource after %q", resource+"/", resource)
		}
		if len(own) == 0 {
			return matching.Resource{}, "", fmt.Errorf("kind %s is not served by Kubernetes 1.37 nor by a supplied CRD", gvk)
		}
		if c.Table.Unreachable(own[0]) {
			return matching.Resource{}, "", unreachable()
		}
		return own[0], "", nil
	}
	if len(own) > 0 && c.Table.Unreachable(own[0]) {
		return matching.Resource{}, "", unreachable()
	}
	// A subresource of the resource's own kind (pods/status), or one the
	// table does not list for it: the resource serving the kind.
	for _, r := range own {
		if s, ok := r.Subresource(sub); ok && s.Kind == gvk {
			return r, sub, nil
		}
	}
	var found []matching.Resource
	for _, r := range c.Table.Resources() {
		if s, ok := r.Subresource(sub); ok && s.Kind == gvk && named(r) {
			found = append(found, r)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], sub, nil
	case len(found) > 1:
		var names []string
		for _, r := range found {
			name := r.Resource
			if r.Group != "" {
				name += "." + r.Group
			}
			names = append(names, name+"/"+sub)
		}
		return matching.Resource{}, "", fmt.Errorf("subresource %q of kind %s is served by several resources (%s): name one as RESOURCE/%s", sub, gvk, strings.Join(names, ", "), sub)
	case len(own) > 0 && resource == "":
		// Kept for subresources the table does not know (the request is
		// evaluated as given).
		return own[0], sub, nil
	}
	return matching.Resource{}, "", fmt.Errorf("no resource of Kubernetes 1.37 nor of a supplied CRD serves subresource %q with kind %s", sub, gvk)
}

// unreachable is kube-apiserver's answer to a request for the resources of
// a CRD in a group it serves built in (matching.Table.Unreachable): its
// route-not-found 404.
func unreachable() error {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "", 0, false)
}

// rbacSet collects the RBAC objects of the cluster.
type rbacSet struct {
	clusterRoles        []rbacv1.ClusterRole
	roles               []rbacv1.Role
	clusterRoleBindings []rbacv1.ClusterRoleBinding
	roleBindings        []rbacv1.RoleBinding
}

func (s *rbacSet) add(u *unstructured.Unstructured) error {
	if u.GroupVersionKind().Group != rbacv1.GroupName {
		return nil
	}
	switch u.GetKind() {
	case "ClusterRole":
		return appendTyped(&s.clusterRoles, u)
	case "Role":
		return appendTyped(&s.roles, u)
	case "ClusterRoleBinding":
		return appendTyped(&s.clusterRoleBindings, u)
	case "RoleBinding":
		return appendTyped(&s.roleBindings, u)
	}
	return nil
}

// appendTyped appends u, converted to T, to list (also when the conversion
// fails part way, as before: the error is returned).
func appendTyped[T any](list *[]T, u *unstructured.Unstructured) error {
	var o T
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o)
	*list = append(*list, o)
	return err
}

// ValidatePolicies compiles the expressions of policies as kube-apiserver
// does when they are created (compiler.Validate) and returns what it would
// refuse (HTTP 422), naming file, field path and, for CEL, line:column
// with a caret. A policy the API server refuses never reaches admission,
// so tools must not evaluate it either.
func ValidatePolicies(comp *compiler.Compiler, policies []manifest.Policy) error {
	var out manifest.ErrorList
	for _, p := range policies {
		errs, err := comp.Validate(p.Policy)
		if err != nil {
			return err
		}
		if len(errs) > 0 {
			out = append(out, &manifest.Error{Source: p.Source, Kind: "MutatingAdmissionPolicy", Name: p.Policy.Name, Errs: errs})
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
