//go:build linux

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// barrier makes policy changes observable: after sync returns, the
// MutatingAdmissionPolicy plugin of kube-apiserver admits with every policy,
// binding and ConfigMap param created, updated or deleted before the call.
//
// Why this holds: the plugin recomputes its policy list (at most once a
// second) from its informers' listers; the binding list is one snapshot,
// policies are looked up one by one, params at admission time. A round N
// updates a marker ConfigMap param (token N), a marker policy (literal N in
// its expression) and a marker binding (objectSelector label N), then
// dry-run creates PodTemplates labeled N until one comes back annotated
// "N/N". That result proves the binding snapshot, the ConfigMap informer
// and the policy informer all saw the round's writes, hence everything
// written before them (an informer delivers events in order). A policy
// looked up before the marker policy in the same recomputation might still
// have been missed, so sync runs two rounds: the second recomputation
// starts after the first one finished. Case policies must therefore not
// match podtemplates, and their params must be ConfigMaps.
type barrier struct {
	c *Cluster
	n int
}

const barrierNS = "e2e-barrier"

func (b *barrier) sync(t *testing.T, ctx context.Context) {
	t.Helper()
	for range 2 {
		if err := b.round(ctx); err != nil {
			t.Fatalf("policy barrier: %v", err)
		}
	}
}

func mustObject(s string) *unstructured.Unstructured {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func (b *barrier) round(ctx context.Context) error {
	b.n++
	n := strconv.Itoa(b.n)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if b.n == 1 {
		ns := mustObject(`{apiVersion: v1, kind: Namespace, metadata: {name: ` + barrierNS + `}}`)
		if _, err := b.c.Create(ctx, ns, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	writes := []*unstructured.Unstructured{
		mustObject(fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: barrier, namespace: %s}, data: {token: %q}}`, barrierNS, n)),
		mustObject(fmt.Sprintf(`
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: e2e-barrier}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["podtemplates"]}
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{annotations: {"e2e.mutatis.dev/barrier": "%s/" + params.data.token}}}'
`, n)),
		mustObject(fmt.Sprintf(`
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: e2e-barrier}
spec:
  policyName: e2e-barrier
  paramRef: {name: barrier, namespace: %s, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}
    objectSelector: {matchLabels: {e2e.mutatis.dev/barrier: %q}}
`, barrierNS, barrierNS, n)),
	}
	for _, w := range writes {
		if err := b.c.Apply(ctx, w); err != nil {
			return fmt.Errorf("round %s: writing %s: %w", n, kindKey(w), err)
		}
	}
	probe := mustObject(fmt.Sprintf(`
apiVersion: v1
kind: PodTemplate
metadata: {name: probe, namespace: %s, labels: {e2e.mutatis.dev/barrier: %q}}
template:
  spec:
    containers: [{name: c, image: probe}]
`, barrierNS, n))
	want := n + "/" + n
	var last string
	err := poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		cctx, ccancel := quickCtx(ctx)
		defer ccancel()
		got, err := b.c.Create(cctx, probe, true)
		if err != nil {
			// E.g. the param informer is not synced yet: the marker's
			// failurePolicy Fail denies. Keep polling.
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("annotations %v", got.GetAnnotations())
		return got.GetAnnotations()["e2e.mutatis.dev/barrier"] == want, nil
	})
	if err != nil {
		return fmt.Errorf("round %s: the marker policy did not take effect: %v (last: %s)", n, err, last)
	}
	return nil
}
