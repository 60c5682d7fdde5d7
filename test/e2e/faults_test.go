//go:build linux

package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/controller"
)

// The controller faults scenario: `mutatis serve --source shadow` reaches
// kube-apiserver (MAP plugin enabled, for comparisons) through a
// faultProxy, and the test breaks what the controller depends on: its
// watches (cut, partitioned while the cluster changes, kube-apiserver
// restarted so that they cannot resume and the informers relist), params
// deleted while bindings use them, CRDs whose schema changes, and policies
// that do not compile. After each fault the policy set mutatis serves must
// be the cluster's: /statusz lists exactly the resourceVersions of the
// cluster's policies and bindings, and the next review's result is the one
// that set gives. Where the outcome is kube-apiserver's to decide (params,
// CRDs), the same policies exist as admissionregistration.k8s.io objects
// for kube-apiserver's own plugin, and both answers must be the same.

const (
	faultsNS     = "e2e-faults"
	faultsPrefix = "faults.e2e.mutatis.dev/"
	// faultsCase selects the bindings of a subtest (objectSelector).
	faultsCase = faultsPrefix + "case"
	// faultsVia tells the native plugin's objects (native) from mutatis'
	// (mutatis) where both have a policy.
	faultsVia = faultsPrefix + "via"
)

// configMapsRule makes a policy match the CREATE of ConfigMaps.
const configMapsRule = `{apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}`

// faultPolicy is a policy (apiVersion: shadow or native) for the CREATEs
// rule matches (a resourceRules entry), with an optional paramKind (YAML
// flow mapping) and one ApplyConfiguration mutation, expr.
func faultPolicy(apiVersion, name, paramKind, rule, expr string) *unstructured.Unstructured {
	u := mustObject(fmt.Sprintf(`
apiVersion: %s
kind: MutatingAdmissionPolicy
metadata: {name: %s}
spec:
  matchConstraints: {resourceRules: [%s]}
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: %q
`, apiVersion, name, rule, expr))
	if paramKind != "" {
		u.Object["spec"].(map[string]any)["paramKind"] = mustObject(paramKind).Object
	}
	return u
}

// labelExpression sets the label faults.e2e.mutatis.dev/NAME to the CEL
// string value.
func labelExpression(name, value string) string {
	return fmt.Sprintf(`Object{metadata: Object.metadata{labels: {"%s%s": %s}}}`, faultsPrefix, name, value)
}

// labelPolicy is a shadow policy that labels ConfigMaps with
// faults.e2e.mutatis.dev/NAME: REV, or evaluates expr instead when it is
// not empty.
func labelPolicy(name string, rev int, expr string) *unstructured.Unstructured {
	if expr == "" {
		expr = labelExpression(name, fmt.Sprintf("%q", fmt.Sprint(rev)))
	}
	return faultPolicy(shadowAPIVersion, name, "", configMapsRule, expr)
}

// caseBinding binds policy name (apiVersion: shadow or native) to the
// objects of subtest kase in faultsNS (and via, when not empty), with an
// optional paramRef (YAML flow mapping).
func caseBinding(apiVersion, name, kase, via, paramRef string) *unstructured.Unstructured {
	selector := fmt.Sprintf("%s: %s", faultsCase, kase)
	if via != "" {
		selector += fmt.Sprintf(", %s: %s", faultsVia, via)
	}
	u := mustObject(fmt.Sprintf(`
apiVersion: %s
kind: MutatingAdmissionPolicyBinding
metadata: {name: %s}
spec:
  policyName: %s
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}
    objectSelector: {matchLabels: {%s}}
`, apiVersion, name, name, faultsNS, selector))
	if paramRef != "" {
		spec := u.Object["spec"].(map[string]any)
		spec["paramRef"] = mustObject(paramRef).Object
	}
	return u
}

