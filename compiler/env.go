package compiler

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
	"k8s.io/apiserver/pkg/cel/mutation"
)

// Variable names bound in every MutatingAdmissionPolicy expression. They are the
// names kube-apiserver declares (k8s.io/apiserver/pkg/admission/plugin/cel).
const (
	ObjectVar                    = plugincel.ObjectVarName
	OldObjectVar                 = plugincel.OldObjectVarName
	ParamsVar                    = plugincel.ParamsVarName
	RequestVar                   = plugincel.RequestVarName
	NamespaceVar                 = plugincel.NamespaceVarName
	AuthorizerVar                = plugincel.AuthorizerVarName
	RequestResourceAuthorizerVar = plugincel.RequestResourceAuthorizerVarName
	VariablesVar                 = plugincel.VariableVarName

	// variablesTypeName is the CEL type name of the "variables" object, as upstream.
	variablesTypeName = "kubernetes.variables"
)

// envKey selects one of the pre-built environments. It mirrors upstream's
// OptionalVariableDeclarations with HasAuthorizer always true: MAP always
// declares the authorizer.
type envKey struct {
	hasParams     bool
	hasPatchTypes bool
}

// baseEnvs holds the four environments a MutatingAdmissionPolicy can need,
// built once from the kube-apiserver base environment at the compatibility
// version kube-apiserver uses (binary minor − 1).
type baseEnvs struct {
	envs map[envKey]*environment.EnvSet
}

var (
	sharedBaseOnce sync.Once
	sharedBase     *baseEnvs
	sharedBaseErr  error
)

// loadBaseEnvs builds (once per process) the immutable environment sets.
// They are never mutated after construction, so sharing them is safe; each
// policy extends them with its own "variables" type.
func loadBaseEnvs() (*baseEnvs, error) {
	sharedBaseOnce.Do(func() {
		sharedBase, sharedBaseErr = newBaseEnvs(environment.DefaultCompatibilityVersion())
	})
	return sharedBase, sharedBaseErr
}

func newBaseEnvs(compat *version.Version) (*baseEnvs, error) {
	base := environment.MustBaseEnvSet(compat)
	requestType := plugincel.BuildRequestType()
	namespaceType := plugincel.BuildNamespaceType()
	b := &baseEnvs{envs: map[envKey]*environment.EnvSet{}}
	for _, hasParams := range []bool{false, true} {
		opts := []cel.EnvOption{
			cel.Variable(ObjectVar, cel.DynType),
			cel.Variable(OldObjectVar, cel.DynType),
			cel.Variable(NamespaceVar, namespaceType.CelType()),
			cel.Variable(RequestVar, requestType.CelType()),
		}
		if hasParams {
			opts = append(opts, cel.Variable(ParamsVar, cel.DynType))
		}
		opts = append(opts,
			cel.Variable(AuthorizerVar, library.AuthorizerType),
			cel.Variable(RequestResourceAuthorizerVar, library.ResourceCheckType))
		extended, err := base.Extend(environment.VersionedOptions{
			IntroducedVersion: version.MajorMinor(1, 0),
			EnvOptions:        opts,
			DeclTypes:         []*apiservercel.DeclType{namespaceType, requestType},
		}, environment.StrictCostOpt)
		if err != nil {
			return nil, fmt.Errorf("building CEL environment: %w", err)
		}
		b.envs[envKey{hasParams: hasParams}] = extended
		withPatch, err := extended.Extend(environment.VersionedOptions{
			IntroducedVersion: version.MajorMinor(1, 0),
			EnvOptions: []cel.EnvOption{
				common.ResolverEnvOption(&mutation.DynamicTypeResolver{}),
				environment.UnversionedLib(library.JSONPatch),
			},
		})
		if err != nil {
			return nil, fmt.Errorf("building CEL environment: %w", err)
		}
		b.envs[envKey{hasParams: hasParams, hasPatchTypes: true}] = withPatch
	}
	return b, nil
}

// policyEnvs are the environments of one policy: the base environments
// extended with that policy's "variables" object type. Upstream composes
// variables the same way (NewCompositedCompiler extends the base set with a
// "variables" declaration whose fields grow as variables are compiled).
type policyEnvs struct {
	varType *apiservercel.DeclType
	envs    map[envKey]*cel.Env
}

func (b *baseEnvs) forPolicy(hasParams bool) (*policyEnvs, error) {
	return b.forPolicyMode(hasParams, environment.StoredExpressions)
}

// plainEnv returns the environment without the "variables" declaration, in
// the given mode. API validation compiles matchConditions in it.
func (b *baseEnvs) plainEnv(hasParams bool, mode environment.Type) (*cel.Env, error) {
	return b.envs[envKey{hasParams: hasParams}].Env(mode)
}

func (b *baseEnvs) forPolicyMode(hasParams bool, mode environment.Type) (*policyEnvs, error) {
	varType := apiservercel.NewObjectType(variablesTypeName, map[string]*apiservercel.DeclField{})
	p := &policyEnvs{varType: varType, envs: map[envKey]*cel.Env{}}
	ext := environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        []cel.EnvOption{cel.Variable(VariablesVar, varType.CelType())},
		DeclTypes:         []*apiservercel.DeclType{varType},
	}
	for _, patch := range []bool{false, true} {
		k := envKey{hasParams: hasParams, hasPatchTypes: patch}
		set, err := b.envs[k].Extend(ext)
		if err != nil {
			return nil, fmt.Errorf("building CEL environment: %w", err)
		}
		env, err := set.Env(mode)
		if err != nil {
			return nil, fmt.Errorf("unexpected error loading CEL environment: %w", err)
		}
		p.envs[k] = env
	}
	return p, nil
}
