package compiler

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

	"github.com/mutatis-dev/mutatis/internal/celobject"
)

// The one-element list a map or a filter appends at every iteration, in
// one allocation.
//
// cel-go expands `l.map(x, f)` into a comprehension whose step is
// `@result + [f]` (`filter`: `p ? @result + [x] : @result`, and the same
// for the two-variable transformList): at every iteration it builds the
// list literal `[f]` — evalList.Exec's slice of values, then
// types.NewRefValList's list, the closure it reads its items through and
// the slice header the closure captures, four allocations — only for the
// accumulator, which the fold made a mutable list when it found it empty
// (folder.ResolveName, not exhaustive evaluation), to read its one item
// back (mutableList.Add: Size, Get) and drop it.
//
// stepListsOf finds, in a checked AST, those list literals: one element,
// no optional one, the right operand of a `_+_` whose left one is the
// accumulator of the comprehension whose step it is in, the accumulator
// starting as an empty list literal. stepListOnce plans each of them, when
// cel-go planned it as its evalList and its element is not a constant
// (cel-go's Optimize, after this decorator, folds a list of constants
// into a constant: that one is left to it), as a stepList step, whose
// value is a oneList: the item and the adapter in one allocation.
//
// The cost observer sees the same: a construction (InterpretableConstructor)
// of the same ID, the same InitVals (the evalList's own slice) and the
// same Type (types.ListType), so it charges ListCreateBaseCost and drops
// the element's value from its stack as before; the `_+_` call finds the
// list's value on the stack under its ID as before, and a oneList answers
// Size as the list did. A oneList answers every method as cel-go's list
// of its one item does — Size, Get, Type, IsZeroValue directly, the rest
// through that list built on demand — so that even where it went further
// than the accumulator (it cannot, in a non-exhaustive fold) it would be
// the same value. TestOneListIsCelGosList holds every method to cel-go's
// list, TestStepListsPlanned that the macros' lists are planned so, and
// TestPlanOnceAgrees and FuzzPlanOnceAgrees the programs to cel-go's own
// plan (values, errors, costs, remaining budgets).

// stepListsOf returns the IDs of the list literals of a (see above), nil
// when it has none.
func stepListsOf(a *cel.Ast) map[int64]bool {
	if a == nil || a.NativeRep() == nil {
		return nil
	}
	var ids map[int64]bool
	ast.PostOrderVisit(a.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() != ast.ComprehensionKind {
			return
		}
		c := e.AsComprehension()
		if init := c.AccuInit(); init.Kind() != ast.ListKind || len(init.AsList().Elements()) != 0 {
			return
		}
		ast.PostOrderVisit(c.LoopStep(), ast.NewExprVisitor(func(s ast.Expr) {
			if id, ok := appendedList(s, c.AccuVar()); ok {
				if ids == nil {
					ids = map[int64]bool{}
				}
				ids[id] = true
			}
		}))
	}))
	return ids
}

// appendedList returns the ID of the list literal e appends to the
// accumulator accu, when e is `accu + [item]`.
func appendedList(e ast.Expr, accu string) (int64, bool) {
	if e.Kind() != ast.CallKind {
		return 0, false
	}
	call := e.AsCall()
	args := call.Args()
	if call.FunctionName() != operators.Add || call.IsMemberFunction() || len(args) != 2 {
		return 0, false
	}
	if args[0].Kind() != ast.IdentKind || args[0].AsIdent() != accu {
		return 0, false
	}
	l := args[1]
	if l.Kind() != ast.ListKind || len(l.AsList().Elements()) != 1 || len(l.AsList().OptionalIndices()) != 0 {
		return 0, false
	}
	return l.ID(), true
}

// stepListOnce returns the decorator that plans the lists of ids (from
// stepListsOf) as stepLists, with adapter, the environment's (the one
// cel-go's planner gives its evalList); nil when there are none.
func stepListOnce(ids map[int64]bool, adapter celtypes.Adapter) interpreter.InterpretableDecoratorV2 {
	if len(ids) == 0 {
		return nil
	}
	return func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		// cel-go's evalList, by name, as presentAttribute knows evalAttr.
		if !ids[i.ID()] || reflect.TypeOf(i).String() != "*interpreter.evalList" {
			return i, nil
		}
		c := i.(interpreter.InterpretableConstructor)
		vals := c.InitVals()
		if len(vals) != 1 || c.Type() != celtypes.ListType {
			return i, nil
		}
		if _, isConst := vals[0].(interpreter.InterpretableConst); isConst {
			return i, nil
		}
		return &stepList{id: i.ID(), vals: vals, adapter: adapter}, nil
	}
}

// stepList is the step of a one-element list literal a comprehension
// appends to its accumulator: evalList.Exec (cel-go v0.29.2) for a list
// without optional elements, its value a oneList.
type stepList struct {
	id      int64
	vals    []interpreter.InterpretableV2
	adapter celtypes.Adapter
	// lists are where the oneLists are taken from, sixteen to an
	// allocation (celobject.Slab).
	lists celobject.Slab[oneList]
}

