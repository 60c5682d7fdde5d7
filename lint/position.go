package lint

import (
	"os"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mutatis-dev/mutatis/manifest"
)

// Locate sets the YAML line and column of every finding that names a
// field and has none yet, reading each file once. manifest keeps where a
// document starts, not where its fields are, so the file is read again
// and the document's nodes walked along the field path; a path that does
// not lead to a node (a defaulted field, say) keeps the position of the
// deepest node it reaches. Stdin ("-") cannot be read again: its findings
// keep no position.
func Locate(fs []Finding) {
	files := map[string]*fileDocs{}
	for i := range fs {
		f := &fs[i]
		if f.Line > 0 || f.Source.File == "-" || f.Source.File == "" {
			continue
		}
		d, ok := files[f.Source.File]
		if !ok {
			d = readDocs(f.Source.File)
			files[f.Source.File] = d
		}
		if d == nil {
			continue
		}
		root := d.doc(f.Source.Doc)
		if root == nil {
			continue
		}
		if f.Source.Item >= 0 {
			root = child(child(root, "items"), strconv.Itoa(f.Source.Item))
			if root == nil {
				continue
			}
		}
		n := root
		for _, seg := range pathSegments(f.Field) {
			next := child(n, seg)
			if next == nil {
				break
			}
			n = next
		}
		f.Line, f.Column = n.Line, n.Column
	}
}

// fileDocs is one file cut into documents as manifest cuts it.
type fileDocs struct {
	docs []*yaml.Node
}

func (d *fileDocs) doc(i int) *yaml.Node {
	if i < 0 || i >= len(d.docs) {
		return nil
	}
	return d.docs[i]
}

// readDocs reads a file's documents, cut as manifest cuts them.
func readDocs(name string) *fileDocs {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil
	}
	out := &fileDocs{}
	for _, d := range manifest.Documents(data) {
		for len(out.docs) < d.Index {
			out.docs = append(out.docs, nil)
		}
		out.docs = append(out.docs, parseAt(d.Data, d.Line))
	}
	return out
}

// parseAt parses one document whose first line is line start of its file
// and returns its root node with lines counted from the file's start.
func parseAt(text []byte, start int) *yaml.Node {
	var n yaml.Node
	if err := yaml.Unmarshal(text, &n); err != nil {
		return nil
	}
	shift(&n, start-1)
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return n.Content[0]
	}
	return nil
}

func shift(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shift(c, by)
	}
}

// child is the value of key seg of a mapping, or item seg of a sequence.
func child(n *yaml.Node, seg string) *yaml.Node {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				return n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}

// pathSegments splits a field path (spec.mutations[0].jsonPatch.expression,
// metadata.labels[app.kubernetes.io/name]) into keys and indexes.
func pathSegments(p string) []string {
	var out []string
	for len(p) > 0 {
		switch p[0] {
		case '.':
			p = p[1:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return append(out, p)
			}
			out = append(out, p[1:end])
			p = p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				return append(out, p)
			}
			out = append(out, p[:end])
			p = p[end:]
		}
	}
	return out
}
