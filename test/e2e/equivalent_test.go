//go:build linux

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// equivalentRequests says how the last object of a testdata/equivalent case
// is sent: by default a CREATE of the object itself; these go to a
// subresource of the object named like it.
// With stored, the whole stored object is compared with mutatis'
// (validated: the subresource's strategy), not only the replicas.
var equivalentRequests = map[string]struct {
	resource    schema.GroupVersionResource
	subresource string
	op          admission.Operation
	stored      bool
}{
	"deployments-scale-applyconfiguration": {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "scale", admission.Update, false},
	"deployments-scale-jsonpatch":          {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "scale", admission.Update, false},
	"pods-eviction-applyconfiguration":     {schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "eviction", admission.Create, false},
	"pods-ephemeralcontainers-label":       {schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "ephemeralcontainers", admission.Update, true},
	"crd-status-label":                     {schema.GroupVersionResource{Group: "eq.mutatis.dev", Version: "v1", Resource: "gizmos"}, "status", admission.Update, true},
	"crd-scale-jsonpatch":                  {schema.GroupVersionResource{Group: "eq.mutatis.dev", Version: "v1", Resource: "gizmos"}, "scale", admission.Update, false},
}

// TestEquivalentAndSubresources sends requests that reach native
// MutatingAdmissionPolicies through matchPolicy Equivalent in another
// version of a built-in kind (HorizontalPodAutoscalers, Events), and
// requests on subresources of another kind (deployments/scale,
// pods/eviction), to a real kube-apiserver v1.37.1 and to mutatis, and
// requires the same outcome: the same refusal (code, reason, message), or
// for an admitted scale update, the same replicas.
func TestEquivalentAndSubresources(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "equivalent", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files: %v", err)
	}
	c := StartCluster(t, NativeMAP)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	b := &barrier{c: c}
	b.sync(t, ctx)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) { runEquivalentCase(t, ctx, c, b, f, name) })
	}
}

