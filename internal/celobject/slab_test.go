package celobject

import (
	"sync"
	"testing"

	"github.com/google/cel-go/common/types"
)

// TestSlabHandsOutEachOnce checks that a Slab's values, taken by
// concurrent callers, are all distinct and zero when handed out, and stay
// what their holders set.
func TestSlabHandsOutEachOnce(t *testing.T) {
	var s Slab[[3]int]
	const callers, each = 8, 200
	got := make([][]*[3]int, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				v := s.New()
				if *v != ([3]int{}) {
					t.Errorf("handed out %v, not zero", *v)
				}
				*v = [3]int{c, i, 1}
				got[c] = append(got[c], v)
			}
		}()
	}
	wg.Wait()
	seen := map[*[3]int]bool{}
	for c, vs := range got {
		for i, v := range vs {
			if seen[v] {
				t.Fatalf("value %p handed out twice", v)
			}
			seen[v] = true
			if *v != [3]int{c, i, 1} {
				t.Errorf("caller %d's value %d is %v", c, i, *v)
			}
		}
	}
}

// TestNewObjectInIsNewObject checks NewObjectIn's Objects against
// NewObject's, up to and past the inline fields.
func TestNewObjectInIsNewObject(t *testing.T) {
	var s Slab[Object]
	typ := types.NewObjectType("Object")
	for n := range 7 {
		names := []string{"a", "b", "c", "d", "e", "f"}[:n]
		want, got := NewObject(typ, names), NewObjectIn(&s, typ, names)
		for i := range names {
			want.Set(i, types.Int(i))
			got.Set(i, types.Int(i))
		}
		if got.TypeName() != want.TypeName() || len(got.vals) != len(want.vals) || got.IsZeroValue() != want.IsZeroValue() {
			t.Fatalf("%d fields: %v, want %v", n, got, want)
		}
		if eq := got.Equal(want); eq != types.True {
			t.Errorf("%d fields: not equal: %v", n, eq)
		}
	}
}
