package explain

import (
	"bytes"
	"fmt"
	"testing"
)

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, ünïcode, 日本", "plain text, ünïcode, 日本"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"over\rwritten", `over\rwritten`},
		{"bell\a and del\x7f", `bell\a and del\x7f`},
		{"c1 \u009b2J", `c1 \u009b2J`},
		{"bad \xff byte", `bad \xff byte`},
	} {
		if got := Printable(c.in); got != c.want {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(PrintableWriter(&b), "denied: %s\n", "\x1b]0;pwned\a")
	if got := b.String(); got != "denied: \\x1b]0;pwned\\a\n" {
		t.Errorf("PrintableWriter wrote %q", got)
	}
}

func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"", "a\x1b[0m", "\xff\xfe", "\u009b\n\t\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Printable(s)
		if needsEscape(out) {
			t.Fatalf("Printable(%q) = %q still has control characters", s, out)
		}
		if !needsEscape(s) && out != s {
			t.Fatalf("Printable changed printable text %q to %q", s, out)
		}
	})
}
