package policytest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/explain"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/validating"
)

// Harness is the fluent API for policy tests written in Go: the policies
// and the simulated cluster, from which requests are built and admitted.
//
//	policytest.New(t).
//		Policies("policy.yaml").
//		Resources("resources.yaml").
//		Create(pod).In("shop").Admit().
//		ExpectLabel("team", "checkout").
//		ExpectContains(`spec: {securityContext: {runAsNonRoot: true}}`)
//
// Objects (the admitted object, resources, expected objects) may be typed
// Go objects (*corev1.Pod …), *unstructured.Unstructured, map[string]any
// or YAML/JSON text. Paths are relative to the test's working directory
// (the package directory). Problems with the inputs stop the test
// (t.Fatal); unmet expectations fail it (t.Error) with the text `mutatis
// test` prints: the diff and the explain trace.
type Harness struct {
	t         testing.TB
	policies  []string
	resources []string
	objects   []manifest.Object

	once    sync.Once
	cluster *cluster.Cluster
	ev      *engine.Evaluator
	// vev is the stage of the ValidatingAdmissionPolicies; nil: none.
	vev *validating.Evaluator
	err error
}

// New returns a Harness that reports to t.
func New(t testing.TB) *Harness { return &Harness{t: t} }

// Policies adds files or directories of policies and bindings.
func (h *Harness) Policies(paths ...string) *Harness {
	h.policies = append(h.policies, paths...)
	return h
}

// Resources adds files or directories of cluster objects: Namespaces,
// params, CRDs, RBAC.
func (h *Harness) Resources(paths ...string) *Harness {
	h.resources = append(h.resources, paths...)
	return h
}

// With adds cluster objects given inline.
func (h *Harness) With(objects ...any) *Harness {
	h.t.Helper()
	for i, o := range objects {
		u := h.object(o)
		h.objects = append(h.objects, manifest.Object{Source: manifest.Source{File: fmt.Sprintf("With(#%d)", i), Item: -1}, Object: u})
	}
	return h
}

func (h *Harness) load() error {
	h.once.Do(func() {
		ctx := h.t.Context()
		set, err := manifest.Load(ctx, h.policies, nil)
		if err != nil {
			h.err = err
			return
		}
		objs := append(append([]manifest.Object{}, set.Objects...), h.objects...)
		if len(h.resources) > 0 {
			rs, err := manifest.Load(ctx, h.resources, nil)
			if err != nil {
				h.err = err
				return
			}
			if len(rs.Policies)+len(rs.Bindings) > 0 {
				h.err = fmt.Errorf("Resources(%s) holds policies or bindings: pass them to Policies", strings.Join(h.resources, ", "))
				return
			}
			objs = append(objs, rs.Objects...)
		}
		if h.cluster, err = cluster.New(objs, cluster.Options{}); err != nil {
			h.err = err
			return
		}
		comp, err := compiler.New()
		if err != nil {
			h.err = err
			return
		}
		policies, bindings := set.APIObjects()
		if h.ev, h.err = h.cluster.Evaluator(comp, policies, bindings); h.err != nil {
			return
		}
		if vps, vbs := set.ValidatingAPIObjects(); len(vps) > 0 {
			h.vev, h.err = h.cluster.ValidatingPolicies(validating.NewCompiler(), vps, vbs)
		}
	})
	return h.err
}

// object converts the forms of an object the Harness accepts.
func (h *Harness) object(o any) *unstructured.Unstructured {
	h.t.Helper()
	u, err := toUnstructured(o)
	if err != nil {
		h.t.Fatalf("policytest: %v", err)
	}
	return u
}

func toUnstructured(o any) (*unstructured.Unstructured, error) {
	switch v := o.(type) {
	case *unstructured.Unstructured:
		return v.DeepCopy(), nil
	case map[string]any:
		return (&unstructured.Unstructured{Object: v}).DeepCopy(), nil
	case string:
		js, err := yaml.YAMLToJSON([]byte(v))
		if err != nil {
			return nil, err
		}
		m := map[string]any{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &m); err != nil {
			return nil, err
		}
		return &unstructured.Unstructured{Object: m}, nil
	case runtime.Object:
		obj := v.DeepCopyObject()
		if obj.GetObjectKind().GroupVersionKind().Empty() {
			gvks, _, err := scheme.Scheme.ObjectKinds(obj)
			if err != nil {
				return nil, err
			}
			obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, err
		}
		return &unstructured.Unstructured{Object: m}, nil
	}
	return nil, fmt.Errorf("cannot use a %T as an object", o)
}

// Request is an admission request being built.
type Request struct {
	h  *Harness
	lc loadedCase
}

func (h *Harness) request(op admission.Operation, old, obj any) *Request {
	h.t.Helper()
	r := &Request{h: h, lc: loadedCase{c: &Case{}, operation: op, object: h.object(obj)}}
	if old != nil {
		r.lc.oldObject = h.object(old)
	}
	return r
}

// Create builds a CREATE of obj.
func (h *Harness) Create(obj any) *Request {
	h.t.Helper()
	return h.request(admission.Create, nil, obj)
}

// Update builds an UPDATE of old to obj.
func (h *Harness) Update(old, obj any) *Request {
	h.t.Helper()
	return h.request(admission.Update, old, obj)
}

// Connect builds a CONNECT with obj (the options object, e.g. a
// PodExecOptions) to a subresource.
func (h *Harness) Connect(obj any, subresource string) *Request {
	h.t.Helper()
	return h.request(admission.Connect, nil, obj).Subresource(subresource)
}

