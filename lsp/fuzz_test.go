package lsp

import (
	"os"
	"path/filepath"
	"testing"

	"go.lsp.dev/protocol"
)

// FuzzHandlers: whatever a document holds, its analysis and the
// requests at any position (completion, hover, definition, references,
// code actions, code lenses) answer without a panic, and every
// diagnostic's range is within the text and in order.
func FuzzHandlers(f *testing.F) {
	for _, p := range []string{"sidecar-injection/policy.yaml", "default-resources/policy.yaml", "default-resources/default-resources.mutatis-test.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "examples", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data), uint32(20), uint32(12))
	}
	f.Add(crdWorkspace, uint32(44), uint32(90))
	f.Add(fixWorkspace, uint32(13), uint32(30))
	f.Add(fixWorkspace, uint32(53), uint32(30))
	f.Add(vapWorkspace, uint32(17), uint32(30))
	f.Add("expression: \"object.\\\"x\"\n", uint32(0), uint32(20))
	s, err := NewServer(Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc string, line, char uint32) {
		if len(doc) > 1<<15 {
			return
		}
		for _, path := range []string{"/ws/p.yaml", "/ws/s.mutatis-test.yaml"} {
			s.files = map[string]*fileState{path: newFileState(path, []byte(doc))}
			s.analysis = nil
			a := s.current()
			tx := newText([]byte(doc))
			for _, d := range a.Diagnostics[path] {
				st, en := tx.offset(d.Range.Start), tx.offset(d.Range.End)
				if st > en || en > len(doc) {
					t.Fatalf("diagnostic %q: range %v", d.Message, d.Range)
				}
			}
			pos := protocol.Position{Line: line % 200, Character: char % 300}
			s.completion(path, pos)
			s.hover(path, pos)
			s.definition(path, pos)
			s.references(path, pos, true)
			s.codeActions(path, protocol.Range{End: protocol.Position{Line: 1000}})
			s.codeLenses(path)
		}
	})
}

// FuzzFixes: the CEL quick fixes (fixes.go) of any expression at any
// index answer without a panic, and a rewrite they offer parses.
func FuzzFixes(f *testing.F) {
	for _, e := range []string{
		`object.metadata.labels["team"] == "a"`,
		`"team" in object.metadata.labels`,
		`object.spec.containers.all(c, c.securityContext.privileged != true)`,
		`Object{spec: Object.spec{tolerations: [Object.spec.tolerations{key: "a"}]}}`,
		"Object{\n spec: Object.spec{dnsConfig: Object.spec.dnsConfig{nameservers: [r'x', b\"y\", '''z''']}}}",
	} {
		f.Add(e, uint16(16))
	}
	f.Fuzz(func(t *testing.T, expr string, at uint16) {
		if len(expr) > 1<<12 {
			return
		}
		i := int(at) % (len([]rune(expr)) + 1)
		if edits, _, ok := guardFix(expr, i); ok {
			for _, e := range edits {
				if e.from < 0 || e.to < e.from || e.to > len([]rune(expr)) {
					t.Fatalf("edit %+v out of %q", e, expr)
				}
			}
			if got := applyCEL(expr, edits); !parses(got) {
				t.Fatalf("the guard of %q: %q does not parse", expr, got)
			}
		}
		if got, ok := jsonPatchFix(expr, i, func([]string) bool { return true }); ok && !parses(got) {
			t.Fatalf("the JSONPatch of %q: %q does not parse", expr, got)
		}
		matchingClose([]rune(expr), i)
		literalEnd([]rune(expr), i)
	})
}

func parses(expr string) bool {
	_, ok := parseCEL(expr)
	return ok
}