// caseSubject is a ConfigMap of subtest kase (and via).
func caseSubject(kase, via string) *unstructured.Unstructured {
	u := mustObject(fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {generateName: subject-, namespace: %s, labels: {%s: %s}}, data: {k: v}}`, faultsNS, faultsCase, kase))
	if via != "" {
		labels := u.GetLabels()
		labels[faultsVia] = via
		u.SetLabels(labels)
	}
	return u
}

// faultLabels are the labels the policies of this scenario set.
func faultLabels(u *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for k, v := range u.GetLabels() {
		if strings.HasPrefix(k, faultsPrefix) && k != faultsCase && k != faultsVia {
			out[strings.TrimPrefix(k, faultsPrefix)] = v
		}
	}
	return out
}

// faultsEnv is the cluster, mutatis, the proxy between them, and the
// shadow objects as the test wrote them: mutatis' /statusz reports the
// resourceVersion of the revision (generation) it compiled, and mutatis'
// own status writes make newer ones.
type faultsEnv struct {
	c     *Cluster
	s     *served
	proxy *faultProxy
	// name → resourceVersion of the last write of the spec.
	policies, bindings map[string]string
	// refused are the policies mutatis must leave out.
	refused map[string]bool
}

// record returns the map that records u, or nil when u is no shadow
// policy or binding.
func (e *faultsEnv) record(u *unstructured.Unstructured) map[string]string {
	if u.GetAPIVersion() != shadowAPIVersion {
		return nil
	}
	if u.GetKind() == "MutatingAdmissionPolicy" {
		return e.policies
	}
	return e.bindings
}

// apply writes u through kube-apiserver (never through the proxy).
func (e *faultsEnv) apply(ctx context.Context, u *unstructured.Unstructured) error {
	got, err := e.c.ApplyObject(ctx, u)
	if err != nil {
		return fmt.Errorf("writing %s: %w", kindKey(u), err)
	}
	if r := e.record(u); r != nil {
		r[u.GetName()] = got.GetResourceVersion()
	}
	return nil
}

// delete deletes u through kube-apiserver.
func (e *faultsEnv) delete(ctx context.Context, u *unstructured.Unstructured) error {
	if r := e.record(u); r != nil {
		delete(r, u.GetName())
	}
	return e.c.Delete(ctx, u)
}

// labelWorld is the label policies of one subtest: each policy's
// revision, and which are bound. It writes through c (never through the
// proxy) and knows the labels mutatis must add.
type labelWorld struct {
	e        *faultsEnv
	kase     string
	policies map[string]int
	bound    map[string]bool
}

func newLabelWorld(e *faultsEnv, kase string) *labelWorld {
	return &labelWorld{e: e, kase: kase, policies: map[string]int{}, bound: map[string]bool{}}
}

func (w *labelWorld) setPolicy(ctx context.Context, name string, rev int) error {
	w.policies[name] = rev
	return w.e.apply(ctx, labelPolicy(name, rev, ""))
}

func (w *labelWorld) deletePolicy(ctx context.Context, name string) error {
	delete(w.policies, name)
	return w.e.delete(ctx, labelPolicy(name, 0, ""))
}

func (w *labelWorld) bind(ctx context.Context, name string) error {
	w.bound[name] = true
	return w.e.apply(ctx, caseBinding(shadowAPIVersion, name, w.kase, "", ""))
}

func (w *labelWorld) unbind(ctx context.Context, name string) error {
	delete(w.bound, name)
	return w.e.delete(ctx, caseBinding(shadowAPIVersion, name, w.kase, "", ""))
}

// want is the labels the world's policies add.
func (w *labelWorld) want() map[string]string {
	out := map[string]string{}
	for name, rev := range w.policies {
		if w.bound[name] && !w.e.refused[name] {
			out[name] = fmt.Sprint(rev)
		}
	}
	return out
}

// clear deletes the world's policies and bindings.
func (w *labelWorld) clear(ctx context.Context) error {
	var errs []error
	for name := range w.policies {
		errs = append(errs, w.deletePolicy(ctx, name))
	}
	for name := range w.bound {
		errs = append(errs, w.unbind(ctx, name))
	}
	return errors.Join(errs...)
}

// clusterNames lists the names of the cluster's shadow policies or
// bindings.
func clusterNames(ctx context.Context, c *Cluster, resource string) ([]string, error) {
	gvr := schema.GroupVersionResource{Group: controller.ShadowGroup, Version: controller.ShadowVersion, Resource: resource}
	l, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, u := range l.Items {
		out = append(out, u.GetName())
	}
	return out, nil
}

// converged waits until mutatis serves the cluster's policy set — /statusz
// shows every shadow policy but the refused ones and every binding, at the
// revisions the test wrote — and checks that the next review of a subject
// of w gives w's labels. It returns how long the wait took.
func converged(t *testing.T, ctx context.Context, w *labelWorld) time.Duration {
	t.Helper()
	e := w.e
	start := time.Now()
	policies := map[string]string{}
	for name, rv := range e.policies {
		if !e.refused[name] {
			policies[name] = rv
		}
	}
	if _, err := e.s.waitStatus(ctx, policies, e.bindings); err != nil {
		t.Fatalf("mutatis does not serve the cluster's policies: %v", err)
	}
	took := time.Since(start)
	for resource, written := range map[string]map[string]string{controller.PolicyResource: e.policies, controller.BindingResource: e.bindings} {
		names, err := clusterNames(ctx, e.c, resource)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(slices.Sorted(maps.Keys(written)), slices.Sorted(slices.Values(names))) {
			t.Fatalf("the cluster has %s %v, the test wrote %v", resource, names, slices.Sorted(maps.Keys(written)))
		}
	}
	got, resp, err := e.s.admit(ctx, caseSubject(w.kase, ""), "configmaps")
	if err != nil || !resp.Allowed {
		t.Fatalf("review after convergence: %v %+v", err, resp)
	}
	if want := w.want(); !maps.Equal(faultLabels(got), want) {
		t.Fatalf("review after convergence: labels %v, want %v", faultLabels(got), want)
	}
	return took
}

// verdict is an admission's outcome as both sides can state it: the
// labels and spec.color of the admitted object, or the refusal.
type verdict struct {
	Labels  map[string]string   `json:"labels,omitempty"`
	Color   string              `json:"color,omitempty"`
	Code    int32               `json:"code,omitempty"`
	Reason  metav1.StatusReason `json:"reason,omitempty"`
	Message string              `json:"message,omitempty"`
}

func (v verdict) String() string {
	if v.Code != 0 {
		return fmt.Sprintf("refused %d %s: %s", v.Code, v.Reason, v.Message)
	}
	return fmt.Sprintf("labels %v color %q", v.Labels, v.Color)
}

func admittedVerdict(u *unstructured.Unstructured) verdict {
	color, _, _ := unstructured.NestedString(u.Object, "spec", "color")
	return verdict{Labels: faultLabels(u), Color: color}
}

// nativeVerdict dry-run creates u through kube-apiserver (its own plugin).
func nativeVerdict(ctx context.Context, c *Cluster, u *unstructured.Unstructured) (verdict, error) {
	got, err := c.Create(ctx, u, true)
	var se *apierrors.StatusError
	if errors.As(err, &se) && se.ErrStatus.Code >= 400 && se.ErrStatus.Code < 500 {
		return verdict{Code: se.ErrStatus.Code, Reason: se.ErrStatus.Reason, Message: se.ErrStatus.Message}, nil
	}
	if err != nil {
		return verdict{}, err
	}
	return admittedVerdict(got), nil
}

// mutatisVerdict reviews u straight at mutatis.
func mutatisVerdict(ctx context.Context, s *served, u *unstructured.Unstructured, resource string) (verdict, error) {
	got, resp, err := s.admit(ctx, u, resource)
	if err != nil {
		return verdict{}, err
	}
	if !resp.Allowed {
		if resp.Result == nil {
			return verdict{}, errors.New("denied without a result")
		}
		return verdict{Code: resp.Result.Code, Reason: resp.Result.Reason, Message: resp.Result.Message}, nil
	}
	return admittedVerdict(got), nil
}

// agree polls until kube-apiserver's plugin (object native) and mutatis
// (object mine) give the same verdict and done holds for it, and returns
// it. Both pick changes up asynchronously; done tells the state awaited
// from the ones before it.
func agree(t *testing.T, ctx context.Context, c *Cluster, s *served, native, mine *unstructured.Unstructured, resource string, done func(verdict) bool) verdict {
	t.Helper()
	var n, m verdict
	var nerr, merr error
	pctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	err := poll(pctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		n, nerr = nativeVerdict(ctx, c, native)
		m, merr = mutatisVerdict(ctx, s, mine, resource)
		return nerr == nil && merr == nil && done(n) && done(m) && reflect.DeepEqual(n, m), nil
	})
	if err != nil {
		t.Fatalf("kube-apiserver and mutatis do not agree: %v\nkube-apiserver: %v %v\nmutatis:        %v %v", err, n, nerr, m, merr)
	}
	return m
}

// TestControllerFaults: see the comment above faultsNS.
func TestControllerFaults(t *testing.T) {
	bin := buildServe(t)
	c := StartCluster(t, NativeMAP)
	installShadowCRDs(t, c)
	proxy := c.Proxy(t)
	s := startServeWith(t, bin, c, proxy.Kubeconfig, "--source", "shadow")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	createNamespace(t, ctx, c, faultsNS)
	e := &faultsEnv{c: c, s: s, proxy: proxy, policies: map[string]string{}, bindings: map[string]string{}, refused: map[string]bool{}}
	t.Run("compile-errors", func(t *testing.T) { faultCompileErrors(t, ctx, e) })
	t.Run("params-deleted", func(t *testing.T) { faultParamsDeleted(t, ctx, e) })
	t.Run("crd-schema-changed", func(t *testing.T) { faultCRDSchemaChanged(t, ctx, e) })
	// Before the watch cuts: client-go's reflectors back off after each
	// failed watch (800ms doubling to 30s, reset after 2 minutes without
	// one), which would only slow this one down.
	t.Run("apiserver-restart", func(t *testing.T) { faultAPIServerRestart(t, ctx, e) })
	t.Run("watch-errors", func(t *testing.T) { faultWatchErrors(t, ctx, e) })
}

// faultCompileErrors: policies kube-apiserver would refuse (three kinds of
// CEL errors), interleaved by name with good ones and all bound, leave the
// good ones working — also when the good ones change and a bad one is
// fixed — and are reported not Ready.
func faultCompileErrors(t *testing.T, ctx context.Context, e *faultsEnv) {
	c := e.c
	w := newLabelWorld(e, "compile")
	bad := map[string]string{
		"bad-a-undefined-variable": `Object{metadata: Object.metadata{labels: {"x": variables.team}}}`,
		"bad-c-syntax":             `Object{metadata: Object.metadata{labels: {"x": "y"}}`,
		"bad-e-undefined-function": `Object{metadata: Object.metadata{labels: {"x": nosuchfunction()}}}`,
	}
	for name, expr := range bad {
		w.policies[name] = 1
		e.refused[name] = true
		if err := e.apply(ctx, labelPolicy(name, 1, expr)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"good-b", "good-d", "good-f"} {
		if err := w.setPolicy(ctx, name, 1); err != nil {
			t.Fatal(err)
		}
	}
	for name := range w.policies {
		if err := w.bind(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	converged(t, ctx, w)
	// Each is reported with kube-apiserver's field errors: those it refuses
	// the policy with as an admissionregistration.k8s.io object.
	for name, expr := range bad {
		native := labelPolicy(name, 1, expr)
		native.SetAPIVersion("admissionregistration.k8s.io/v1")
		_, err := c.Create(ctx, native, true)
		_, fieldErrs, ok := strings.Cut(fmt.Sprint(err), " is invalid: ")
		if !apierrors.IsInvalid(err) || !ok {
			t.Fatalf("kube-apiserver does not refuse %s: %v", name, err)
		}
		last, err := waitReadyCondition(ctx, c, labelPolicy(name, 1, ""), func(status, message string) bool {
			return status == "False" && strings.Contains(message, fieldErrs)
		})
		if err != nil {
			t.Errorf("%s: not reported as not Ready with %q: %v (last: %s)", name, fieldErrs, err, last)
		}
	}
	// Through kube-apiserver (its webhook configuration informer may lag
	// mutatis: poll).
	checkThroughAPIServer(t, ctx, c, w)

	// A good policy changes; a bad one is fixed and joins.
	if err := w.setPolicy(ctx, "good-d", 2); err != nil {
		t.Fatal(err)
	}
	converged(t, ctx, w)
	delete(e.refused, "bad-a-undefined-variable")
	if err := w.setPolicy(ctx, "bad-a-undefined-variable", 2); err != nil {
		t.Fatal(err)
	}
	converged(t, ctx, w)
	if last, err := waitReadyCondition(ctx, c, labelPolicy("bad-a-undefined-variable", 2, ""), func(status, _ string) bool { return status == "True" }); err != nil {
		t.Errorf("the fixed policy is not reported Ready: %v (last: %s)", err, last)
	}
	if err := w.clear(ctx); err != nil {
		t.Fatal(err)
	}
	for name := range bad {
		delete(e.refused, name)
	}
}

// checkThroughAPIServer creates a subject of w through kube-apiserver, with
// mutatis as its webhook, until it is stored with w's labels.
func checkThroughAPIServer(t *testing.T, ctx context.Context, c *Cluster, w *labelWorld) {
	t.Helper()
	var last string
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := poll(pctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		got, err := c.Create(ctx, caseSubject(w.kase, "mutatis"), true)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprint(faultLabels(got))
		return maps.Equal(faultLabels(got), w.want()), nil
	})
	if err != nil {
		t.Fatalf("kube-apiserver does not store the labels %v through mutatis: %v (last: %s)", w.want(), err, last)
	}
}

// paramPolicy labels ConfigMaps with faults.e2e.mutatis.dev/NAME: the
// param's data.value.
func paramPolicy(apiVersion, name string) *unstructured.Unstructured {
	return faultPolicy(apiVersion, name, `{apiVersion: v1, kind: ConfigMap}`, configMapsRule, labelExpression(name, "string(params.data.value)"))
}

func paramObject(name, value string) *unstructured.Unstructured {
	return mustObject(fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: %s, labels: {knob: %s}}, data: {value: %q}}`, name, faultsNS, name, value))
}

