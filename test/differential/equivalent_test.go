package differential

// Requests a policy matches only through matchPolicy Equivalent in another
// version of a built-in kind (autoscaling v1 ↔ v2 HorizontalPodAutoscalers,
// core/v1 ↔ events.k8s.io/v1 Events), run through upstream's dispatcher as
// kube-apiserver runs it: the admission attributes hold the objects in their
// group's internal version (the handler decodes the body into the hub), and
// the ObjectInterfaces are kube-apiserver's scheme.

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/utils/ptr"
)

var (
	hpaV1GVR       = schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}
	hpaV2GVR       = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	coreEventGVR   = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	eventsEventGVR = schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
)

func hpaV1(labels map[string]string) *autoscalingv1.HorizontalPodAutoscaler {
	return &autoscalingv1.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: labels},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](70),
		},
	}
}

func hpaV2(labels map[string]string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: labels},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 5,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](70)}}}},
		},
	}
}

func coreEvent(labels map[string]string) *corev1.Event {
	return &corev1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:          metav1.ObjectMeta{Name: "web.1", Namespace: "shop", Labels: labels},
		InvolvedObject:      corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web", APIVersion: "v1"},
		Reason:              "Started",
		Message:             "started",
		Type:                "Normal",
		ReportingController: "example.com/ctl",
		ReportingInstance:   "ctl-1",
		Action:              "Start",
		EventTime:           metav1.NewMicroTime(metav1.Now().Rfc3339Copy().Time),
	}
}

func eventsEvent(labels map[string]string) *eventsv1.Event {
	return &eventsv1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
		ObjectMeta:          metav1.ObjectMeta{Name: "web.1", Namespace: "shop", Labels: labels},
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web", APIVersion: "v1"},
		Reason:              "Started",
		Note:                "started",
		Type:                "Normal",
		ReportingController: "example.com/ctl",
		ReportingInstance:   "ctl-1",
		Action:              "Start",
		EventTime:           metav1.NewMicroTime(metav1.Now().Rfc3339Copy().Time),
	}
}

// runUpstreamInternal is runUpstream with the request's objects in their
// internal version, as kube-apiserver's handlers admit them; the final
// object is converted back to the request's version, as the handler
// encodes the response.
func (w *dispatchWorld) runUpstreamInternal(t *testing.T, ctx context.Context, d generic.Dispatcher[mutating.PolicyHook], policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding, r dispatchRequest) dispatchOutcome {
	t.Helper()
	s := kubeScheme()
	ir := r
	ir.obj, ir.old = internalOf(t, r.obj, r.gvk), internalOf(t, r.old, r.gvk)
	attrs := ir.attributes()
	hooks := w.upstreamHooks(policies, bindings)
	// kube-apiserver's ObjectInterfaces know the equivalent resources (its
	// EquivalentResourceRegistry): the table answers for it.
	oi := &admission.RuntimeObjectInterfaces{ObjectCreater: s, ObjectTyper: s, ObjectDefaulter: s, ObjectConvertor: s, EquivalentResourceMapper: w.table}
	err := d.Dispatch(ctx, attrs, oi, hooks)
	if rc := attrs.GetReinvocationContext(); err == nil && rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		err = d.Dispatch(ctx, attrs, oi, hooks)
	}
	var obj runtime.Object
	if err == nil && attrs.GetObject() != nil {
		if obj, err = s.ConvertToVersion(attrs.GetObject(), r.gvk.GroupVersion()); err != nil {
			t.Fatal(err)
		}
	}
	return w.outcome(obj, err)
}

