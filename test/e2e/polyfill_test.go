//go:build linux

package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/controller"
)

// shadowAPIVersion is the group/version of the shadow CRDs of deploy/.
const shadowAPIVersion = controller.ShadowGroup + "/v1"

// webhookDenialPrefix is what kube-apiserver puts before the message of a
// webhook's denial (docs/webhook.md: the one visible difference from the
// in-tree plugin).
func webhookDenialPrefix(fp admissionregistrationv1.FailurePolicyType) string {
	name := "fail.webhook." + controller.ShadowGroup
	if fp == admissionregistrationv1.Ignore {
		name = "ignore.webhook." + controller.ShadowGroup
	}
	return fmt.Sprintf("admission webhook %q denied the request: ", name)
}

// TestPolyfill: kube-apiserver v1.37.1 with its MutatingAdmissionPolicy
// plugin disabled, plus `mutatis serve --source shadow` as its webhook
// (managing its own MutatingWebhookConfigurations), must store what
// kube-apiserver with the plugin enabled stores — the golden files of
// testdata/differential — for every policy set written as mutatis.dev
// objects. Denials differ only by the webhook prefix kube-apiserver adds.
// Then creates and updates of ConfigMaps, Deployments and custom resources
// come back mutated (custom-resources-and-updates).
func TestPolyfill(t *testing.T) {
	cases := caseFiles(t)
	bin := buildServe(t)
	c := StartCluster(t, NoMAP)
	installShadowCRDs(t, c)
	s := startServe(t, bin, c, "--source", "shadow")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	for _, f := range cases {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) { runPolyfillCase(t, ctx, c, s, f) })
	}
	t.Run("custom-resources-and-updates", func(t *testing.T) { runPolyfillCustomResources(t, ctx, c, s) })
}

// shadowOf returns u as a mutatis.dev object.
func shadowOf(u *unstructured.Unstructured) *unstructured.Unstructured {
	s := u.DeepCopy()
	s.SetAPIVersion(shadowAPIVersion)
	return s
}

// failurePolicyOf is the policy's failurePolicy (Fail when unset).
func failurePolicyOf(policy *unstructured.Unstructured) admissionregistrationv1.FailurePolicyType {
	if fp, _, _ := unstructured.NestedString(policy.Object, "spec", "failurePolicy"); fp == string(admissionregistrationv1.Ignore) {
		return admissionregistrationv1.Ignore
	}
	return admissionregistrationv1.Fail
}

func readGolden(t *testing.T, file string) outcome {
	t.Helper()
	golden := strings.TrimSuffix(file, ".yaml") + ".golden.yaml"
	_, data, err := readDocs(golden)
	if err != nil {
		t.Fatalf("no golden file %s: %v", golden, err)
	}
	var g outcome
	if err := yaml.Unmarshal(data, &g); err != nil {
		t.Fatalf("%s: %v", golden, err)
	}
	return g
}

