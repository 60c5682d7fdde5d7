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
//
// An evaluation made while the first frame is held (a variable resolved
// inside an expression, itself perhaps inside another variable; a
// concurrent caller) takes the next free one of a few more, bound to the
// same context on first use: a frame per level of nesting, each held by
// one evaluation at a time, as ContextEval's frame each would be.
type sharedFrame struct {
	// ctx is the context the frames are bound to.
	ctx context.Context
	// done is the Done channel of the context the frame was bound to: an
	// evaluation under a context with another (its own deadline) does not
	// use the frame.
	done <-chan struct{}
	// slots are the frames: the first bound by WithSharedFrame, the others
	// when an evaluation first finds those before them held.
	slots [sharedFrames]frameSlot
}

// sharedFrames is how many evaluations can hold a shared frame at once:
// an expression and three levels of variables inside it. One more binds
// a frame of its own, as before.
const sharedFrames = 4

// frameSlot is one frame of a sharedFrame.
type frameSlot struct {
	// busy is set while an evaluation holds the frame, and for good once
	// it is released. An evaluation that finds it set goes on to the next.
	busy atomic.Bool
	// frame is nil until first used (but for the first); only the holder
	// of busy reads or sets it.
	frame *interpreter.ExecutionFrame
}

// WithSharedFrame returns ctx carrying an execution frame for the CEL
// evaluations made under it (through Activation.Eval) one at a time, a few
// more for the evaluations nested in them (variables), and the function
// that releases the frames, to call once they are over. The results are
// those of evaluating with a frame each: a frame is used only while ctx is
// not done, by one evaluation at a time. A context without a
// Done channel is returned as it is (evaluations under it need no frame).
func WithSharedFrame(ctx context.Context) (context.Context, func()) {
	done := ctx.Done()
	if done == nil {
		return ctx, func() {}
	}
	frame, err := boundFrame(ctx)
	if err != nil {
		return ctx, func() {}
	}
	s := &sharedFrame{ctx: ctx, done: done}
	s.slots[0].frame = frame
	return context.WithValue(ctx, frameKey{}, s), s.release
}

// boundFrame returns a frame of cel-go's pool bound to ctx, as
// ContextEval binds one.
func boundFrame(ctx context.Context) (*interpreter.ExecutionFrame, error) {
	frame, err := interpreter.NewExecutionFrame(interpreter.EmptyActivation())
	if err != nil {
		return nil, err
	}
	if err := frame.SetContext(ctx, celconfig.CheckFrequency); err != nil {
		frame.Close()
		return nil, err
	}
	return frame, nil
}

// release returns the frames to cel-go's pool, but one an evaluation holds
// (a caller that released too early): that one is left to the collector.
func (s *sharedFrame) release() {
	for i := range s.slots {
		slot := &s.slots[i]
		if slot.busy.CompareAndSwap(false, true) && slot.frame != nil {
			slot.frame.Close()
			slot.frame = nil
		}
	}
}

// hold returns the first free frame of s, bound on first use, held until
// its caller stores false in busy; nil when every one is held (or s is
// released).
func (s *sharedFrame) hold() *frameSlot {
	for i := range s.slots {
		slot := &s.slots[i]
		if !slot.busy.CompareAndSwap(false, true) {
			continue
		}
		if slot.frame == nil {
			frame, err := boundFrame(s.ctx)
			if err != nil {
				slot.busy.Store(false)
				return nil
			}
			slot.frame = frame
		}
		return slot
	}
	return nil
}

// evalShared evaluates program against a in the frame ctx carries, when
// there is one bound to ctx's Done channel, ctx is not done and the frame
// is free; ok is false otherwise. Its results are ContextEval's, the
// interrupt error wrapped with the context's cause as ContextEval wraps it.
func (a *Activation) evalShared(program cel.Program, done <-chan struct{}) (val ref.Val, det *cel.EvalDetails, ok bool, err error) {
	s, _ := a.ctx.Value(frameKey{}).(*sharedFrame)
	if s == nil || s.done != done || a.ctx.Err() != nil {
		return nil, nil, false, nil
	}
	slot := s.hold()
	if slot == nil {
		return nil, nil, false, nil
	}
	frame := slot.frame
	defer func() {
		frame.Activation = interpreter.EmptyActivation()
		slot.busy.Store(false)
	}()
	frame.Activation = a
	val, det, err = program.Eval(frame)
	if err != nil && errors.Is(err, interpreter.InterruptError{}) {
		err = fmt.Errorf("%w: %w", err, context.Cause(a.ctx))
	}
	return val, det, true, err
}
