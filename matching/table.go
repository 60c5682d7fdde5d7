package matching

//go:generate go run ./internal/gen -kubernetes v1.37.1 -api v0.37.1 -out zz_generated_resources.go

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// Resource describes one API resource in one group/version.
type Resource struct {
	// Group, Version and Resource (the plural) name the resource as rules and requests do.
	Group, Version, Resource string
	// Kind is the kind of the resource in the same group/version.
	Kind string
	// Namespaced is true for namespace-scoped resources.
	Namespaced bool
	// Subresources lists the subresources with the kind kube-apiserver registers for each
	// (e.g. deployments/scale is autoscaling/v1 Scale, pods/exec is v1 PodExecOptions).
	Subresources []Subresource
}

// Subresource is a subresource of a Resource.
type Subresource struct {
	// Name is the subresource name, e.g. "status".
	Name string
	// Kind is the kind registered for the subresource.
	Kind schema.GroupVersionKind
}

// GroupVersionResource returns the resource's group, version and plural.
func (r Resource) GroupVersionResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}

// GroupVersionKind returns the resource's kind.
func (r Resource) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// Subresource returns the named subresource.
func (r Resource) Subresource(name string) (Subresource, bool) {
	for _, s := range r.Subresources {
		if s.Name == name {
			return s, true
		}
	}
	return Subresource{}, false
}

type builtinGroupVersion struct {
	Group, Version string
	DefaultEnabled bool
}

type gvrSub struct {
	gvr schema.GroupVersionResource
	sub string
}

// Table is a set of API resources with kube-apiserver's equivalence between them. It is safe
// for concurrent use. The zero value is not usable; use NewBuiltinTable or NewTable.
type Table struct {
	mu sync.RWMutex
	// resources by GVR, and the order in which they were registered.
	resources map[schema.GroupVersionResource]Resource
	order     []schema.GroupVersionResource
	// kinds answers KindFor.
	kinds map[gvrSub]schema.GroupVersionKind
	// keys maps a group/resource to its equivalence (storage) key.
	keys map[schema.GroupResource]string
	// classes: key -> subresource -> equivalent GVRs in registration order. Slices are
	// replaced, never appended to in place, so readers may keep them.
	classes map[string]map[string][]schema.GroupVersionResource
	// groupResources: group/resource -> every group/resource with the same key (itself
	// included). Replaced on change, like classes.
	groupResources map[schema.GroupResource][]schema.GroupResource
	// crds: CRD name -> the GVRs it registered.
	crds map[string][]schema.GroupVersionResource
	// scopes remembers KindScope's answers (gvk -> kindScope); cleared by
	// every change of the resources.
	scopes sync.Map
	// generation counts the changes made to the table once built (AddCRD,
	// RemoveCRD), so that what was computed from it can be known current
	// (Index.Lookup's memo).
	generation atomic.Uint64
}

// changes is the table's generation: it grows with every change of its
// resources (a nil table never changes).
func (t *Table) changes() uint64 {
	if t == nil {
		return 0
	}
	return t.generation.Load()
}

// kindScope is an answer of KindScope.
type kindScope struct{ namespaced, known bool }

var _ runtime.EquivalentResourceMapper = (*Table)(nil)

// NewBuiltinTable returns the built-in resources kube-apiserver serves by default, plus those
// of the given alpha or beta group/versions (as --runtime-config would enable them). It fails
// for a group/version that is not built in.
func NewBuiltinTable(enable ...schema.GroupVersion) (*Table, error) {
	enabled := map[schema.GroupVersion]bool{}
	for _, gv := range builtinGroupVersions {
		if gv.DefaultEnabled {
			enabled[schema.GroupVersion{Group: gv.Group, Version: gv.Version}] = true
		}
	}
	for _, gv := range enable {
		known := false
		for _, b := range builtinGroupVersions {
			if b.Group == gv.Group && b.Version == gv.Version {
				known = true
				break
			}
		}
		if !known {
			return nil, fmt.Errorf("enabling %s: not a built-in group/version of Kubernetes %s", gv, BuiltinVersion)
		}
		enabled[gv] = true
	}
	var rs []Resource
	for _, r := range builtinResources {
		if enabled[schema.GroupVersion{Group: r.Group, Version: r.Version}] {
			rs = append(rs, r)
		}
	}
	servedGroups := map[string]bool{}
	for gv := range enabled {
		servedGroups[gv.Group] = true
	}
	return newTable(rs, func(gr schema.GroupResource) string { return builtinStorageKey(gr, servedGroups) }), nil
}

