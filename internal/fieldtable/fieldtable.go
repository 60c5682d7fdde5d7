// Package fieldtable looks struct fields up by name with one probe: a
// perfect hash over the name's length and first and last bytes, searched
// for once, when the table is built. The walks over objects that check
// every key against a schema or a Go type (the engine's normalizer, the
// applyconfig validation and merge) look up one field per key of every
// object; a Go map hashes the whole key each time.
package fieldtable

import "iter"

// Table maps field names to values of type V. A Table is immutable once
// built and safe for concurrent use. The zero Table is empty.
type Table[V any] struct {
	slots []slot[V] // nil: use byName
	mult  uint32
	shift uint8
	// byName is the map lookup, for the field sets no perfect hash was
	// found for.
	byName map[string]V
}

// slot holds the name next to the value, so that a probe reads one slot.
type slot[V any] struct {
	name string
	v    V
	used bool
}

// New builds the table of fields. fields is kept (and must not be modified
// afterwards) when no perfect hash is found.
func New[V any](fields map[string]V) Table[V] {
	t := Table[V]{byName: fields}
	if len(fields) == 0 {
		return t
	}
	bits := uint8(1)
	for 1<<bits < 2*len(fields) {
		bits++
	}
	for ; bits <= 12 && 1<<bits <= 16*len(fields); bits++ {
		mult := uint32(0x9E3779B1)
	candidates:
		for range 256 {
			mult = mult*1664525 + 1013904223 | 1 // odd multipliers from an LCG
			slots := make([]slot[V], 1<<bits)
			for name, v := range fields {
				if name == "" {
					return t // hash 0 is shared with other names; keep the map
				}
				s := &slots[hash(name, mult, 32-bits)]
				if s.used {
					continue candidates
				}
				*s = slot[V]{name, v, true}
			}
			t.slots, t.mult, t.shift = slots, mult, 32-bits
			return t
		}
	}
	return t
}

// hash hashes a name into 32-shift bits (multiplicative hashing of its
// length and first and last bytes).
func hash(k string, mult uint32, shift uint8) uint32 {
	n := len(k)
	if n == 0 {
		return 0
	}
	return ((uint32(n)<<16 | uint32(k[0])<<8 | uint32(k[n-1])) * mult) >> shift
}

// Get returns the value of the field named k, and whether there is one.
func (t *Table[V]) Get(k string) (V, bool) {
	if t.slots == nil {
		v, ok := t.byName[k]
		return v, ok
	}
	if s := &t.slots[hash(k, t.mult, t.shift)]; s.used && s.name == k {
		return s.v, true
	}
	var zero V
	return zero, false
}

// Perfect reports whether t probes once (a perfect hash was found) rather
// than looking names up in the map it was built from.
func (t *Table[V]) Perfect() bool { return t.slots != nil }

// All yields every field's name and value, in no particular order.
func (t *Table[V]) All() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		if t.slots == nil {
			for k, v := range t.byName {
				if !yield(k, v) {
					return
				}
			}
			return
		}
		for _, s := range t.slots {
			if s.used && !yield(s.name, s.v) {
				return
			}
		}
	}
}

// Len is the number of fields.
func (t *Table[V]) Len() int {
	if t.slots == nil {
		return len(t.byName)
	}
	n := 0
	for _, s := range t.slots {
		if s.used {
			n++
		}
	}
	return n
}