func runPolyfillCase(t *testing.T, ctx context.Context, c *Cluster, s *served, file string) {
	docs, _, err := readDocs(file)
	if err != nil {
		t.Fatal(err)
	}
	object := docs[len(docs)-1]
	if oldObjectOf(docs) != nil {
		t.Skip("an UPDATE set: the polyfill scenario checks CREATEs (updates: custom-resources-and-updates)")
	}
	var resources, policies, bindings []*unstructured.Unstructured
	for _, d := range docs[:len(docs)-1] {
		switch {
		case isPolicy(d):
			policies = append(policies, shadowOf(d))
		case isBinding(d):
			bindings = append(bindings, shadowOf(d))
		default:
			resources = append(resources, d)
		}
	}
	golden := readGolden(t, file)
	createResources(t, ctx, c, resources)
	// The object as stored without any policy: what a policy kube-apiserver
	// refuses to create leaves.
	plain, err := c.Create(ctx, object, true)
	if err != nil {
		t.Fatalf("dry-run create of %s: %v", kindKey(object), err)
	}

	t.Cleanup(func() {
		for _, o := range append(append([]*unstructured.Unstructured{}, bindings...), policies...) {
			if err := c.Delete(ctx, o); err != nil {
				t.Errorf("deleting %s: %v", kindKey(o), err)
			}
		}
		if _, err := s.waitStatus(ctx, map[string]string{}, map[string]string{}); err != nil {
			t.Errorf("after deleting the policies: %v", err)
		}
	})
	wantPolicies, wantBindings := map[string]string{}, map[string]string{}
	paths := map[string]admissionregistrationv1.FailurePolicyType{}
	for _, p := range policies {
		got, err := c.Create(ctx, p, false)
		if err != nil {
			t.Fatalf("creating %s: %v", kindKey(p), err)
		}
		if golden.Refused == "" {
			wantPolicies[p.GetName()] = got.GetResourceVersion()
			fp := failurePolicyOf(p)
			paths["/mutate/"+strings.ToLower(string(fp))] = fp
		}
	}
	for _, b := range bindings {
		got, err := c.Create(ctx, b, false)
		if err != nil {
			t.Fatalf("creating %s: %v", kindKey(b), err)
		}
		wantBindings[b.GetName()] = got.GetResourceVersion()
	}

	if golden.Refused != "" {
		// kube-apiserver refuses the policy; the shadow CRD stores it and
		// mutatis reports why it does not apply it, with the same field
		// errors, and the object is stored as if there were no policy.
		checkRefusedShadowPolicy(t, ctx, c, s, policies, golden)
		got, err := c.Create(ctx, object, false)
		o, err := outcomeOf(got, err)
		if err != nil {
			t.Fatalf("create of %s: %v", kindKey(object), err)
		}
		if d := diff("without policies", outcome{Object: normalize(plain.Object)}, "with the refused policy", o); d != "" {
			t.Errorf("a policy mutatis refuses changed %s:\n%s", kindKey(object), d)
		}
		return
	}

	if _, err := s.waitStatus(ctx, wantPolicies, wantBindings); err != nil {
		t.Fatal(err)
	}
	waitWebhookCalled(t, ctx, c, s, object, slices.Sorted(maps.Keys(paths)))

	got, err := c.Create(ctx, object, false)
	o, err := outcomeOf(got, err)
	if err != nil {
		t.Fatalf("create of %s: %v", kindKey(object), err)
	}
	want := golden
	if want.Error != nil && want.Error.Code != 422 {
		// The denying policy's webhook is named in the prefix (a 422 is
		// the registry's, after admission: no prefix).
		var fps []admissionregistrationv1.FailurePolicyType
		for _, p := range policies {
			if strings.Contains(want.Error.Message, fmt.Sprintf("policy '%s'", p.GetName())) {
				fps = append(fps, failurePolicyOf(p))
			}
		}
		if len(fps) != 1 {
			t.Fatalf("cannot tell which policy of %s denies: %q", filepath.Base(file), want.Error.Message)
		}
		e := *want.Error
		e.Message = webhookDenialPrefix(fps[0]) + e.Message
		want.Error = &e
	}
	if d := diff("kube-apiserver (plugin)", want, "kube-apiserver + mutatis (webhook)", o); d != "" {
		t.Errorf("the polyfill differs from the MutatingAdmissionPolicy plugin on %s:\n%s", filepath.Base(file), d)
	}
}

// waitWebhookCalled makes sure kube-apiserver's webhook informer has the
// configurations mutatis wrote for the case: it dry-run creates object
// until every path in paths (/mutate/fail, /mutate/ignore) was called
// for it. Those calls are all that the configurations decide; what the
// calls evaluate is the Engine /statusz reported.
func waitWebhookCalled(t *testing.T, ctx context.Context, c *Cluster, s *served, object *unstructured.Unstructured, paths []string) {
	t.Helper()
	var last string
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err := poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		before, err := s.requests(ctx)
		if err != nil {
			return false, err
		}
		_, cerr := c.Create(ctx, object, true)
		after, err := s.requests(ctx)
		if err != nil {
			return false, err
		}
		var missing []string
		for _, p := range paths {
			if after[p] <= before[p] {
				missing = append(missing, p)
			}
		}
		last = fmt.Sprintf("not called: %v (dry-run: %v)", missing, cerr)
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Fatalf("kube-apiserver does not call mutatis for %s on %v: %v (last: %s)", kindKey(object), paths, err, last)
	}
}

