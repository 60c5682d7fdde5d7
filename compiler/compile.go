package compiler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Kind tells what role an expression plays in its policy.
type Kind int

// The expression kinds of a MutatingAdmissionPolicy.
const (
	KindVariable Kind = iota
	KindMatchCondition
	KindApplyConfiguration
	KindJSONPatch
)

// The expression kinds of a ValidatingAdmissionPolicy besides its
// variables and matchConditions (CompileValidating).
const (
	KindValidation Kind = iota + KindJSONPatch + 1
	KindMessageExpression
	KindAuditAnnotation
)

// String returns the kind as it appears in reports.
func (k Kind) String() string {
	switch k {
	case KindVariable:
		return "variable"
	case KindMatchCondition:
		return "matchCondition"
	case KindApplyConfiguration:
		return "applyConfiguration"
	case KindJSONPatch:
		return "jsonPatch"
	case KindValidation:
		return "validation"
	case KindMessageExpression:
		return "messageExpression"
	case KindAuditAnnotation:
		return "auditAnnotation"
	}
	return "unknown"
}

// The result types kube-apiserver requires of mutation expressions.
var (
	applyConfigObjectType = celtypes.NewObjectType("Object")
	jsonPatchListType     = cel.ListType(celtypes.NewObjectType("JSONPatch"))
)

// Expression is one compiled CEL expression of a policy. It is immutable
// after compilation and safe for concurrent evaluation.
type Expression struct {
	// Kind is the role of the expression in the policy.
	Kind Kind
	// Name is the variable or matchCondition name; empty for mutations.
	Name string
	// Index is the position in its list (variables, matchConditions, mutations).
	Index int
	// Source is the expression text exactly as written in the policy.
	Source string
	// Path is the field path of the expression in the policy.
	Path *field.Path
	// Err is the compilation error, formatted as kube-apiserver formats it;
	// nil when the expression compiled.
	Err *apiservercel.Error
	// OutputType is the checked type of the expression (nil on error).
	OutputType *cel.Type
	// Cost is the static cost estimate of the expression.
	Cost CostEstimate

	// prog is the program, built on first evaluation (see planCheck); nil
	// when the expression did not compile.
	prog *lazyProgram
	ast  *cel.Ast
	env  *cel.Env

	// probes are the nodes the observer asked for (Observer.Probes);
	// instrumented is the program with them, built only for a Compiler
	// with an observer.
	probes       []Probe
	instrumented cel.Program
}

// AST returns the checked AST of the expression (nil when it did not
// compile). Node ids are those of Probe.ID.
func (e *Expression) AST() *cel.Ast { return e.ast }

// Env returns the environment the expression compiled in (nil when it did
// not compile): kube-apiserver's, with the variables declared before it.
func (e *Expression) Env() *cel.Env { return e.env }

// Env returns the environment of a policy's mutations in which no variable
// is in scope (params declared when hasParams): kube-apiserver's
// environment for stored expressions, the authorizer included. Editors
// type-check fragments of an expression in it.
func (c *Compiler) Env(hasParams bool) (*cel.Env, error) {
	pe, err := c.base.unvariedEnv(envKey{hasParams: hasParams, hasPatchTypes: true}, environment.StoredExpressions)
	if err != nil {
		return nil, err
	}
	return pe.env, nil
}

// Policy is the compiled form of a MutatingAdmissionPolicy: every variable,
// matchCondition and mutation expression, compiled once and reusable by any
// number of concurrent evaluations.
type Policy struct {
	// Name is the policy name.
	Name string
	// Key identifies the policy revision the compilation belongs to.
	Key string
	// HasParams is true when the policy declares a paramKind (and so "params").
	HasParams bool
	// Variables, MatchConditions and Mutations are in policy order.
	Variables       []*Expression
	MatchConditions []*Expression
	Mutations       []*Expression

	varType  *apiservercel.DeclType
	observer Observer
	// varsState is the variables maps' table, built on first use.
	varsState

	// activations are released activations for NewActivation to reuse.
	activations sync.Pool
	// poisonReleased, set by tests only, is the Input a released
	// activation binds instead of being reused (Release).
	poisonReleased *Input
}

