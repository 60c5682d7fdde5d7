package jsonpatch

import (
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// gen builds random documents and patches that mostly hit existing paths,
// so that differential tests reach deep into evanphx's behaviour.
type gen struct{ r *rand.Rand }

var genKeys = []string{"a", "b", "c", "", "x/y", "t~n", "~1", "0", "-"}

func (g gen) scalar() any {
	switch g.r.IntN(9) {
	case 0:
		return nil
	case 1:
		return g.r.IntN(2) == 0
	case 2:
		return int64(g.r.IntN(5) - 1)
	case 3:
		return []float64{1.5, -0.0, 2.0, 1e21, 1e-7, 9.007199254740993e15}[g.r.IntN(6)]
	case 4:
		return int64(9223372036854775807)
	default:
		return []string{"", "a", "b", "<&>", "\u2028", "1"}[g.r.IntN(6)]
	}
}

func (g gen) value(depth int) any {
	if depth <= 0 || g.r.IntN(3) == 0 {
		return g.scalar()
	}
	if g.r.IntN(2) == 0 {
		m := map[string]any{}
		for i := g.r.IntN(4); i > 0; i-- {
			m[genKeys[g.r.IntN(len(genKeys))]] = g.value(depth - 1)
		}
		return m
	}
	var s []any
	for i := g.r.IntN(4); i > 0; i-- {
		s = append(s, g.value(depth-1))
	}
	if s == nil {
		s = []any{}
	}
	return s
}

func escapeKey(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// path walks doc randomly, sometimes stepping off it.
func (g gen) path(doc any) string {
	var b strings.Builder
	cur := doc
	for {
		if g.r.IntN(4) == 0 {
			break
		}
		switch c := cur.(type) {
		case map[string]any:
			if len(c) == 0 || g.r.IntN(5) == 0 {
				k := genKeys[g.r.IntN(len(genKeys))]
				b.WriteString("/" + escapeKey(k))
				cur = c[k]
				continue
			}
			n := g.r.IntN(len(c))
			for k, v := range c {
				if n == 0 {
					b.WriteString("/" + escapeKey(k))
					cur = v
					break
				}
				n--
			}
		case []any:
			idx := g.r.IntN(len(c)+3) - 1
			var seg string
			switch g.r.IntN(8) {
			case 0:
				seg = "-"
			case 1:
				seg = "0" + strconv.Itoa(idx)
			case 2:
				seg = strconv.Itoa(-idx - 1)
			case 3:
				seg = "x"
			default:
				seg = strconv.Itoa(idx)
			}
			b.WriteString("/" + seg)
			if idx >= 0 && idx < len(c) {
				cur = c[idx]
			} else {
				cur = nil
			}
		default:
			if g.r.IntN(2) == 0 {
				b.WriteString("/" + genKeys[g.r.IntN(len(genKeys))])
			}
			return b.String()
		}
	}
	s := b.String()
	if g.r.IntN(20) == 0 {
		s = strings.TrimPrefix(s, "/")
	}
	return s
}

func (g gen) ops(doc map[string]any) []Operation {
	kinds := []string{"add", "remove", "replace", "move", "copy", "test", "test", "bogus"}
	var ops []Operation
	for i := g.r.IntN(5) + 1; i > 0; i-- {
		op := Operation{Op: kinds[g.r.IntN(len(kinds))], Path: g.path(doc)}
		if op.Op == "move" || op.Op == "copy" || g.r.IntN(10) == 0 {
			op.From = g.path(doc)
		}
		if g.r.IntN(6) != 0 {
			op.HasValue = true
			if op.Op == "test" && g.r.IntN(2) == 0 {
				// Reuse a document value so that tests can pass.
				op.Value = pick(g, doc)
			} else {
				op.Value = g.value(3)
			}
		}
		ops = append(ops, op)
	}
	return ops
}

func pick(g gen, v any) any {
	for {
		switch c := v.(type) {
		case map[string]any:
			if len(c) == 0 || g.r.IntN(3) == 0 {
				return c
			}
			for _, e := range c {
				v = e
				break
			}
		case []any:
			if len(c) == 0 || g.r.IntN(3) == 0 {
				return c
			}
			v = c[g.r.IntN(len(c))]
		default:
			return c
		}
	}
}

func (g gen) doc() map[string]any {
	m := map[string]any{}
	for i := g.r.IntN(5); i > 0; i-- {
		m[genKeys[g.r.IntN(len(genKeys))]] = g.value(3)
	}
	return m
}

func TestApplyRandomizedAgainstEvanphx(t *testing.T) {
	n := valuetest.Sweep(20000, 2000) // make test-long: the full sweep
	for i := 0; i < n; i++ {
		g := gen{rand.New(rand.NewPCG(uint64(i), 42))}
		doc := g.doc()
		compareWithUpstream(t, doc, g.ops(doc))
	}
}

// FuzzApplyGenerated is FuzzApply with documents and patches generated from
// the fuzzer's seed, which reaches far more valid paths than raw JSON.
func FuzzApplyGenerated(f *testing.F) {
	for i := uint64(0); i < 8; i++ {
		f.Add(i, i*7)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], a)
		g := gen{rand.New(rand.NewPCG(a, b))}
		doc := g.doc()
		compareWithUpstream(t, doc, g.ops(doc))
	})
}
