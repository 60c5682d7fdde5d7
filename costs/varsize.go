package costs

import (
	"math"
	"unicode/utf8"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
)

// A variable computed from no field (issue 31: `variables.a + variables.a`
// thirty times, a string of 1 GiB) is sized at the profile point by what
// its expression builds, not by the generic size of its kind: literals by
// their length, a concatenation by the sum of its operands, a replace by
// its receiver times its replacement, another variable by its own size.
// Without it the profile gave every such variable the same small size and
// `cost` said ok where lint, on kube-apiserver's estimate, warns.

// maxBuiltDepth bounds the variables and operators builtSize follows.
const maxBuiltDepth = 64

// builtSize is the largest size the value of x, in expression e, can have
// when it is built from literals, concatenations, replace and variables;
// false when x is anything else (the caller keeps its other answer).
func (r *resolver) builtSize(x ast.Expr, depth int) (uint64, bool) {
	if x == nil || depth > maxBuiltDepth {
		return 0, false
	}
	switch x.Kind() {
	case ast.LiteralKind:
		switch v := x.AsLiteral().Value().(type) {
		case string:
			return uint64(utf8.RuneCountInString(v)), true
		case []byte:
			return uint64(len(v)), true
		}
	case ast.SelectKind:
		sel := x.AsSelect()
		if op := sel.Operand(); !sel.IsTestOnly() && op.Kind() == ast.IdentKind && op.AsIdent() == "variables" {
			return r.variableBuiltSize(sel.FieldName(), depth+1)
		}
	case ast.CallKind:
		call := x.AsCall()
		args := call.Args()
		switch {
		case call.FunctionName() == operators.Add && len(args) == 2:
			a, ok := r.builtSize(args[0], depth+1)
			if !ok {
				return 0, false
			}
			b, ok := r.builtSize(args[1], depth+1)
			if !ok {
				return 0, false
			}
			return addSaturating(a, b), true
		case call.FunctionName() == "replace" && call.IsMemberFunction() && (len(args) == 2 || len(args) == 3):
			recv, ok := r.builtSize(call.Target(), depth+1)
			if !ok {
				return 0, false
			}
			with, ok := r.builtSize(args[1], depth+1)
			if !ok {
				return 0, false
			}
			// Every character replaced (or, for an empty old string,
			// the replacement put between them all).
			return addSaturating(mulSaturating(recv+1, max(with, 1)), recv), true
		}
	}
	return 0, false
}

// variableBuiltSize is builtSize of the policy's variable name.
func (r *resolver) variableBuiltSize(name string, depth int) (uint64, bool) {
	if n, ok := r.built[name]; ok {
		return n.size, n.ok
	}
	v, ok := r.vars[name]
	if !ok || v.AST() == nil {
		return 0, false
	}
	size, ok := r.builtSize(v.AST().NativeRep().Expr(), depth)
	r.built[name] = builtResult{size, ok}
	return size, ok
}

type builtResult struct {
	size uint64
	ok   bool
}

func mulSaturating(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}
