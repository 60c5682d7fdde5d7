package compiler

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
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
// OptionalVariableDeclarations, HasAuthorizer negated: every expression of a
// MutatingAdmissionPolicy, and every one of a ValidatingAdmissionPolicy but
// its messageExpressions, has the authorizer.
type envKey struct {
	hasParams     bool
	hasPatchTypes bool
	// noAuthorizer leaves authorizer and authorizer.requestResource
	// undeclared (a ValidatingAdmissionPolicy's messageExpressions).
	noAuthorizer bool
}

// baseEnvs holds the four environments a MutatingAdmissionPolicy can need,
// and the two without the authorizer a ValidatingAdmissionPolicy's
// messageExpressions compile in, built once from the kube-apiserver base environment at the compatibility
// version kube-apiserver uses (binary minor − 1).
type baseEnvs struct {
	envs map[envKey]*environment.EnvSet
	// checks are the plan checks of the environments (see planCheck),
	// shared by the environments extended from them.
	checks planChecks
	// unvaried holds, by envSig with no variables, the environments in
	// which no variable is in scope: every Compiler's first policy (and
	// every policy without variables) compiles in them, so they are built
	// once per process (unvariedEnv) rather than once per Compiler.
	unvaried sync.Map
}

// unvariedEnv returns the environment of k and mode in which no variable
// is in scope (build with none), built once per process. Like every
// cached environment it is never changed.
func (b *baseEnvs) unvariedEnv(k envKey, mode environment.Type) (*policyEnv, error) {
	sig := envSig{envKey: k, mode: mode}
	if env, ok := b.unvaried.Load(sig); ok {
		return env.(*policyEnv), nil
	}
	env, err := b.build(k, mode, nil)
	if err != nil {
		return nil, err
	}
	stored, _ := b.unvaried.LoadOrStore(sig, env)
	return stored.(*policyEnv), nil
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
		extend := func(opts []cel.EnvOption) (*environment.EnvSet, error) {
			set, err := base.Extend(environment.VersionedOptions{
				IntroducedVersion: version.MajorMinor(1, 0),
				EnvOptions:        opts,
				DeclTypes:         []*apiservercel.DeclType{namespaceType, requestType},
			}, environment.StrictCostOpt)
			if err != nil {
				return nil, fmt.Errorf("building CEL environment: %w", err)
			}
			return set, nil
		}
		plain, err := extend(opts)
		if err != nil {
			return nil, err
		}
		b.envs[envKey{hasParams: hasParams, noAuthorizer: true}] = plain
		extended, err := extend(append(opts,
			cel.Variable(AuthorizerVar, library.AuthorizerType),
			cel.Variable(RequestResourceAuthorizerVar, library.ResourceCheckType)))
		if err != nil {
			return nil, err
		}
		b.envs[envKey{hasParams: hasParams}] = extended
		withPatch, err := WithMutationTypes(extended)
		if err != nil {
			return nil, fmt.Errorf("building CEL environment: %w", err)
		}
		b.envs[envKey{hasParams: hasParams, hasPatchTypes: true}] = withPatch
	}
	return b, nil
}

// WithMutationTypes extends env with what mutation expressions have
// beyond the other expressions of a MutatingAdmissionPolicy, as
// kube-apiserver's mutating policy compiler does: the dynamic types
// Object, Object.<path> and JSONPatch (upstream's
// mutation.DynamicTypeResolver, each type kept once resolved:
// objectTypes), and jsonpatch.escapeKey.
func WithMutationTypes(env *environment.EnvSet) (*environment.EnvSet, error) {
	return env.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			common.ResolverEnvOption(&objectTypes{}),
			environment.UnversionedLib(library.JSONPatch),
		},
	})
}

// plainEnv returns the environment without the "variables" declaration, in
// the given mode. API validation compiles matchConditions in it.
func (b *baseEnvs) plainEnv(hasParams bool, mode environment.Type) (*policyEnv, error) {
	env, err := b.envs[envKey{hasParams: hasParams}].Env(mode)
	if err != nil {
		return nil, err
	}
	return &policyEnv{env: env, check: b.checks.get(env)}, nil
}

