package bench

// The validating stage side by side: k8s.io/apiserver's
// ValidatingAdmissionPolicy plugin (validating.NewPlugin, its policy
// source, dispatcher and validator over informers: test/upstream
// ValidatingPolicies) against mutatis' validating.Evaluator over the
// cluster, both on the same policies, bindings, params and request.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	upstreamvalidating "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/utils/ptr"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/test/upstream"
	"github.com/mutatis-dev/mutatis/validating"
)

// validation is one validation of a scenario policy.
type validation struct {
	expr, message, messageExpr string
}

// vap returns a ValidatingAdmissionPolicy with its binding (actions
// Deny unless given), matching CREATE of the given resource.
func vap(name, group, resource string, actions []admissionregistrationv1.ValidationAction, vs ...validation) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	exact := admissionregistrationv1.Exact
	fail := admissionregistrationv1.Fail
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{},
				ObjectSelector:    &metav1.LabelSelector{},
				MatchPolicy:       &exact,
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: []string{resource}, Scope: ptr.To(admissionregistrationv1.AllScopes)},
				}}},
			},
			FailurePolicy: &fail,
		},
	}
	for _, v := range vs {
		p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{Expression: v.expr, Message: v.message, MessageExpression: v.messageExpr})
	}
	if actions == nil {
		actions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: actions,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}, MatchPolicy: &exact}},
	}
	return p, b
}

// validateScenario is a set of ValidatingAdmissionPolicies and one request.
type validateScenario struct {
	name     string
	policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	req      request
	// denied: the request is refused.
	denied bool
}

func (s *validateScenario) add(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	s.policies, s.bindings = append(s.policies, p), append(s.bindings, b)
}

// validateScenarios returns the scenarios of BenchmarkValidate: the Pod
// of BenchmarkAdmit under policies that match it or not, allow it, warn
// and audit, deny it, with params.
func validateScenarios() []validateScenario {
	var out []validateScenario
	warnAudit := []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit}

	// Ten policies on Pods, two validations each, all passing.
	s := validateScenario{name: "pod-10-matching", req: podRequest()}
	for i := range 10 {
		s.add(vap(fmt.Sprintf("pod-%02d", i), "", "pods", nil,
			validation{expr: `object.spec.containers.all(c, c.image != "")`, message: "an image"},
			validation{expr: fmt.Sprintf(`!has(object.metadata.labels) || !("forbidden-%02d" in object.metadata.labels)`, i)}))
	}
	out = append(out, s)

	// N policies of which one matches (the others target other resources).
	// (Not 1,000: upstream's plugin compiles them in its policy source
	// for longer than test/upstream waits on a loaded machine.)
	for _, n := range []int{10, 100} {
		out = append(out, manyVAPs(fmt.Sprintf("policies-%d-1-matching", n), n, true))
	}
	out = append(out, manyVAPs("policies-100-0-matching", 100, false))

	// Ten policies failing under Warn and Audit: warnings, the
	// validation_failure audit annotation.
	s = validateScenario{name: "warn-audit-10", req: podRequest()}
	for i := range 10 {
		s.add(vap(fmt.Sprintf("warn-%02d", i), "", "pods", warnAudit,
			validation{expr: `object.spec.containers.all(c, c.image.startsWith("registry.example.com/"))`,
				messageExpr: fmt.Sprintf(`"policy %02d: " + object.spec.containers.filter(c, !c.image.startsWith("registry.example.com/")).map(c, c.name).join(", ")`, i)}))
	}
	out = append(out, s)

	// One policy denying with a messageExpression.
	s = validateScenario{name: "deny-1", req: podRequest(), denied: true}
	s.add(vap("deny", "", "pods", nil, validation{expr: `object.spec.containers.size() <= 1`, messageExpr: `"at most one container, not " + string(object.spec.containers.size())`}))
	out = append(out, s)

	// Params by selector: one binding, ten ConfigMaps, ten evaluations.
	p, b := vap("team-from-params", "", "pods", nil,
		validation{expr: `params.data.team.startsWith("team-") && object.metadata.namespace == params.metadata.namespace`, messageExpr: `"team " + params.data.team`})
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	deny := admissionregistrationv1.DenyAction
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "defaults"}}, ParameterNotFoundAction: &deny}
	s = validateScenario{name: "params-selector-10", req: podRequest()}
	s.add(p, b)
	out = append(out, s)
	return out
}

