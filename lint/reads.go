package lint

import (
	"fmt"
	"math"
	"regexp"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/mutatis-dev/mutatis/compiler"
)

// typedEnvKey names a typed environment: the declaration types of object
// and params (nil when the policy has none or its paramKind has no
// schema) and whether the policy has params.
type typedEnvKey struct {
	object, params *apiservercel.DeclType
	hasParams      bool
}

// typedEnvs are the typed environments a Checker built, shared by the
// policies that target the same kind: building one walks the kind's whole
// schema and copies the base environment's declarations, milliseconds
// each, which a run of apply or test pays at start-up.
type typedEnvs map[typedEnvKey]*environment.EnvSet

// compiler returns a composited compiler over the environment of key,
// building the environment on first use. An EnvSet is never modified
// (Extend returns a new one); the composited compiler, which stores a
// policy's variables, is the policy's own.
func (envs typedEnvs) compiler(key typedEnvKey) (*plugincel.CompositedCompiler, error) {
	set, ok := envs[key]
	if !ok {
		var err error
		if set, err = typedEnvSet(key.object, key.params, key.hasParams); err != nil {
			return nil, err
		}
		envs[key] = set
	}
	cc, err := plugincel.NewCompositedCompilerForTypeChecking(set)
	if err != nil {
		return nil, err
	}
	cc.Compiler = &typeCheckingCompiler{cc: cc}
	return cc, nil
}

// typedEnv builds the environment in which a policy's expressions are
// type-checked against a kind's schema: kube-apiserver's stored-expressions
// environment of MutatingAdmissionPolicy expressions (the base
// environment at kube-apiserver's compatibility version, the admission
// variables, the patch types) with types where kube-apiserver declares
// dyn, composed with the policy's variables by k8s.io/apiserver's
// composited compiler, as its ValidatingAdmissionPolicy type checking does.
func typedEnv(object, params *apiservercel.DeclType, hasParams bool) (*plugincel.CompositedCompiler, error) {
	return typedEnvs{}.compiler(typedEnvKey{object: object, params: params, hasParams: hasParams})
}

// storedOnly is the version from which options are introduced that only
// the stored-expressions environment of an EnvSet takes (it takes options
// of every version): the checks compile in that environment alone, and
// declaring the typed variables in the new-expressions one too would walk
// the kind's schema a second time for an environment nothing compiles in.
var storedOnly = version.MajorMinor(math.MaxUint, math.MaxUint)

// typedEnvSet is the EnvSet of typedEnv, before the policy's variables.
func typedEnvSet(object, params *apiservercel.DeclType, hasParams bool) (*environment.EnvSet, error) {
	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	requestType := plugincel.BuildRequestType()
	namespaceType := plugincel.BuildNamespaceType()
	declTypes := []*apiservercel.DeclType{namespaceType, requestType, object}
	opts := []cel.EnvOption{
		cel.Variable(compiler.ObjectVar, object.CelType()),
		cel.Variable(compiler.OldObjectVar, object.CelType()),
		cel.Variable(compiler.NamespaceVar, namespaceType.CelType()),
		cel.Variable(compiler.RequestVar, requestType.CelType()),
		cel.Variable(compiler.AuthorizerVar, library.AuthorizerType),
		cel.Variable(compiler.RequestResourceAuthorizerVar, library.ResourceCheckType),
	}
	if hasParams {
		t := cel.DynType
		if params != nil {
			t = params.CelType()
			declTypes = append(declTypes, params)
		}
		opts = append(opts, cel.Variable(compiler.ParamsVar, t))
	}
	typed, err := base.Extend(environment.VersionedOptions{
		IntroducedVersion: storedOnly,
		EnvOptions:        opts,
		DeclTypes:         declTypes,
	})
	if err != nil {
		return nil, err
	}
	return compiler.WithMutationTypes(typed)
}

// typeCheckingCompiler compiles in the composited environment, as
// k8s.io/apiserver's type checking does; it gives the variables their
// checked types.
type typeCheckingCompiler struct{ cc *plugincel.CompositedCompiler }

func (c *typeCheckingCompiler) CompileCELExpression(e plugincel.ExpressionAccessor, _ plugincel.OptionalVariableDeclarations, mode environment.Type) plugincel.CompilationResult {
	env, err := c.cc.Env(mode)
	if err != nil {
		return plugincel.CompilationResult{Error: &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: err.Error()}, ExpressionAccessor: e}
	}
	a, iss := env.Compile(e.GetExpression())
	if iss.Err() != nil {
		return plugincel.CompilationResult{Error: &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: iss.String()}, ExpressionAccessor: e}
	}
	return plugincel.CompilationResult{OutputType: a.OutputType(), ExpressionAccessor: e}
}

// variable is a policy variable as the composited compiler takes it.
type variable struct {
	v admissionregistrationv1.Variable
}

func (v variable) GetExpression() string    { return v.v.Expression }
func (v variable) ReturnTypes() []*cel.Type { return []*cel.Type{cel.AnyType} }
func (v variable) GetName() string          { return v.v.Name }
func (v variable) String() string           { return v.v.Name }

var _ plugincel.NamedExpressionAccessor = variable{}

var (
	undefinedFieldRE = regexp.MustCompile(`^undefined field '([^']*)'`)
	overloadRE       = regexp.MustCompile(`^found no matching overload for '([^']*)' applied to '(.*)'`)
)

