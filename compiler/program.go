package compiler

import (
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/interpreter"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// Programs are built on first evaluation, not at compile time.
//
// kube-apiserver's CompileCELExpression calls env.Program for every
// expression, and cel-go (v0.29.2, cel/program.go newProgram) builds for
// every program a dispatcher holding every function binding of the
// environment, about 27 KB: for a policy of many variables that is most of
// the time and the bytes of compiling. mutatis builds each program the
// first time the expression is evaluated (Expression.program), once.
//
// What must not change is which expressions fail to compile, and with what
// text. env.Program can fail in two ways (newProgram and the planner it
// runs):
//
//   - for reasons that do not depend on the expression: a program option
//     that fails, a function whose bindings cannot be built or that are
//     bound twice in the dispatcher, a cost tracker that cannot be built.
//     These are the same for every program of an environment and all its
//     extensions (a policy's environments add a variable and a type, no
//     program option and no function): planCheckFor builds one real
//     program per base environment and, should it fail, every expression
//     of that environment builds its program eagerly, as before.
//   - while planning the expression (interpreter.NewInterpretable): an
//     overload without the implementation its arity needs ("no such
//     overload"), a type the provider does not know, an invalid qualifier,
//     or a decorator that fails. The decorators of kube-apiserver's
//     environments are, in order: the optional library's (never fails),
//     mutatis' planOnce (plan.go, never fails), InterruptableEval (never
//     fails), Optimize (fails when it folds a type
//     conversion of a constant that errors, such as int("x")), the regex
//     constants (matches, and the Kubernetes regex library's find and
//     findAll: fails on a constant pattern that does not compile) and the
//     cost observer (never fails). planCheck runs this very planner, with
//     the failing decorators, over the expression, with a dispatcher
//     shared by every expression of the base environment instead of one
//     built per program.
//
// An expression the check plans is compiled without a program; one it
// does not plan builds its program eagerly with env.Program, whose error
// (if any) is recorded with kube-apiserver's text. So the text is always
// env.Program's own, and the check only has to be right when it succeeds:
// it plans with at most the overloads and decorators of the real program,
// so the real planning succeeds too (TestPlanCheckAgreesWithProgram).
type planCheck struct {
	disp interpreter.Dispatcher
	opts []interpreter.PlannerOption
}

// programOptions are the options mutatis adds to the environment's own, as
// kube-apiserver's CompileCELExpression does.
func programOptions() []cel.ProgramOption {
	return []cel.ProgramOption{cel.InterruptCheckFrequency(celconfig.CheckFrequency), cel.CustomDecoratorV2(planOnce)}
}

// programOptionsFor are programOptions for the checked expression a of
// env: with the decorator of the lists its comprehensions append
// (stepListOnce, steplist.go) when it has any, right after planOnce; with
// planOnceCELValues instead of planOnce when celValues is set (the
// expression's policy hashes composite values: hashesComposites); for an
// ApplyConfiguration or a JSONPatch (kind), with the decorator of the
// constructions only its reader reads (objectOnceFor, construct.go).
func programOptionsFor(env *cel.Env, a *cel.Ast, celValues bool, kind Kind) []cel.ProgramOption {
	opts := programOptions()
	if celValues {
		opts[len(opts)-1] = cel.CustomDecoratorV2(planOnceCELValues)
	}
	if dec := stepListOnce(stepListsOf(a), env.CELTypeAdapter()); dec != nil {
		opts = append(opts, cel.CustomDecoratorV2(dec))
	}
	if kind == KindApplyConfiguration || kind == KindJSONPatch {
		if dec := objectOnceFor(outputObjectsOf(a, kind), env.CELTypeAdapter()); dec != nil {
			opts = append(opts, cel.CustomDecoratorV2(dec))
		}
	}
	return opts
}

// newPlanCheck returns the check of the programs of env and of the
// environments extended from it with variables and types only, or nil when
// every program of env must be built eagerly.
func newPlanCheck(env *cel.Env) *planCheck {
	// The failures that do not depend on the expression: one real program.
	ast, iss := env.Compile("true")
	if iss.Err() != nil {
		return nil
	}
	if _, err := env.Program(ast, programOptions()...); err != nil {
		return nil
	}
	disp := interpreter.NewDispatcher()
	for _, fn := range env.Functions() {
		bindings, err := fn.Bindings()
		if err != nil {
			return nil
		}
		if err := disp.Add(bindings...); err != nil {
			return nil
		}
	}
	return &planCheck{disp: disp, opts: []interpreter.PlannerOption{
		interpreter.InterruptableEval(),
		interpreter.Optimize(),
		interpreter.CompileRegexConstants(library.FindRegexOptimization, library.FindAllRegexOptimization,
			interpreter.MatchesRegexOptimization),
	}}
}

// plans reports whether a, checked in env (an extension of the check's
// environment), plans with the check's dispatcher and decorators.
func (c *planCheck) plans(env *cel.Env, a *cel.Ast) bool {
	if c == nil {
		return false
	}
	provider, adapter := env.CELTypeProvider(), env.CELTypeAdapter()
	attrs := interpreter.NewAttributeFactory(env.Container, adapter, provider)
	_, err := interpreter.NewInterpreter(c.disp, env.Container, provider, adapter, attrs).
		NewInterpretable(a.NativeRep(), c.opts...)
	return err == nil
}

// lazyProgram is the program of a compiled expression, built on first use.
type lazyProgram struct {
	once sync.Once
	prog cel.Program
	err  error
	// celValues: the program is planned with planOnceCELValues (its
	// policy hashes composite values); set when the policy is compiled,
	// before any evaluation.
	celValues bool
	// bounded are the counting programs of serve's memory bound (memory.go).
	bounded boundedPrograms
}

// program returns the program of e, building it on first use, or the
// error building it failed with. Compilation has established that the
// program builds, so the error is never expected; it is reported as the
// compile error env.Program would have given.
func (e *Expression) program() (cel.Program, *apiservercel.Error) {
	if e.prog == nil {
		return nil, nil
	}
	e.prog.once.Do(func() {
		if e.prog.prog == nil {
			e.prog.prog, e.prog.err = e.env.Program(e.ast, programOptionsFor(e.env, e.ast, e.prog.celValues, e.Kind)...)
		}
	})
	if e.prog.err != nil {
		return nil, programError(e.prog.err)
	}
	return e.prog.prog, nil
}

// programError is kube-apiserver's compile error for a program that could
// not be built (CompileCELExpression).
func programError(err error) *apiservercel.Error {
	return &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: "program instantiation failed: " + err.Error()}
}

// planChecks holds the check of each base environment, built on first use.
type planChecks struct {
	mu     sync.Mutex
	checks map[*cel.Env]*planCheck
}

// get returns the check of the base environment env.
func (p *planChecks) get(env *cel.Env) *planCheck {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.checks[env]; ok {
		return c
	}
	if p.checks == nil {
		p.checks = map[*cel.Env]*planCheck{}
	}
	c := newPlanCheck(env)
	p.checks[env] = c
	return c
}
