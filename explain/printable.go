package explain

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable is s as mutatis writes it to a terminal: every control
// character but newline and tab (ANSI escapes, carriage returns, C1
// controls) and every byte that is not UTF-8 written as a Go escape
// (`\x1b`, `\r`, `\u009b`, `\xff`), the rest as it is. What a webhook
// or a policy says (a denial's message, an error) reaches the terminal
// as text, never as commands to it; kube-apiserver answers such a
// message in a JSON body, and drops such a warning (Returned).
func Printable(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t' || !unicode.IsControl(r):
			b.WriteString(s[i : i+size])
		default:
			q := fmt.Sprintf("%+q", string(r))
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || (r != '\n' && r != '\t' && unicode.IsControl(r)) {
			return true
		}
		i += size
	}
	return false
}

// PrintableWriter is w with every write made Printable: for the trace
// and the notes written to a terminal.
func PrintableWriter(w io.Writer) io.Writer { return printableWriter{w} }

type printableWriter struct{ w io.Writer }

func (p printableWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, Printable(string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}