// Errors returns every compilation error of the policy with its field path,
// in the shape kube-apiserver's API validation reports them.
func (p *Policy) Errors() field.ErrorList {
	var errs field.ErrorList
	for _, list := range [][]*Expression{p.Variables, p.MatchConditions, p.Mutations} {
		for _, e := range list {
			if e.Err != nil {
				errs = append(errs, fieldError(e))
			}
		}
	}
	return errs
}

// fieldError converts a compile error the way kube-apiserver's API
// validation does (convertCELErrorToValidationError): the value quoted is
// the expression, trimmed of surrounding space except for variables.
func fieldError(e *Expression) *field.Error {
	if e.Err.Type == apiservercel.ErrorTypeRequired {
		return field.Required(e.Path, e.Err.Detail)
	}
	if e.Err.Type == apiservercel.ErrorTypeInternal {
		return field.InternalError(e.Path, e.Err)
	}
	value := e.Source
	if e.Kind != KindVariable {
		value = strings.TrimSpace(value)
	}
	return field.Invalid(e.Path, value, e.Err.Detail)
}

// Expressions returns all expressions of the policy in evaluation order:
// variables, matchConditions, mutations.
func (p *Policy) Expressions() []*Expression {
	out := make([]*Expression, 0, len(p.Variables)+len(p.MatchConditions)+len(p.Mutations))
	out = append(out, p.Variables...)
	out = append(out, p.MatchConditions...)
	return append(out, p.Mutations...)
}

// Compiler compiles MutatingAdmissionPolicies with the CEL environment
// kube-apiserver uses for stored expressions. It caches the latest
// compilation of each policy by name and revision, so compiling an unchanged
// policy again does no CEL work. A Compiler is safe for concurrent use.
type Compiler struct {
	base *baseEnvs
	// envs are the environments of the compiled policies, shared by the
	// policies whose expressions see the same variables (see envCache).
	envs      *envCache
	estimator *costEstimator
	observer  Observer

	mu    sync.Mutex
	cache map[string]*Policy // policy name → latest compilation
	// vcache holds the ValidatingAdmissionPolicies' compilations apart
	// (a policy of each kind may have the same name).
	vcache map[string]*ValidatingPolicy
	// compiling holds the compilations under way, by policy name and
	// revision: a Compile of the same revision waits for it rather than
	// compiling again (lint's checks and the admission chain of one run ask
	// for the same policy at once), and a compilation of another revision
	// of the same policy does not take the waiters' place.
	compiling map[string]*compilation
}

// compilation is a compilation under way of the revision key of a policy.
type compilation struct {
	key    string
	done   chan struct{} // closed when policy and err are set
	policy *Policy
	err    error
}

// New returns a Compiler configured by opts. Building the base environments
// takes a few milliseconds once per process.
func New(opts ...Option) (*Compiler, error) {
	base, err := loadBaseEnvs()
	if err != nil {
		return nil, err
	}
	c := &Compiler{base: base, envs: newEnvCache(base), estimator: newCostEstimator(), cache: map[string]*Policy{}, vcache: map[string]*ValidatingPolicy{}, compiling: map[string]*compilation{}}
	for _, opt := range opts {
		if opt != nil {
			opt(c)
		}
	}
	return c, nil
}

// Key returns the cache key of a policy revision: UID and resourceVersion
// when the policy came from a cluster, otherwise a hash of its name and spec.
func Key(p *admissionregistrationv1.MutatingAdmissionPolicy) string {
	return RevisionKey(&p.ObjectMeta, &p.Spec)
}