// checkRefusedShadowPolicy checks that mutatis reports the policy that
// kube-apiserver refuses (golden.Refused) as not Ready, with the field
// errors of kube-apiserver's refusal, and keeps it out of its Engine.
func checkRefusedShadowPolicy(t *testing.T, ctx context.Context, c *Cluster, s *served, policies []*unstructured.Unstructured, golden outcome) {
	t.Helper()
	name := strings.TrimPrefix(golden.Refused, "MutatingAdmissionPolicy ")
	var policy *unstructured.Unstructured
	for _, p := range policies {
		if p.GetName() == name {
			policy = p
		}
	}
	if policy == nil || golden.Error == nil {
		t.Fatalf("golden: refused %q is not a policy of the case, or has no error", golden.Refused)
	}
	// kube-apiserver: `<Kind>.<group> "<name>" is invalid: <field errors>`.
	_, fieldErrs, ok := strings.Cut(golden.Error.Message, " is invalid: ")
	if !ok {
		t.Fatalf("golden: refusal %q is not a field validation error", golden.Error.Message)
	}
	last, err := waitReadyCondition(ctx, c, policy, func(status, message string) bool {
		return status == "False" && strings.Contains(message, fieldErrs)
	})
	if err != nil {
		t.Fatalf("mutatis does not report %s as not Ready with %q: %v (last: %s)", kindKey(policy), fieldErrs, err, last)
	}
	st, err := s.status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Policies[name]; ok {
		t.Errorf("/statusz lists the refused policy %s: %+v", name, st)
	}
}

// waitReadyCondition polls the Ready condition mutatis writes on a shadow
// policy until cond holds for its status and message (at most a minute),
// and returns the last condition seen.
func waitReadyCondition(ctx context.Context, c *Cluster, policy *unstructured.Unstructured, cond func(status, message string) bool) (string, error) {
	ri, err := c.resourceFor(policy)
	if err != nil {
		return "", err
	}
	last := "no Ready condition"
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = poll(pctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		got, err := ri.Get(ctx, policy.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == controller.ConditionReady {
				last = fmt.Sprintf("%v", m)
				return cond(fmt.Sprint(m["status"]), fmt.Sprint(m["message"])), nil
			}
		}
		return false, nil
	})
	return last, err
}

// polyfillWorld is the custom resource scenario of TestPolyfill: a CRD,
// a policy that labels ConfigMaps, Deployments and Widgets with the
// operation (ApplyConfiguration), and one that defaults a Widget's owner
// (JSONPatch).
const polyfillWorld = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.e2e.mutatis.dev}
spec:
  group: e2e.mutatis.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              owner: {type: string}
              size: {type: integer}
              tags:
                type: array
                maxItems: 16
                x-kubernetes-list-type: set
                items: {type: string, maxLength: 63}
---
apiVersion: v1
kind: Namespace
metadata: {name: e2e-polyfill}
---
apiVersion: mutatis.dev/v1
kind: MutatingAdmissionPolicy
metadata: {name: e2e-polyfill-operation-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["configmaps"]}
    - {apiGroups: ["apps"], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["deployments"]}
    - {apiGroups: ["e2e.mutatis.dev"], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["widgets"]}
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"e2e.mutatis.dev/operation": request.operation}}}'
---
apiVersion: mutatis.dev/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: e2e-polyfill-operation-label}
spec:
  policyName: e2e-polyfill-operation-label
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: e2e-polyfill}
---
apiVersion: mutatis.dev/v1
kind: MutatingAdmissionPolicy
metadata: {name: e2e-polyfill-widget-owner}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["e2e.mutatis.dev"], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["widgets"]}
  matchConditions:
  - name: no-owner
    expression: '!has(object.spec.owner)'
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "add", path: "/spec/owner", value: "platform"}, JSONPatch{op: "add", path: "/spec/tags/-", value: "owned"}]'
---
apiVersion: mutatis.dev/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: e2e-polyfill-widget-owner}
spec:
  policyName: e2e-polyfill-widget-owner
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: e2e-polyfill}
`

// polyfillObjects are created, then updated (update changes them), and
// come back labeled with the operation each time.
var polyfillObjects = []struct {
	object string
	update func(u *unstructured.Unstructured)
	// want are the fields (path → value) of the stored object after the
	// create, besides the operation label.
	want map[string]any
}{
	{
		object: `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: e2e-polyfill}, data: {mode: fast}}`,
		update: func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, "slow", "data", "mode") },
		want:   map[string]any{"data.mode": "fast"},
	},
	{
		object: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: e2e-polyfill}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]`,
		update: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
		},
		want: map[string]any{"spec.replicas": int64(1)},
	},
	{
		object: `{apiVersion: e2e.mutatis.dev/v1, kind: Widget, metadata: {name: gear, namespace: e2e-polyfill}, spec: {size: 3, tags: [blue]}}`,
		update: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(4), "spec", "size")
		},
		want: map[string]any{"spec.owner": "platform", "spec.tags": []any{"blue", "owned"}},
	},
}

