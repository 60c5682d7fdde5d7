package jsonvalue

import (
	"runtime"
	"strconv"
	"testing"
)

// TestBoxedStringsAreStrings holds Strings.Box and StringAt to any(s):
// equal values of type string, still right after the slabs filled up and
// the garbage collector ran, and one allocation per slab.
func TestBoxedStringsAreStrings(t *testing.T) {
	var b Strings
	var boxes []any
	var want []string
	for i := range 3*stringsSlab + 5 {
		s := "s" + strconv.Itoa(i)
		if i%7 == 0 {
			s = ""
		}
		boxes = append(boxes, b.Box(s))
		want = append(want, s)
	}
	runtime.GC()
	for i, box := range boxes {
		if got, ok := box.(string); !ok || got != want[i] || box != any(want[i]) {
			t.Fatalf("box %d = %#v, want %q", i, box, want[i])
		}
	}
	s := "x"
	if got := StringAt(&s); got != any("x") {
		t.Fatalf("StringAt = %#v", got)
	}
	var c Strings
	if n := testing.AllocsPerRun(10, func() {
		c = Strings{}
		for range stringsSlab {
			_ = c.Box("abc")
		}
	}); n != 1 {
		t.Fatalf("%v allocations for a slab of boxes, want 1", n)
	}
}
