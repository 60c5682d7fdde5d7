package jsonpatch

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// The native diff: RFC 6902 operations computed directly on JSON-shaped Go
// values (map[string]any, []any, string, bool, int64, float64, nil), as
// held by the engine, instead of diffing two JSON documents.
//
// Values are compared as their JSON texts decode (jsonvalue.JSONEqual): an integral
// float64 equals the int64 of the same value, since both are written the
// same way; -0 equals 0. Maps and slices that are the very same (the
// engine's result shares the unchanged parts of its input) are equal
// without being walked.

// Diff returns the operations that turn orig into want: objects key by
// key in sorted key order, lists element by element (see differ.list).
// orig and want are only read. Diff is Apply's inverse: Apply(orig,
// Diff(orig, want)) is want, as JSON carries it, for JSON-shaped values
// (CreatePatch checks it).
func Diff(orig, want map[string]any) []Operation {
	d := newDiffer()
	return d.diff(orig, want)
}

// newDiffer is a differ in new buffers: one allocation for the buffers a
// diff starts with, not five.
func newDiffer() *differ {
	b := new(diffBuffers)
	return &differ{path: b.path[:0], ops: b.ops[:0], keys: b.keys[:0],
		paths: b.paths[:0], pathEnds: b.pathEnds[:0]}
}

// diff is Diff in d's buffers, emptied first. The operations' paths are
// views of d.paths: they stay what they are only until d diffs again.
func (d *differ) diff(orig, want map[string]any) []Operation {
	d.ops, d.path, d.paths, d.pathEnds, d.keys = d.ops[:0], d.path[:0], d.paths[:0], d.pathEnds[:0], d.keys[:0]
	d.object(orig, want)
	// Every path is a substring of one string of them all: d.paths, which
	// nothing writes to any more, viewed as a string without a copy.
	var all string
	if len(d.paths) > 0 {
		all = unsafe.String(unsafe.SliceData(d.paths), len(d.paths))
	}
	for i := range d.ops {
		d.ops[i].Path, all = all[:d.pathEnds[i]], all[d.pathEnds[i]:]
	}
	return d.ops
}

// diffBuffers are the initial buffers of a differ, allocated together.
// The operations Diff returns keep it alive (their paths are in paths).
type diffBuffers struct {
	ops      [16]Operation
	keys     [32]diffKey
	pathEnds [32]int32
	path     [128]byte
	paths    [1024]byte
}

type differ struct {
	ops  []Operation
	path []byte
	// paths holds the paths of ops one after the other, pathEnds their
	// lengths: Diff makes them strings at once.
	paths    []byte
	pathEnds []int32
	// keys is a stack of key lists, one segment per object being diffed.
	keys []diffKey
}

type diffKey struct {
	key  string
	kind uint8 // keyBoth, keyAdded, keyRemoved
}

const (
	keyBoth = iota
	keyAdded
	keyRemoved
)

func (d *differ) emit(op string, value any, hasValue bool) {
	d.ops = append(d.ops, Operation{Op: op, Value: value, HasValue: hasValue})
	d.paths = append(d.paths, d.path...)
	d.pathEnds = append(d.pathEnds, int32(len(d.path)))
}

func (d *differ) pushKey(k string) int {
	n := len(d.path)
	d.path = append(d.path, '/')
	d.path = appendPointerToken(d.path, k)
	return n
}

func (d *differ) pushIndex(i int) int {
	n := len(d.path)
	d.path = append(d.path, '/')
	d.path = strconv.AppendInt(d.path, int64(i), 10)
	return n
}

// value diffs a and b at the current path.
func (d *differ) value(a, b any) {
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok && x != nil && y != nil {
			d.object(x, y)
			return
		}
	case []any:
		if y, ok := b.([]any); ok && x != nil && y != nil {
			d.list(x, y)
			return
		}
	}
	if !jsonvalue.JSONEqual(a, b) {
		d.emit("replace", b, true)
	}
}

