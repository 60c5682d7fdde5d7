//go:build ignore

// ansi2svg writes a terminal screen, as `tmux capture-pane -e -p` prints
// it (text with SGR escape sequences: 16, 256 and 24-bit colours, bold,
// italic, underline, reverse), as an SVG image of a terminal window:
// one cell per character, backgrounds as rectangles, text in a monospace
// font. Used by capture.sh: go run ansi2svg.go -cols 100 -rows 28 < screen.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"html"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

type style struct {
	fg, bg                     string
	bold, italic, under, rever bool
}

type cell struct {
	r rune
	s style
}

const (
	defaultFG = "#d0d0d0"
	defaultBG = "#1c1c1c"
	cellW     = 8.4
	cellH     = 17.0
	pad       = 12.0
	titleH    = 28.0
)

// basic are the 16 ANSI colours (xterm's).
var basic = []string{"#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
	"#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff"}

func color256(n int) string {
	switch {
	case n < 16:
		return basic[n]
	case n < 232:
		n -= 16
		level := func(v int) int {
			if v == 0 {
				return 0
			}
			return 55 + v*40
		}
		return fmt.Sprintf("#%02x%02x%02x", level(n/36), level(n/6%6), level(n%6))
	default:
		v := 8 + (n-232)*10
		return fmt.Sprintf("#%02x%02x%02x", v, v, v)
	}
}

// sgr applies one SGR sequence's parameters to s.
func sgr(s style, params string) style {
	if params == "" {
		params = "0"
	}
	ps := strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ':' })
	for i := 0; i < len(ps); i++ {
		n, _ := strconv.Atoi(ps[i])
		switch {
		case n == 0:
			s = style{}
		case n == 1:
			s.bold = true
		case n == 3:
			s.italic = true
		case n == 4:
			s.under = true
		case n == 7:
			s.rever = true
		case n == 22:
			s.bold = false
		case n == 23:
			s.italic = false
		case n == 24:
			s.under = false
		case n == 27:
			s.rever = false
		case n >= 30 && n <= 37:
			s.fg = basic[n-30]
		case n >= 90 && n <= 97:
			s.fg = basic[n-90+8]
		case n >= 40 && n <= 47:
			s.bg = basic[n-40]
		case n >= 100 && n <= 107:
			s.bg = basic[n-100+8]
		case n == 39:
			s.fg = ""
		case n == 49:
			s.bg = ""
		case n == 38 || n == 48:
			var c string
			if i+2 < len(ps) && ps[i+1] == "5" {
				v, _ := strconv.Atoi(ps[i+2])
				c = color256(v)
				i += 2
			} else if i+4 < len(ps) && ps[i+1] == "2" {
				r, _ := strconv.Atoi(ps[i+2])
				g, _ := strconv.Atoi(ps[i+3])
				b, _ := strconv.Atoi(ps[i+4])
				c = fmt.Sprintf("#%02x%02x%02x", r, g, b)
				i += 4
			}
			if n == 38 {
				s.fg = c
			} else {
				s.bg = c
			}
		}
	}
	return s
}

// parse reads the screen into rows of cells.
func parse(data string, cols, rows int) [][]cell {
	grid := make([][]cell, rows)
	for i := range grid {
		grid[i] = make([]cell, cols)
		for j := range grid[i] {
			grid[i][j] = cell{r: ' '}
		}
	}
	var cur style
	for y, line := range strings.Split(strings.TrimRight(data, "\n"), "\n") {
		if y >= rows {
			break
		}
		x := 0
		for i := 0; i < len(line); {
			if line[i] == 0x1b && i+1 < len(line) && line[i+1] == '[' {
				j := i + 2
				for j < len(line) && (line[j] < 0x40 || line[j] > 0x7e) {
					j++
				}
				if j < len(line) && line[j] == 'm' {
					cur = sgr(cur, line[i+2:j])
				}
				i = j + 1
				continue
			}
			r, size := utf8.DecodeRuneInString(line[i:])
			i += size
			if x < cols {
				grid[y][x] = cell{r: r, s: cur}
			}
			x++
		}
		// tmux ends a line's styles where the line ends: the rest of the
		// row keeps the last background.
		for ; x < cols; x++ {
			grid[y][x] = cell{r: ' ', s: style{bg: cur.bg, rever: cur.rever}}
		}
	}
	return grid
}