// DefaultTable returns the built-in resources kube-apiserver serves by default.
func DefaultTable() *Table {
	t, err := NewBuiltinTable()
	if err != nil {
		// Cannot happen: no extra group/versions.
		panic(err)
	}
	return t
}

// BuiltinResources returns every built-in resource of every built-in group/version, served
// by default or not.
func BuiltinResources() []Resource {
	out := make([]Resource, len(builtinResources))
	copy(out, builtinResources)
	return out
}

// BuiltinSchema tells, for a kind of a built-in group/version, whether
// kube-apiserver's OpenAPI v3 document of that group/version
// (/openapi/v3/apis/<group>/<version>) defines it: the document holds the
// kinds of the group/version's own resources, not the kinds its group
// lends to subresources of other groups (autoscaling/v1 Scale is served by
// apps/v1 deployments/scale, policy/v1 Eviction by core/v1 pods/eviction,
// neither is in its own group/version's document). builtin is false for
// a group/version that is not built in.
func BuiltinSchema(gvk schema.GroupVersionKind) (defined, builtin bool) {
	for _, gv := range builtinGroupVersions {
		if gv.Group == gvk.Group && gv.Version == gvk.Version {
			builtin = true
			break
		}
	}
	if !builtin {
		return false, false
	}
	for _, r := range builtinResources {
		if r.Group == gvk.Group && r.Version == gvk.Version && r.Kind == gvk.Kind {
			return true, true
		}
	}
	return false, true
}

// builtinStorageKey is kube-apiserver's DefaultStorageFactory.ResourcePrefix: the resource is
// stored with the first cohabitating resource whose group is served, under its special
// prefix or its lower-cased plural.
func builtinStorageKey(gr schema.GroupResource, servedGroups map[string]bool) string {
	chosen := gr
	for _, set := range builtinCohabitating {
		member := false
		for _, c := range set {
			if c == gr {
				member = true
				break
			}
		}
		if !member {
			continue
		}
		for _, c := range set {
			if servedGroups[c.Group] {
				chosen = c
				break
			}
		}
		break
	}
	if p, ok := builtinStoragePrefixes[chosen]; ok {
		return p
	}
	return strings.ToLower(chosen.Resource)
}

// NewTable returns a table of the given resources in which the versions of one group/resource
// are equivalent to each other and nothing else is.
func NewTable(resources []Resource) *Table {
	return newTable(resources, func(gr schema.GroupResource) string { return gr.String() })
}

func newTable(resources []Resource, key func(schema.GroupResource) string) *Table {
	t := emptyTable()
	sorted := make([]Resource, len(resources))
	copy(sorted, resources)
	sort.SliceStable(sorted, func(i, j int) bool { return registrationLess(sorted[i], sorted[j]) })
	for _, r := range sorted {
		t.insert(r, "builtin:"+key(schema.GroupResource{Group: r.Group, Resource: r.Resource}))
	}
	// What register's rebuild after each resource leaves, in one pass.
	byKey := map[string][]schema.GroupResource{}
	for gr, k := range t.keys {
		byKey[k] = append(byKey[k], gr)
	}
	for _, grs := range byKey {
		sortGroupResources(grs)
		for _, gr := range grs {
			t.groupResources[gr] = grs
		}
	}
	return t
}

// emptyTable is a Table without resources.
func emptyTable() *Table {
	return &Table{
		resources:      map[schema.GroupVersionResource]Resource{},
		kinds:          map[gvrSub]schema.GroupVersionKind{},
		keys:           map[schema.GroupResource]string{},
		classes:        map[string]map[string][]schema.GroupVersionResource{},
		groupResources: map[schema.GroupResource][]schema.GroupResource{},
		crds:           map[string][]schema.GroupVersionResource{},
	}
}

// registrationLess orders resources the way kube-apiserver installs them: the core group
// first, then groups by name (only the relative order of equivalent resources matters), versions
// by priority, resources by name.
func registrationLess(a, b Resource) bool {
	if a.Group != b.Group {
		if a.Group == "" || b.Group == "" {
			return a.Group == ""
		}
		return a.Group < b.Group
	}
	if a.Version != b.Version {
		return version.CompareKubeAwareVersionStrings(a.Version, b.Version) > 0
	}
	return a.Resource < b.Resource
}

// register adds r under the equivalence key. The caller holds the write lock or owns t.
func (t *Table) register(r Resource, key string) {
	t.insert(r, key)
	t.rebuildGroupResources(key)
}

