package compiler

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apiserver/pkg/cel/library"
)

// The memory of one policy's evaluation is bounded, when the context asks
// for it, by the bytes its variables' values hold.
//
// kube-apiserver's cost model charges some string functions by their
// receiver, not by what they build: `'xx'.replace('x', variables.v)` costs 1
// and doubles v, so 30 variables build a string of 1 GiB at a runtime cost
// of about 200, far under every limit (measured with `mutatis apply`: 30 s
// and 2.2 GB RSS). kube-apiserver would build it too; `mutatis serve` must
// not let one policy take a replica's memory, so it sets a bound
// (--max-variable-bytes) and a variable whose value takes the bytes of the
// variables evaluated past it fails to evaluate, as a variable past the
// cost limit does (the policy's failurePolicy applies). The other commands
// evaluate as kube-apiserver does, without a bound.

type variableBytesKey struct{}

// WithVariableBytesLimit returns ctx asking the activations created with it
// to bound the bytes of their variables' values (strings and bytes, and
// those held by lists and maps) at limit, and apart the bytes of the
// strings and bytes their evaluations' function calls return; zero or
// negative means no bound.
func WithVariableBytesLimit(ctx context.Context, limit int64) context.Context {
	return context.WithValue(ctx, variableBytesKey{}, limit)
}

func variableBytesLimit(ctx context.Context) int64 {
	if ctx == nil {
		return 0
	}
	n, _ := ctx.Value(variableBytesKey{}).(int64)
	return n
}

// maxSizedDepth bounds how deep valueBytes looks into lists and maps.
const maxSizedDepth = 8

// valueBytes is valueBytesReference, read from the Go maps and slices
// under v where v is cel-go's view of them or mutatis' own (mapView,
// listView: a part of the object, most variables' values): the reference
// walks the view, which presents every map and list it meets as a CEL
// value of its own (an iterator, and for a map its keys, each), only to
// count the strings in it (TestValueBytesFast).
func valueBytes(v ref.Val, depth int) int64 {
	return valueBytesFast(v, depth)
}

// The views of Go maps and slices cel-go makes (NewStringInterfaceMap,
// NewDynamicList), by their types and the types of the Go values they
// present.
var (
	goMapView  = reflect.TypeOf(celtypes.NewStringInterfaceMap(celtypes.DefaultTypeAdapter, map[string]any{}))
	goListView = reflect.TypeOf(celtypes.NewDynamicList(celtypes.DefaultTypeAdapter, []any{}))
)

func valueBytesFast(v ref.Val, depth int) int64 {
	if n, leaf := leafBytes(v, depth); leaf {
		return n
	}
	switch v := v.(type) {
	case mapView:
		return goMapBytes(v.goMap(), depth)
	case listView:
		return goListBytes(*v.p, depth)
	}
	switch t := reflect.TypeOf(v); {
	case t == goMapView:
		if m, ok := v.Value().(map[string]any); ok {
			return goMapBytes(m, depth)
		}
	case t == goListView:
		switch l := v.Value().(type) {
		case []any:
			return goListBytes(l, depth)
		case []ref.Val:
			// A list of CEL values (types.NewRefValList: list literals,
			// the results of map and filter), whose Get is the element
			// itself: counted without an iterator.
			return refValListBytes(l, depth)
		}
	}
	return containerBytes(v, depth, valueBytesFast)
}

// refValListBytes is valueBytesReference of cel-go's list of the CEL
// values l at depth: its iterator yields Get of each index, the element
// as it is (every adapter gives a ref.Val back unchanged).
func refValListBytes(l []ref.Val, depth int) int64 {
	var n int64
	for _, e := range l {
		n += valueBytesFast(e, depth+1)
	}
	return n
}

// goMapBytes is valueBytesReference of the view of m at depth: its keys
// are strings, its values are presented as the view presents them.
func goMapBytes(m map[string]any, depth int) int64 {
	var n int64
	for k, e := range m {
		n += int64(len(k)) + goValueBytes(e, depth+1)
	}
	return n
}

func goListBytes(l []any, depth int) int64 {
	var n int64
	for _, e := range l {
		n += goValueBytes(e, depth+1)
	}
	return n
}

// goValueBytes is valueBytesReference of the CEL value of e (a value of
// a view) at depth, without presenting the maps and slices; other values
// are presented as the view presents them.
func goValueBytes(e any, depth int) int64 {
	switch e := e.(type) {
	case string:
		return int64(len(e))
	case nil, bool, int64, float64, int, int32, uint64:
		return 0
	case map[string]any:
		if depth >= maxSizedDepth {
			return 0
		}
		return goMapBytes(e, depth)
	case []any:
		if depth >= maxSizedDepth {
			return 0
		}
		return goListBytes(e, depth)
	}
	return valueBytesFast(celtypes.DefaultTypeAdapter.NativeToValue(e), depth)
}

// valueBytesReference is the bytes of the strings and bytes v holds,
// looking into lists and maps (up to maxSizedDepth levels). Values read
// from the object are counted too, though they share its memory: the
// bound is meant for what no real policy approaches.
func valueBytesReference(v ref.Val, depth int) int64 {
	if n, leaf := leafBytes(v, depth); leaf {
		return n
	}
	return containerBytes(v, depth, valueBytesReference)
}

