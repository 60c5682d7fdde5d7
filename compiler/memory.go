package compiler

import (
	"context"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
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
// those held by lists and maps) at limit; zero or negative means no bound.
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

// valueBytes is the bytes of the strings and bytes v holds, looking into
// lists and maps (up to maxSizedDepth levels). Values read from the
// object are counted too, though they share its memory: the bound is
// meant for what no real policy approaches.
func valueBytes(v ref.Val, depth int) int64 {
	switch v := v.(type) {
	case celtypes.String:
		return int64(len(v))
	case celtypes.Bytes:
		return int64(len(v))
	}
	if depth >= maxSizedDepth {
		return 0
	}
	var n int64
	switch v := v.(type) {
	case traits.Mapper:
		for it := v.Iterator(); it.HasNext() == celtypes.True; {
			k := it.Next()
			n += valueBytes(k, depth+1) + valueBytes(v.Get(k), depth+1)
		}
	case traits.Lister:
		for it := v.Iterator(); it.HasNext() == celtypes.True; {
			n += valueBytes(it.Next(), depth+1)
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
