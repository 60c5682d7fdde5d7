package scheme

import (
	"context"
	"errors"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

var (
	patchDeploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	patchPodsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	patchConfigMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	patchWidgetsGVR     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

func patchDeployment() *appsv1.Deployment { return testobjects.WebDeployment() }

func patchPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Annotations: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "c1", Image: "busybox", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}},
			{Name: "c2", Image: "nginx"},
		}},
	}
}

func patchConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default"},
		Data:       map[string]string{"k": "v"},
	}
}

func patchWidget() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": "w", "namespace": "default"},
		"spec":       map[string]any{"size": int64(3), "ratio": 0.5, "tags": []any{"a", "b"}, "<html>": "&"},
	}}
}

// TestPipelineMatchesKubeAPIServer runs real CEL expressions through
// kube-apiserver's jsonPatcher and through jsonpatch.FromCEL and Apply and
// decodeReference, and
// requires the same object or the same error text.
func TestPipelineMatchesKubeAPIServer(t *testing.T) {
	tests := []struct {
		name       string
		expression string
		gvr        schema.GroupVersionResource
		object     runtime.Object
		wantErr    bool
	}{
		{name: "replace replicas", gvr: patchDeploymentsGVR, object: patchDeployment(),
			expression: `[JSONPatch{op: "replace", path: "/spec/replicas", value: object.spec.replicas + 2}]`},
		{name: "failed test leaves the object unchanged", gvr: patchDeploymentsGVR, object: patchDeployment(),
			expression: `[JSONPatch{op: "test", path: "/spec/replicas", value: 5}, JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]`},
		{name: "passing test then replace", gvr: patchDeploymentsGVR, object: patchDeployment(),
			expression: `[JSONPatch{op: "test", path: "/spec/replicas", value: 1}, JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]`},
		{name: "escapeKey builds label paths", gvr: patchDeploymentsGVR, object: patchDeployment(),
			expression: `[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/x~y"), value: "v"}]`},
		{name: "big integer becomes a string and fails decoding", gvr: patchDeploymentsGVR, object: patchDeployment(), wantErr: true,
			expression: `[JSONPatch{op: "replace", path: "/spec/replicas", value: 9007199254740993}]`},
		{name: "largest safe integer overflows int32", gvr: patchDeploymentsGVR, object: patchDeployment(), wantErr: true,
			expression: `[JSONPatch{op: "replace", path: "/spec/replicas", value: 9007199254740991}]`},
		{name: "big integer into a string field", gvr: patchDeploymentsGVR, object: patchDeployment(),
			expression: `[JSONPatch{op: "add", path: "/metadata/annotations", value: {"n": string(9007199254740993)}}]`},
		{name: "big negative integer becomes a string in a string map", gvr: patchDeploymentsGVR, object: patchDeployment(),
			expression: `[JSONPatch{op: "add", path: "/metadata/annotations", value: {"n": -9007199254740993}}]`},
		{name: "Object value appends a container", gvr: patchDeploymentsGVR, object: patchDeployment(),
			expression: `[JSONPatch{op: "add", path: "/spec/template/spec/containers/-", value: Object.spec.template.spec.containers{name: "sidecar", image: "busybox", args: ["a", "b"]}}]`},
		{name: "Object value with a mismatching type name", gvr: patchDeploymentsGVR, object: patchDeployment(), wantErr: true,
			expression: `[JSONPatch{op: "replace", path: "/spec", value: Object.spec{selector: Object.spec.wrong{matchLabels: {"a": "b"}}}}]`},
		{name: "nested Object values", gvr: patchDeploymentsGVR, object: patchDeployment(),
			expression: `[JSONPatch{op: "replace", path: "/spec/template/spec", value: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "x", image: "y", ports: [Object.spec.template.spec.containers.ports{containerPort: 8080}]}]}}]`},
		{name: "unknown field fails strict decoding", gvr: patchDeploymentsGVR, object: patchDeployment(), wantErr: true,
			expression: `[JSONPatch{op: "add", path: "/spec/bogus", value: 1}, JSONPatch{op: "add", path: "/spec/template/spec/zzz", value: {"a": 1}}]`},
		{name: "wrong type fails decoding", gvr: patchDeploymentsGVR, object: patchDeployment(), wantErr: true,
			expression: `[JSONPatch{op: "replace", path: "/metadata/labels", value: "x"}]`},
		{name: "float into an integer field", gvr: patchDeploymentsGVR, object: patchDeployment(), wantErr: true,
			expression: `[JSONPatch{op: "replace", path: "/spec/replicas", value: 1.5}]`},
		{name: "integral double into an integer field", gvr: patchDeploymentsGVR, object: patchDeployment(),
			expression: `[JSONPatch{op: "replace", path: "/spec/replicas", value: 4.0}]`},
		{name: "unsigned value", gvr: patchDeploymentsGVR, object: patchDeployment(),
			expression: `[JSONPatch{op: "replace", path: "/spec/replicas", value: 7u}]`},
		{name: "JSON patch error is prefixed", gvr: patchDeploymentsGVR, object: patchDeployment(), wantErr: true,
			expression: `[JSONPatch{op: "remove", path: "/spec/nope"}]`},
		{name: "move without from", gvr: patchDeploymentsGVR, object: patchDeployment(), wantErr: true,
			expression: `[JSONPatch{op: "move", from: "", path: "/spec/x"}]`},
		{name: "copy labels to the template", gvr: patchDeploymentsGVR, object: patchDeployment(),
			expression: `[JSONPatch{op: "add", path: "/metadata/labels/tier", value: "fe"}, JSONPatch{op: "copy", from: "/metadata/labels", path: "/spec/template/metadata/labels"}]`},
		{name: "null value clears labels", gvr: patchDeploymentsGVR, object: patchDeployment(),
			expression: `[JSONPatch{op: "replace", path: "/metadata/labels", value: null}]`},
		{name: "NaN cannot be marshalled", gvr: patchDeploymentsGVR, object: patchDeployment(), wantErr: true,
			expression: `[JSONPatch{op: "replace", path: "/spec/replicas", value: double("NaN")}]`},
		{name: "non-string map keys cannot be converted", gvr: patchDeploymentsGVR, object: patchDeployment(), wantErr: true,
			expression: `[JSONPatch{op: "add", path: "/metadata/annotations", value: {1: "a"}}]`},
		{name: "unknown op", gvr: patchDeploymentsGVR, object: patchDeployment(), wantErr: true,
			expression: `[JSONPatch{op: "upsert", path: "/spec/replicas", value: 1}]`},
		{name: "pod container added with env", gvr: patchPodsGVR, object: patchPod(),
			expression: `[JSONPatch{op: "add", path: "/spec/containers/0/env/-", value: {"name": "B", "value": "2"}}, JSONPatch{op: "remove", path: "/spec/containers/1"}]`},
		{name: "pod resources are canonicalized", gvr: patchPodsGVR, object: patchPod(),
			expression: `[JSONPatch{op: "add", path: "/spec/containers/0/resources", value: {"limits": {"cpu": "1000m", "memory": "1024Mi"}}}]`},
		{name: "pod invalid quantity", gvr: patchPodsGVR, object: patchPod(), wantErr: true,
			expression: `[JSONPatch{op: "add", path: "/spec/containers/0/resources", value: {"limits": {"cpu": "lots"}}}]`},
		{name: "pod bytes and timestamps become strings", gvr: patchPodsGVR, object: patchPod(),
			expression: `[JSONPatch{op: "add", path: "/metadata/annotations/b", value: string(b"abc")}, JSONPatch{op: "add", path: "/metadata/annotations/t", value: string(timestamp("2024-01-02T03:04:05Z"))}]`},
		{name: "pod bytes value", gvr: patchPodsGVR, object: patchPod(),
			expression: `[JSONPatch{op: "add", path: "/metadata/annotations/b", value: b"abc"}]`},
		{name: "pod timestamp value", gvr: patchPodsGVR, object: patchPod(),
			expression: `[JSONPatch{op: "add", path: "/metadata/annotations/t", value: timestamp("2024-01-02T03:04:05Z")}, JSONPatch{op: "add", path: "/metadata/annotations/d", value: duration("90s")}]`},
		{name: "pod unknown field deep", gvr: patchPodsGVR, object: patchPod(), wantErr: true,
			expression: `[JSONPatch{op: "add", path: "/spec/containers/0/imagePullPolicyy", value: "Always"}]`},
		{name: "pod kind changed to an unknown kind", gvr: patchPodsGVR, object: patchPod(), wantErr: true,
			expression: `[JSONPatch{op: "replace", path: "/kind", value: "Pud"}]`},
		{name: "pod kind removed is defaulted", gvr: patchPodsGVR, object: patchPod(),
			expression: `[JSONPatch{op: "remove", path: "/kind"}]`},
		{name: "pod kind of the wrong type", gvr: patchPodsGVR, object: patchPod(), wantErr: true,
			expression: `[JSONPatch{op: "replace", path: "/kind", value: 1}]`},
		{name: "pod root replaced by an array", gvr: patchPodsGVR, object: patchPod(), wantErr: true,
			expression: `[JSONPatch{op: "replace", path: "", value: [1]}]`},
		{name: "pod root replaced by null decodes an empty pod", gvr: patchPodsGVR, object: patchPod(),
			expression: `[JSONPatch{op: "replace", path: "", value: null}]`},
		{name: "configmap data added", gvr: patchConfigMapsGVR, object: patchConfigMap(),
			expression: `[JSONPatch{op: "add", path: "/data/" + jsonpatch.escapeKey("a/b"), value: "c"}]`},
		{name: "configmap data value of the wrong type", gvr: patchConfigMapsGVR, object: patchConfigMap(), wantErr: true,
			expression: `[JSONPatch{op: "add", path: "/data/n", value: 1}]`},
		{name: "configmap unknown top-level field", gvr: patchConfigMapsGVR, object: patchConfigMap(), wantErr: true,
			expression: `[JSONPatch{op: "add", path: "/extra", value: {"x": [1, 2]}}]`},
		{name: "configmap binaryData from bytes", gvr: patchConfigMapsGVR, object: patchConfigMap(),
			expression: `[JSONPatch{op: "add", path: "/binaryData", value: {"b": b"\x00\x01"}}]`},
		{name: "configmap invalid base64", gvr: patchConfigMapsGVR, object: patchConfigMap(), wantErr: true,
			expression: `[JSONPatch{op: "add", path: "/binaryData", value: {"b": "!!"}}]`},
		{name: "custom resource gets new fields", gvr: patchWidgetsGVR, object: patchWidget(),
			expression: `[JSONPatch{op: "add", path: "/spec/extra", value: {"n": dyn(1), "f": dyn(2.5), "big": dyn(9007199254740993), "l": dyn([dyn(true), dyn(null)]), "d": dyn(-0.0)}}]`},
		{name: "custom resource keeps floats and html", gvr: patchWidgetsGVR, object: patchWidget(),
			expression: `[JSONPatch{op: "test", path: "/spec/ratio", value: 0.5}, JSONPatch{op: "test", path: "/spec/<html>", value: "&"}, JSONPatch{op: "replace", path: "/spec/size", value: 4.0}]`},
		{name: "custom resource without kind", gvr: patchWidgetsGVR, object: patchWidget(), wantErr: true,
			expression: `[JSONPatch{op: "remove", path: "/kind"}]`},
		{name: "custom resource with a bad apiVersion", gvr: patchWidgetsGVR, object: patchWidget(), wantErr: true,
			expression: `[JSONPatch{op: "replace", path: "/apiVersion", value: "a/b/c"}]`},
		{name: "custom resource with a numeric kind", gvr: patchWidgetsGVR, object: patchWidget(), wantErr: true,
			expression: `[JSONPatch{op: "replace", path: "/kind", value: 3}]`},
		{name: "custom resource root replaced", gvr: patchWidgetsGVR, object: patchWidget(),
			expression: `[JSONPatch{op: "replace", path: "", value: {"apiVersion": dyn("example.com/v1"), "kind": dyn("Widget"), "spec": dyn({})}}]`},
		{name: "custom resource root replaced by an array", gvr: patchWidgetsGVR, object: patchWidget(), wantErr: true,
			expression: `[JSONPatch{op: "replace", path: "", value: ["x"]}]`},
		{name: "custom resource root replaced by null", gvr: patchWidgetsGVR, object: patchWidget(), wantErr: true,
			expression: `[JSONPatch{op: "replace", path: "", value: null}]`},
		{name: "empty patch", gvr: patchWidgetsGVR, object: patchWidget(), expression: `[JSONPatch{op: "add", path: "/x", value: 1}].filter(p, false)`},
	}

	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			accessor := &patch.JSONPatchCondition{Expression: tc.expression}
			evaluator := compiler.CompileMutatingEvaluator(accessor, plugincel.OptionalVariableDeclarations{HasPatchTypes: true}, environment.StoredExpressions)
			if errs := evaluator.CompilationErrors(); len(errs) > 0 {
				t.Fatalf("compile: %v", errs)
			}
			gvk := tc.object.GetObjectKind().GroupVersionKind()
			metaAccessor, err := meta.Accessor(tc.object)
			if err != nil {
				t.Fatal(err)
			}
			attrs := admission.NewAttributesRecord(tc.object, nil, gvk, metaAccessor.GetNamespace(), metaAccessor.GetName(),
				tc.gvr, "", admission.Create, &metav1.CreateOptions{}, false, nil)
			vAttrs := &admission.VersionedAttributes{
				Attributes:      attrs,
				VersionedKind:   gvk,
				VersionedObject: admission.NewLazyObject(tc.object),
			}

			// kube-apiserver.
			upstream, upstreamErr := patch.NewJSONPatcher(evaluator).Patch(context.Background(), patch.Request{
				MatchedResource:     tc.gvr,
				VersionedAttributes: vAttrs,
				ObjectInterfaces:    admission.NewObjectInterfacesFromScheme(clientgoscheme.Scheme),
			}, celconfig.RuntimeCELCostBudget)

			// This package.
			got, gotErr := func() (map[string]any, error) {
				req := plugincel.CreateAdmissionRequest(attrs, metav1.GroupVersionResource(tc.gvr), metav1.GroupVersionKind(gvk))
				res, _, err := evaluator.ForInput(context.Background(), vAttrs, req, plugincel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudget)
				if err != nil {
					return nil, err
				}
				if res.Error != nil {
					return nil, res.Error
				}
				ops, err := jsonpatch.FromCEL(res.EvalResult)
				if err != nil {
					return nil, err
				}
				doc, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc.object)
				if err != nil {
					t.Fatal(err)
				}
				patched, err := jsonpatch.Apply(doc, ops)
				var notObject *jsonpatch.NotObjectError
				switch {
				case errors.Is(err, jsonpatch.ErrTestFailed):
					return doc, nil
				case errors.As(err, &notObject):
					return decodeJSON(notObject.JSON, gvk, clientgoscheme.Scheme)
				case err != nil:
					return nil, errors.New("JSON Patch: " + err.Error())
				}
				return decodeReference(patched, gvk, clientgoscheme.Scheme)
			}()

			if (upstreamErr != nil) != tc.wantErr {
				t.Fatalf("upstream error = %v, wantErr %v", upstreamErr, tc.wantErr)
			}
			if upstreamErr != nil || gotErr != nil {
				if upstreamErr == nil || gotErr == nil || upstreamErr.Error() != gotErr.Error() {
					t.Fatalf("errors differ:\nours:     %v\nupstream: %v", gotErr, upstreamErr)
				}
				t.Logf("error: %v", gotErr)
				return
			}
			want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(upstream)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("results differ:\nours:     %#v\nupstream: %#v", got, want)
			}
		})
	}
}