func runEquivalentCase(t *testing.T, ctx context.Context, c *Cluster, b *barrier, file, name string) {
	docs, data, err := readDocs(file)
	if err != nil {
		t.Fatal(err)
	}
	object := docs[len(docs)-1]
	byRole := map[string][]*unstructured.Unstructured{}
	for _, d := range docs[:len(docs)-1] {
		role := "resource"
		if isPolicy(d) || isBinding(d) {
			role = d.GetKind()
		}
		byRole[role] = append(byRole[role], d)
	}
	resources, policies, bindings := byRole["resource"], byRole[mapGVK.Kind], byRole[mapbGVK.Kind]
	set, err := manifest.Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resources {
		if err := c.Apply(ctx, r); err != nil {
			t.Fatalf("creating %s: %v", kindKey(r), err)
		}
		if r.GetKind() == "CustomResourceDefinition" {
			waitEstablished(t, ctx, c, r)
			c.Mapper.Reset()
		}
	}
	sub, onSubresource := equivalentRequests[name]

	// The request as the MAP plugin receives it, for mutatis.
	req := cluster.Request{User: adminInfo()}
	switch {
	case !onSubresource:
		d0, err := c.Create(ctx, object, true)
		if err != nil {
			t.Fatalf("dry-run create of %s without policies: %v", kindKey(object), err)
		}
		req.Object = &unstructured.Unstructured{Object: normalize(d0.Object)}
	case sub.op == admission.Update:
		old, err := c.Dynamic.Resource(sub.resource).Namespace(object.GetNamespace()).Get(ctx, object.GetName(), metav1.GetOptions{}, sub.subresource)
		if err != nil {
			t.Fatal(err)
		}
		object.SetResourceVersion(old.GetResourceVersion())
		req.Object, req.OldObject, req.Operation = object.DeepCopy(), old, admission.Update
		req.Subresource = sub.resource.Resource + "/" + sub.subresource
	default:
		req.Object, req.Subresource = object.DeepCopy(), sub.resource.Resource+"/"+sub.subresource
	}
	got := admitEquivalentByMutatis(t, ctx, set, req, sub.stored)

	// The policies, natively.
	t.Cleanup(func() {
		for _, o := range append(append([]*unstructured.Unstructured{}, bindings...), policies...) {
			if err := c.Delete(ctx, o); err != nil {
				t.Errorf("deleting %s: %v", kindKey(o), err)
			}
		}
		if !onSubresource {
			if err := c.Delete(ctx, object); err != nil {
				t.Errorf("deleting %s: %v", kindKey(object), err)
			}
		}
		b.sync(t, ctx)
	})
	for _, o := range append(append([]*unstructured.Unstructured{}, policies...), bindings...) {
		if _, err := c.Create(ctx, o, false); err != nil {
			t.Fatalf("creating %s: %v", kindKey(o), err)
		}
	}
	b.sync(t, ctx)
	var s *unstructured.Unstructured
	switch {
	case !onSubresource:
		s, err = c.Create(ctx, object, false)
	case sub.op == admission.Update:
		// The MAP plugin answers 503 until it has a type converter for a
		// custom resource's kind (its /openapi/v3 refresh).
		perr := poll(ctx, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
			s, err = c.Dynamic.Resource(sub.resource).Namespace(object.GetNamespace()).Update(ctx, object, metav1.UpdateOptions{}, sub.subresource)
			return !(apierrors.IsServiceUnavailable(err) && strings.Contains(err.Error(), "CustomResourceDefinitions")), nil
		})
		if perr != nil {
			t.Fatalf("request: %v (last: %v)", perr, err)
		}
	default:
		s, err = c.Dynamic.Resource(sub.resource).Namespace(object.GetNamespace()).Create(ctx, object, metav1.CreateOptions{}, sub.subresource)
	}
	if err != nil && !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) && !isAPIStatus(err) {
		t.Fatalf("request: %v", err)
	}
	want, err := outcomeOf(s, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver: %s", want.yaml())
	if want.Object != nil && got.Object != nil && !sub.stored {
		// An admitted scale: the replicas kube-apiserver stored.
		w, _, _ := unstructured.NestedInt64(want.Object, "spec", "replicas")
		g, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
		if w != g {
			t.Errorf("spec.replicas: kube-apiserver %d, mutatis %d", w, g)
		}
		return
	}
	if d := diff("kube-apiserver", want, "mutatis", got); d != "" {
		t.Errorf("mutatis differs from kube-apiserver on %s:\n%s", name, d)
	}
}

func isAPIStatus(err error) bool {
	_, ok := err.(apierrors.APIStatus)
	return ok
}

// admitEquivalentByMutatis admits req as `mutatis apply` does (decoding,
// the engine, the registry's conversion) over the case's objects (those
// before the request's object).
func admitEquivalentByMutatis(t *testing.T, ctx context.Context, set *manifest.Set, req cluster.Request, stored bool) outcome {
	t.Helper()
	// The admission plugins of the harness's kube-apiserver.
	sim, err := cluster.New(set.Objects[:len(set.Objects)-1], cluster.Options{AdmissionPlugins: admissionplugins.Flags{Disable: harnessDisabledPlugins}, NoValidate: !stored})
	if err != nil {
		t.Fatal(err)
	}
	pols, binds := set.APIObjects()
	ev, err := sim.Evaluator(nil, pols, binds)
	if err != nil {
		t.Fatalf("mutatis: %v", err)
	}
	attrs, _, err := sim.Decode(req)
	if err != nil {
		t.Fatalf("mutatis: decoding the request: %v", err)
	}
	adm, err := sim.Admit(ctx, cluster.Chain{Policies: ev}, &cluster.Decoded{Attributes: attrs})
	switch {
	case err != nil:
		t.Fatalf("mutatis: %v", err)
	case adm.Result.Denied != nil:
		st := adm.Result.Denied.ErrStatus
		return outcome{Error: &statusOutcome{Code: st.Code, Reason: string(st.Reason), Message: st.Message}}
	case adm.Invalid != nil:
		return outcomeOfStatus(adm.Invalid)
	case adm.Stored != nil:
		return outcome{Object: normalize(adm.Stored)}
	}
	return outcome{Object: adm.Object}
}
