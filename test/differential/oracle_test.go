package differential

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// mutation is one policy mutation under test: its patch type, expression,
// and the policy context it needs (variables, params).
type mutation struct {
	jsonPatch bool
	expr      string
	variables [][2]string
	params    runtime.Object
}

func (m mutation) policy() *admissionregistrationv1.MutatingAdmissionPolicy {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "differential"}}
	if m.params != nil {
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	}
	for _, v := range m.variables {
		p.Spec.Variables = append(p.Spec.Variables, admissionregistrationv1.Variable{Name: v[0], Expression: v[1]})
	}
	if m.jsonPatch {
		p.Spec.Mutations = []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: m.expr}}}
	} else {
		p.Spec.Mutations = []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: m.expr}}}
	}
	return p
}

// upstreamMutate runs the mutation through k8s.io/apiserver: its composited
// CEL compiler, its NewApplyConfigurationPatcher / NewJSONPatcher, and the
// post-processing of the dispatcher's dispatchOne (type converter lookup,
// conversion back to the typed object, defaulting). It returns the object as
// unstructured content.
func upstreamMutate(ctx context.Context, m mutation, obj runtime.Object, gvk schema.GroupVersionKind, gvr schema.GroupVersionResource,
	scheme *runtime.Scheme, tc managedfields.TypeConverter) (map[string]any, error) {
	policy := m.policy()
	opts := plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return nil, err
	}
	var vars []plugincel.NamedExpressionAccessor
	for _, v := range policy.Spec.Variables {
		vars = append(vars, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	compiler.CompileAndStoreVariables(vars, opts, environment.StoredExpressions)
	popts := opts
	popts.HasPatchTypes = true
	var patcher patch.Patcher
	if m.jsonPatch {
		patcher = patch.NewJSONPatcher(compiler.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.expr}, popts, environment.StoredExpressions))
	} else {
		patcher = patch.NewApplyConfigurationPatcher(compiler.CompileMutatingEvaluator(&patch.ApplyConfigurationCondition{Expression: m.expr}, popts, environment.StoredExpressions))
	}

	obj = obj.DeepCopyObject()
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	attrs := admission.NewAttributesRecord(obj, nil, gvk, acc.GetNamespace(), acc.GetName(), gvr, "",
		admission.Create, &metav1.CreateOptions{}, false, nil)
	vAttrs := &admission.VersionedAttributes{
		Attributes:         attrs,
		VersionedKind:      gvk,
		VersionedObject:    admission.NewLazyObject(obj),
		VersionedOldObject: admission.NewLazyObject(nil),
	}
	if tc == nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("Resource kind %s not found. There can be a delay between when CustomResourceDefinitions are created and when they are available.", gvk))
	}
	o := admission.NewObjectInterfacesFromScheme(scheme)
	ctx = compiler.CreateContext(ctx)
	out, err := patcher.Patch(ctx, patch.Request{
		MatchedResource:     gvr,
		VersionedAttributes: vAttrs,
		ObjectInterfaces:    o,
		OptionalVariables:   plugincel.OptionalVariableBindings{VersionedParams: m.params},
		TypeConverter:       tc,
	}, celconfig.RuntimeCELCostBudget)
	if err != nil {
		return nil, err
	}
	if _, ok := obj.(*unstructured.Unstructured); !ok {
		out, err = o.GetObjectConvertor().ConvertToVersion(out, gvk.GroupVersion())
		if err != nil {
			return nil, err
		}
	}
	o.GetObjectDefaulter().Default(out)
	return toUnstructured(out)
}

func toUnstructured(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// sameOutcome compares two results: equal objects (semantic deep equality of
// the unstructured content) or identical error texts and status classes.
func sameOutcome(ours map[string]any, ourErr error, theirs map[string]any, theirErr error) error {
	if (ourErr == nil) != (theirErr == nil) {
		return fmt.Errorf("error mismatch:\n ours:     %v\n upstream: %v", ourErr, theirErr)
	}
	if ourErr != nil {
		if ourErr.Error() != theirErr.Error() {
			return fmt.Errorf("error text differs:\n ours:     %s\n upstream: %s", ourErr, theirErr)
		}
		var a, b *apierrors.StatusError
		if errors.As(ourErr, &a) != errors.As(theirErr, &b) {
			return fmt.Errorf("status class differs: ours is StatusError=%v, upstream %v", errors.As(ourErr, &a), errors.As(theirErr, &b))
		}
		if a != nil && b != nil && a.Status().Code != b.Status().Code {
			return fmt.Errorf("status code differs: ours %d, upstream %d", a.Status().Code, b.Status().Code)
		}
		return nil
	}
	if !apiequality.Semantic.DeepEqual(ours, theirs) {
		return fmt.Errorf("objects differ:\n ours:     %v\n upstream: %v", ours, theirs)
	}
	return nil
}
