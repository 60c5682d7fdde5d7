// Package fieldtable looks struct fields up by name with one probe: a
// perfect hash over the name's length and first and last eight bytes,
// searched for once, when the table is built. The walks over objects that check
// every key against a schema or a Go type (the engine's normalizer, the
// applyconfig validation and merge) look up one field per key of every
// object; a Go map hashes the whole key each time.
package fieldtable

import (
	"iter"
	"math/bits"
)

// Table maps field names to values of type V. A Table is immutable once
// built and safe for concurrent use. The zero Table is empty.
type Table[V any] struct {
	slots []slot[V] // nil: use byName
	mult  uint64
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
	names := make([]string, 0, len(fields))
	for name := range fields {
		if name == "" {
			return t // hash 0 is shared with other names; keep the map
		}
		names = append(names, name)
	}
	bits := uint8(1)
	for 1<<bits < 2*len(fields) {
		bits++
	}
	// taken[i] == round marks slot i used in the current candidate, so that
	// one buffer serves every candidate without clearing.
	var taken []uint16
	round := uint16(0)
	for ; bits <= 12 && 1<<bits <= 16*len(fields); bits++ {
		taken = make([]uint16, 1<<bits)
		round = 0
		mult := uint64(0x9E3779B97F4A7C15)
	candidates:
		for range 256 {
			mult = mult*6364136223846793005 + 1442695040888963407 | 1 // odd multipliers from an LCG
			round++
			for _, name := range names {
				i := hash(name, mult, 64-bits)
				if taken[i] == round {
					continue candidates
				}
				taken[i] = round
			}
			slots := make([]slot[V], 1<<bits)
			for _, name := range names {
				slots[hash(name, mult, 64-bits)] = slot[V]{name, fields[name], true}
			}
			t.slots, t.mult, t.shift = slots, mult, 64-bits
			return t
		}
	}
	return t
}

// hash hashes a name into 64-shift bits: multiplicative hashing of a word
// made of its length and of its first and last eight bytes (all of its
// bytes, for names of up to 16).
func hash(k string, mult uint64, shift uint8) uint32 {
	n := len(k)
	var x uint64
	switch {
	case n >= 8:
		x = le64(k) ^ bits.RotateLeft64(le64(k[n-8:]), 31)
	case n >= 4:
		x = uint64(le32(k)) | uint64(le32(k[n-4:]))<<32
	case n > 0:
		x = uint64(k[0]) | uint64(k[n/2])<<8 | uint64(k[n-1])<<16
	}
	x ^= uint64(n) << 56
	return uint32((x * mult) >> shift)
}

// le32 reads the first four bytes of s, little-endian.
func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// le64 reads the first eight bytes of s, little-endian.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
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
