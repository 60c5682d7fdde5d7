// Package params resolves the param objects of a MutatingAdmissionPolicy
// binding with the rules of kube-apiserver (k8s.io/apiserver
// pkg/admission/plugin/policy/generic CollectParams).
package params

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/scheme"
)

// Source gives access to the objects that can serve as params. It never
// changes an object it has returned: a changed object is a new one (as in
// an informer's store; Memory holds what Put was given).
type Source interface {
	// Get returns the named object of kind gvk in namespace ("" for
	// cluster-scoped kinds), or an error satisfying apierrors.IsNotFound.
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
	// List returns the objects of kind gvk in namespace ("" lists every
	// namespace for namespaced kinds, or the cluster scope) whose labels
	// match selector.
	List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, error)
}

// Scopes tells whether a kind is namespaced. known is false for a kind the
// cluster does not serve.
type Scopes interface {
	Namespaced(gvk schema.GroupVersionKind) (namespaced, known bool)
}

// Param is one resolved param object as CEL sees it.
type Param struct {
	// Namespace and Name identify the object (the reinvocation key uses
	// them).
	Namespace, Name string
	// Object is the unstructured content bound to "params".
	Object map[string]any
	// Source is the object as the Source returned it (nil with a nil
	// Object): the key a Memo remembers what is derived from it by.
	Source *unstructured.Unstructured
}

// Collector resolves the params of bindings.
type Collector struct {
	Source Source
	Scopes Scopes
	// Scheme knows the built-in kinds. kube-apiserver's informers hold those
	// typed and without apiVersion/kind, so CEL sees them that way
	// (has(params.kind) is false); the Collector presents them identically,
	// through the typed form (scheme.Scheme.Normalize).
	Scheme *scheme.Scheme
	// Memo, when set, remembers each param's presentation (Param.Object)
	// by its object, so that a param is presented once, not on every
	// request. The presentations are shared, read-only.
	Memo *Memo

	// reference makes the Collector present params through the typed round
	// trip itself (presentReference), for tests.
	reference bool
}

// CheckKind reports whether a policy's paramKind resolves to a served
// resource. kube-apiserver resolves it once per policy (not per binding)
// and, when it cannot, fails every request the policy matches with this
// error, whatever its bindings say; skip reports a paramKind whose
// apiVersion does not parse, which upstream drops from the policy set.
func (c *Collector) CheckKind(kind *admissionregistrationv1.ParamKind) (skip bool, err error) {
	if kind == nil {
		return false, nil
	}
	gv, err := schema.ParseGroupVersion(kind.APIVersion)
	if err != nil {
		return true, fmt.Errorf("failed to parse paramKind APIVersion: %w", err)
	}
	gvk := gv.WithKind(kind.Kind)
	if _, known := c.Scopes.Namespaced(gvk); !known {
		return false, fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)
	}
	return false, nil
}

// Bound reports whether a policy of paramKind kind with a binding of
// paramRef ref has params to collect. When it has not, Collect's answer is
// a single Param with a nil Object (params = null), whatever the request:
// callers that evaluate per request may skip Collect then.
func Bound(kind *admissionregistrationv1.ParamKind, ref *admissionregistrationv1.ParamRef) bool {
	return kind != nil && ref != nil
}

// Collect returns the params of one policy × binding for a request in
// requestNamespace. A nil slice element never occurs; a single Param with a
// nil Object means "evaluate once with params = null" (no paramKind or no
// paramRef). An empty result with a nil error means no params were found
// and parameterNotFoundAction is Allow: the binding is skipped.
// The error texts are kube-apiserver's.
func (c *Collector) Collect(ctx context.Context, kind *admissionregistrationv1.ParamKind, ref *admissionregistrationv1.ParamRef, requestNamespace string) ([]Param, error) {
	return c.CollectRef(ctx, kind, NewRef(ref), requestNamespace)
}

// Ref is a binding's paramRef prepared once for collecting its params on
// many requests: its label selector parsed (metav1.LabelSelectorAsSelector),
// which kube-apiserver does on every request. A parsed selector depends on
// the LabelSelector alone and is only read, so CollectRef's results are
// Collect's (TestCollect runs every case both ways); a changed binding is
// a new Ref. Safe for concurrent use.
type Ref struct {
	ref *admissionregistrationv1.ParamRef
	sel labels.Selector
	err error
}

