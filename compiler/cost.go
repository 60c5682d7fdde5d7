package compiler

import (
	"math"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// Cost limits kube-apiserver applies to MutatingAdmissionPolicy evaluation.
const (
	// PerCallLimit is the runtime cost limit of one expression evaluation.
	PerCallLimit = celconfig.PerCallLimit
	// MutationBudget is the runtime cost budget of one mutation (its
	// expression and the variables it evaluates).
	MutationBudget = celconfig.RuntimeCELCostBudget
	// MatchConditionsBudget is the runtime cost budget shared by all
	// matchConditions of one policy invocation.
	MatchConditionsBudget = celconfig.RuntimeCELCostBudgetMatchConditions
)

// CostEstimate is the static cost estimate of an expression: the range of
// runtime costs it can have. Max is math.MaxUint64 when some input is
// unbounded.
type CostEstimate struct {
	Min, Max uint64
	// Schema tells whether the estimate used a schema of the target kind
	// (bounded list, map and string sizes) rather than unbounded inputs.
	Schema bool
}

// Unbounded reports whether the worst case depends on an unbounded input.
func (c CostEstimate) Unbounded() bool { return c.Max == math.MaxUint64 }

// costEstimator computes static estimates with kube-apiserver's CEL cost
// model (library.CostEstimator), optionally sized from a schema.
type costEstimator struct{}

func newCostEstimator() *costEstimator { return &costEstimator{} }

func (c *costEstimator) estimate(env *cel.Env, ast *cel.Ast) CostEstimate {
	est, err := env.EstimateCost(ast, &library.CostEstimator{})
	if err != nil {
		return CostEstimate{Max: math.MaxUint64}
	}
	return CostEstimate{Min: est.Min, Max: est.Max}
}

// EstimateWithSchema re-estimates the cost of e with the sizes that the
// schema of the object's kind allows (maxItems, maxLength, maxProperties).
// object is the DeclType of the target kind; params, when non-nil, the
// DeclType of the paramKind. An expression that did not compile keeps its
// estimate without a schema.
func (e *Expression) EstimateWithSchema(object, params *apiservercel.DeclType) CostEstimate {
	if e.ast == nil {
		return e.Cost
	}
	est, err := e.env.EstimateCost(e.ast, &library.CostEstimator{SizeEstimator: &schemaSizes{roots: sizeRoots(object, params)}})
	if err != nil {
		return e.Cost
	}
	return CostEstimate{Min: est.Min, Max: est.Max, Schema: true}
}

// schemaSizes answers the cost checker's size questions from DeclTypes: the
// path of a node (root variable, then field names, @items, @keys, @values)
// is walked through the schema (declAt), and its MaxElements is the size
// bound. This is how kube-apiserver sizes CRD validation rules. "@keys" on a
// list is its elements: the cost checker names the iteration variable of a
// comprehension over a dynamically typed range (every field of "object")
// "@keys", whether the range turns out to be a list or a map.
type schemaSizes struct {
	roots map[string]*apiservercel.DeclType
}

func (s *schemaSizes) EstimateSize(element checker.AstNode) *checker.SizeEstimate {
	path := element.Path()
	if len(path) == 0 {
		return nil
	}
	t := declAt(s.roots, path)
	if t == nil || t.MaxElements < 0 {
		return nil
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(t.MaxElements)}
}

// EstimateCallCost defers to kube-apiserver's cost model for library calls.
func (s *schemaSizes) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return nil
}
