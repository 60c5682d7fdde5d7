//go:build linux

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// readDocs decodes a multi-document YAML file into objects.
func readDocs(path string) ([]*unstructured.Unstructured, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, data, nil
}

// resourceFor returns the dynamic client for u's kind (and namespace).
func (c *Cluster) resourceFor(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		// A CRD created a moment ago: refresh discovery once.
		c.Mapper.Reset()
		if m, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, err
		}
	}
	if m.Scope.Name() == "namespace" {
		return c.Dynamic.Resource(m.Resource).Namespace(u.GetNamespace()), nil
	}
	return c.Dynamic.Resource(m.Resource), nil
}

// Create creates u (dryRun: without storing it) and returns the object the
// API server returned.
func (c *Cluster) Create(ctx context.Context, u *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	ri, err := c.resourceFor(u)
	if err != nil {
		return nil, err
	}
	return ri.Create(ctx, u.DeepCopy(), metav1.CreateOptions{DryRun: dryRunAll(dryRun)})
}

// dryRunAll is the dryRun option of a request.
func dryRunAll(dryRun bool) []string {
	if dryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// Delete deletes u, ignoring NotFound.
func (c *Cluster) Delete(ctx context.Context, u *unstructured.Unstructured) error {
	ri, err := c.resourceFor(u)
	if err != nil {
		return err
	}
	err = ri.Delete(ctx, u.GetName(), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Apply creates u or, if it exists, updates it to u.
func (c *Cluster) Apply(ctx context.Context, u *unstructured.Unstructured) error {
	_, err := c.ApplyObject(ctx, u)
	return err
}

// ApplyObject is Apply returning the object the API server stored.
func (c *Cluster) ApplyObject(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri, err := c.resourceFor(u)
	if err != nil {
		return nil, err
	}
	cur, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ri.Create(ctx, u.DeepCopy(), metav1.CreateOptions{})
	}
	if err != nil {
		return nil, err
	}
	n := u.DeepCopy()
	n.SetResourceVersion(cur.GetResourceVersion())
	return ri.Update(ctx, n, metav1.UpdateOptions{})
}

// createNamespace creates the Namespace name.
func createNamespace(t *testing.T, ctx context.Context, c *Cluster, name string) {
	t.Helper()
	if _, err := c.Create(ctx, mustObject(`{apiVersion: v1, kind: Namespace, metadata: {name: `+name+`}}`), false); err != nil {
		t.Fatal(err)
	}
}

// serverFields are the metadata fields the API server sets on every
// stored object; they differ between two creations of the same object.
// (generation is set by the registry strategies, and compared.)
var serverFields = []string{"uid", "resourceVersion", "creationTimestamp", "managedFields"}

// normalize returns a copy of obj without serverFields.
func normalize(obj map[string]any) map[string]any {
	out := (&unstructured.Unstructured{Object: obj}).DeepCopy().Object
	if md, ok := out["metadata"].(map[string]any); ok {
		for _, f := range serverFields {
			delete(md, f)
		}
	}
	return out
}

// outcome is the result of one admission: the (normalized) object, or the
// API error that refused it.
type outcome struct {
	// Refused names the policy kube-apiserver refused to create ("Kind
	// name"); Error is then that refusal and the object was not admitted.
	Refused string         `json:"refused,omitempty"`
	Object  map[string]any `json:"object,omitempty"`
	Error   *statusOutcome `json:"error,omitempty"`
}

type statusOutcome struct {
	Code    int32  `json:"code"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message"`
}

func outcomeOf(u *unstructured.Unstructured, err error) (outcome, error) {
	if err != nil {
		var se apierrors.APIStatus
		if !errors.As(err, &se) {
			return outcome{}, err
		}
		s := se.Status()
		return outcome{Error: &statusOutcome{Code: s.Code, Reason: string(s.Reason), Message: s.Message}}, nil
	}
	return outcome{Object: normalize(u.Object)}, nil
}

// outcomeOfStatus is the outcome of a refusal.
func outcomeOfStatus(e *apierrors.StatusError) outcome {
	s := e.ErrStatus
	return outcome{Error: &statusOutcome{Code: s.Code, Reason: string(s.Reason), Message: s.Message}}
}

func (o outcome) yaml() string {
	b, err := yaml.Marshal(o)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// diff returns a unified diff of two outcomes' YAML, or "" when equal.
func diff(aName string, a outcome, bName string, b outcome) string {
	as, bs := a.yaml(), b.yaml()
	if as == bs {
		return ""
	}
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(as), B: difflib.SplitLines(bs), FromFile: aName, ToFile: bName, Context: 3,
	})
	return d
}

// kindKey names an object for messages.
func kindKey(u *unstructured.Unstructured) string {
	s := u.GetKind() + " " + u.GetName()
	if ns := u.GetNamespace(); ns != "" {
		s = u.GetKind() + " " + ns + "/" + u.GetName()
	}
	return s
}

var (
	mapGVK  = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingAdmissionPolicy"}
	mapbGVK = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingAdmissionPolicyBinding"}
)

func isPolicy(u *unstructured.Unstructured) bool  { return u.GroupVersionKind() == mapGVK }
func isBinding(u *unstructured.Unstructured) bool { return u.GroupVersionKind() == mapbGVK }

// quickCtx is a context for one API call.
func quickCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, 30*time.Second)
}