// faultParamsDeleted: the params of three bindings (by name with
// parameterNotFoundAction Deny and Allow, by selector with Deny) are
// deleted while the bindings use them, then created anew. kube-apiserver's
// plugin and mutatis must give the same answer at each step: the param's
// value, the Deny refusal message for message, the policy skipped.
func faultParamsDeleted(t *testing.T, ctx context.Context, e *faultsEnv) {
	c, s := e.c, e.s
	cases := []struct{ name, paramRef string }{
		{"param-deny", fmt.Sprintf(`{name: knob-deny, namespace: %s, parameterNotFoundAction: Deny}`, faultsNS)},
		{"param-allow", fmt.Sprintf(`{name: knob-allow, namespace: %s, parameterNotFoundAction: Allow}`, faultsNS)},
		{"param-selector", fmt.Sprintf(`{selector: {matchLabels: {knob: knob-selector}}, namespace: %s, parameterNotFoundAction: Deny}`, faultsNS)},
	}
	knob := func(name string) string { return "knob-" + strings.TrimPrefix(name, "param-") }
	for _, tc := range cases {
		if _, err := c.Create(ctx, paramObject(knob(tc.name), "one"), false); err != nil {
			t.Fatal(err)
		}
		for _, group := range []struct{ apiVersion, via string }{{"admissionregistration.k8s.io/v1", "native"}, {shadowAPIVersion, "mutatis"}} {
			if err := e.apply(ctx, paramPolicy(group.apiVersion, tc.name)); err != nil {
				t.Fatal(err)
			}
			if err := e.apply(ctx, caseBinding(group.apiVersion, tc.name, tc.name, group.via, tc.paramRef)); err != nil {
				t.Fatal(err)
			}
		}
	}
	valueIs := func(name, value string) func(verdict) bool {
		return func(v verdict) bool { return v.Code == 0 && v.Labels[name] == value }
	}
	check := func(name string, done func(verdict) bool) verdict {
		t.Helper()
		return agree(t, ctx, c, s, caseSubject(name, "native"), caseSubject(name, "mutatis"), "configmaps", done)
	}
	for _, tc := range cases {
		check(tc.name, valueIs(tc.name, "one"))
	}
	// The params go while in use.
	for _, tc := range cases {
		if err := c.Delete(ctx, paramObject(knob(tc.name), "")); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		var v verdict
		if strings.Contains(tc.paramRef, "Deny") {
			v = check(tc.name, func(v verdict) bool { return v.Code != 0 })
		} else {
			v = check(tc.name, func(v verdict) bool { return v.Code == 0 && v.Labels[tc.name] == "" })
		}
		t.Logf("%s without its param: %v", tc.name, v)
	}
	// And come back with another value.
	for _, tc := range cases {
		if _, err := c.Create(ctx, paramObject(knob(tc.name), "two"), false); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		check(tc.name, valueIs(tc.name, "two"))
	}
}