func colors(s style) (fg, bg string) {
	fg, bg = s.fg, s.bg
	if fg == "" {
		fg = defaultFG
	}
	if bg == "" {
		bg = defaultBG
	}
	if s.rever {
		fg, bg = bg, fg
	}
	return fg, bg
}

func write(w io.Writer, grid [][]cell, cols, rows int, title string) {
	width := pad*2 + float64(cols)*cellW
	height := titleH + pad*2 + float64(rows)*cellH
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`+"\n", width, height, width, height, html.EscapeString(title))
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" rx="8" fill="%s"/>`+"\n", defaultBG)
	fmt.Fprintf(w, `<rect width="100%%" height="%.0f" rx="8" fill="#3a3a3a"/><circle cx="18" cy="14" r="5" fill="#ff5f56"/><circle cx="36" cy="14" r="5" fill="#ffbd2e"/><circle cx="54" cy="14" r="5" fill="#27c93f"/>`+"\n", titleH)
	fmt.Fprintf(w, `<text x="%.0f" y="18" fill="#bbbbbb" font-family="sans-serif" font-size="12" text-anchor="middle">%s</text>`+"\n", width/2, html.EscapeString(title))
	fmt.Fprintf(w, `<g font-family="'DejaVu Sans Mono','Menlo','Consolas',monospace" font-size="14">`+"\n")
	for y, row := range grid {
		top := titleH + pad + float64(y)*cellH
		// Backgrounds: runs of one colour.
		for x := 0; x < cols; {
			_, bg := colors(row[x].s)
			e := x
			for e < cols {
				if _, b := colors(row[e].s); b != bg {
					break
				}
				e++
			}
			if bg != defaultBG {
				fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", pad+float64(x)*cellW, top, float64(e-x)*cellW, cellH, bg)
			}
			x = e
		}
		// Text: runs of one style, each placed at its first cell.
		for x := 0; x < cols; {
			s := row[x].s
			e := x
			var b strings.Builder
			for e < cols && row[e].s == s {
				b.WriteRune(row[e].r)
				e++
			}
			// Blanks are left out: each run of text is placed on its
			// cells, which its textLength fills exactly.
			full := []rune(b.String())
			lead := 0
			for lead < len(full) && full[lead] == ' ' {
				lead++
			}
			trail := len(full)
			for trail > lead && full[trail-1] == ' ' {
				trail--
			}
			// Inner blanks as no-break spaces: a viewer that collapses
			// spaces would squeeze the run into fewer cells.
			text := strings.ReplaceAll(string(full[lead:trail]), " ", "\u00a0")
			start := x + lead
			if text != "" {
				fg, _ := colors(s)
				attrs := ""
				if s.bold {
					attrs += ` font-weight="bold"`
				}
				if s.italic {
					attrs += ` font-style="italic"`
				}
				if s.under {
					attrs += ` text-decoration="underline"`
				}
				fmt.Fprintf(w, `<text x="%.1f" y="%.1f" fill="%s" textLength="%.1f" lengthAdjust="spacingAndGlyphs"%s>%s</text>`+"\n",
					pad+float64(start)*cellW, top+cellH-4, fg, float64(trail-lead)*cellW, attrs, html.EscapeString(text))
			}
			x = e
		}
	}
	fmt.Fprintln(w, "</g>\n</svg>")
}

func main() {
	cols := flag.Int("cols", 100, "the screen's columns")
	rows := flag.Int("rows", 28, "the screen's rows")
	title := flag.String("title", "", "the window's title")
	flag.Parse()
	data, err := io.ReadAll(bufio.NewReader(os.Stdin))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	write(os.Stdout, parse(string(data), *cols, *rows), *cols, *rows, *title)
}
