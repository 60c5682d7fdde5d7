package lsp

import (
	"strconv"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// scalarOffsets maps every character of a scalar node's value to the byte
// offset in t where the character was written: out[i] is the offset of
// the value's i-th rune, and one more entry holds the offset after the
// last one. Plain, single-quoted, double-quoted, literal (|) and folded
// (>) scalars are read back from the source as YAML folds them (line
// folding, escapes, indentation, the block header); every character read
// is compared with the value the parser gave, and where they part (a
// construct this reader does not follow) the rest of the value maps to
// where reading stopped. The result always has one entry per rune plus
// one; the offsets never decrease and stay within the text.
func scalarOffsets(t *text, n *yaml.Node) []int {
	want := []rune(n.Value)
	out := make([]int, 0, len(want)+1)
	start := t.yamlOffset(n.Line, n.Column)
	r := &scalarReader{data: t.data, pos: start, want: want, out: out}
	switch n.Style {
	case yaml.DoubleQuotedStyle:
		r.quoted('"')
	case yaml.SingleQuotedStyle:
		r.quoted('\'')
	case yaml.LiteralStyle, yaml.FoldedStyle:
		r.block(n.Style == yaml.FoldedStyle)
	default:
		r.plain()
	}
	return r.finish()
}

// scalarReader reads a scalar's source, emitting the offset of each
// character of the value as it meets it.
type scalarReader struct {
	data []byte
	pos  int
	want []rune
	out  []int
	// spaces holds the offsets of blanks read but not yet emitted: YAML
	// drops the blanks before a line break.
	spaces []int
}

// emit records that the next character of the value, c, was written at
// off; false when c is not that character (or the value is complete).
func (r *scalarReader) emit(c rune, off int) bool {
	i := len(r.out)
	if i >= len(r.want) || r.want[i] != c {
		return false
	}
	r.out = append(r.out, off)
	return true
}

func (r *scalarReader) done() bool { return len(r.out) >= len(r.want) }

// flushSpaces emits the blanks held, as written.
func (r *scalarReader) flushSpaces() bool {
	for _, off := range r.spaces {
		if !r.emit(rune(r.data[off]), off) {
			return false
		}
	}
	r.spaces = r.spaces[:0]
	return true
}

// finish pads the offsets of a value not read to its end with the
// position where reading stopped, and adds the end offset: after the last
// character.
func (r *scalarReader) finish() []int {
	stop := min(r.pos, len(r.data))
	if n := len(r.out); n > 0 {
		stop = max(stop, r.out[n-1])
	}
	for len(r.out) < len(r.want) {
		r.out = append(r.out, stop)
	}
	end := stop
	if n := len(r.out); n > 0 && r.out[n-1] < len(r.data) {
		_, w := utf8.DecodeRune(r.data[r.out[n-1]:])
		end = max(end, r.out[n-1]+w)
	}
	return append(r.out, min(end, len(r.data)))
}

// fold reads the line break at r.pos and the blank and empty lines after
// it, as flow scalars fold them: one break is a space, n empty lines are
// n line feeds, leading blanks of the next line are dropped. It returns
// false when the value does not follow.
func (r *scalarReader) fold() bool {
	r.spaces = r.spaces[:0] // trailing blanks are dropped
	breakAt := r.pos
	r.pos = skipBreak(r.data, r.pos)
	empty := 0
	for {
		p := r.pos
		for p < len(r.data) && (r.data[p] == ' ' || r.data[p] == '\t') {
			p++
		}
		if p < len(r.data) && (r.data[p] == '\n' || r.data[p] == '\r') {
			if !r.emit('\n', p) {
				return false
			}
			empty++
			r.pos = skipBreak(r.data, p)
			continue
		}
		r.pos = p
		break
	}
	if empty == 0 {
		return r.emit(' ', breakAt)
	}
	return true
}

func skipBreak(data []byte, p int) int {
	if p < len(data) && data[p] == '\r' {
		p++
	}
	if p < len(data) && data[p] == '\n' {
		p++
	}
	return p
}

// quoted reads a single- or double-quoted scalar starting at its quote.
func (r *scalarReader) quoted(q byte) {
	if r.pos >= len(r.data) || r.data[r.pos] != q {
		return
	}
	r.pos++
	for r.pos < len(r.data) && !r.done() {
		c := r.data[r.pos]
		switch {
		case c == q && q == '\'' && r.pos+1 < len(r.data) && r.data[r.pos+1] == '\'':
			if !r.flushSpaces() || !r.emit('\'', r.pos) {
				return
			}
			r.pos += 2
		case c == q:
			r.flushSpaces()
			return
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if !r.blank(c) {
				return
			}
		case c == '\\' && q == '"':
			if !r.flushSpaces() || !r.escape() {
				return
			}
		default:
			if !r.flushSpaces() || !r.char() {
				return
			}
		}
	}
	r.flushSpaces()
}

// char emits the character at r.pos as written.
func (r *scalarReader) char() bool {
	c, w := utf8.DecodeRune(r.data[r.pos:])
	if !r.emit(c, r.pos) {
		return false
	}
	r.pos += w
	return true
}

// escapes are the one-character escapes of double-quoted scalars.
var escapes = map[byte]rune{
	'0': 0, 'a': '\a', 'b': '\b', 't': '\t', '\t': '\t', 'n': '\n', 'v': '\v', 'f': '\f', 'r': '\r',
	'e': 0x1b, ' ': ' ', '"': '"', '/': '/', '\\': '\\', 'N': 0x85, '_': 0xa0, 'L': 0x2028, 'P': 0x2029,
}

// escape reads an escape sequence of a double-quoted scalar at r.pos.
func (r *scalarReader) escape() bool {
	at := r.pos
	if at+1 >= len(r.data) {
		return false
	}
	e := r.data[at+1]
	if e == '\n' || e == '\r' {
		// An escaped line break: nothing, and the next line's
		// leading blanks are dropped.
		r.pos = skipBreak(r.data, at+1)
		for r.pos < len(r.data) && (r.data[r.pos] == ' ' || r.data[r.pos] == '\t') {
			r.pos++
		}
		return true
	}
	if c, ok := escapes[e]; ok {
		r.pos = at + 2
		return r.emit(c, at)
	}
	digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
	if digits == 0 || at+2+digits > len(r.data) {
		return false
	}
	v, err := strconv.ParseUint(string(r.data[at+2:at+2+digits]), 16, 32)
	if err != nil {
		return false
	}
	r.pos = at + 2 + digits
	return r.emit(rune(v), at)
}

// blank reads the space, tab or line break c at r.pos: a space or tab is
// kept pending (flushSpaces), a line break folded. It reports whether
// reading goes on.
func (r *scalarReader) blank(c byte) bool {
	if c == ' ' || c == '\t' {
		r.spaces = append(r.spaces, r.pos)
		r.pos++
		return true
	}
	return r.fold()
}

// plain reads a plain scalar: its characters, with line folding between
// its lines.
func (r *scalarReader) plain() {
	for r.pos < len(r.data) && !r.done() {
		c := r.data[r.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if !r.blank(c) {
				return
			}
		default:
			if !r.flushSpaces() || !r.char() {
				return
			}
		}
	}
}

// block reads a literal or folded block scalar starting at its indicator:
// the header line, then the content lines, whose indentation is the one
// that turns the first content line into the value's first line.
func (r *scalarReader) block(folded bool) {
	// Skip the header (indicators, comment) to the next line.
	for r.pos < len(r.data) && r.data[r.pos] != '\n' {
		r.pos++
	}
	r.pos = skipBreak(r.data, r.pos)
	indent := r.blockIndent()
	if indent < 0 {
		return
	}
	// prev: the kind of the previous content line, for folding: 0 none
	// yet, 1 a normal line, 2 a more-indented line.
	prev := 0
	empties := []int{}
	for r.pos < len(r.data) && !r.done() {
		lineStart := r.pos
		p := lineStart
		for p < len(r.data) && r.data[p] == ' ' && p-lineStart < indent {
			p++
		}
		end := p
		for end < len(r.data) && r.data[end] != '\n' && r.data[end] != '\r' {
			end++
		}
		blank := true
		for _, b := range r.data[p:end] {
			if b != ' ' && b != '\t' {
				blank = false
				break
			}
		}
		if blank && (p-lineStart < indent || end == p) {
			// An empty line.
			empties = append(empties, lineStart)
			r.pos = skipBreak(r.data, end)
			if end == len(r.data) {
				break
			}
			continue
		}
		if p-lineStart < indent {
			return // less indented: the scalar ended
		}
		kind := 1
		if r.data[p] == ' ' || r.data[p] == '\t' {
			kind = 2
		}
		// The break that ended the previous content line, then the
		// empty lines.
		if prev != 0 {
			brk := lineStart - 1
			if len(empties) > 0 {
				brk = empties[0] - 1
			}
			if folded && prev == 1 && kind == 1 {
				if len(empties) == 0 {
					if !r.emit(' ', brk) {
						return
					}
				}
			} else if !r.emit('\n', brk) {
				return
			}
		}
		for _, e := range empties {
			if !r.emit('\n', e) {
				return
			}
		}
		empties = empties[:0]
		r.pos = p
		for r.pos < end && !r.done() {
			if !r.char() {
				return
			}
		}
		prev = kind
		r.pos = skipBreak(r.data, end)
		if end == len(r.data) {
			break
		}
	}
	// Trailing line breaks the value keeps (keep chomping, or clip's one):
	// at the last content line's end.
	for !r.done() && r.want[len(r.out)] == '\n' {
		if !r.emit('\n', max(r.pos-1, 0)) {
			return
		}
	}
}

// blockIndent finds the indentation of a block scalar's content starting
// at r.pos: the first non-empty line's leading spaces less the leading
// spaces of the value's first non-empty line.
func (r *scalarReader) blockIndent() int {
	lead := 0
	for _, c := range r.want {
		if c == '\n' {
			lead = 0
			continue
		}
		if c != ' ' {
			break
		}
		lead++
	}
	p := r.pos
	for p < len(r.data) {
		s := p
		for p < len(r.data) && r.data[p] == ' ' {
			p++
		}
		if p < len(r.data) && (r.data[p] == '\n' || r.data[p] == '\r') {
			p = skipBreak(r.data, p)
			continue
		}
		if p-s < lead {
			return -1
		}
		return p - s - lead
	}
	return -1
}
