package valuetest

import (
	"math"
	"testing"
)

func TestBitsEqual(t *testing.T) {
	f := func() {}
	g := func() {}
	cases := []struct {
		a, b any
		want bool
	}{
		{map[string]any{"x": []any{int64(1), "s"}}, map[string]any{"x": []any{int64(1), "s"}}, true},
		{0.0, math.Copysign(0, -1), false},
		{math.NaN(), math.NaN(), true},
		{map[string]any(nil), map[string]any{}, false},
		{[]any(nil), []any{}, false},
		{int64(1), 1.0, false},
		{map[string]any{"a": 1.5}, map[string]any{"b": 1.5}, false},
		{[]any{f}, []any{f}, true},
		{[]any{f}, []any{g}, false},
		{nil, nil, true},
	}
	for i, c := range cases {
		if got := BitsEqual(c.a, c.b); got != c.want {
			t.Errorf("case %d: BitsEqual(%#v, %#v) = %v, want %v", i, c.a, c.b, got, c.want)
		}
	}
}