func trimYAML(s string) string { return strings.TrimSpace(s) + "\n" }

// createResources creates a case's Namespaces, params,
// CustomResourceDefinitions and the object an UPDATE set updates, in
// order; a CRD is waited for until established and discovery is
// refreshed. A CRD defined a second time is updated: it reports true.
func createResources(t *testing.T, ctx context.Context, c *Cluster, resources []*unstructured.Unstructured) (redefined bool) {
	t.Helper()
	crds := map[string]bool{}
	for _, r := range resources {
		crd := r.GetKind() == "CustomResourceDefinition"
		var err error
		if crd && crds[r.GetName()] {
			err, redefined = c.Apply(ctx, r), true
		} else {
			var created *unstructured.Unstructured
			if created, err = c.Create(ctx, r, false); err == nil {
				err = c.writeQuotaStatus(ctx, r, created)
			}
		}
		if err != nil {
			t.Fatalf("creating %s: %v", kindKey(r), err)
		}
		if crd {
			crds[r.GetName()] = true
			waitEstablished(t, ctx, c, r)
			c.Mapper.Reset()
		}
	}
	return redefined
}

// writeQuotaStatus writes the status of r, a ResourceQuota as written in
// a case, to created, the one kube-apiserver stored (its create ignores
// the status), through the status subresource: what the quota controller,
// which the harness does not run, would have written, and what mutatis
// reads from the case's objects. Objects of other kinds are left alone.
func (c *Cluster) writeQuotaStatus(ctx context.Context, r, created *unstructured.Unstructured) error {
	status, ok := r.Object["status"]
	if r.GroupVersionKind() != corev1.SchemeGroupVersion.WithKind("ResourceQuota") || !ok {
		return nil
	}
	ri, err := c.resourceFor(r)
	if err != nil {
		return err
	}
	created = created.DeepCopy()
	created.Object["status"] = status
	_, err = ri.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// oldObjectOf returns the document of docs (before the last, the case
// object) that has the case object's kind (in any version), namespace and name: the object
// an UPDATE set creates first and then updates to the case object. nil
// for a CREATE set.
func oldObjectOf(docs []*unstructured.Unstructured) *unstructured.Unstructured {
	object := docs[len(docs)-1]
	for _, d := range docs[:len(docs)-1] {
		if d.GroupVersionKind().GroupKind() == object.GroupVersionKind().GroupKind() && d.GetNamespace() == object.GetNamespace() && d.GetName() == object.GetName() {
			return d
		}
	}
	return nil
}

// write creates u or, when old (the stored object) is not nil, updates old
// to u (at old's resourceVersion).
func (c *Cluster) write(ctx context.Context, u, old *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	if old == nil {
		return c.Create(ctx, u, dryRun)
	}
	ri, err := c.resourceFor(u)
	if err != nil {
		return nil, err
	}
	n := u.DeepCopy()
	n.SetResourceVersion(old.GetResourceVersion())
	return ri.Update(ctx, n, metav1.UpdateOptions{DryRun: dryRunAll(dryRun)})
}

// waitRefused waits until a dry-run create of a copy of old (under another
// name) is refused: an UPDATE set that redefines a CRD makes its old object
// invalid (the ratchet it tests), and kube-apiserver's CRD handler picks
// the new definition up asynchronously.
func waitRefused(t *testing.T, ctx context.Context, c *Cluster, old *unstructured.Unstructured) {
	t.Helper()
	probe := old.DeepCopy()
	probe.SetName(old.GetName() + "-probe")
	err := poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, err := c.Create(ctx, probe, true)
		return apierrors.IsInvalid(err), nil
	})
	if err != nil {
		t.Fatalf("the redefined CRD of %s did not take effect: %v", kindKey(old), err)
	}
}

// waitTypeConverter waits until kube-apiserver's MAP plugin can mutate
// object's kind: its type converters come from the server's
// /openapi/v3, polled every 5 s, so a custom resource whose CRD was just
// created is refused with a 503 until then (which the barrier does not
// cover). Dry-run writes of object tell.
func waitTypeConverter(t *testing.T, ctx context.Context, c *Cluster, object, old *unstructured.Unstructured) {
	t.Helper()
	var last error
	err := poll(ctx, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, last = c.write(ctx, object, old, true)
		return !(apierrors.IsServiceUnavailable(last) && strings.Contains(last.Error(), "CustomResourceDefinitions")), nil
	})
	if err != nil {
		t.Fatalf("the MAP plugin has no type converter for %s: %v (last: %v)", kindKey(object), err, last)
	}
}
