package validating

import (
	"slices"
	"sync"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mutatis-dev/mutatis/compiler"
)

// Compiler compiles ValidatingAdmissionPolicies with mutatis' compiler
// (compiler.CompileValidating: the environments, declarations, result
// types and error texts of kube-apiserver's plugin), keeping each
// compilation by policy name and revision: an unchanged policy is compiled
// once.
//
// What it keeps is bounded by the policy sets of the last keptSets
// Evaluators built with it (NewEvaluator): each Evaluator ends a set, and
// the compilations of names that none of the sets kept (nor the one being
// built) used are dropped, as the mutating side's controller forgets the
// policies a new policy set no longer has (controller/sync.go). An
// Evaluator holds its own compilations: a dropped one is compiled again
// only when a later policy set has its name again.
//
// It is safe for concurrent use; the zero value is not ready, use
// NewCompiler.
type Compiler struct {
	// comp is the compiler, built on first use (its error, which
	// kube-apiserver's plugin would report as every policy's compile
	// error, too).
	comp func() (*compiler.Compiler, error)
	// observer, when set, is told about the evaluations of the policies'
	// expressions (NewObservedCompiler).
	observer Observer

	// mu guards building and sets: the names compiled since the last
	// Evaluator was built, and the names of the last keptSets policy
	// sets, newest first.
	mu       sync.Mutex
	building map[string]struct{}
	sets     [keptSets]map[string]struct{}
}

// keptSets is the number of policy sets whose compilations a Compiler
// keeps: two, so that an Evaluator that replaces another (a policy set's
// swap) and two Evaluators built in turn over two sets (policytest's
// clusters, layers) find their unchanged policies compiled.
const keptSets = 2

// NewCompiler returns an empty Compiler.
func NewCompiler() *Compiler {
	return newCompiler(nil)
}

func newCompiler(o Observer) *Compiler {
	c := &Compiler{observer: o}
	c.comp = sync.OnceValues(func() (*compiler.Compiler, error) {
		if o == nil {
			return compiler.New()
		}
		return compiler.New(compiler.WithObserver(variableObserver{o}))
	})
	return c
}

// compile returns p's compilation, or the error that makes every
// evaluation of p an error decision under its failurePolicy (upstream's
// validator compileError). The compilation errors of its expressions are
// the expressions': as in kube-apiserver, they come out when the policy is
// evaluated.
func (c *Compiler) compile(p *admissionregistrationv1.ValidatingAdmissionPolicy) (*compiler.ValidatingPolicy, error) {
	comp, err := c.comp()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.building == nil {
		c.building = map[string]struct{}{}
	}
	c.building[p.Name] = struct{}{}
	c.mu.Unlock()
	return comp.CompileValidating(p)
}

// endSet ends the policy set built since the last call (an Evaluator's):
// it becomes the newest of the kept sets, and the compilations of the
// names only the set it pushes out used are dropped.
func (c *Compiler) endSet() {
	comp, err := c.comp()
	if err != nil {
		return // nothing was compiled
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	oldest := c.sets[keptSets-1]
	copy(c.sets[1:], c.sets[:keptSets-1])
	c.sets[0], c.building = c.building, nil
	for name := range oldest {
		if !c.keeps(name) {
			comp.ForgetValidating(name)
		}
	}
}

// keeps tells whether a kept set, or the set being built, has name. c.mu
// is held.
func (c *Compiler) keeps(name string) bool {
	if _, ok := c.building[name]; ok {
		return true
	}
	for _, s := range c.sets {
		if _, ok := s[name]; ok {
			return true
		}
	}
	return false
}

// variableObserver tells a validating Observer of the lazy evaluations of
// the policies' variables (the evaluator tells it of the other
// expressions, as upstream's filters return them).
type variableObserver struct{ o Observer }

// Probes implements compiler.Observer: no node is probed.
func (variableObserver) Probes(string, *cel.Ast) []compiler.Probe { return nil }

// ObserveEvaluation implements compiler.Observer.
func (v variableObserver) ObserveEvaluation(ev compiler.Evaluation) {
	if ev.Expression.Kind != compiler.KindVariable {
		return
	}
	v.o.ObserveValidating(Observation{Policy: ev.Policy.Name, Kind: KindVariable, Path: ev.Expression.Path.String(), Name: ev.Expression.Name, Value: ev.Value, Err: ev.Err})
}

// kindOf is the ExpressionKind of a compiled expression.
func kindOf(k compiler.Kind) ExpressionKind {
	switch k {
	case compiler.KindValidation:
		return KindValidation
	case compiler.KindMessageExpression:
		return KindMessageExpression
	case compiler.KindAuditAnnotation:
		return KindAuditAnnotation
	case compiler.KindMatchCondition:
		return KindMatchCondition
	}
	return KindVariable
}

// references tells whether an expression of vp that compiled resolves one
// of the variables names (its checked AST refers to the declaration): a
// variable no expression refers to is never bound.
func references(vp *compiler.ValidatingPolicy, names ...string) bool {
	for _, exprs := range [][]*compiler.Expression{vp.Variables, vp.MatchConditions, vp.Validations, vp.MessageExpressions, vp.AuditAnnotations} {
		for _, e := range exprs {
			if e == nil || e.AST() == nil {
				continue
			}
			for _, r := range e.AST().NativeRep().ReferenceMap() {
				if slices.Contains(names, r.Name) {
					return true
				}
			}
		}
	}
	return false
}
