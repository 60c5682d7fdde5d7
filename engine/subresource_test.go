package engine

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/matching"
)

func scaleUpdate(replicas, old int64) *matching.Attributes {
	scale := func(r int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
			"metadata": map[string]any{"name": "web", "namespace": "shop"}, "spec": map[string]any{"replicas": r}}}
	}
	return &matching.Attributes{Operation: admission.Update, Kind: schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
		Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Subresource: "scale",
		Name: "web", Namespace: "shop", Object: scale(replicas), OldObject: scale(old),
		UserInfo: &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}}
}

func scalePolicy(resource string, patch admissionregistrationv1.Mutation) *admissionregistrationv1.MutatingAdmissionPolicy {
	p := mapPolicy("cap", admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.Fail, "",
		`request.subResource == "scale" && request.kind.kind == "Scale" && request.kind.group == "autoscaling" && request.resource.resource == "deployments" && oldObject.spec.replicas == 1`)
	r := &p.Spec.MatchConstraints.ResourceRules[0]
	r.Operations = []admissionregistrationv1.OperationType{"UPDATE"}
	r.APIGroups, r.APIVersions, r.Resources = []string{"*"}, []string{"*"}, []string{resource}
	p.Spec.Mutations = []admissionregistrationv1.Mutation{patch}
	return p
}

func TestScaleSubresourceAsKubeAPIServer(t *testing.T) {
	jsonPatch := admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{
		Expression: `[JSONPatch{op: "replace", path: "/spec/replicas", value: object.spec.replicas > 2 ? 2 : object.spec.replicas}]`}}
	applyConfiguration := admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
		ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{spec: Object.spec{replicas: 2}}`}}
	for _, resource := range []string{"deployments/scale", "*/scale"} {
		res, err := admitFrozen(t, newEvaluator(t, scalePolicy(resource, jsonPatch)), scaleUpdate(5, 1))
		if err != nil || res.Denied != nil {
			t.Fatalf("%s: err %v denied %v", resource, err, res.Denied)
		}
		if r, _, _ := unstructured.NestedInt64(res.Object, "spec", "replicas"); r != 2 {
			t.Fatalf("%s: replicas %d, want 2", resource, r)
		}
	}
	// A rule on deployments does not match deployments/scale.
	res, err := admitFrozen(t, newEvaluator(t, scalePolicy("deployments", jsonPatch)), scaleUpdate(5, 1))
	if r, _, _ := unstructured.NestedInt64(res.Object, "spec", "replicas"); err != nil || r != 5 {
		t.Fatalf("deployments rule: err %v replicas %d", err, r)
	}
	// kube-apiserver's type converter of autoscaling/v1 has no Scale.
	res, err = admitFrozen(t, newEvaluator(t, scalePolicy("deployments/scale", applyConfiguration)), scaleUpdate(5, 1))
	want := "policy 'cap' with binding 'cap-binding' denied request: error applying patch: failed to convert patch object to typed object: no corresponding type for autoscaling/v1, Kind=Scale"
	if err != nil || res.Denied == nil || res.Denied.ErrStatus.Message != want || res.Denied.ErrStatus.Code != 403 {
		t.Fatalf("err %v denied %v, want %q", err, res.Denied, want)
	}
}

func TestEquivalentBuiltinKindAsKubeAPIServer(t *testing.T) {
	hpa := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec": map[string]any{"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
			"minReplicas": int64(1), "maxReplicas": int64(5), "targetCPUUtilizationPercentage": int64(70)}}}
	a := &matching.Attributes{Operation: admission.Create, Kind: schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"},
		Resource: schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"},
		Name:     "web", Namespace: "shop", Object: hpa, UserInfo: &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}}
	policy := func(fp admissionregistrationv1.FailurePolicyType) *admissionregistrationv1.MutatingAdmissionPolicy {
		// The policy sees the v2 object (matchCondition), and its mutation
		// fails in the dispatcher's conversion of the result.
		p := mapPolicy("v2", admissionregistrationv1.NeverReinvocationPolicy, fp, `Object{metadata: Object.metadata{labels: {"x": "y"}}}`,
			`object.apiVersion == "autoscaling/v2" && object.spec.metrics[0].resource.target.averageUtilization == 70`)
		r := &p.Spec.MatchConstraints.ResourceRules[0]
		r.APIGroups, r.APIVersions, r.Resources = []string{"autoscaling"}, []string{"v2"}, []string{"horizontalpodautoscalers"}
		return p
	}
	res, err := admitFrozen(t, newEvaluator(t, policy(admissionregistrationv1.Fail)), a)
	want := "policy 'v2' with binding 'v2-binding' denied request: converting (v2.HorizontalPodAutoscaler) to (v1.HorizontalPodAutoscaler): unknown conversion"
	if err != nil || res.Denied == nil || res.Denied.ErrStatus.Message != want {
		t.Fatalf("err %v denied %v, want %q", err, res.Denied, want)
	}
	res, err = admitFrozen(t, newEvaluator(t, policy(admissionregistrationv1.Ignore)), a)
	if err != nil || res.Denied != nil || res.Object["apiVersion"] != "autoscaling/v1" {
		t.Fatalf("Ignore: err %v denied %v object %v", err, res.Denied, res.Object)
	}
	if _, found, _ := unstructured.NestedMap(res.Object, "metadata", "labels"); found {
		t.Fatal("Ignore: the object was mutated")
	}
}