var _ interpreter.InterpretableConstructor = (*stepList)(nil)

// ID implements interpreter.Interpretable.
func (s *stepList) ID() int64 { return s.id }

// Exec implements interpreter.InterpretableV2: the element's value, or its
// error or unknown as evalList returns it.
func (s *stepList) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	v := s.vals[0].Exec(frame)
	if celtypes.IsUnknownOrError(v) {
		return v
	}
	l := s.lists.New()
	l.adapter, l.item = s.adapter, v
	return l
}

// Eval implements interpreter.Interpretable.
func (s *stepList) Eval(vars interpreter.Activation) ref.Val {
	return s.Exec(interpreter.AsFrame(vars))
}

// InitVals implements interpreter.InterpretableConstructor: the evalList's
// own.
func (s *stepList) InitVals() []interpreter.InterpretableV2 { return s.vals }

// Type implements interpreter.InterpretableConstructor, as evalList's.
func (s *stepList) Type() ref.Type { return celtypes.ListType }

// oneList is cel-go's list of one item (types.NewRefValList(adapter,
// []ref.Val{item})) in one allocation.
type oneList struct {
	adapter celtypes.Adapter
	item    ref.Val
}

var (
	_ traits.Lister   = (*oneList)(nil)
	_ traits.Zeroer   = (*oneList)(nil)
	_ traits.Foldable = (*oneList)(nil)
)

// full is cel-go's list of l's item.
func (l *oneList) full() traits.Lister {
	return celtypes.NewRefValList(l.adapter, []ref.Val{l.item})
}

// Size implements traits.Sizer.
func (l *oneList) Size() ref.Val { return celtypes.IntOne }

// Get implements traits.Indexer, as cel-go's baseList.Get: the item
// through the adapter, the same errors.
func (l *oneList) Get(i ref.Val) ref.Val {
	ind, err := celtypes.IndexOrError(i)
	if err != nil {
		return celtypes.ValOrErr(i, "%v", err)
	}
	if ind != 0 {
		return celtypes.NewErr("index '%d' out of range in list size '%d'", ind, l.Size())
	}
	return l.adapter.NativeToValue(l.item)
}

// Type implements ref.Val.
func (l *oneList) Type() ref.Type { return celtypes.ListType }

// IsZeroValue implements traits.Zeroer: a list of one item is not empty.
func (l *oneList) IsZeroValue() bool { return false }

// Add implements traits.Adder.
func (l *oneList) Add(o ref.Val) ref.Val { return l.full().Add(o) }

// Contains implements traits.Container.
func (l *oneList) Contains(e ref.Val) ref.Val { return l.full().Contains(e) }

// ConvertToNative implements ref.Val.
func (l *oneList) ConvertToNative(t reflect.Type) (any, error) { return l.full().ConvertToNative(t) }

// ConvertToType implements ref.Val.
func (l *oneList) ConvertToType(t ref.Type) ref.Val { return l.full().ConvertToType(t) }

// Equal implements ref.Val.
func (l *oneList) Equal(o ref.Val) ref.Val { return l.full().Equal(o) }

// Iterator implements traits.Iterable.
func (l *oneList) Iterator() traits.Iterator { return l.full().Iterator() }

// Fold implements traits.Foldable.
func (l *oneList) Fold(f traits.Folder) { l.full().(traits.Foldable).Fold(f) }

// Value implements ref.Val: the []ref.Val of cel-go's list.
func (l *oneList) Value() any { return []ref.Val{l.item} }

// String is cel-go's list's String.
func (l *oneList) String() string {
	if s, ok := l.full().(interface{ String() string }); ok {
		return s.String()
	}
	return ""
}

// outList is cel-go's list of items (types.NewRefValList(adapter, items)),
// the value of a list literal only an ApplyConfiguration's reader reads
// (outputObjectsOf, listOnce), in one allocation for up to two items:
// cel-go's evalList makes the slice of its items, then NewRefValList its
// list and the closure it reads the items through. It answers Size, Get,
// Type, IsZeroValue and Value (the items, as cel-go's list's Value) itself
// and every other method through cel-go's list of its items built on
// demand. TestOutListIsCelGosList holds every method to cel-go's list.
type outList struct {
	adapter celtypes.Adapter
	items   []ref.Val
	buf     [2]ref.Val
}

var (
	_ celobject.ItemList = (*outList)(nil)
	_ traits.Lister      = (*outList)(nil)
	_ traits.Zeroer      = (*outList)(nil)
	_ traits.Foldable    = (*outList)(nil)
)

// newOutList returns an empty outList of adapter with room for n items.
func newOutList(adapter celtypes.Adapter, n int) *outList {
	return new(outList).init(adapter, n)
}