// faultCRD is a namespaced CustomResourceDefinition in
// faults.e2e.mutatis.dev whose v1 objects have a spec with fields (YAML
// flow mappings by name): faultCRDSchemaChanged's Knobs are params, its
// Gadgets are mutated, and each gains a field.
func faultCRD(plural, kind string, fields map[string]string) *unstructured.Unstructured {
	u := mustObject(fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[1]s.faults.e2e.mutatis.dev}
spec:
  group: faults.e2e.mutatis.dev
  scope: Namespaced
  names: {plural: %[1]s, singular: %[2]s, kind: %[3]s, listKind: %[3]sList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object}
`, plural, strings.ToLower(kind), kind))
	props := map[string]any{}
	for name, schema := range fields {
		props[name] = mustObject(schema).Object
	}
	version := u.Object["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
	spec := version["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)
	spec["properties"] = props
	return u
}

func knobPolicy(apiVersion string) *unstructured.Unstructured {
	return faultPolicy(apiVersion, "crd-param", `{apiVersion: faults.e2e.mutatis.dev/v1, kind: Knob}`, configMapsRule,
		labelExpression("crd-param", `params.spec.value + "-" + (has(params.spec.tier) ? params.spec.tier : "none")`))
}

func gadgetPolicy(apiVersion string) *unstructured.Unstructured {
	return faultPolicy(apiVersion, "crd-match", "",
		`{apiGroups: [faults.e2e.mutatis.dev], apiVersions: [v1], operations: ["CREATE"], resources: [gadgets]}`,
		`Object{spec: Object.spec{color: "blue"}}`)
}

func gadget(via string) *unstructured.Unstructured {
	return mustObject(fmt.Sprintf(`{apiVersion: faults.e2e.mutatis.dev/v1, kind: Gadget, metadata: {generateName: gadget-, namespace: %s, labels: {%s: crd-match, %s: %s}}, spec: {size: 1}}`,
		faultsNS, faultsCase, faultsVia, via))
}

// faultCRDSchemaChanged: a CRD used as paramKind gains a field with a
// default, and a CRD whose objects a policy mutates gains the field the
// policy sets. kube-apiserver's plugin and mutatis must agree before and
// after each change.
func faultCRDSchemaChanged(t *testing.T, ctx context.Context, e *faultsEnv) {
	c, s := e.c, e.s
	knobs := map[string]string{"value": `{type: string}`}
	gadgets := map[string]string{"size": `{type: integer}`}
	for _, u := range []*unstructured.Unstructured{faultCRD("knobs", "Knob", knobs), faultCRD("gadgets", "Gadget", gadgets)} {
		if _, err := c.Create(ctx, u, false); err != nil {
			t.Fatal(err)
		}
		waitEstablished(t, ctx, c, u)
	}
	c.Mapper.Reset()
	knob := mustObject(fmt.Sprintf(`{apiVersion: faults.e2e.mutatis.dev/v1, kind: Knob, metadata: {name: k1, namespace: %s}, spec: {value: v}}`, faultsNS))
	if _, err := c.Create(ctx, knob, false); err != nil {
		t.Fatal(err)
	}
	paramRef := fmt.Sprintf(`{name: k1, namespace: %s, parameterNotFoundAction: Deny}`, faultsNS)
	for _, group := range []struct{ apiVersion, via string }{{"admissionregistration.k8s.io/v1", "native"}, {shadowAPIVersion, "mutatis"}} {
		for _, u := range []*unstructured.Unstructured{
			knobPolicy(group.apiVersion), caseBinding(group.apiVersion, "crd-param", "crd-param", group.via, paramRef),
			gadgetPolicy(group.apiVersion), caseBinding(group.apiVersion, "crd-match", "crd-match", group.via, ""),
		} {
			if err := e.apply(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
	}
	knobIs := func(value string) func(verdict) bool {
		return func(v verdict) bool { return v.Code == 0 && v.Labels["crd-param"] == value }
	}
	checkKnob := func(value string) {
		t.Helper()
		agree(t, ctx, c, s, caseSubject("crd-param", "native"), caseSubject("crd-param", "mutatis"), "configmaps", knobIs(value))
	}
	checkKnob("v-none")
	// The gadget's color is not in the schema: apply configuration fails.
	v := agree(t, ctx, c, s, gadget("native"), gadget("mutatis"), "gadgets", func(v verdict) bool { return v.Code != 0 })
	t.Logf("a Gadget before its schema has color: %v", v)

	knobs["tier"] = `{type: string, default: gold}`
	gadgets["color"] = `{type: string}`
	for _, u := range []*unstructured.Unstructured{faultCRD("knobs", "Knob", knobs), faultCRD("gadgets", "Gadget", gadgets)} {
		if err := c.Apply(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	// The stored Knob is defaulted when read: params must show the tier.
	checkKnob("v-gold")
	agree(t, ctx, c, s, gadget("native"), gadget("mutatis"), "gadgets", func(v verdict) bool { return v.Code == 0 && v.Color == "blue" })
	// And the param informers keep working on the new schema.
	knob.Object["spec"] = map[string]any{"value": "w"}
	if err := c.Apply(ctx, knob); err != nil {
		t.Fatal(err)
	}
	checkKnob("w-gold")
}

// faultWatchErrors: every watch of mutatis is cut right after a change
// (six times: two of each kind); then kube-apiserver is unreachable while
// policies and bindings are deleted, changed and created, and mutatis
// keeps serving its last set; then the same with kube-apiserver restarted during the
// partition, so that the watches cannot resume (their resourceVersion
// predates the new watch cache) and every informer relists. After each,
// mutatis serves the cluster's set.
func faultWatchErrors(t *testing.T, ctx context.Context, e *faultsEnv) {
	c, s, proxy := e.c, e.s, e.proxy
	w := newLabelWorld(e, "watch")
	names := []string{"watch-0", "watch-1", "watch-2", "watch-3", "watch-4"}
	for _, name := range names {
		if err := w.setPolicy(ctx, name, 1); err != nil {
			t.Fatal(err)
		}
		if err := w.bind(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	converged(t, ctx, w)

	// Cut after each change.
	var slowest time.Duration
	cut := 0
	for i := range 6 {
		name := names[i%len(names)]
		var err error
		switch i % 3 {
		case 0:
			err = w.setPolicy(ctx, name, w.policies[name]+1)
		case 1:
			if w.bound[name] {
				err = w.unbind(ctx, name)
			} else {
				err = w.bind(ctx, name)
			}
		case 2:
			if _, ok := w.policies[name]; ok {
				err = w.deletePolicy(ctx, name)
			} else {
				err = w.setPolicy(ctx, name, 10+i)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		cut += proxy.Cut()
		slowest = max(slowest, converged(t, ctx, w))
	}
	t.Logf("cut after 6 changes: %d connections closed; slowest convergence %v", cut, slowest.Round(time.Millisecond))

	// A partition while the cluster changes; then a partition with a
	// restart of kube-apiserver.
	for _, restart := range []bool{false, true} {
		before := w.want()
		proxy.Block()
		changes := []func() error{
			func() error { return w.deletePolicy(ctx, "watch-0") },
			func() error { return w.unbind(ctx, "watch-1") },
			func() error { return w.setPolicy(ctx, "watch-2", w.policies["watch-2"]+1) },
			func() error { return w.setPolicy(ctx, "watch-5", 1) },
			func() error { return w.bind(ctx, "watch-5") },
			func() error { return w.setPolicy(ctx, "watch-0", 20) },
			func() error { return w.bind(ctx, "watch-0") },
			func() error { return w.bind(ctx, "watch-1") },
		}
		if restart {
			changes = append(changes,
				func() error { return w.deletePolicy(ctx, "watch-5") },
				func() error { return w.unbind(ctx, "watch-5") },
				func() error { return w.unbind(ctx, "watch-3") })
		}
		for _, change := range changes {
			if err := change(); err != nil {
				t.Fatal(err)
			}
		}
		// mutatis cannot see the changes: it serves its last set.
		for i := range 20 {
			got, resp, err := s.admit(ctx, caseSubject(w.kase, ""), "configmaps")
			if err != nil || !resp.Allowed {
				t.Fatalf("review %d during the partition: %v %+v", i, err, resp)
			}
			if !maps.Equal(faultLabels(got), before) {
				t.Fatalf("review %d during the partition: labels %v, want the last set's %v", i, faultLabels(got), before)
			}
		}
		if restart {
			c.StopAPIServer()
			c.StartAPIServer(ctx)
		}
		refused := proxy.Refused()
		proxy.Unblock()
		took := converged(t, ctx, w)
		t.Logf("partition (restart %v): %d connections refused; converged %v after it ended", restart, refused, took.Round(time.Millisecond))
	}
	checkThroughAPIServer(t, ctx, c, w)
	if err := w.clear(ctx); err != nil {
		t.Fatal(err)
	}
}

// faultAPIServerRestart: kube-apiserver stops (mutatis' watches, leader
// election and webhook configuration writes fail meanwhile) and starts
// again against the same etcd. While it is down mutatis answers every
// review from its last set and stays ready; afterwards it takes changes
// in, leads again, and kube-apiserver calls it.
func faultAPIServerRestart(t *testing.T, ctx context.Context, e *faultsEnv) {
	c, s := e.c, e.s
	w := newLabelWorld(e, "restart")
	for _, name := range []string{"restart-0", "restart-1"} {
		if err := w.setPolicy(ctx, name, 1); err != nil {
			t.Fatal(err)
		}
		if err := w.bind(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	converged(t, ctx, w)
	before := w.want()

	// Reviews flow from before the stop until kube-apiserver is ready
	// again; each must give the last set's labels.
	stop := make(chan struct{})
	type outcome struct {
		reviews int
		err     error
	}
	result := make(chan outcome, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				result <- outcome{n, nil}
				return
			default:
			}
			got, resp, err := s.admit(ctx, caseSubject(w.kase, ""), "configmaps")
			if err == nil && !resp.Allowed {
				err = fmt.Errorf("denied: %+v", resp.Result)
			}
			if err == nil && !maps.Equal(faultLabels(got), before) {
				err = fmt.Errorf("labels %v, want %v", faultLabels(got), before)
			}
			if err != nil {
				result <- outcome{n, fmt.Errorf("review %d with kube-apiserver down: %w", n, err)}
				return
			}
			n++
		}
	}()
	down := time.Now()
	c.StopAPIServer()
	if _, err := s.get(ctx, "/readyz"); err != nil {
		t.Errorf("mutatis is not ready while kube-apiserver is down: %v", err)
	}
	c.StartAPIServer(ctx)
	close(stop)
	r := <-result
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("kube-apiserver stopped and started again in %v: %d reviews answered from the last set meanwhile", time.Since(down).Round(time.Millisecond), r.reviews)

	if err := w.setPolicy(ctx, "restart-0", 2); err != nil {
		t.Fatal(err)
	}
	if err := w.unbind(ctx, "restart-1"); err != nil {
		t.Fatal(err)
	}
	took := converged(t, ctx, w)
	t.Logf("converged %v after the restart's changes", took.Round(time.Millisecond))
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := poll(pctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		st, err := s.status(ctx)
		return err == nil && st.Leader, nil
	}); err != nil {
		t.Fatalf("mutatis does not lead again after the restart: %v", err)
	}
	checkThroughAPIServer(t, ctx, c, w)
	if err := w.clear(ctx); err != nil {
		t.Fatal(err)
	}
}
