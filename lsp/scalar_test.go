package lsp

import (
	"strings"
	"testing"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// TestScalarOffsets maps each character of an expression written in every
// scalar style back to where it is written: every character that is
// written as itself (not an escape, a folded break or a dropped blank)
// is found at its offset.
func TestScalarOffsets(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		// want: the source text at the offsets of the value's
		// characters, "·" for a character not written as itself (a line
		// break the value keeps is found on the break).
		want string
	}{
		{"plain", "expression: object.spec.x == 1\n", "object.spec.x == 1"},
		{"plain multi-line", "expression: object.spec\n  .x == 1\n", "object.spec·.x == 1"},
		{"double-quoted", `expression: "a \"b\" \n c"` + "\n", "a ·b· · c"},
		{"double-quoted folded", "expression: \"a  \n\n   b\"\n", "a\nb"},
		{"single-quoted", "expression: 'it''s x'\n", "it's x"},
		{"literal", "expression: |\n  object.spec\n    .x == 1\n", "object.spec\n  .x == 1\n"},
		{"literal with indent indicator", "x:\n  expression: |2\n     a\n    b\n", " a\nb\n"},
		{"folded", "expression: >-\n  a\n  b\n\n  c\n", "a·b\nc"},
		{"folded more-indented", "expression: >\n  a\n    b\n  c\n", "a\n  b\nc\n"},
		{"crlf", "expression: |\r\n  a\r\n  b\r\n", "a\nb\n"},
		{"unicode", "expression: \"é€𝄞 x\"\n", "é€𝄞 x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := parseFile([]byte(tc.doc))
			n := findExpression(f.docs[0])
			if n == nil {
				t.Fatalf("no expression in %q", tc.doc)
			}
			offs := scalarOffsets(f.text, n)
			if len(offs) != utf8.RuneCountInString(n.Value)+1 {
				t.Fatalf("%d offsets for %d characters", len(offs), utf8.RuneCountInString(n.Value))
			}
			var got strings.Builder
			for i, c := range []rune(n.Value) {
				r, _ := utf8.DecodeRune(f.text.data[offs[i]:])
				if r == c {
					got.WriteRune(c)
				} else {
					got.WriteRune('·')
				}
			}
			if got.String() != tc.want {
				t.Errorf("value %q read back as %q, want %q", n.Value, got.String(), tc.want)
			}
		})
	}
}

func findExpression(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "expression" {
				return n.Content[i+1]
			}
			if e := findExpression(n.Content[i+1]); e != nil {
				return e
			}
		}
	}
	return nil
}

// FuzzScalarOffsets: whatever the document, the mapping of each scalar
// never panics, has one offset per character and one more, never
// decreases and stays within the text; and the LSP positions of every
// offset convert back to the offset.
func FuzzScalarOffsets(f *testing.F) {
	for _, s := range []string{
		"expression: object.spec.x == 1\n",
		"expression: |\n  a\n  b\n",
		"expression: >-\n  a\n\n  b\n",
		"expression: \"a\\\n  b\\u00e9\"\n",
		"a: 'x''y\n  z'\n",
		"- a\n- |2\n   b\n",
		"k: [a, \"b\", {c: d}]\n---\nz: é\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if len(doc) > 1<<12 {
			return
		}
		pf := parseFile([]byte(doc))
		for _, d := range pf.docs {
			walkScalars(d, 0, func(n *yaml.Node) {
				offs := scalarOffsets(pf.text, n)
				if len(offs) != utf8.RuneCountInString(n.Value)+1 {
					t.Fatalf("%d offsets for %q", len(offs), n.Value)
				}
				for i, o := range offs {
					if o < 0 || o > len(doc) || (i > 0 && o < offs[i-1]) {
						t.Fatalf("offsets %v of %q out of order or range", offs, n.Value)
					}
					if utf8.ValidString(doc) && (i < 64 || i == len(offs)-1) {
						p := pf.text.position(o)
						if back := pf.text.offset(p); back != o && !(back < o && strings.ContainsAny(doc[back:o], "\r")) {
							t.Fatalf("offset %d → %v → %d", o, p, back)
						}
					}
				}
			})
		}
	})
}

func walkScalars(n *yaml.Node, depth int, visit func(*yaml.Node)) {
	if n == nil || depth > maxDepth {
		return
	}
	if n.Kind == yaml.ScalarNode {
		visit(n)
	}
	for _, c := range n.Content {
		walkScalars(c, depth+1, visit)
	}
}
