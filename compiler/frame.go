package compiler

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// frameKey is the context key of a sharedFrame.
type frameKey struct{}

// sharedFrame is one cel-go execution frame, bound to a context once, that
// the evaluations made under that context reuse one after the other instead
// of each binding a frame of its own (cel-go's ContextEval derives a
// cancellable context per evaluation). cel-go's Program.Eval takes an
// ExecutionFrame as its input for this; each evaluation starts its own cost
// tracker in it (ObservableInterpretable.ObserveExec), so nothing but the
// interrupt state is shared, and that only while the context is not done.
type sharedFrame struct {
	frame *interpreter.ExecutionFrame
	// done is the Done channel of the context the frame was bound to: an
	// evaluation under a context with another (its own deadline) does not
	// use the frame.
	done <-chan struct{}
	// busy is set while an evaluation holds the frame, and for good once it
	// is released. An evaluation that finds it set (a variable evaluated
	// inside an expression, a concurrent caller) binds a frame of its own.
	busy atomic.Bool
}

// WithSharedFrame returns ctx carrying one execution frame for the CEL
// evaluations made under it (through Activation.Eval) one at a time, and
// the function that releases the frame, to call once they are over. The
// results are those of evaluating with a frame each: the frame is used only
// while ctx is not done, by one evaluation at a time. A context without a
// Done channel is returned as it is (evaluations under it need no frame).
func WithSharedFrame(ctx context.Context) (context.Context, func()) {
	done := ctx.Done()
	if done == nil {
		return ctx, func() {}
	}
	frame, err := interpreter.NewExecutionFrame(interpreter.EmptyActivation())
	if err != nil {
		return ctx, func() {}
	}
	if err := frame.SetContext(ctx, celconfig.CheckFrequency); err != nil {
		frame.Close()
		return ctx, func() {}
	}
	s := &sharedFrame{frame: frame, done: done}
	return context.WithValue(ctx, frameKey{}, s), s.release
}

// release returns the frame to cel-go's pool, unless an evaluation holds it
// (a caller that released too early): then it is left to the collector.
func (s *sharedFrame) release() {
	if s.busy.CompareAndSwap(false, true) {
		s.frame.Close()
	}
}

// evalShared evaluates program against a in the frame ctx carries, when
// there is one bound to ctx's Done channel, ctx is not done and the frame
// is free; ok is false otherwise. Its results are ContextEval's, the
// interrupt error wrapped with the context's cause as ContextEval wraps it.
func (a *Activation) evalShared(program cel.Program, done <-chan struct{}) (val ref.Val, det *cel.EvalDetails, ok bool, err error) {
	s, _ := a.ctx.Value(frameKey{}).(*sharedFrame)
	if s == nil || s.done != done || a.ctx.Err() != nil || !s.busy.CompareAndSwap(false, true) {
		return nil, nil, false, nil
	}
	defer func() {
		s.frame.Activation = interpreter.EmptyActivation()
		s.busy.Store(false)
	}()
	s.frame.Activation = a
	val, det, err = program.Eval(s.frame)
	if err != nil && errors.Is(err, interpreter.InterruptError{}) {
		err = fmt.Errorf("%w: %w", err, context.Cause(a.ctx))
	}
	return val, det, true, err
}
