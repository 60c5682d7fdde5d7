package compiler

import (
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// What cel-go's cost tracker asks of a program's steps, answered once at
// planning.
//
// The cost observer (interpreter.costTrackerFactory.Observe) asks every
// call it observes for its arguments (InterpretableCall.Args), and every
// construction for the type it builds (InterpretableConstructor.Type), to
// find the argument values on its stack and the base cost of the
// construction. cel-go's unary, binary and equality calls build a new
// slice of their arguments at every ask, and an `Object.<path>{…}`
// construction a new object type (types.NewObjectType): three of every ten
// allocations of cel-go's own in a review (BenchmarkHandler), none of them
// part of a value the expression sees. Both answers are fixed when the
// program is planned — the arguments are the planned operands, the type is
// the construction's type name — so planOnce asks once, at planning, and
// wraps the step in one that gives that answer; everything else (Exec,
// Eval, ID, Function, OverloadID, InitVals) is the step's own.
//
// The values and costs are the same: the cost observer finds the same
// argument steps (same IDs, same order) and compares the type with the
// list and map types only (an object type is neither, whichever instance
// it is). TestPlanOnceAgrees evaluates the expressions of the example and
// load-test policies with and without the decorator, FuzzPlanOnceAgrees
// random ones.
//
// The decorator comes after the environment's own (the optional library's)
// and before cel-go's Optimize, regex and cost-observer decorators, which
// see the wrapped step through the same interfaces (a step they replace,
// such as a constant folded or a regex compiled, is replaced as before).
// It never fails, so the planning check (program.go) still holds.
//
// A `JSONPatch{…}` construction is also built without cel-go's map of
// its fields (jsonPatchOnce, construct.go).
//
// It also wraps every attribute so that what cel-go's cost observer is
// shown of a selection is not built (presentAttr, present.go). A second
// decorator, per expression, right after it, plans the list a map or a
// filter appends at each iteration in one allocation (stepListOnce,
// steplist.go).
func planOnce(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	return planWith(i, presentValues)
}

// planOnceCELValues is planOnce for the expressions of a policy that
// hashes composite values (hashesComposites): the attributes' values are
// cel-go's own maps and lists, not views (presentAttr.values is false).
func planOnceCELValues(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	return planWith(i, false)
}

// planWith is planOnce, the attributes' values presented as views when
// values is set.
func planWith(i interpreter.InterpretableV2, values bool) (interpreter.InterpretableV2, error) {
	switch s := i.(type) {
	case interpreter.InterpretableAttribute:
		return presentAttribute(s, values), nil
	case *argsOnce, *typeOnce, *jsonPatchOnce, interpreter.InterpretableConst:
		return i, nil
	case interpreter.InterpretableCall:
		// A call that keeps its arguments (evalVarArgs) gives the same
		// slice at every ask and needs no wrapping; neither does one of
		// none (an empty slice allocates nothing).
		args := s.Args()
		if len(args) == 0 || &args[0] == &s.Args()[0] {
			return i, nil
		}
		return &argsOnce{InterpretableCall: s, args: args}, nil
	case interpreter.InterpretableConstructor:
		// Lists and maps answer with cel-go's one ListType and MapType;
		// only a type built anew at every ask is worth keeping.
		t := s.Type()
		if t == s.Type() {
			return i, nil
		}
		if jp := jsonPatchConstruction(s, t); jp != nil {
			return jp, nil
		}
		return &typeOnce{InterpretableConstructor: s, typ: t}, nil
	}
	return i, nil
}

// argsOnce is a call step whose arguments were asked for once, at planning.
type argsOnce struct {
	interpreter.InterpretableCall
	args []interpreter.InterpretableV2
}

// Args implements interpreter.InterpretableCall.
func (c *argsOnce) Args() []interpreter.InterpretableV2 { return c.args }

// typeOnce is a construction step whose type was asked for once, at
// planning.
type typeOnce struct {
	interpreter.InterpretableConstructor
	typ ref.Type
}

// Type implements interpreter.InterpretableConstructor.
func (c *typeOnce) Type() ref.Type { return c.typ }