// manyVAPs is n policies, one matching the Pod request when match is set.
func manyVAPs(name string, n int, match bool) validateScenario {
	s := validateScenario{name: name, req: podRequest()}
	for i := range n {
		group, resource := "", "pods"
		if i > 0 || !match {
			r := otherResources[i%len(otherResources)]
			group, resource = r[0], r[1]
		}
		s.add(vap(fmt.Sprintf("policy-%04d", i), group, resource, nil,
			validation{expr: fmt.Sprintf(`!has(object.metadata.labels) || !("forbidden-%04d" in object.metadata.labels)`, i)}))
	}
	return s
}

// validateWorld is a scenario's two implementations, ready.
type validateWorld struct {
	// upstream
	plugin  *upstreamvalidating.Plugin
	ifaces  admission.ObjectInterfaces
	obj     runtime.Object // the request's object in its internal version
	req     request
	stopped func()

	// mutatis
	ev    *validating.Evaluator
	attrs *matching.Attributes
}

func newValidateWorld(tb testing.TB, s validateScenario) *validateWorld {
	tb.Helper()
	w, stop := newWorld(tb, worldObjects())
	ev, err := w.cluster.ValidatingPolicies(nil, s.policies, s.bindings)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var objs []runtime.Object
	for _, p := range s.policies {
		objs = append(objs, p)
	}
	for _, b := range s.bindings {
		objs = append(objs, b)
	}
	for _, o := range worldObjects() {
		objs = append(objs, o)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	plugin, err := upstream.ValidatingPolicies(ctx, objs, []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}}, mapper, w.cluster.Authorizer)
	if err != nil {
		tb.Fatal(err)
	}
	k := kubeScheme()
	// Validating admission sees the object in its internal version, as
	// the registry hands it over.
	internal, err := k.ConvertToVersion(s.req.obj.DeepCopyObject(), schema.GroupVersion{Group: s.req.gvk.Group, Version: runtime.APIVersionInternal})
	if err != nil {
		tb.Fatal(err)
	}
	return &validateWorld{
		plugin: plugin, ifaces: admission.NewObjectInterfacesFromScheme(k), obj: internal, req: s.req,
		stopped: func() { cancel(); stop() },
		ev:      ev, attrs: matching.AttributesFrom(s.req.attributes()),
	}
}

// validateOutcome is what a validating admission answered.
type validateOutcome struct {
	Message     string
	Warnings    []string
	Annotations map[string]string
}

// runUpstream admits the request through upstream's plugin.
func (w *validateWorld) runUpstream(ctx context.Context, rec *warningList) (validateOutcome, error) {
	attrs := &upstream.AnnotatedAttributes{Attributes: admission.NewAttributesRecord(w.obj, nil, w.req.gvk, w.req.namespace, w.req.name, w.req.gvr, "",
		admission.Create, &metav1.CreateOptions{}, false, benchUser)}
	err := w.plugin.Validate(warning.WithWarningRecorder(ctx, rec), attrs, w.ifaces)
	var o validateOutcome
	if err != nil {
		status, ok := err.(*apierrors.StatusError)
		if !ok {
			return o, err
		}
		o.Message = status.ErrStatus.Message
	}
	o.Warnings, o.Annotations = rec.list, attrs.Annotations
	return o, nil
}

// runMutatis admits the request through mutatis' validating stage.
func (w *validateWorld) runMutatis(ctx context.Context, r *chain.Runner) (validateOutcome, error) {
	res, err := r.RunOnce(ctx, w.attrs, w.ev)
	var o validateOutcome
	if err != nil {
		return o, err
	}
	if res.Denied != nil {
		o.Message = res.Denied.ErrStatus.Message
	}
	o.Warnings, o.Annotations = res.Warnings, res.AuditAnnotations
	return o, nil
}