// leafBytes is the bytes of v when v is not looked into: a string or
// bytes, or anything at maxSizedDepth; leaf is false otherwise.
func leafBytes(v ref.Val, depth int) (n int64, leaf bool) {
	switch v := v.(type) {
	case celtypes.String:
		return int64(len(v)), true
	case celtypes.Bytes:
		return int64(len(v)), true
	}
	return 0, depth >= maxSizedDepth
}

// containerBytes is the bytes of the keys and values of map v, or of the
// elements of list v, each counted by count at depth+1; zero for other
// values.
func containerBytes(v ref.Val, depth int, count func(ref.Val, int) int64) int64 {
	var n int64
	switch v := v.(type) {
	case traits.Mapper:
		for it := v.Iterator(); it.HasNext() == celtypes.True; {
			k := it.Next()
			n += count(k, depth+1) + count(v.Get(k), depth+1)
		}
	case traits.Lister:
		for it := v.Iterator(); it.HasNext() == celtypes.True; {
			n += count(it.Next(), depth+1)
		}
	}
	return n
}

// chargeVariableBytes adds the bytes of a variable's value to the
// activation's and fails the variable when they pass the bound.
func (a *Activation) chargeVariableBytes(v *Expression, val ref.Val) ref.Val {
	if a.variableBytesLimit <= 0 || celtypes.IsError(val) {
		return val
	}
	a.variableBytes += valueBytes(val, 0)
	if a.variableBytes > a.variableBytesLimit {
		return celtypes.NewErr("composited variable %q fails to evaluate: the values of the variables evaluated hold %d bytes, more than the bound of %d bytes per evaluation (mutatis serve --max-variable-bytes)", v.Name, a.variableBytes, a.variableBytesLimit)
	}
	return val
}

// One expression can build large strings without a variable, too: a
// string doubled through chained map()s, `[[['x'].map(s, s+s)]...]`, is 8
// MiB after 23 levels, at a runtime cost under every limit. So, under the
// same bound, `mutatis serve` adds up the bytes of the strings and bytes
// every function call of the evaluation returns (cel-go asks the cost
// estimator for the cost of every call, with its result) and stops the
// evaluation when they pass it, as the cost limit stops it. The programs
// that count are kube-apiserver's, built with a counting estimator that
// returns upstream's cost unchanged (library.CostEstimator, the runtime
// estimator of environment.StrictCostOpt): results and costs below the
// bound are the same. cel-go gives the estimator no evaluation state, so
// each counting program serves one evaluation at a time (boundedPrograms).

// bytesEstimator is kube-apiserver's runtime cost estimator, counting the
// bytes of the strings and bytes the calls return into act.
type bytesEstimator struct {
	upstream library.CostEstimator
	act      *Activation
}

// CallCost implements interpreter.ActualCostEstimator.
func (b *bytesEstimator) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	cost := b.upstream.CallCost(function, overloadID, args, result)
	a := b.act
	if a == nil || a.variableBytesLimit <= 0 {
		return cost
	}
	switch r := result.(type) {
	case celtypes.String:
		a.builtBytes += int64(len(r))
	case celtypes.Bytes:
		a.builtBytes += int64(len(r))
	default:
		return cost
	}
	if a.builtBytes > a.variableBytesLimit {
		panic(interpreter.EvalCancelledError{Cause: interpreter.CostLimitExceeded,
			Message: fmt.Sprintf("operation cancelled: the strings and bytes the evaluation built hold %d bytes, more than the bound of %d bytes per evaluation (mutatis serve --max-variable-bytes)", a.builtBytes, a.variableBytesLimit)})
	}
	return cost
}

// boundedProgram is a program built with its own bytesEstimator.
type boundedProgram struct {
	prog cel.Program
	est  *bytesEstimator
}

// boundedPrograms are the counting programs of one expression not in use.
type boundedPrograms struct {
	mu   sync.Mutex
	free []*boundedProgram
	// failed is set when one could not be built: the shared program, and
	// its error, are used then.
	failed bool
}

// boundedProgram returns a counting program of e charging a, building one
// when none is free, or nil when it cannot be built (the evaluation then
// builds the shared program, which fails with kube-apiserver's error).
// release returns it. Each counting program is about the size of the
// shared one (cel-go builds a dispatcher per program): an expression
// evaluated by k requests at once under serve keeps k of them.
func (e *Expression) boundedProgram(a *Activation) *boundedProgram {
	if e.prog == nil || e.env == nil || e.ast == nil {
		return nil
	}
	bp := &e.prog.bounded
	bp.mu.Lock()
	if bp.failed {
		bp.mu.Unlock()
		return nil
	}
	if n := len(bp.free); n > 0 {
		p := bp.free[n-1]
		bp.free = bp.free[:n-1]
		bp.mu.Unlock()
		p.est.act = a
		return p
	}
	bp.mu.Unlock()
	est := &bytesEstimator{act: a}
	prog, err := e.env.Program(e.ast, append(programOptionsFor(e.env, e.ast, e.prog.celValues, e.Kind), cel.CostTracking(est))...)
	if err != nil {
		bp.mu.Lock()
		bp.failed = true
		bp.mu.Unlock()
		return nil
	}
	return &boundedProgram{prog: prog, est: est}
}

// release makes p free for another evaluation of e; a nil p (the shared
// program was used) is nothing to release.
func (e *Expression) release(p *boundedProgram) {
	if p == nil {
		return
	}
	p.est.act = nil
	bp := &e.prog.bounded
	bp.mu.Lock()
	bp.free = append(bp.free, p)
	bp.mu.Unlock()
}