// insert is register without the rebuild of the key's group resources.
func (t *Table) insert(r Resource, key string) {
	t.scopes.Clear()
	gvr := r.GroupVersionResource()
	if _, ok := t.resources[gvr]; !ok {
		t.order = append(t.order, gvr)
	}
	t.resources[gvr] = r
	gr := gvr.GroupResource()
	t.keys[gr] = key
	t.addToClass(key, "", gvr, r.GroupVersionKind())
	for _, s := range r.Subresources {
		t.addToClass(key, s.Name, gvr, s.Kind)
	}
}

func (t *Table) addToClass(key, sub string, gvr schema.GroupVersionResource, kind schema.GroupVersionKind) {
	t.kinds[gvrSub{gvr, sub}] = kind
	subs := t.classes[key]
	if subs == nil {
		subs = map[string][]schema.GroupVersionResource{}
		t.classes[key] = subs
	}
	old := subs[sub]
	for _, g := range old {
		if g == gvr {
			return
		}
	}
	next := make([]schema.GroupVersionResource, len(old), len(old)+1)
	copy(next, old)
	subs[sub] = append(next, gvr)
}

func (t *Table) rebuildGroupResources(key string) {
	var grs []schema.GroupResource
	for gr, k := range t.keys {
		if k == key {
			grs = append(grs, gr)
		}
	}
	sortGroupResources(grs)
	for _, gr := range grs {
		t.groupResources[gr] = grs
	}
}

// sortGroupResources sorts grs by their String form.
func sortGroupResources(grs []schema.GroupResource) {
	sort.Slice(grs, func(i, j int) bool { return grs[i].String() < grs[j].String() })
}

// Resource returns the resource with the given group, version and plural.
func (t *Table) Resource(gvr schema.GroupVersionResource) (Resource, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	r, ok := t.resources[gvr]
	return r, ok
}

// Resources returns every resource of the table in registration order.
func (t *Table) Resources() []Resource {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]Resource, 0, len(t.order))
	for _, gvr := range t.order {
		out = append(out, t.resources[gvr])
	}
	return out
}

// ResourcesForKind returns the resources (not subresources) whose kind is gvk, in registration
// order.
func (t *Table) ResourcesForKind(gvk schema.GroupVersionKind) []Resource {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []Resource
	for _, gvr := range t.order {
		if r := t.resources[gvr]; r.GroupVersionKind() == gvk {
			out = append(out, r)
		}
	}
	return out
}

// KindScope tells whether the first resource registered for gvk
// (ResourcesForKind's first) is namespaced; known is false when no
// resource has that kind. The answer is remembered until the resources
// change.
func (t *Table) KindScope(gvk schema.GroupVersionKind) (namespaced, known bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if v, ok := t.scopes.Load(gvk); ok {
		s := v.(kindScope)
		return s.namespaced, s.known
	}
	// Under the read lock no writer runs: the answer stored is the
	// current table's, and a later change clears it.
	var s kindScope
	for _, gvr := range t.order {
		if r := t.resources[gvr]; r.GroupVersionKind() == gvk {
			s = kindScope{namespaced: r.Namespaced, known: true}
			break
		}
	}
	t.scopes.Store(gvk, s)
	return s.namespaced, s.known
}

// KindFor returns the kind registered for the resource and subresource, or the empty kind. It
// implements runtime.EquivalentResourceMapper.
func (t *Table) KindFor(resource schema.GroupVersionResource, subresource string) schema.GroupVersionKind {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.kinds[gvrSub{resource, subresource}]
}

// EquivalentResourcesFor returns the resources that share storage with resource and have the
// subresource, resource itself included, in registration order; nil for unknown resources. It
// implements runtime.EquivalentResourceMapper. The slice must not be modified.
func (t *Table) EquivalentResourcesFor(resource schema.GroupVersionResource, subresource string) []schema.GroupVersionResource {
	t.mu.RLock()
	defer t.mu.RUnlock()
	key, ok := t.keys[resource.GroupResource()]
	if !ok {
		return nil
	}
	return t.classes[key][subresource]
}