// In sets the namespace of the request.
func (r *Request) In(namespace string) *Request {
	r.lc.namespace = namespace
	return r
}

// As sets the requesting user (the default is admin in system:masters).
func (r *Request) As(name string, groups ...string) *Request {
	r.lc.user = &user.DefaultInfo{Name: name, Groups: groups}
	return r
}

// Subresource sets the subresource of the request.
func (r *Request) Subresource(s string) *Request {
	r.lc.c.Subresource = s
	return r
}

// DryRun marks the request as a dry run.
func (r *Request) DryRun() *Request {
	r.lc.c.DryRun = true
	return r
}

// Admit runs the request through the policies.
func (r *Request) Admit() *Admission {
	h := r.h
	h.t.Helper()
	if err := h.load(); err != nil {
		h.t.Fatalf("policytest: %v", err)
	}
	r.lc.cluster = h.cluster
	ch := cluster.Chain{Policies: h.ev}
	if h.vev != nil {
		ch.ValidatingPolicies = h.vev
	}
	o, err := admit(h.t.Context(), &r.lc, ch, nil)
	if err != nil {
		obj := r.lc.object
		if obj == nil {
			obj = r.lc.oldObject // a DELETE's
		}
		h.t.Fatalf("policytest: admitting %s %q: %v", obj.GetKind(), obj.GetName(), err)
	}
	return &Admission{t: h.t, h: h, o: o}
}

// Admission is the outcome of an admitted Request, with expectations.
type Admission struct {
	t testing.TB
	h *Harness
	o outcome
}

// Result is the engine's result.
func (a *Admission) Result() chain.Result { return a.o.result }

// Object is the final object (nil when denied).
func (a *Admission) Object() *unstructured.Unstructured {
	if a.o.result.Object == nil || a.o.result.Denied != nil {
		return nil
	}
	return (&unstructured.Unstructured{Object: a.o.result.Object}).DeepCopy()
}

// Into decodes the final object into a typed object (e.g. *corev1.Pod).
func (a *Admission) Into(obj runtime.Object) {
	a.t.Helper()
	u := a.Object()
	if u == nil {
		a.t.Fatalf("policytest: the request was denied: %s", a.o.result.Denied.ErrStatus.Message)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		a.t.Fatalf("policytest: %v", err)
	}
}

func (a *Admission) expect(e expectations) *Admission {
	a.t.Helper()
	fs := e.check(a.o)
	if len(fs) == 0 {
		return a
	}
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.String())
	}
	b.WriteString(explain.TraceString(a.o.result))
	a.t.Error("\n" + b.String())
	return a
}

func (a *Admission) partial(o any) map[string]any {
	a.t.Helper()
	return a.h.object(o).Object
}

// ExpectAdmitted expects the request not to be denied.
func (a *Admission) ExpectAdmitted() *Admission {
	a.t.Helper()
	return a.expect(expectations{})
}

// ExpectLabel expects the final object to have the label.
func (a *Admission) ExpectLabel(key, value string) *Admission {
	a.t.Helper()
	return a.expect(expectations{objectContains: map[string]any{"metadata": map[string]any{"labels": map[string]any{key: value}}}})
}

// ExpectAnnotation expects the final object to have the annotation.
func (a *Admission) ExpectAnnotation(key, value string) *Admission {
	a.t.Helper()
	return a.expect(expectations{objectContains: map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}}})
}

// ExpectContains expects the final object to contain partial (see the
// objectContains expectation: lists with keys match by key).
func (a *Admission) ExpectContains(partial any) *Admission {
	a.t.Helper()
	return a.expect(expectations{objectContains: a.partial(partial)})
}

// ExpectObject expects the final object to be obj.
func (a *Admission) ExpectObject(obj any) *Admission {
	a.t.Helper()
	return a.expect(expectations{object: a.partial(obj)})
}

// ExpectPatch expects the final object to be the input with patch (a JSON
// patch, as JSON or YAML text) applied.
func (a *Admission) ExpectPatch(patch string) *Admission {
	a.t.Helper()
	js, err := yaml.YAMLToJSON([]byte(patch))
	var p Patch
	if err == nil {
		err = json.Unmarshal(js, &p)
	}
	if err != nil {
		a.t.Fatalf("policytest: ExpectPatch: %v", err)
	}
	return a.expect(expectations{patch: p, hasPatch: true})
}

// ExpectUnchanged expects the object to come out as it went in.
func (a *Admission) ExpectUnchanged() *Admission {
	a.t.Helper()
	return a.expect(expectations{unchanged: true})
}

// ExpectDenied expects a denial whose message contains substr.
func (a *Admission) ExpectDenied(substr string) *Admission {
	a.t.Helper()
	return a.expect(expectations{denied: &Denial{Message: substr}})
}

// ExpectApplied expects the policies ("policy" or "policy/binding") to
// have run their mutations.
func (a *Admission) ExpectApplied(names ...string) *Admission {
	a.t.Helper()
	return a.expect(expectations{applied: names, denied: a.anyDenial()})
}

// ExpectNotApplied expects the policies not to have run.
func (a *Admission) ExpectNotApplied(names ...string) *Admission {
	a.t.Helper()
	return a.expect(expectations{notApplied: names, denied: a.anyDenial()})
}

// anyDenial keeps expectations about invocations from also asserting
// that the request was admitted.
func (a *Admission) anyDenial() *Denial {
	if a.o.result.Denied != nil {
		return &Denial{}
	}
	return nil
}
