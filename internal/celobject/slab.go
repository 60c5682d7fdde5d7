package celobject

import (
	"sync/atomic"

	"github.com/google/cel-go/common/types"
)

// Slab hands out new values of T, zeroed, from blocks of slabSize made one
// at a time: one allocation for slabSize small values an evaluation
// builds (Objects, optionals) where each was one. A slot is handed out
// once and never again, so a value stays its holder's for as long as it
// is held (a block lives while any of its values is reachable); the
// values are as new as new(T)'s. Safe for concurrent use: the plan step
// that holds a Slab serves every evaluation of its program. The zero
// Slab is ready to use.
type Slab[T any] struct {
	cur atomic.Pointer[slabBlock[T]]
}

// slabSize is how many values a block holds.
const slabSize = 16

type slabBlock[T any] struct {
	next  atomic.Int32
	items [slabSize]T
}

// New returns a new zero T of s.
func (s *Slab[T]) New() *T {
	for {
		b := s.cur.Load()
		if b != nil {
			if i := b.next.Add(1) - 1; i < slabSize {
				return &b.items[i]
			}
		}
		nb := new(slabBlock[T])
		nb.next.Store(1)
		if s.cur.CompareAndSwap(b, nb) {
			return &nb.items[0]
		}
	}
}

// NewObjectIn is NewObject, the Object taken from s.
func NewObjectIn(s *Slab[Object], typ *types.Type, names []string) *Object {
	o := s.New()
	o.init(typ, names)
	return o
}
