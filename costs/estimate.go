package costs

import (
	"github.com/google/cel-go/checker"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/mutatis-dev/mutatis/compiler"
)

// EstimateWithSchema re-estimates the cost of e with the sizes that the
// schema of the object's kind allows (maxItems, maxLength, maxProperties).
// object is the DeclType of the target kind; params, when non-nil, the
// DeclType of the paramKind. An expression that did not compile keeps its
// estimate without a schema (e.Cost).
func EstimateWithSchema(e *compiler.Expression, object, params *apiservercel.DeclType) compiler.CostEstimate {
	if e.AST() == nil {
		return e.Cost
	}
	est, err := e.EstimateCost(&schemaSizes{roots: sizeRoots(object, params)})
	if err != nil {
		return e.Cost
	}
	est.Schema = true
	return est
}

// Estimate is the static cost estimate of one compiled expression.
type Estimate struct {
	Expression *compiler.Expression
	// Cost is sized by the schema of the target kind when Cost.Schema.
	Cost compiler.CostEstimate
}

// Estimates returns the estimate of every expression of cp that compiled,
// in policy order: with the sizes the schema of TargetDeclType(p) allows
// when there is one, else e.Cost. This is the estimate mutatis lint shows.
func (ix *CRDIndex) Estimates(p *admissionregistrationv1.MutatingAdmissionPolicy, cp *compiler.Policy) []Estimate {
	object := ix.TargetDeclType(p)
	var out []Estimate
	for _, e := range cp.Expressions() {
		if e.Err != nil {
			continue
		}
		est := e.Cost
		if object != nil {
			est = EstimateWithSchema(e, object, nil)
		}
		out = append(out, Estimate{Expression: e, Cost: est})
	}
	return out
}

// estimateForKind is EstimateWithSchema. It was EstimateWithSchema with
// comprehensions over lists of a dynamic checked type sized by the list's
// elements, which EstimateWithSchema now does too.
func estimateForKind(e *compiler.Expression, object, params *apiservercel.DeclType) compiler.CostEstimate {
	return EstimateWithSchema(e, object, params)
}

func sizeRoots(object, params *apiservercel.DeclType) map[string]*apiservercel.DeclType {
	roots := map[string]*apiservercel.DeclType{}
	if object != nil {
		roots[compiler.ObjectVar] = object
		roots[compiler.OldObjectVar] = object
	}
	if params != nil {
		roots[compiler.ParamsVar] = params
	}
	return roots
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

// declAt walks path through the root variables' schemas. "@keys" on a list
// is its elements: the cost checker names the iteration variable of a
// comprehension over a dynamically typed range "@keys".
func declAt(roots map[string]*apiservercel.DeclType, path []string) *apiservercel.DeclType {
	t, ok := roots[path[0]]
	if !ok {
		return nil
	}
	for _, name := range path[1:] {
		switch {
		case name == "@items" || name == "@values":
			t = t.ElemType
		case name == "@keys" && t.IsList():
			t = t.ElemType
		case name == "@keys":
			t = t.KeyType
		case t.Fields != nil:
			f, ok := t.Fields[name]
			if !ok {
				return nil
			}
			t = f.Type
		default:
			return nil
		}
		if t == nil {
			return nil
		}
	}
	return t
}