// inPolicyOrder is o with its warnings and validation failures sorted:
// upstream's plugin evaluates its policies in its informer's order (a
// map's), mutatis by name (docs/fidelity.md).
func inPolicyOrder(t *testing.T, o validateOutcome) validateOutcome {
	t.Helper()
	o.Warnings = slices.Sorted(slices.Values(o.Warnings))
	if len(o.Annotations) == 0 {
		o.Annotations = nil
	}
	const key = validating.ValidationFailureAnnotation
	if v, ok := o.Annotations[key]; ok {
		var failures []map[string]any
		if err := json.Unmarshal([]byte(v), &failures); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		slices.SortFunc(failures, func(a, b map[string]any) int {
			return strings.Compare(fmt.Sprint(a["message"]), fmt.Sprint(b["message"]))
		})
		js, err := json.Marshal(failures)
		if err != nil {
			t.Fatal(err)
		}
		o.Annotations = maps.Clone(o.Annotations)
		o.Annotations[key] = string(js)
	}
	return o
}

// warningList is a warning.Recorder keeping one of each text, as
// kube-apiserver's does.
type warningList struct {
	mu   sync.Mutex
	list []string
}

func (w *warningList) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.list, text) {
		w.list = append(w.list, text)
	}
}

// BenchmarkValidate measures whole validating admissions (matching,
// params, validations, messages, actions) through k8s.io/apiserver's
// ValidatingAdmissionPolicy plugin and through mutatis' validating stage
// (a chain.Runner's RunOnce over the validating.Evaluator), policies
// compiled once. Each side starts from the object as its admission gets
// it: upstream's plugin from the typed object in its internal version (it
// converts it to the matched version once per request, then CEL reads the
// typed struct through reflection), mutatis' stage from the unstructured
// map its review decoding made, once, outside the loop (BenchmarkHandler
// measures that decoding). cpu-ns/op is the process's CPU: the garbage
// collector's, and the idle upstream informers' of the same world, on
// both sides.
func BenchmarkValidate(b *testing.B) {
	for _, s := range validateScenarios() {
		w := newValidateWorld(b, s)
		b.Run("impl=upstream/case="+s.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			cpu := cpuTime(b)
			for b.Loop() {
				if _, err := w.runUpstream(ctx, &warningList{}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
		b.Run("impl=mutatis/case="+s.name, func(b *testing.B) {
			ctx := context.Background()
			var r chain.Runner
			b.ReportAllocs()
			cpu := cpuTime(b)
			for b.Loop() {
				if _, err := w.runMutatis(ctx, &r); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
		w.stopped()
	}
}

// TestValidateScenariosAgree guards BenchmarkValidate: every scenario
// gets the same answer (refusal message, warnings, audit annotations)
// from both implementations.
func TestValidateScenariosAgree(t *testing.T) {
	for _, s := range validateScenarios() {
		t.Run(s.name, func(t *testing.T) {
			w := newValidateWorld(t, s)
			defer w.stopped()
			ctx := context.Background()
			theirs, err := w.runUpstream(ctx, &warningList{})
			if err != nil {
				t.Fatalf("upstream: %v", err)
			}
			ours, err := w.runMutatis(ctx, new(chain.Runner))
			if err != nil {
				t.Fatalf("mutatis: %v", err)
			}
			ours, theirs = inPolicyOrder(t, ours), inPolicyOrder(t, theirs)
			if !reflect.DeepEqual(ours, theirs) {
				t.Fatalf("mutatis  %+v\nupstream %+v", ours, theirs)
			}
			if denied := ours.Message != ""; denied != s.denied {
				t.Fatalf("denied = %v, want %v (%s)", denied, s.denied, ours.Message)
			}
		})
	}
}
