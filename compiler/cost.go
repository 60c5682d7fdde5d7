package compiler

import (
	"errors"
	"math"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
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
// model (library.CostEstimator), every input unbounded.
type costEstimator struct{}

func newCostEstimator() *costEstimator { return &costEstimator{} }

func (c *costEstimator) estimate(env *cel.Env, ast *cel.Ast) CostEstimate {
	est, err := env.EstimateCost(ast, &library.CostEstimator{})
	if err != nil {
		return CostEstimate{Max: math.MaxUint64}
	}
	return CostEstimate{Min: est.Min, Max: est.Max}
}

// EstimateCost estimates the cost of e with kube-apiserver's CEL cost model
// (library.CostEstimator), asking sizes for the sizes of its inputs (nil
// leaves every input unbounded, as e.Cost does). It fails when e did not
// compile or the cost checker fails.
func (e *Expression) EstimateCost(sizes checker.CostEstimator) (CostEstimate, error) {
	if e.ast == nil {
		return CostEstimate{}, errors.New("the expression did not compile")
	}
	est, err := e.env.EstimateCost(e.ast, &library.CostEstimator{SizeEstimator: sizes})
	if err != nil {
		return CostEstimate{}, err
	}
	return CostEstimate{Min: est.Min, Max: est.Max}, nil
}
