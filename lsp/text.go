package lsp

import (
	"go.lsp.dev/protocol"
	"unicode/utf16"
	"unicode/utf8"
)

// text is a document's content with the byte offset of each line's start,
// to convert between byte offsets, YAML positions (1-based line and
// column in characters, as go.yaml.in/yaml/v3 counts them) and LSP
// positions (0-based line and UTF-16 code units).
type text struct {
	data  []byte
	lines []int // byte offset of each line's first byte
}

func newText(data []byte) *text {
	t := &text{data: data, lines: []int{0}}
	for i, b := range data {
		if b == '\n' {
			t.lines = append(t.lines, i+1)
		}
	}
	return t
}

// lineEnd is the offset of the end of line l (0-based), before its line
// break.
func (t *text) lineEnd(l int) int {
	if l+1 < len(t.lines) {
		end := t.lines[l+1] - 1
		if end > t.lines[l] && t.data[end-1] == '\r' {
			end--
		}
		return end
	}
	return len(t.data)
}

// yamlOffset is the byte offset of a YAML position (1-based line and
// column in characters); positions past a line's end stop there, and
// positions outside the text are clamped to it.
func (t *text) yamlOffset(line, col int) int {
	if line < 1 {
		return 0
	}
	if line > len(t.lines) {
		return len(t.data)
	}
	off, end := t.lines[line-1], t.lineEnd(line-1)
	for c := 1; c < col && off < end; c++ {
		_, w := utf8.DecodeRune(t.data[off:end])
		off += w
	}
	return off
}

// position is the LSP position of a byte offset (clamped to the text).
func (t *text) position(off int) protocol.Position {
	off = min(max(off, 0), len(t.data))
	l := lineOf(t.lines, off)
	start := t.lines[l]
	var units uint32
	for i := start; i < off; {
		r, w := utf8.DecodeRune(t.data[i:off])
		units += uint32(utf16.RuneLen(r))
		i += w
	}
	return protocol.Position{Line: uint32(l), Character: units}
}

// offset is the byte offset of an LSP position: a character past the
// line's end stops at the end, a line past the text's end is its end.
func (t *text) offset(p protocol.Position) int {
	if int(p.Line) >= len(t.lines) {
		return len(t.data)
	}
	off, end := t.lines[p.Line], t.lineEnd(int(p.Line))
	for units := uint32(0); units < p.Character && off < end; {
		r, w := utf8.DecodeRune(t.data[off:end])
		units += uint32(utf16.RuneLen(r))
		off += w
	}
	return off
}

// lineOf is the 0-based line holding offset off.
func lineOf(lines []int, off int) int {
	lo, hi := 0, len(lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if lines[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}