// RevisionKey is Key for any object with metadata meta and spec spec (a
// ValidatingAdmissionPolicy's): UID and resourceVersion when the object
// came from a cluster, otherwise a hash of its name and spec.
func RevisionKey(meta *metav1.ObjectMeta, spec any) string {
	if meta.UID != "" && meta.ResourceVersion != "" {
		return string(meta.UID) + "/" + meta.ResourceVersion
	}
	h := sha256.New()
	h.Write([]byte(meta.Name))
	h.Write([]byte{0})
	b, _ := json.Marshal(spec) // a spec of plain Go values always marshals
	h.Write(b)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Compile returns the compiled form of p, from the cache when the same
// revision was compiled before. Compilation problems do not make Compile
// fail: they are kept on each Expression (and listed by Policy.Errors), as
// kube-apiserver keeps them until the policy is invoked. Calls for the same
// revision at the same time compile it once and share the result.
func (c *Compiler) Compile(p *admissionregistrationv1.MutatingAdmissionPolicy) (*Policy, error) {
	key := Key(p)
	c.mu.Lock()
	if cached, ok := c.cache[p.Name]; ok && cached.Key == key {
		c.mu.Unlock()
		return cached, nil
	}
	// In flight by name and revision: two revisions of one policy compiled
	// at once must not displace each other's waiters.
	flight := p.Name + "\x00" + key
	if under, ok := c.compiling[flight]; ok {
		c.mu.Unlock()
		<-under.done
		return under.policy, under.err
	}
	// The error waiters see should compile panic.
	under := &compilation{key: key, done: make(chan struct{}), err: fmt.Errorf("compiling policy %q did not finish", p.Name)}
	c.compiling[flight] = under
	c.mu.Unlock()

	defer func() {
		c.mu.Lock()
		delete(c.compiling, flight)
		if under.err == nil {
			c.cache[p.Name] = under.policy
		}
		c.mu.Unlock()
		close(under.done)
	}()
	under.policy, under.err = c.compile(p, key)
	return under.policy, under.err
}

// Forget drops the cached compilation of the named policy.
func (c *Compiler) Forget(name string) {
	c.mu.Lock()
	delete(c.cache, name)
	c.mu.Unlock()
}

// Validate compiles p as kube-apiserver's API validation does when the
// policy is created or updated, and returns the errors it would refuse the
// policy with (HTTP 422). It differs from Compile, which reproduces the
// admission-time compilation, in two ways, both upstream's: expressions are
// compiled in the "new expressions" environment of the compatibility version
// (libraries newer than it are refused), and matchConditions are compiled
// without the policy's variables.
func (c *Compiler) Validate(p *admissionregistrationv1.MutatingAdmissionPolicy) (field.ErrorList, error) {
	compiled, err := c.compileMode(p, "", environment.NewExpressions, true)
	if err != nil {
		return nil, err
	}
	return compiled.Errors(), nil
}

func (c *Compiler) compile(p *admissionregistrationv1.MutatingAdmissionPolicy, key string) (*Policy, error) {
	return c.compileMode(p, key, environment.StoredExpressions, false)
}

func (c *Compiler) compileMode(p *admissionregistrationv1.MutatingAdmissionPolicy, key string, mode environment.Type, validation bool) (*Policy, error) {
	hasParams := p.Spec.ParamKind != nil
	out := &Policy{Name: p.Name, Key: key, HasParams: hasParams}
	if !validation {
		out.observer = c.observer
	}
	spec := field.NewPath("spec")
	plainKey := envKey{hasParams: hasParams}
	// API validation keeps only the errors: no cost estimate or
	// instrumented program, neither of which can make an expression fail.
	detail := compileFull
	switch {
	case validation:
		detail = compileErrorsOnly
	case out.observer != nil:
		detail = compileObserved
	}

	vars, err := c.compileVariables(out, p.Spec.Variables, plainKey, mode, detail)
	if err != nil {
		return nil, err
	}
	plainEnv, patchEnv, err := vars.complete()
	if err != nil {
		return nil, err
	}
	out.varType = plainEnv.varType
	conditionEnv := plainEnv
	if validation {
		if conditionEnv, err = c.base.plainEnv(hasParams, mode); err != nil {
			return nil, err
		}
	}
	for i, m := range p.Spec.MatchConditions {
		e := &Expression{Kind: KindMatchCondition, Name: m.Name, Index: i, Source: m.Expression,
			Path: spec.Child("matchConditions").Index(i).Child("expression")}
		c.compileExpression(conditionEnv, e, []*cel.Type{cel.BoolType}, detail)
		out.MatchConditions = append(out.MatchConditions, e)
	}
	for i, m := range p.Spec.Mutations {
		mp := spec.Child("mutations").Index(i)
		e := &Expression{Index: i}
		var want *cel.Type
		switch {
		case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			e.Kind, e.Source, e.Path, want = KindApplyConfiguration, m.ApplyConfiguration.Expression, mp.Child("applyConfiguration", "expression"), applyConfigObjectType
		case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			e.Kind, e.Source, e.Path, want = KindJSONPatch, m.JSONPatch.Expression, mp.Child("jsonPatch", "expression"), jsonPatchListType
		default:
			// API validation refuses such a mutation; an engine fed one anyway
			// reports it as a configuration error of this policy.
			e.Kind, e.Path = KindApplyConfiguration, mp.Child("patchType")
			e.Err = &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid,
				Detail: fmt.Sprintf("unsupported patchType %q or missing patch for it", m.PatchType)}
			out.Mutations = append(out.Mutations, e)
			continue
		}
		c.compileExpression(patchEnv, e, []*cel.Type{want}, detail)
		out.Mutations = append(out.Mutations, e)
	}
	planCELValues(out.Variables, out.MatchConditions, out.Mutations)
	return out, nil
}

