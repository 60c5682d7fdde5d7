// Package upstream builds k8s.io/apiserver's MutatingAdmissionPolicy
// machinery the way kube-apiserver wires it, for the tests and benchmarks
// that run it side by side with mutatis (test/differential, test/bench).
// It is a test oracle, never part of the engine: it replicates the
// unexported pieces of the plugin (compilePolicy, the policy source's hook
// building, generic.Plugin's exemptions) over public APIs.
package upstream

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/informers"

	"github.com/mutatis-dev/mutatis/applyconfig"
)

// Compile compiles policy as the plugin's unexported
// mutating.compilePolicy does.
func Compile(policy *admissionregistrationv1.MutatingAdmissionPolicy) mutating.PolicyEvaluator {
	opts := plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}
	comp, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return mutating.PolicyEvaluator{Error: &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: fmt.Sprintf("failed to initialize CEL compiler: %v", err)}}
	}
	var vars []plugincel.NamedExpressionAccessor
	for _, v := range policy.Spec.Variables {
		vars = append(vars, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	comp.CompileAndStoreVariables(vars, opts, environment.StoredExpressions)
	var matcher matchconditions.Matcher
	if mcs := policy.Spec.MatchConditions; len(mcs) > 0 {
		accessors := make([]plugincel.ExpressionAccessor, len(mcs))
		for i := range mcs {
			accessors[i] = (*matchconditions.MatchCondition)(&mcs[i])
		}
		matcher = matchconditions.NewMatcher(comp.CompileCondition(accessors, opts, environment.StoredExpressions), policy.Spec.FailurePolicy, "policy", "validate", policy.Name)
	}
	var patchers []patch.Patcher
	popts := opts
	popts.HasPatchTypes = true
	for _, m := range policy.Spec.Mutations {
		switch m.PatchType {
		case admissionregistrationv1.PatchTypeJSONPatch:
			if m.JSONPatch != nil {
				patchers = append(patchers, patch.NewJSONPatcher(comp.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, popts, environment.StoredExpressions)))
			}
		case admissionregistrationv1.PatchTypeApplyConfiguration:
			if m.ApplyConfiguration != nil {
				patchers = append(patchers, patch.NewApplyConfigurationPatcher(comp.CompileMutatingEvaluator(&patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, popts, environment.StoredExpressions)))
			}
		}
	}
	return mutating.PolicyEvaluator{Matcher: matcher, Mutators: patchers, CompositedCompiler: comp}
}

// TypeConverters implements upstream's patch.TypeConverterManager: the
// static client-go converter for built-in kinds, the CRD schemas of CRDs
// for the others, nil for a kind neither knows. Answers are cached per
// kind, as upstream's manager caches them.
type TypeConverters struct {
	Static managedfields.TypeConverter
	CRDs   *applyconfig.Schemas
	// Discovery, when set, is asked last, as kube-apiserver's manager asks
	// the OpenAPI documents of every served group/version (e.g. a
	// patch.NewTypeConverterManager over kube-apiserver's documents).
	Discovery patch.TypeConverterManager
	cache     sync.Map // schema.GroupVersionKind → managedfields.TypeConverter (nil: none)
}

var _ patch.TypeConverterManager = &TypeConverters{}

// GetTypeConverter implements patch.TypeConverterManager.
func (m *TypeConverters) GetTypeConverter(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	if tc, ok := m.cache.Load(gvk); ok {
		tc, _ := tc.(managedfields.TypeConverter)
		return tc
	}
	var tc managedfields.TypeConverter
	stub := &unstructured.Unstructured{}
	stub.SetGroupVersionKind(gvk)
	if _, err := m.Static.ObjectToTyped(stub); err == nil {
		tc = m.Static
	} else if m.CRDs != nil {
		if crd, err := m.CRDs.TypeConverter(gvk); err == nil {
			tc = crd
		}
	}
	if tc == nil && m.Discovery != nil {
		tc = m.Discovery.GetTypeConverter(gvk)
	}
	m.cache.Store(gvk, tc)
	return tc
}

// Run implements patch.TypeConverterManager.
func (m *TypeConverters) Run(context.Context) {}

// ParamInformers gives the informer of a param resource
// (informers.SharedInformerFactory is one).
type ParamInformers interface {
	ForResource(resource schema.GroupVersionResource) (informers.GenericInformer, error)
}

// Hooks builds the PolicyHooks upstream's policy source builds
// (policySource.calculatePolicyData and ensureParamsForPolicyLocked), in
// mutatis' documented order: policies by name, their bindings by name.
// Policies without bindings are left out. A paramKind the mapper cannot
// resolve becomes the hook's ConfigurationError, with upstream's message.
// compile compiles a policy (Compile, or a cache in front of it).
func Hooks(policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding,
	mapper meta.RESTMapper, params ParamInformers, compile func(*admissionregistrationv1.MutatingAdmissionPolicy) mutating.PolicyEvaluator) ([]mutating.PolicyHook, error) {
	byPolicy := map[string][]*admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	for _, b := range bindings {
		byPolicy[b.Spec.PolicyName] = append(byPolicy[b.Spec.PolicyName], b)
	}
	sorted := append([]*admissionregistrationv1.MutatingAdmissionPolicy{}, policies...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var hooks []mutating.PolicyHook
	for _, p := range sorted {
		bs := append([]*admissionregistrationv1.MutatingAdmissionPolicyBinding{}, byPolicy[p.Name]...)
		if len(bs) == 0 {
			continue
		}
		sort.Slice(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
		h := mutating.PolicyHook{Policy: p, Bindings: bs, Evaluator: compile(p)}
		if pk := p.Spec.ParamKind; pk != nil {
			gv, err := schema.ParseGroupVersion(pk.APIVersion)
			if err != nil {
				continue // upstream drops the policy and retries later
			}
			gvk := gv.WithKind(pk.Kind)
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				h.ConfigurationError = fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)
			} else {
				inf, err := params.ForResource(mapping.Resource)
				if err != nil {
					return nil, fmt.Errorf("param informer for %v: %w", mapping.Resource, err)
				}
				h.ParamInformer, h.ParamScope = inf, mapping.Scope
			}
		}
		hooks = append(hooks, h)
	}
	return hooks, nil
}

// Exempt mirrors generic.Plugin.Dispatch's exclusions as kube-apiserver
// configures them: the admission policy resources and the non-persisted
// review resources are never given to policies.
func Exempt(gr schema.GroupResource) bool {
	if gr.Group == "admissionregistration.k8s.io" {
		switch gr.Resource {
		case "validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings":
			return true
		}
	}
	return slices.Contains(reviewResources, gr)
}