// maxCachedEnvs bounds the environments one Compiler keeps for sharing. A
// compiled policy holds its own environments whatever the cache keeps, so
// the bound limits only what is kept for policies not compiled yet.
const maxCachedEnvs = 512

// envCache holds the environments of a Compiler's policies for sharing.
// The environment an expression compiles in depends only on the policy's
// params-ness, the mode, whether the patch types are declared, and the
// names and types of the variables it may see: those declared before it,
// for a variable (upstream's composited environment grows as the variables
// compile), all of them for matchConditions and mutations. Policies that
// agree on these share an environment, and so its checker declarations and
// its program dispatcher, which are most of the cost of building one.
// Cached environments are never changed, so sharing them is safe.
//
// A policy's first sharedVariableEnvs variables compile in cached
// environments, one per number of variables in scope; the later ones in
// one environment of the policy's own whose variables type grows as they
// compile, as upstream's does (see varScope). An environment per variable
// for every variable would make compiling quadratic in the number of
// variables, which API validation does not bound.
type envCache struct {
	base *baseEnvs
	max  int // maxCachedEnvs; smaller in tests

	mu   sync.Mutex
	envs map[envSig]*policyEnv
}

// envSig identifies one environment of the cache.
type envSig struct {
	envKey
	mode environment.Type
	// vars is the sigKey of the variables in scope.
	vars string
}

// policyEnv is a base environment extended with a "variables" object type
// whose fields are the variables in scope, with their checked types.
type policyEnv struct {
	env     *cel.Env
	varType *apiservercel.DeclType
	// check is the plan check of the base environment env extends.
	check *planCheck
}

// declare adds a variable to the variables type, as upstream's
// compositionState.AddField does. Only an environment no other goroutine
// can see yet may be changed.
func (e *policyEnv) declare(v varDecl) {
	e.varType.Fields[v.name] = apiservercel.NewDeclField(v.name, v.typ, true, nil, nil)
}

// varDecl is one variable in scope: its name and its type as later
// expressions see it (declTypeOf of its checked type).
type varDecl struct {
	name string
	typ  *apiservercel.DeclType
}

// sigKey is the cache key of a list of variables in scope: the quoted
// names and the types, in declaration order. declTypeOf only yields types
// whose CEL names tell them apart (primitives, dyn, any, lists and maps of
// those), so the CEL name is an exact key for the type.
func sigKey(decls []varDecl) string {
	var b strings.Builder
	for _, d := range decls {
		b.WriteString(strconv.Quote(d.name))
		b.WriteByte(' ')
		b.WriteString(d.typ.CelType().String())
		b.WriteByte(';')
	}
	return b.String()
}

func newEnvCache(base *baseEnvs) *envCache {
	return &envCache{base: base, max: maxCachedEnvs, envs: map[envSig]*policyEnv{}}
}

// get returns the environment of sig, in which the variables of decls
// (whose sigKey is sig.vars) are visible, building it on first use.
func (c *envCache) get(sig envSig, decls []varDecl) (*policyEnv, error) {
	c.mu.Lock()
	env, ok := c.envs[sig]
	c.mu.Unlock()
	if ok {
		return env, nil
	}
	// Built outside the lock: building takes milliseconds and compilations
	// of other signatures need not wait. Two goroutines may build the same
	// environment; the first one stored is shared from then on.
	var err error
	if len(decls) == 0 {
		env, err = c.base.unvariedEnv(sig.envKey, sig.mode)
	} else {
		env, err = c.base.build(sig.envKey, sig.mode, decls)
	}
	if err != nil {
		return nil, err
	}
	return c.store(sig, env), nil
}

// store keeps env under sig unless an environment is stored there already,
// and returns the one stored. env must not change afterwards.
func (c *envCache) store(sig envSig, env *policyEnv) *policyEnv {
	c.mu.Lock()
	defer c.mu.Unlock()
	if stored, ok := c.envs[sig]; ok {
		return stored
	}
	if len(c.envs) >= c.max {
		for old := range c.envs {
			delete(c.envs, old)
			break
		}
	}
	c.envs[sig] = env
	return env
}