// checkReads compiles every expression of the policy again with object
// typed by kind k and reports what the CEL checker finds that the dyn
// environment kube-apiserver compiles in cannot: fields the schema does
// not declare, operations on values of the wrong type.
func checkReads(envs typedEnvs, p *admissionregistrationv1.MutatingAdmissionPolicy, cp *compiler.Policy, k, params *kindSchema, report func(e *compiler.Expression, sev Severity, id int64, check, msg string)) error {
	if !hasCompiled(cp) {
		return nil
	}
	var pdecl *apiservercel.DeclType
	if params != nil {
		pdecl = params.rootType()
	}
	cc, err := envs.compiler(typedEnvKey{object: k.rootType(), params: pdecl, hasParams: cp.HasParams})
	if err != nil {
		return err
	}
	opts := plugincel.OptionalVariableDeclarations{HasParams: cp.HasParams, HasAuthorizer: true, HasPatchTypes: true}
	check := func(e *compiler.Expression) {
		if e.Err != nil {
			return
		}
		env, err := cc.Env(environment.StoredExpressions)
		if err != nil {
			return
		}
		parsed, iss := env.Parse(e.Source)
		if iss.Err() != nil {
			return
		}
		_, iss = env.Check(parsed)
		if iss.Err() == nil {
			return
		}
		cond, tested := conditionalNodes(parsed.NativeRep().Expr())
		for _, ce := range iss.Errors() {
			sev := Error
			if cond[ce.ExprID] || e.Kind == compiler.KindVariable {
				sev = Warning
			}
			when := "every evaluation fails"
			if sev == Warning {
				when = "every evaluation that reaches it fails"
				if e.Kind == compiler.KindVariable {
					when = "every evaluation that uses the variable fails"
				}
			}
			id := ce.ExprID
			if m := undefinedFieldRE.FindStringSubmatch(ce.Message); m != nil {
				if tested[ce.ExprID] {
					report(e, Warning, id, "read-undeclared-field", fmt.Sprintf("field %q is not declared in the schema of %s: the test is always false", m[1], k.gvkLabel()))
					continue
				}
				report(e, sev, id, "read-undeclared-field", fmt.Sprintf("field %q is not declared in the schema of %s (%s); %s at run time: %q", m[1], k.gvkLabel(), ce.Message, when, "no such key: "+m[1]))
				continue
			}
			if m := overloadRE.FindStringSubmatch(ce.Message); m != nil {
				switch m[1] {
				case operators.Equals, operators.NotEquals, operators.In, operators.Conditional:
					// Heterogeneous equality: false (or true) at run time, not
					// an error; a conditional's branches may differ in type.
					if m[1] != operators.Conditional {
						report(e, Warning, id, "read-type", fmt.Sprintf("with the types of the schema of %s, %s (%s): it is always the same", k.gvkLabel(), ce.Message, m[1]))
					}
					continue
				}
				report(e, sev, id, "read-type", fmt.Sprintf("with the types of the schema of %s, %s; %s at run time: %q", k.gvkLabel(), ce.Message, when, "no such overload"))
				continue
			}
			report(e, Warning, id, "read-type", fmt.Sprintf("with the types of the schema of %s: %s", k.gvkLabel(), ce.Message))
		}
	}
	for i, v := range cp.Variables {
		check(v)
		cc.CompileAndStoreVariable(variable{p.Spec.Variables[i]}, opts, environment.StoredExpressions)
	}
	for _, e := range cp.MatchConditions {
		check(e)
	}
	for _, e := range cp.Mutations {
		check(e)
	}
	return nil
}

// hasCompiled tells whether a policy has an expression that compiled, the
// only ones checkReads checks: for a policy without one no typed
// environment is built.
func hasCompiled(cp *compiler.Policy) bool {
	for _, e := range cp.Expressions() {
		if e.Err == nil {
			return true
		}
	}
	return false
}

// conditionalNodes walks an expression and returns the nodes that some
// evaluations never reach or whose errors another operand can absorb
// (under either operand of && and ||, the branches of ?:, the body of a
// comprehension, which an empty range never runs), and the nodes that
// only test for presence (has(), optional selection), which never fail.
func conditionalNodes(root ast.Expr) (cond, tested map[int64]bool) {
	cond, tested = map[int64]bool{}, map[int64]bool{}
	var walk func(x ast.Expr, c bool)
	walk = func(x ast.Expr, c bool) {
		if c {
			cond[x.ID()] = true
		}
		switch x.Kind() {
		case ast.SelectKind:
			if x.AsSelect().IsTestOnly() {
				tested[x.ID()] = true
			}
			walk(x.AsSelect().Operand(), c)
		case ast.CallKind:
			call := x.AsCall()
			if call.FunctionName() == operators.OptSelect {
				tested[x.ID()] = true
			}
			if call.IsMemberFunction() {
				walk(call.Target(), c)
			}
			for i, a := range call.Args() {
				switch call.FunctionName() {
				case operators.LogicalAnd, operators.LogicalOr:
					walk(a, true)
				case operators.Conditional:
					walk(a, c || i > 0)
				default:
					walk(a, c)
				}
			}
		case ast.ListKind:
			for _, el := range x.AsList().Elements() {
				walk(el, c)
			}
		case ast.MapKind:
			for _, en := range x.AsMap().Entries() {
				walk(en.AsMapEntry().Key(), c)
				walk(en.AsMapEntry().Value(), c)
			}
		case ast.StructKind:
			for _, f := range x.AsStruct().Fields() {
				walk(f.AsStructField().Value(), c)
			}
		case ast.ComprehensionKind:
			comp := x.AsComprehension()
			walk(comp.IterRange(), c)
			walk(comp.AccuInit(), c)
			walk(comp.LoopCondition(), true)
			walk(comp.LoopStep(), true)
			walk(comp.Result(), c)
		}
	}
	walk(root, false)
	return cond, tested
}
