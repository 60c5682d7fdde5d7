package webhook

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	sigsjson "sigs.k8s.io/json"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// decodeMap is sigsjson.UnmarshalCaseSensitivePreserveInts of raw into a
// map[string]any — the same maps, slices and scalars (int64 for integers
// that fit, float64 otherwise), the same strings, the same error — in one
// pass and with fewer allocations: maps and slices are made at their final
// size, and every unescaped key and string is a substring of one copy of
// raw (a request's object lives as long as its review, so the copy is
// what the strings of the decoding hold anyway). Anything the fast decoder
// does not accept (a syntax error, a number out of range, a top level that
// is not an object) is decoded by sigsjson itself, which gives its value
// and error. decodeMapReference is that reference; FuzzDecodeMap and
// TestDecodeMap hold the two equal.
func decodeMap(raw []byte) (map[string]any, error) {
	d := mapDecoder{s: string(raw)}
	if m, ok := d.top(); ok {
		return m, nil
	}
	return decodeMapReference(raw)
}

// decodeMapReference is decodeMap as sigsjson gives it.
func decodeMapReference(raw []byte) (map[string]any, error) {
	var obj map[string]any
	err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &obj)
	return obj, err
}

// mapDecoder decodes one JSON document held in s. Its stacks hold the
// members and elements of the objects and arrays being decoded, so that
// each is made once at its size.
type mapDecoder struct {
	s       string
	i       int
	depth   int
	members []member
	elems   []any
	// strs boxes the string values, many to an allocation.
	strs jsonvalue.Strings
	// wholeFloats is set once a number decodes to a float64 that the
	// normalization of jsonpatch.Apply changes (a whole number or a zero,
	// !jsonpatch.IsNormalizedFloat): every other value the decoder makes is
	// a fixed point of it (strings and keys valid UTF-8, maps and slices
	// not nil), so that a document decoded without setting it is
	// jsonpatch.IsNormalized.
	wholeFloats bool
}

// maxDecodeDepth is the deepest nesting the fast decoder takes; deeper
// documents go to sigsjson, whose scanner refuses those deeper than
// 10,000.
const maxDecodeDepth = 1000

type member struct {
	key   string
	value any
}

// top decodes the document, which must be one object and white space;
// ok=false for anything else.
func (d *mapDecoder) top() (map[string]any, bool) {
	d.space()
	if d.i >= len(d.s) || d.s[d.i] != '{' {
		return nil, false
	}
	m, ok := d.object()
	if !ok {
		return nil, false
	}
	d.space()
	return m, d.i == len(d.s)
}

func (d *mapDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value decodes the value at d.i.
func (d *mapDecoder) value() (any, bool) {
	if d.i >= len(d.s) {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{' || c == '[':
		if d.depth++; d.depth > maxDecodeDepth {
			return nil, false
		}
		defer func() { d.depth-- }()
		if c == '{' {
			return d.object()
		}
		return d.array()
	case c == '"':
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		return d.strs.Box(s), true
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, false
}

func (d *mapDecoder) literal(lit string) bool {
	if !strings.HasPrefix(d.s[d.i:], lit) {
		return false
	}
	d.i += len(lit)
	return true
}

// object decodes the object at d.i ('{').
func (d *mapDecoder) object() (map[string]any, bool) {
	d.i++
	base := len(d.members)
	defer func() { d.members = d.members[:base] }()
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return map[string]any{}, true
	}
	for {
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		d.members = append(d.members, member{k, v})
		d.space()
		if d.i >= len(d.s) {
			return nil, false
		}
		c := d.s[d.i]
		d.i++
		if c == '}' {
			break
		}
		if c != ',' {
			return nil, false
		}
		d.space()
	}
	ms := d.members[base:]
	m := make(map[string]any, len(ms))
	for _, kv := range ms {
		m[kv.key] = kv.value // a repeated key: the last wins, as in sigsjson
	}
	clear(ms) // the stack holds no values past their object
	return m, true
}

// array decodes the array at d.i ('[').
func (d *mapDecoder) array() ([]any, bool) {
	d.i++
	base := len(d.elems)
	defer func() { d.elems = d.elems[:base] }()
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return []any{}, true
	}
	for {
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		d.elems = append(d.elems, v)
		d.space()
		if d.i >= len(d.s) {
			return nil, false
		}
		c := d.s[d.i]
		d.i++
		if c == ']' {
			break
		}
		if c != ',' {
			return nil, false
		}
		d.space()
	}
	es := d.elems[base:]
	out := make([]any, len(es))
	copy(out, es)
	clear(es)
	return out, true
}

// number decodes the number at d.i as sigsjson's convertNumber does with
// preserveInts: int64 when it has no '.' and fits, float64 otherwise.
func (d *mapDecoder) number() (any, bool) {
	start := d.i
	if d.s[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.s) && d.s[d.i] == '0':
		d.i++
	case d.i < len(d.s) && d.s[d.i] >= '1' && d.s[d.i] <= '9':
		d.digits()
	default:
		return nil, false
	}
	dot := false
	if d.i < len(d.s) && d.s[d.i] == '.' {
		dot = true
		d.i++
		if d.digits() == 0 {
			return nil, false
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if d.digits() == 0 {
			return nil, false
		}
	}
	lit := d.s[start:d.i]
	if !dot {
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return n, true
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return nil, false // out of range: sigsjson's error
	}
	if !jsonpatch.IsNormalizedFloat(f) {
		d.wholeFloats = true
	}
	return f, true
}

func (d *mapDecoder) digits() int {
	start := d.i
	for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
		d.i++
	}
	return d.i - start
}

// str decodes the string at d.i ('"'): a substring of d.s when it has no
// escape and is valid UTF-8, else unquoted as sigsjson unquotes.
func (d *mapDecoder) str() (string, bool) {
	d.i++
	start := d.i
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			s := d.s[start:d.i]
			d.i++
			return s, true
		case c == '\\':
			return d.unquote(start)
		case c < ' ':
			return "", false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(d.s[d.i:])
			if r == utf8.RuneError && size == 1 {
				return d.unquote(start) // invalid UTF-8: U+FFFD in its place
			}
			d.i += size
			continue
		}
		d.i++
	}
	return "", false
}

// unquote decodes the string that starts at start, from d.i where the
// first escape or non-ASCII byte is, as encoding/json's unquote: escapes
// replaced, invalid UTF-8 and lone surrogates as U+FFFD.
func (d *mapDecoder) unquote(start int) (string, bool) {
	b := make([]byte, 0, d.i-start+16)
	b = append(b, d.s[start:d.i]...)
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			return string(b), true
		case c < ' ':
			return "", false
		case c == '\\':
			d.i++
			if d.i >= len(d.s) {
				return "", false
			}
			e := d.s[d.i]
			d.i++
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", false
				}
				if utf16.IsSurrogate(r) {
					save := d.i
					r2 := rune(-1)
					if strings.HasPrefix(d.s[d.i:], `\u`) {
						d.i += 2
						if x, ok := d.hex4(); ok {
							r2 = x
						} else {
							return "", false
						}
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						b = utf8.AppendRune(b, dec)
						continue
					}
					d.i = save // the next escape is read on its own
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", false
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			d.i++
		default:
			r, size := utf8.DecodeRuneInString(d.s[d.i:])
			d.i += size
			b = utf8.AppendRune(b, r) // RuneError for invalid UTF-8, as sigsjson
		}
	}
	return "", false
}

// hex4 reads the four hex digits of a \u escape.
func (d *mapDecoder) hex4() (rune, bool) {
	if d.i+4 > len(d.s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(d.s[d.i : d.i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	d.i += 4
	return r, true
}