// init makes the zero outList l an empty outList of adapter with room for
// n items (newOutList), and returns it.
func (l *outList) init(adapter celtypes.Adapter, n int) *outList {
	l.adapter = adapter
	if n <= len(l.buf) {
		l.items = l.buf[:0]
	} else {
		l.items = make([]ref.Val, 0, n)
	}
	return l
}

// full is cel-go's list of l's items.
func (l *outList) full() traits.Lister { return celtypes.NewRefValList(l.adapter, l.items) }

// Size implements traits.Sizer.
func (l *outList) Size() ref.Val { return celtypes.Int(len(l.items)) }

// Get implements traits.Indexer, as cel-go's baseList.Get: the item
// through the adapter, the same errors.
func (l *outList) Get(i ref.Val) ref.Val {
	ind, err := celtypes.IndexOrError(i)
	if err != nil {
		return celtypes.ValOrErr(i, "%v", err)
	}
	if ind < 0 || ind >= len(l.items) {
		return celtypes.NewErr("index '%d' out of range in list size '%d'", ind, l.Size())
	}
	return l.adapter.NativeToValue(l.items[ind])
}

// Type implements ref.Val.
func (l *outList) Type() ref.Type { return celtypes.ListType }

// IsZeroValue implements traits.Zeroer.
func (l *outList) IsZeroValue() bool { return len(l.items) == 0 }

// Value implements ref.Val: the []ref.Val of cel-go's list.
func (l *outList) Value() any { return l.items }

// Items implements celobject.ItemList.
func (l *outList) Items() []ref.Val { return l.items }

// Add implements traits.Adder.
func (l *outList) Add(o ref.Val) ref.Val { return l.full().Add(o) }

// Contains implements traits.Container.
func (l *outList) Contains(e ref.Val) ref.Val { return l.full().Contains(e) }

// ConvertToNative implements ref.Val.
func (l *outList) ConvertToNative(t reflect.Type) (any, error) { return l.full().ConvertToNative(t) }

// ConvertToType implements ref.Val.
func (l *outList) ConvertToType(t ref.Type) ref.Val { return l.full().ConvertToType(t) }

// Equal implements ref.Val.
func (l *outList) Equal(o ref.Val) ref.Val { return l.full().Equal(o) }

// Iterator implements traits.Iterable.
func (l *outList) Iterator() traits.Iterator { return l.full().Iterator() }

// Fold implements traits.Foldable.
func (l *outList) Fold(f traits.Folder) { l.full().(traits.Foldable).Fold(f) }

// String is cel-go's list's String.
func (l *outList) String() string {
	if s, ok := l.full().(fmt.Stringer); ok {
		return s.String()
	}
	return ""
}

// listOnce is the step of a list literal without optional elements whose
// value only an ApplyConfiguration's reader reads: evalList.Exec (cel-go
// v0.29.2), its value an outList.
type listOnce struct {
	id      int64
	vals    []interpreter.InterpretableV2
	adapter celtypes.Adapter
	// lists are where the outLists are taken from, sixteen to an
	// allocation (celobject.Slab).
	lists celobject.Slab[outList]
}

var _ interpreter.InterpretableConstructor = (*listOnce)(nil)

// outputList returns i, a step of cel-go's planning, as a listOnce when it
// is cel-go's evalList (by name, as stepListOnce knows it) of the list
// type without optional elements (its InitVals are then its items) and
// not all of its items constants (cel-go's Optimize folds those); nil
// otherwise.
func outputList(i interpreter.InterpretableV2, adapter celtypes.Adapter) *listOnce {
	if reflect.TypeOf(i).String() != "*interpreter.evalList" {
		return nil
	}
	c := i.(interpreter.InterpretableConstructor)
	if c.Type() != celtypes.ListType {
		return nil
	}
	vals := c.InitVals()
	for _, v := range vals {
		if _, isConst := v.(interpreter.InterpretableConst); !isConst {
			return &listOnce{id: i.ID(), vals: vals, adapter: adapter}
		}
	}
	return nil
}

// ID implements interpreter.Interpretable.
func (s *listOnce) ID() int64 { return s.id }

// Exec implements interpreter.InterpretableV2: the items' values in order,
// the first error or unknown returned as evalList returns it.
func (s *listOnce) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	l := s.lists.New().init(s.adapter, len(s.vals))
	for _, e := range s.vals {
		v := e.Exec(frame)
		if celtypes.IsUnknownOrError(v) {
			return v
		}
		l.items = append(l.items, v)
	}
	return l
}

// Eval implements interpreter.Interpretable.
func (s *listOnce) Eval(vars interpreter.Activation) ref.Val {
	return s.Exec(interpreter.AsFrame(vars))
}

// InitVals implements interpreter.InterpretableConstructor: the evalList's
// own.
func (s *listOnce) InitVals() []interpreter.InterpretableV2 { return s.vals }

// Type implements interpreter.InterpretableConstructor, as evalList's.
func (s *listOnce) Type() ref.Type { return celtypes.ListType }