// NewRef prepares ref (nil is allowed: no paramRef).
func NewRef(ref *admissionregistrationv1.ParamRef) *Ref {
	r := &Ref{ref: ref}
	if ref != nil && ref.Selector != nil {
		r.sel, r.err = metav1.LabelSelectorAsSelector(ref.Selector)
	}
	return r
}

// CollectRef is Collect of the paramRef r was prepared from: FindRef,
// then Present of what it found.
func (c *Collector) CollectRef(ctx context.Context, kind *admissionregistrationv1.ParamKind, r *Ref, requestNamespace string) ([]Param, error) {
	if !Bound(kind, r.ref) {
		return []Param{{}}, nil
	}
	found, gvk, err := c.FindRef(ctx, kind, r, requestNamespace)
	if err != nil {
		return nil, err
	}
	return c.Present(gvk, found)
}

// FindRef is the lookup of CollectRef for a bound paramKind and paramRef
// (Bound): the param objects the Source holds for it, in the Source's
// order, and their kind, or CollectRef's error. What CollectRef answers
// for them is Present's, which depends on nothing else: a caller that
// finds the same objects again may reuse it.
func (c *Collector) FindRef(ctx context.Context, kind *admissionregistrationv1.ParamKind, r *Ref, requestNamespace string) ([]*unstructured.Unstructured, schema.GroupVersionKind, error) {
	ref := r.ref
	var gvk schema.GroupVersionKind
	if !Bound(kind, ref) {
		return nil, gvk, errors.New("no paramKind or no paramRef")
	}
	gv, err := schema.ParseGroupVersion(kind.APIVersion)
	if err != nil {
		return nil, gvk, fmt.Errorf("paramKind kind `%v` not known", kind.String())
	}
	gvk = gv.WithKind(kind.Kind)
	namespaced, known := c.Scopes.Namespaced(gvk)
	if !known {
		return nil, gvk, fmt.Errorf("paramKind kind `%v` not known", kind.String())
	}
	namespace := ""
	if namespaced {
		namespace = requestNamespace
		if ref.Namespace != "" {
			namespace = ref.Namespace
		} else if namespace == "" {
			return nil, gvk, errors.New("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	}
	if ref.Namespace != "" && !namespaced {
		return nil, gvk, errors.New("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	}

	var found []*unstructured.Unstructured
	switch {
	case ref.Name != "":
		if ref.Selector != nil {
			return nil, gvk, errors.New("paramRef.name and paramRef.selector are mutually exclusive")
		}
		obj, err := c.Source.Get(ctx, gvk, namespace, ref.Name)
		switch {
		case err == nil:
			found = []*unstructured.Unstructured{obj}
		case apierrors.IsNotFound(err):
		default:
			return nil, gvk, err
		}
	case ref.Selector != nil:
		sel, err := r.sel, r.err
		if err != nil {
			return nil, gvk, err
		}
		found, err = c.Source.List(ctx, gvk, namespace, sel)
		if err != nil {
			return nil, gvk, err
		}
	default:
		return nil, gvk, errors.New("one of name or selector must be provided")
	}

	if len(found) == 0 && ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == admissionregistrationv1.DenyAction {
		return nil, gvk, errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	return found, gvk, nil
}

// Present is CollectRef's answer for the param objects found of kind gvk
// (FindRef's): one Param per object, in namespace/name order, each
// presented as CEL sees it (through the Memo when there is one).
func (c *Collector) Present(gvk schema.GroupVersionKind, found []*unstructured.Unstructured) ([]Param, error) {
	out := make([]Param, len(found))
	for i, o := range found {
		out[i] = Param{Namespace: o.GetNamespace(), Name: o.GetName(), Source: o}
	}
	// Upstream iterates in informer order, which is undefined; mutatis
	// evaluates params in namespace/name order.
	slices.SortFunc(out, func(a, b Param) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	for i := range out {
		content, err := c.presentMemo(gvk, out[i].Source)
		if err != nil {
			return nil, err
		}
		out[i].Object = content
	}
	return out, nil
}

// presentMemo is present, through c.Memo when it is set.
func (c *Collector) presentMemo(gvk schema.GroupVersionKind, o *unstructured.Unstructured) (map[string]any, error) {
	if c.Memo == nil {
		return c.present(gvk, o)
	}
	v, err := c.Memo.Get(o, func() (any, error) { return c.present(gvk, o) })
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// present converts a param to the form kube-apiserver's informer holds:
// built-in kinds typed (in their typed form) without apiVersion and kind;
// other kinds unstructured as stored.
func (c *Collector) present(gvk schema.GroupVersionKind, o *unstructured.Unstructured) (map[string]any, error) {
	if c.Scheme == nil || !c.Scheme.Recognizes(gvk) {
		return o.Object, nil
	}
	if c.reference {
		return c.presentReference(gvk, o)
	}
	m, err := c.Scheme.Normalize(o.Object, gvk)
	if err != nil {
		return nil, fmt.Errorf("failed to convert param %v to typed object: %w", gvk, err)
	}
	return withoutTypeMeta(m), nil
}

// presentReference is present through the typed object: the definition.
func (c *Collector) presentReference(gvk schema.GroupVersionKind, o *unstructured.Unstructured) (map[string]any, error) {
	typed, err := c.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, typed); err != nil {
		return nil, fmt.Errorf("failed to convert param %v to typed object: %w", gvk, err)
	}
	typed.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
}

// withoutTypeMeta is m without apiVersion and kind, copied when it has
// either (m may be shared with the source object).
func withoutTypeMeta(m map[string]any) map[string]any {
	_, av := m["apiVersion"]
	_, k := m["kind"]
	if !av && !k {
		return m
	}
	out := make(map[string]any, len(m))
	for key, v := range m {
		if key != "apiVersion" && key != "kind" {
			out[key] = v
		}
	}
	return out
}

// Memory is an in-memory Source over a set of objects, for offline use
// (tests, the CLI) and static files. It is safe for concurrent use; Put and
// Delete keep it current.
type Memory struct {
	mu      sync.RWMutex
	objects map[schema.GroupVersionKind]map[string]map[string]memoryEntry // gvk → namespace → name
}

// memoryEntry is an object of a Memory with its labels, read once.
type memoryEntry struct {
	object *unstructured.Unstructured
	labels labels.Set
}

// NewMemory returns a Memory holding objs.
func NewMemory(objs ...*unstructured.Unstructured) *Memory {
	m := &Memory{objects: map[schema.GroupVersionKind]map[string]map[string]memoryEntry{}}
	for _, o := range objs {
		m.Put(o)
	}
	return m
}

// Put adds or replaces an object. o is held as given: it must not be
// changed afterwards (Put a changed copy instead).
func (m *Memory) Put(o *unstructured.Unstructured) {
	m.mu.Lock()
	defer m.mu.Unlock()
	gvk := o.GroupVersionKind()
	byNS := m.objects[gvk]
	if byNS == nil {
		byNS = map[string]map[string]memoryEntry{}
		m.objects[gvk] = byNS
	}
	byName := byNS[o.GetNamespace()]
	if byName == nil {
		byName = map[string]memoryEntry{}
		byNS[o.GetNamespace()] = byName
	}
	byName[o.GetName()] = memoryEntry{object: o, labels: labels.Set(o.GetLabels())}
}

// Delete removes an object if present.
func (m *Memory) Delete(gvk schema.GroupVersionKind, namespace, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects[gvk][namespace], name)
}

// Get implements Source.
func (m *Memory) Get(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if e, ok := m.objects[gvk][namespace][name]; ok {
		return e.object, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, name)
}

// List implements Source.
func (m *Memory) List(_ context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*unstructured.Unstructured
	for ns, byName := range m.objects[gvk] {
		if namespace != "" && ns != namespace {
			continue
		}
		for _, e := range byName {
			if selector.Matches(e.labels) {
				out = append(out, e.object)
			}
		}
	}
	return out, nil
}