func runPolyfillCustomResources(t *testing.T, ctx context.Context, c *Cluster, s *served) {
	var docs []*unstructured.Unstructured
	for _, d := range strings.Split(polyfillWorld, "\n---\n") {
		docs = append(docs, mustObject(d))
	}
	policies, bindings := map[string]string{}, map[string]string{}
	t.Cleanup(func() {
		for i := len(docs) - 1; i >= 0; i-- {
			if k := docs[i].GetKind(); k == "MutatingAdmissionPolicy" || k == "MutatingAdmissionPolicyBinding" {
				if err := c.Delete(ctx, docs[i]); err != nil {
					t.Errorf("deleting %s: %v", kindKey(docs[i]), err)
				}
			}
		}
		if _, err := s.waitStatus(ctx, map[string]string{}, map[string]string{}); err != nil {
			t.Errorf("after deleting the policies: %v", err)
		}
	})
	for _, d := range docs {
		got, err := c.Create(ctx, d, false)
		if err != nil {
			t.Fatalf("creating %s: %v", kindKey(d), err)
		}
		switch d.GetKind() {
		case "CustomResourceDefinition":
			waitEstablished(t, ctx, c, d)
			c.Mapper.Reset()
		case "MutatingAdmissionPolicy":
			policies[d.GetName()] = got.GetResourceVersion()
		case "MutatingAdmissionPolicyBinding":
			bindings[d.GetName()] = got.GetResourceVersion()
		}
	}
	if _, err := s.waitStatus(ctx, policies, bindings); err != nil {
		t.Fatal(err)
	}
	for _, tc := range polyfillObjects {
		obj := mustObject(tc.object)
		t.Run(obj.GetKind(), func(t *testing.T) {
			waitWebhookCalled(t, ctx, c, s, obj, []string{"/mutate/fail"})
			created, err := c.Create(ctx, obj, false)
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			checkPolyfilled(t, created, "CREATE", tc.want)
			tc.update(created)
			ri, err := c.resourceFor(created)
			if err != nil {
				t.Fatal(err)
			}
			updated, err := ri.Update(ctx, created, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			checkPolyfilled(t, updated, "UPDATE", nil)
			if updated.GetResourceVersion() == created.GetResourceVersion() {
				t.Errorf("the update stored nothing")
			}
		})
	}
}

// checkPolyfilled checks the operation label and the fields of want
// (dotted path → value) on a stored object.
func checkPolyfilled(t *testing.T, u *unstructured.Unstructured, op string, want map[string]any) {
	t.Helper()
	if got := u.GetLabels()["e2e.mutatis.dev/operation"]; got != op {
		t.Errorf("%s %s: label e2e.mutatis.dev/operation = %q, want %q (labels %v)", op, kindKey(u), got, op, u.GetLabels())
	}
	for path, w := range want {
		got, found, err := unstructured.NestedFieldNoCopy(u.Object, strings.Split(path, ".")...)
		if err != nil || !found || fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%s %s: %s = %v (found %v, %v), want %v", op, kindKey(u), path, got, found, err, w)
		}
	}
}
