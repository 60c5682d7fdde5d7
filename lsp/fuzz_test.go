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