// object diffs two non-nil maps: the changed keys, in sorted order, are
// recursed into (both have them), added or removed.
func (d *differ) object(a, b map[string]any) {
	if jsonvalue.SameMap(a, b) {
		return
	}
	base := len(d.keys)
	matched := 0
	for k, bv := range b {
		av, ok := a[k]
		if !ok {
			d.keys = append(d.keys, diffKey{k, keyAdded})
			continue
		}
		matched++
		if !shallowSame(av, bv) {
			d.keys = append(d.keys, diffKey{k, keyBoth})
		}
	}
	if matched < len(a) {
		for k := range a {
			if _, ok := b[k]; !ok {
				d.keys = append(d.keys, diffKey{k, keyRemoved})
			}
		}
	}
	if len(d.keys) == base {
		return
	}
	seg := d.keys[base:]
	if len(seg) > 1 {
		slices.SortFunc(seg, func(x, y diffKey) int { return strings.Compare(x.key, y.key) })
	}
	for i := base; i < len(d.keys); i++ {
		// d.keys may grow (and move) in the recursion: index it afresh.
		k := d.keys[i]
		n := d.pushKey(k.key)
		switch k.kind {
		case keyBoth:
			d.value(a[k.key], b[k.key])
		case keyAdded:
			d.emit("add", b[k.key], true)
		case keyRemoved:
			d.emit("remove", nil, false)
		}
		d.path = d.path[:n]
	}
	d.keys = d.keys[:base]
}

// list diffs two non-nil slices. Lists of the same length are diffed
// index by index. Otherwise, past the common prefix and suffix, a middle
// part that is a subsequence of the other is made the other by adding (in
// ascending index order, each at its final index) or removing (in
// descending index order) the elements in between; any other middle part is
// diffed index by index over the shorter length, then the rest is added at
// the end or removed from the end.
func (d *differ) list(a, b []any) {
	if len(a) == len(b) {
		if jsonvalue.SameSlice(a, b) {
			return
		}
		d.pairs(a, b, 0, len(a))
		return
	}
	p, s := commonEnds(a, b)
	am, bm := a[p:len(a)-s], b[p:len(b)-s]
	if len(am) < len(bm) && isSubsequence(am, bm) {
		i := 0
		for j, v := range bm {
			if i < len(am) && jsonvalue.JSONEqual(am[i], v) {
				i++
				continue
			}
			n := d.pushIndex(p + j)
			d.emit("add", v, true)
			d.path = d.path[:n]
		}
		return
	}
	if len(am) > len(bm) && isSubsequence(bm, am) {
		// The matched positions, in ascending order, then removals from
		// the highest unmatched index down.
		var buf [32]bool
		keep := buf[:0]
		if len(am) > len(buf) {
			keep = make([]bool, 0, len(am))
		}
		j := 0
		for _, v := range am {
			m := j < len(bm) && jsonvalue.JSONEqual(v, bm[j])
			if m {
				j++
			}
			keep = append(keep, m)
		}
		for i := len(am) - 1; i >= 0; i-- {
			if !keep[i] {
				n := d.pushIndex(p + i)
				d.emit("remove", nil, false)
				d.path = d.path[:n]
			}
		}
		return
	}
	n := min(len(am), len(bm))
	d.pairs(am, bm, p, n)
	for j := n; j < len(bm); j++ {
		k := d.pushIndex(p + j)
		d.emit("add", bm[j], true)
		d.path = d.path[:k]
	}
	for i := len(am) - 1; i >= n; i-- {
		k := d.pushIndex(p + i)
		d.emit("remove", nil, false)
		d.path = d.path[:k]
	}
}

// pairs diffs a[i] with b[i] for i < n, at list index offset+i.
func (d *differ) pairs(a, b []any, offset, n int) {
	for i := 0; i < n; i++ {
		if shallowSame(a[i], b[i]) {
			continue
		}
		k := d.pushIndex(offset + i)
		d.value(a[i], b[i])
		d.path = d.path[:k]
	}
}

// isSubsequence tells whether short is a subsequence of long (greedy
// matching finds one if there is one).
func isSubsequence(short, long []any) bool {
	i := 0
	for _, v := range long {
		if i == len(short) {
			return true
		}
		if jsonvalue.JSONEqual(short[i], v) {
			i++
		}
	}
	return i == len(short)
}

// shallowSame tells, without walking containers, whether a and b are known
// to be equal: the same map or slice, or equal scalars. Distinct containers
// are not the same even when equal; the diff walks them.
func shallowSame(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && x != nil && jsonvalue.SameMap(x, y)
	case []any:
		y, ok := b.([]any)
		return ok && x != nil && jsonvalue.SameSlice(x, y)
	}
	return jsonvalue.JSONEqual(a, b)
}

// appendPointerToken appends k escaped as a JSON pointer reference token
// (RFC 6901: "~" as "~0", "/" as "~1").
func appendPointerToken(dst []byte, k string) []byte {
	for i := 0; i < len(k); i++ {
		switch k[i] {
		case '~':
			dst = append(dst, '~', '0')
		case '/':
			dst = append(dst, '~', '1')
		default:
			dst = append(dst, k[i])
		}
	}
	return dst
}

var errNotJSON = errors.New("value has no JSON encoding here")

