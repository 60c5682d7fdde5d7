package engine

// fieldTable looks a struct's fields up by JSON name with one probe: a
// perfect hash over the name's length and first and last bytes, found when
// the plan is built. It replaces the Go map of the walk's innermost loop
// (a string hash per key of every object walked). Field sets no perfect
// hash is found for keep the map.
type fieldTable struct {
	slots []fieldSlot // nil: use byName
	mult  uint32
	shift uint8
	// byName is the map lookup, for the field sets no perfect hash was
	// found for.
	byName map[string]*field
}

// fieldSlot holds the name next to the field, so that a probe reads one
// slot.
type fieldSlot struct {
	name string
	f    *field
}

// newFieldTable builds the table of fields.
func newFieldTable(fields map[string]*field) fieldTable {
	t := fieldTable{byName: fields}
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
			slots := make([]fieldSlot, 1<<bits)
			for name, f := range fields {
				i := fieldHash(name, mult, 32-bits)
				if slots[i].f != nil {
					continue candidates
				}
				slots[i] = fieldSlot{name, f}
			}
			t.slots, t.mult, t.shift = slots, mult, 32-bits
			return t
		}
	}
	return t
}

// fieldHash hashes a field name into 32-shift bits (multiplicative
// hashing of its length and first and last bytes).
func fieldHash(k string, mult uint32, shift uint8) uint32 {
	n := len(k)
	if n == 0 {
		return 0
	}
	return ((uint32(n)<<16 | uint32(k[0])<<8 | uint32(k[n-1])) * mult) >> shift
}

// get returns the field named k, or nil.
func (t *fieldTable) get(k string) *field {
	if t.slots == nil {
		return t.byName[k]
	}
	if s := &t.slots[fieldHash(k, t.mult, t.shift)]; s.name == k {
		return s.f
	}
	return nil
}
