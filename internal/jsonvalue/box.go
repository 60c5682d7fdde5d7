package jsonvalue

import "unsafe"

// eface is the layout of an interface value, empty or not: its type (or
// itab) word and its data word, which points to the value when the value
// is not pointer-shaped (a string is not).
type eface struct {
	typ, data unsafe.Pointer
}

// stringType is the type word of a string held in an any.
var stringType = func() unsafe.Pointer {
	var a any = ""
	return (*eface)(unsafe.Pointer(&a)).typ
}()

// StringAt is any(*p) without a new box: the interface points to *p
// itself, which must not change afterwards (boxed values are immutable).
// It lets many strings be boxed into one array (Strings), or a string
// already boxed in another interface be taken as it is.
func StringAt(p *string) any {
	var a any
	e := (*eface)(unsafe.Pointer(&a))
	e.typ, e.data = stringType, unsafe.Pointer(p)
	return a
}

// DataOf is the data word of the interface value at p: for a value that
// is not pointer-shaped, a pointer to it.
func DataOf(p unsafe.Pointer) unsafe.Pointer {
	return (*eface)(p).data
}

// Strings boxes strings for JSON values (map[string]any, []any) many to an
// allocation: each string is stored in a slab whose slots are never
// written again, and the interface points to its slot. The zero value is
// ready for use; it is for one goroutine.
type Strings struct {
	slab []string
}

// stringsSlab is the number of strings a slab holds.
const stringsSlab = 64

// Box is any(s), from the slab.
func (b *Strings) Box(s string) any {
	if len(s) == 0 {
		return "" // no allocation
	}
	if len(b.slab) == cap(b.slab) {
		// A new slab: the boxes of the full one keep it alive.
		b.slab = make([]string, 0, stringsSlab)
	}
	b.slab = append(b.slab, s)
	return StringAt(&b.slab[len(b.slab)-1])
}