// internalOf is obj, of kind gvk, in its group's internal version, as
// kube-apiserver's handlers hand objects to admission.
func internalOf(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	t.Helper()
	if obj == nil {
		return nil
	}
	out, err := kubeScheme().ConvertToVersion(obj.DeepCopyObject(), schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type equivalentCase struct {
	name     string
	policies []*admissionregistrationv1.MutatingAdmissionPolicy
	request  dispatchRequest
	// want is a substring of the outcome's String() (message or object).
	want string
}

func ruleFor(group, version, resource string) policyOpt {
	return withRules(rule([]string{"CREATE", "UPDATE"}, []string{group}, []string{version}, []string{resource}))
}

func equivalentCases() []equivalentCase {
	createHPAv1 := objectRequest(admission.Create, hpaV1(nil), nil, hpaV1GVR)
	createHPAv2 := objectRequest(admission.Create, hpaV2(nil), nil, hpaV2GVR)
	updateHPAv1 := objectRequest(admission.Update, hpaV1(map[string]string{"new": "1"}), hpaV1(nil), hpaV1GVR)
	createCoreEvent := objectRequest(admission.Create, coreEvent(nil), nil, coreEventGVR)
	createEventsEvent := objectRequest(admission.Create, eventsEvent(nil), nil, eventsEventGVR)
	updateCoreEvent := objectRequest(admission.Update, coreEvent(map[string]string{"new": "1"}), coreEvent(nil), coreEventGVR)
	seesV2 := withConditions(`object.apiVersion == "autoscaling/v2" && object.spec.metrics[0].resource.target.averageUtilization == 70`)
	v1Conversion := "converting (v2.HorizontalPodAutoscaler) to (v1.HorizontalPodAutoscaler): unknown conversion"
	return []equivalentCase{
		{name: "HPA v1 CREATE, v2 rule, ApplyConfiguration: the conversion of the result fails",
			policies: policies(newPolicy("p", ruleFor("autoscaling", "v2", "horizontalpodautoscalers"), seesV2)),
			request:  createHPAv1, want: v1Conversion},
		{name: "HPA v1 CREATE, v2 rule, JSONPatch",
			policies: policies(newPolicy("p", ruleFor("autoscaling", "v2", "horizontalpodautoscalers"), seesV2,
				withMutations(jpMutation(`[JSONPatch{op: "add", path: "/spec/maxReplicas", value: 9}]`)))),
			request: createHPAv1, want: v1Conversion},
		{name: "HPA v1 CREATE, v2 rule, JSONPatch whose test fails: converted all the same",
			policies: policies(newPolicy("p", ruleFor("autoscaling", "v2", "horizontalpodautoscalers"),
				withMutations(jpMutation(`[JSONPatch{op: "test", path: "/spec/maxReplicas", value: 9}]`)))),
			request: createHPAv1, want: v1Conversion},
		{name: "HPA v1 CREATE, v2 rule, Ignore: admitted unchanged",
			policies: policies(newPolicy("p", ruleFor("autoscaling", "v2", "horizontalpodautoscalers"), withFailure(admissionregistrationv1.Ignore))),
			request:  createHPAv1, want: "targetCPUUtilizationPercentage: 70"},
		{name: "HPA v2 CREATE, v1 rule",
			policies: policies(newPolicy("p", ruleFor("autoscaling", "v1", "horizontalpodautoscalers"),
				withConditions(`object.apiVersion == "autoscaling/v1" && object.spec.targetCPUUtilizationPercentage == 70`))),
			request: createHPAv2, want: "converting (v1.HorizontalPodAutoscaler) to (v2.HorizontalPodAutoscaler): unknown conversion"},
		{name: "HPA v1 UPDATE, v2 rule: both objects in v2",
			policies: policies(newPolicy("p", ruleFor("autoscaling", "v2", "horizontalpodautoscalers"),
				withConditions(`oldObject.apiVersion == "autoscaling/v2" && size(oldObject.spec.metrics) == 1 && object.metadata.labels["new"] == "1"`))),
			request: updateHPAv1, want: v1Conversion},
		{name: "HPA v1, v2 rule: a CEL error first, then the conversion error",
			policies: policies(newPolicy("p", ruleFor("autoscaling", "v2", "horizontalpodautoscalers"),
				withMutations(setLabel("x", "object.spec.missing"), setLabel("y", `"ok"`)))),
			request: createHPAv1, want: "no such key: missing"},
		{name: "HPA v1: exact policy then Equivalent policy (Ignore): the exact mutation is lost",
			policies: policies(newPolicy("a-exact", ruleFor("autoscaling", "v1", "horizontalpodautoscalers")),
				newPolicy("b-equivalent", ruleFor("autoscaling", "v2", "horizontalpodautoscalers"), withFailure(admissionregistrationv1.Ignore),
					withConditions(`!has(object.metadata.labels)`))),
			request: createHPAv1, want: "targetCPUUtilizationPercentage: 70"},
		{name: "HPA v1: Equivalent policy (Ignore) then exact policy: the exact mutation stays",
			policies: policies(newPolicy("a-equivalent", ruleFor("autoscaling", "v2", "horizontalpodautoscalers"), withFailure(admissionregistrationv1.Ignore)),
				newPolicy("b-exact", ruleFor("autoscaling", "v1", "horizontalpodautoscalers"))),
			request: createHPAv1, want: "b-exact: \"yes\""},
		{name: "core/v1 Event CREATE, events.k8s.io rule",
			policies: policies(newPolicy("p", ruleFor("events.k8s.io", "v1", "events"),
				withConditions(`object.apiVersion == "events.k8s.io/v1" && object.note == "started" && object.regarding.name == "web"`))),
			request: createCoreEvent, want: `is not suitable for converting to \"v1\" in scheme`},
		{name: "events.k8s.io/v1 Event CREATE, core rule, JSONPatch",
			policies: policies(newPolicy("p", ruleFor("", "v1", "events"),
				withConditions(`object.apiVersion == "v1" && object.message == "started" && object.involvedObject.name == "web"`),
				withMutations(jpMutation(`[JSONPatch{op: "add", path: "/metadata/labels", value: {"x": "y"}}]`)))),
			request: createEventsEvent, want: `is not suitable for converting to \"events.k8s.io/v1\" in scheme`},
		{name: "core/v1 Event UPDATE, events.k8s.io rule",
			policies: policies(newPolicy("p", ruleFor("events.k8s.io", "v1", "events"),
				withConditions(`oldObject.apiVersion == "events.k8s.io/v1" && oldObject.note == "started"`))),
			request: updateCoreEvent, want: "is not suitable for converting"},
	}
}

func TestEquivalentBuiltinKindsMatchUpstream(t *testing.T) {
	w := newDispatchWorld(t)
	w.runCasesInternal(t, w.dispatcher, equivalentCases())
}

// runCasesInternal runs every case through upstream's dispatcher d (with
// internal objects) and through mutatis, and requires the same outcome,
// which must contain the case's want.
func (w *dispatchWorld) runCasesInternal(t *testing.T, d generic.Dispatcher[mutating.PolicyHook], cases []equivalentCase) {
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bindings := bound(c.policies...)
			theirs := w.runUpstreamInternal(t, ctx, d, c.policies, bindings, c.request)
			ours, _, err := w.runOurs(ctx, c.policies, bindings, c.request)
			if err != nil {
				t.Fatal(err)
			}
			if err := compareOutcomes(ours, theirs); err != nil {
				t.Fatal(err)
			}
			t.Log(theirs)
			if !strings.Contains(theirs.String(), c.want) {
				t.Fatalf("upstream answered %s\nwant it to contain %q", theirs, c.want)
			}
		})
	}
}