// equivalentGroupResources returns every group/resource that shares storage with gr (itself
// included), or nil. The slice must not be modified.
func (t *Table) equivalentGroupResources(gr schema.GroupResource) []schema.GroupResource {
	if t == nil {
		return nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.groupResources[gr]
}

// AddCRD adds the resources of a CustomResourceDefinition, replacing those it added before.
// Names come from status.acceptedNames as apiextensions-apiserver uses them, falling back to
// spec.names for manifests without status. Every version is registered (served or not) and all
// are equivalent to each other, as apiextensions-apiserver does; status and scale subresources
// are registered with the custom kind and autoscaling/v1 Scale.
func (t *Table) AddCRD(crd *apiextensionsv1.CustomResourceDefinition) error {
	if crd == nil {
		return fmt.Errorf("adding CRD: nil CustomResourceDefinition")
	}
	names := crd.Status.AcceptedNames
	if names.Plural == "" || names.Kind == "" {
		names = crd.Spec.Names
	}
	if crd.Spec.Group == "" || names.Plural == "" || names.Kind == "" {
		return fmt.Errorf("adding CRD %q: group, plural and kind are required", crd.Name)
	}
	if len(crd.Spec.Versions) == 0 {
		return fmt.Errorf("adding CRD %q: no versions", crd.Name)
	}
	namespaced := crd.Spec.Scope != apiextensionsv1.ClusterScoped
	var rs []Resource
	for _, v := range crd.Spec.Versions {
		if v.Name == "" {
			return fmt.Errorf("adding CRD %q: a version has no name", crd.Name)
		}
		r := Resource{Group: crd.Spec.Group, Version: v.Name, Resource: names.Plural, Kind: names.Kind, Namespaced: namespaced}
		if subs := v.Subresources; subs != nil {
			if subs.Status != nil {
				r.Subresources = append(r.Subresources, Subresource{Name: "status", Kind: r.GroupVersionKind()})
			}
			if subs.Scale != nil {
				r.Subresources = append(r.Subresources, Subresource{Name: "scale", Kind: schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}})
			}
		}
		rs = append(rs, r)
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	t.generation.Add(1)
	name := crd.Name
	if name == "" {
		name = names.Plural + "." + crd.Spec.Group
	}
	for _, r := range rs {
		gvr := r.GroupVersionResource()
		if _, ok := t.resources[gvr]; ok && !t.ownedBy(name, gvr) {
			return fmt.Errorf("adding CRD %q: %s is already defined", name, gvr)
		}
	}
	t.removeCRDLocked(name)
	key := "crd:" + schema.GroupResource{Group: crd.Spec.Group, Resource: names.Plural}.String()
	var gvrs []schema.GroupVersionResource
	for _, r := range rs {
		t.register(r, key)
		gvrs = append(gvrs, r.GroupVersionResource())
	}
	t.crds[name] = gvrs
	return nil
}

// Unreachable tells whether r is a CRD's resource in a group whose
// built-in resources the table also serves (a CRD in storage.k8s.io, for a
// version kube-apiserver does not serve): kube-apiserver accepts such a CRD
// but answers every request for its resources with a 404, "the server
// could not find the requested resource", because the built-in group's
// discovery handler owns the whole /apis/<group>/ path (checked against
// kube-apiserver 1.37.1, docs/fidelity.md).
func (t *Table) Unreachable(r Resource) bool {
	if t == nil || r.Group == "" {
		return false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if !strings.HasPrefix(t.keys[schema.GroupResource{Group: r.Group, Resource: r.Resource}], "crd:") {
		return false
	}
	for gr, key := range t.keys {
		if gr.Group == r.Group && strings.HasPrefix(key, "builtin:") {
			return true
		}
	}
	return false
}

func (t *Table) ownedBy(crdName string, gvr schema.GroupVersionResource) bool {
	for _, g := range t.crds[crdName] {
		if g == gvr {
			return true
		}
	}
	return false
}

// RemoveCRD removes the resources added by the CustomResourceDefinition with the given name.
func (t *Table) RemoveCRD(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removeCRDLocked(name)
}

func (t *Table) removeCRDLocked(name string) {
	gvrs, ok := t.crds[name]
	if !ok {
		return
	}
	delete(t.crds, name)
	t.generation.Add(1)
	t.scopes.Clear()
	drop := map[schema.GroupVersionResource]bool{}
	for _, gvr := range gvrs {
		drop[gvr] = true
		r := t.resources[gvr]
		delete(t.resources, gvr)
		delete(t.kinds, gvrSub{gvr, ""})
		for _, s := range r.Subresources {
			delete(t.kinds, gvrSub{gvr, s.Name})
		}
	}
	order := t.order[:0:0]
	for _, gvr := range t.order {
		if !drop[gvr] {
			order = append(order, gvr)
		}
	}
	t.order = order
	for _, gvr := range gvrs {
		gr := gvr.GroupResource()
		key, ok := t.keys[gr]
		if !ok {
			continue
		}
		delete(t.keys, gr)
		delete(t.groupResources, gr)
		delete(t.classes, key)
		t.rebuildGroupResources(key)
	}
}