// compileVariables compiles the variables vs into out.Variables and
// returns the scope that holds them. Each variable compiles in an
// environment where the variables before it are visible and is then
// visible, with its checked type, to the expressions after it, exactly as
// upstream's composited compiler adds the field after compiling (a
// reference to a later variable, or to the variable itself, is an
// undefined field).
func (c *Compiler) compileVariables(out *Policy, vs []admissionregistrationv1.Variable, k envKey, mode environment.Type, detail compileDetail) (*varScope, error) {
	vars := newVarScope(c.envs, k, mode, len(vs))
	path := field.NewPath("spec", "variables")
	for i, v := range vs {
		e := &Expression{Kind: KindVariable, Name: v.Name, Index: i, Source: v.Expression,
			Path: path.Index(i).Child("expression")}
		env, err := vars.env()
		if err != nil {
			return nil, err
		}
		c.compileExpression(env, e, nil, detail)
		vars.declare(v.Name, declTypeOf(e.OutputType))
		out.Variables = append(out.Variables, e)
	}
	return vars, nil
}

// compileDetail is what compileExpression records beside the errors.
type compileDetail int

const (
	// compileFull records the cost estimate.
	compileFull compileDetail = iota
	// compileObserved also asks the observer for its probes and builds
	// the instrumented program.
	compileObserved
	// compileErrorsOnly records the errors, the output type and the
	// program (built lazily) only.
	compileErrorsOnly
)

// compileExpression compiles e.Source in env and checks its result type
// against want (any type when want is nil), recording errors with the exact
// texts of k8s.io/apiserver's CompileCELExpression. With compileObserved, it
// also builds the instrumented program an Observer's outcomes come from.
func (c *Compiler) compileExpression(penv *policyEnv, e *Expression, want []*cel.Type, detail compileDetail) {
	env := penv.env
	fail := func(t apiservercel.ErrorType, msg string, cause error) {
		e.Err = &apiservercel.Error{Type: t, Detail: msg, Cause: cause}
	}
	ast, issues := env.Compile(e.Source)
	if issues != nil {
		fail(apiservercel.ErrorTypeInvalid, "compilation failed: "+issues.String(), apiservercel.NewCompilationError(issues))
		return
	}
	if want != nil {
		found := false
		for _, rt := range want {
			if ast.OutputType().IsExactType(rt) || cel.AnyType.IsExactType(rt) {
				found = true
				break
			}
		}
		if !found {
			if len(want) == 1 {
				fail(apiservercel.ErrorTypeInvalid, fmt.Sprintf("must evaluate to %v but got %v", want[0].String(), ast.OutputType().String()), nil)
			} else {
				fail(apiservercel.ErrorTypeInvalid, fmt.Sprintf("must evaluate to one of %v but got %v", want, ast.OutputType().String()), nil)
			}
			return
		}
	}
	// The program is built on first evaluation when the plan check shows
	// that building it cannot fail; otherwise now, for its error.
	lazy := &lazyProgram{}
	if !penv.check.plans(env, ast) {
		prog, err := env.Program(ast, programOptionsFor(env, ast, false, e.Kind)...)
		if err != nil {
			e.Err = programError(err)
			return
		}
		lazy.prog = prog
	}
	e.prog = lazy
	e.ast = ast
	e.env = env
	e.OutputType = ast.OutputType()
	if detail == compileErrorsOnly {
		return
	}
	e.Cost = c.estimator.estimate(env, ast)
	if detail == compileObserved {
		e.probes = c.observer.Probes(e.Source, ast)
		// Without it the expression is still evaluated and observed, with
		// no branch outcomes (coverage's TestDecisions plans a probe on
		// every decision kind in every position).
		if prog, err := instrumentedProgram(env, ast, e.probes); err == nil {
			e.instrumented = prog
		}
	}
}