// sharedVariableEnvs is the number of leading variables of a policy that
// compile in cached environments (one per number of variables in scope),
// shared with every policy whose leading variables have the same names and
// types. Most policies declare fewer; the environments of a policy with
// more cost this many builds, not one per variable.
const sharedVariableEnvs = 8

// varScope hands out the environments of one policy's compilation, in
// which exactly the variables declared so far are visible. It is used by
// one goroutine.
type varScope struct {
	cache *envCache
	key   envKey // the variables' environment (no patch types)
	mode  environment.Type
	decls []varDecl
	// grown is the policy's own environment once more than
	// sharedVariableEnvs variables are in scope: its variables type gains
	// each variable as it compiles, exactly as upstream's composited
	// environment does. No other goroutine sees it until complete hands it
	// to the cache.
	grown *policyEnv
}

func newVarScope(cache *envCache, k envKey, mode environment.Type, n int) *varScope {
	return &varScope{cache: cache, key: k, mode: mode, decls: make([]varDecl, 0, n)}
}

// env returns the environment the next variable compiles in.
func (s *varScope) env() (*policyEnv, error) {
	if s.grown != nil {
		return s.grown, nil
	}
	if len(s.decls) < sharedVariableEnvs {
		return s.cache.get(envSig{envKey: s.key, mode: s.mode, vars: sigKey(s.decls)}, s.decls)
	}
	grown, err := s.cache.base.build(s.key, s.mode, s.decls)
	if err != nil {
		return nil, err
	}
	s.grown = grown
	return grown, nil
}

// declare makes a compiled variable visible to the expressions compiled
// after it.
func (s *varScope) declare(name string, t *apiservercel.DeclType) {
	v := varDecl{name: name, typ: t}
	s.decls = append(s.decls, v)
	if s.grown != nil {
		s.grown.declare(v)
	}
}

// complete returns the environments in which all the declared variables
// are visible: plain (for matchConditions) and with the patch types (for
// mutations), from the cache. The grown environment, if any, holds all the
// variables now and is cached as the plain one when the cache has none.
// The scope may not be used afterwards.
func (s *varScope) complete() (plain, patch *policyEnv, err error) {
	sig := envSig{envKey: s.key, mode: s.mode, vars: sigKey(s.decls)}
	if s.grown != nil {
		plain = s.cache.store(sig, s.grown)
		s.grown = nil
	} else if plain, err = s.cache.get(sig, s.decls); err != nil {
		return nil, nil, err
	}
	sig.hasPatchTypes = true
	if patch, err = s.cache.get(sig, s.decls); err != nil {
		return nil, nil, err
	}
	return plain, patch, nil
}

// build extends the base environment of k with a "variables" object type
// holding vars, as upstream's composited compiler does: the type is declared
// without fields (NewCompositionEnv) and the fields are added afterwards
// (CompositionEnv.AddField). The order matters: the type provider registers
// the types reachable from a declared type's fields when the environment is
// built, so declaring the fields up front would make names such as
// "kubernetes.variables.x" resolve where kube-apiserver refuses them.
func (b *baseEnvs) build(k envKey, mode environment.Type, vars []varDecl) (*policyEnv, error) {
	varType := apiservercel.NewObjectType(variablesTypeName, map[string]*apiservercel.DeclField{})
	set, err := b.envs[k].Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        []cel.EnvOption{cel.Variable(VariablesVar, varType.CelType())},
		DeclTypes:         []*apiservercel.DeclType{varType},
	})
	if err != nil {
		return nil, fmt.Errorf("building CEL environment: %w", err)
	}
	env, err := set.Env(mode)
	if err != nil {
		return nil, fmt.Errorf("unexpected error loading CEL environment: %w", err)
	}
	baseEnv, err := b.envs[k].Env(mode)
	if err != nil {
		return nil, fmt.Errorf("unexpected error loading CEL environment: %w", err)
	}
	pe := &policyEnv{env: env, varType: varType, check: b.checks.get(baseEnv)}
	for _, v := range vars {
		pe.declare(v)
	}
	return pe, nil
}