// appendOps appends the JSON encoding of ops (RFC 6902 operations with op,
// path and, when they have one, value).
func appendOps(dst []byte, ops []Operation) ([]byte, error) {
	b, _, err := appendOpsNormalized(dst, ops)
	return b, err
}

// appendOpsNormalized is appendOps, and whether IsNormalized holds of the
// value of every operation that has one (HasValue), told by the
// encoding's own walk of those values (jsonEncoder.abnormal) so that
// patchGives need not walk them again: TestEncoderTellsIsNormalized holds
// it to IsNormalized.
func appendOpsNormalized(dst []byte, ops []Operation) (_ []byte, normalized bool, _ error) {
	// The key stack sized once: maps nest a few levels of tens of keys.
	e := jsonEncoder{buf: dst, keys: make([]string, 0, 64)}
	e.buf = append(e.buf, '[')
	for i := range ops {
		op := &ops[i]
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = append(e.buf, `{"op":`...)
		e.buf, _ = appendJSONStringValid(e.buf, op.Op)
		e.buf = append(e.buf, `,"path":`...)
		e.buf, _ = appendJSONStringValid(e.buf, op.Path)
		if op.HasValue {
			e.buf = append(e.buf, `,"value":`...)
			if err := e.value(op.Value, 0); err != nil {
				return nil, false, err
			}
		}
		e.buf = append(e.buf, '}')
	}
	return append(e.buf, ']'), !e.abnormal, nil
}

// jsonEncoder writes JSON-shaped values the way jsonMarshal does (map keys
// sorted, no HTML escaping); values of other types go through jsonMarshal.
type jsonEncoder struct {
	buf  []byte
	keys []string // a stack of sorted key lists, one segment per map
	// abnormal is set when a value written is not IsNormalized: a string
	// or a map key that is not valid UTF-8, a float64 for which
	// IsNormalizedFloat does not hold, a nil map or slice, a value of
	// another Go type, or a container maxDiscardDepth levels deep (the
	// walk of isNormalized, which writing the value makes anyway).
	abnormal bool
}

// value writes v, depth levels below an operation's value.
func (e *jsonEncoder) value(v any, depth int) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case string:
		var valid bool
		e.buf, valid = appendJSONStringValid(e.buf, x)
		e.abnormal = e.abnormal || !valid
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return errNotJSON
		}
		e.abnormal = e.abnormal || !IsNormalizedFloat(x)
		e.buf = appendJSONFloat(e.buf, x)
	case map[string]any:
		if x == nil {
			e.abnormal = true
			e.buf = append(e.buf, "null"...)
			return nil
		}
		e.abnormal = e.abnormal || depth >= maxDiscardDepth
		base := len(e.keys)
		for k := range x {
			e.keys = append(e.keys, k)
		}
		slices.Sort(e.keys[base:])
		e.buf = append(e.buf, '{')
		for i := base; i < len(e.keys); i++ {
			k := e.keys[i]
			if i > base {
				e.buf = append(e.buf, ',')
			}
			var valid bool
			e.buf, valid = appendJSONStringValid(e.buf, k)
			e.abnormal = e.abnormal || !valid
			e.buf = append(e.buf, ':')
			if err := e.value(x[k], depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
		e.keys = e.keys[:base]
	case []any:
		if x == nil {
			e.abnormal = true
			e.buf = append(e.buf, "null"...)
			return nil
		}
		e.abnormal = e.abnormal || depth >= maxDiscardDepth
		e.buf = append(e.buf, '[')
		for i, el := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(el, depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	default:
		e.abnormal = true
		b, err := jsonvalue.Marshal(v)
		if err != nil {
			return err
		}
		e.buf = append(e.buf, b...)
	}
	return nil
}

// appendJSONFloat writes f as encoding/json does (ES6 number formatting).
func appendJSONFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 as e-9.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as encoding/json does without HTML escaping:
// invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	dst, _ = appendJSONStringValid(dst, s)
	return dst
}

// appendJSONStringValid is appendJSONString, and whether s is valid UTF-8
// (utf8.ValidString: no byte of it written as \ufffd).
func appendJSONStringValid(dst []byte, s string) (_ []byte, valid bool) {
	valid = true
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			valid = false
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), valid
}

// commonEnds returns the lengths of the longest common prefix of a and b
// and of the longest common suffix of what the prefix leaves of them.
func commonEnds(a, b []any) (p, s int) {
	for p < len(a) && p < len(b) && jsonvalue.JSONEqual(a[p], b[p]) {
		p++
	}
	for s < len(a)-p && s < len(b)-p && jsonvalue.JSONEqual(a[len(a)-1-s], b[len(b)-1-s]) {
		s++
	}
	return p, s
}
