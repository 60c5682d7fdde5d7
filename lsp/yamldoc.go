package lsp

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mutatis-dev/mutatis/manifest"
)

// parsedFile is one file's text and its YAML documents, cut as manifest
// cuts them (so that manifest.Source.Doc indexes docs), with lines counted
// from the file's start. A document that does not parse is nil.
type parsedFile struct {
	text *text
	docs []*yaml.Node
}

func parseFile(data []byte) *parsedFile {
	f := &parsedFile{text: newText(data)}
	for _, d := range manifest.Documents(data) {
		for len(f.docs) < d.Index {
			f.docs = append(f.docs, nil)
		}
		var n yaml.Node
		if d.JSON || yaml.Unmarshal(d.Data, &n) != nil || n.Kind != yaml.DocumentNode || len(n.Content) != 1 {
			f.docs = append(f.docs, nil)
			continue
		}
		shiftLines(&n, d.Line-1, 0)
		f.docs = append(f.docs, n.Content[0])
	}
	return f
}

// shiftLines moves a parsed document's nodes to the lines of its file;
// depth bounds the walk (aliases make graphs, never trees, in yaml.v3's
// node API, but a hostile document can nest deeply).
func shiftLines(n *yaml.Node, by, depth int) {
	if depth > maxDepth {
		return
	}
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by, depth+1)
	}
}

// maxDepth bounds every walk of a document's nodes.
const maxDepth = 200

// root is the node of a source's object: the document's, or an item of a
// List.
func (f *parsedFile) root(src manifest.Source) *yaml.Node {
	if src.Doc < 0 || src.Doc >= len(f.docs) {
		return nil
	}
	n := f.docs[src.Doc]
	if src.Item >= 0 {
		n, _ = lookup(lookupValue(n, "items"), strconv.Itoa(src.Item))
	}
	return n
}

// lookupValue is lookup's value alone.
func lookupValue(n *yaml.Node, seg string) *yaml.Node {
	v, _ := lookup(n, seg)
	return v
}

// lookup finds the value of key seg of a mapping (and its key node), or
// item seg of a sequence.
func lookup(n *yaml.Node, seg string) (value, key *yaml.Node) {
	if n == nil {
		return nil, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				return n.Content[i+1], n.Content[i]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i], nil
		}
	}
	return nil, nil
}

// fieldNode finds the node of a field path (spec.mutations[0].jsonPatch.expression,
// metadata.labels[app.kubernetes.io/name]) under root: the value's node
// and its key's, and whether the whole path was found; otherwise the
// deepest node reached.
func fieldNode(root *yaml.Node, path string) (value, key *yaml.Node, whole bool) {
	value = root
	for _, seg := range fieldSegments(path) {
		v, k := lookup(value, seg)
		if v == nil {
			return value, key, false
		}
		value, key = v, k
	}
	return value, key, true
}

// fieldSegments splits a field path into keys and indexes; a key quoted
// in brackets ([app.kubernetes.io/name]) is one segment.
func fieldSegments(p string) []string {
	var out []string
	for p != "" {
		if p[0] == '.' {
			p = p[1:]
			continue
		}
		if p[0] == '[' {
			end := strings.IndexByte(p, ']')
			if end < 0 {
				break
			}
			out = append(out, strings.Trim(p[1:end], `"`))
			p = p[end+1:]
			continue
		}
		end := strings.IndexAny(p, ".[")
		if end < 0 {
			end = len(p)
		}
		out = append(out, p[:end])
		p = p[end:]
	}
	return out
}

// pathTo is the chain of nodes from root to the deepest node whose
// source span holds offset off, with the keys leading to each: what a
// cursor is in.
type pathStep struct {
	key  string // "" for a sequence item or the root
	node *yaml.Node
	// keyNode is the key's node of a mapping value.
	keyNode *yaml.Node
}

// nodeAt finds the scalar (value or key) at byte offset off in document
// root of f, with the path of keys to it; ok is false when off is in no
// scalar.
func (f *parsedFile) nodeAt(off int) (path []pathStep, ok bool) {
	for _, d := range f.docs {
		if d == nil {
			continue
		}
		if p, ok := f.descend(d, off, []pathStep{{node: d}}, 0); ok {
			return p, true
		}
	}
	return nil, false
}

func (f *parsedFile) descend(n *yaml.Node, off int, path []pathStep, depth int) ([]pathStep, bool) {
	if depth > maxDepth {
		return nil, false
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if f.contains(n, off) {
			return path, true
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && f.contains(k, off) {
				return append(path, pathStep{key: k.Value, node: k, keyNode: k}), true
			}
			if p, ok := f.descend(v, off, append(path, pathStep{key: k.Value, node: v, keyNode: k}), depth+1); ok {
				return p, true
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if p, ok := f.descend(c, off, append(path, pathStep{key: strconv.Itoa(i), node: c}), depth+1); ok {
				return p, true
			}
		}
	}
	return nil, false
}

// contains tells whether off is within scalar n's source, its end
// included (a cursor after the last character is in it).
func (f *parsedFile) contains(n *yaml.Node, off int) bool {
	start := f.text.yamlOffset(n.Line, n.Column)
	if off < start {
		return false
	}
	offs := scalarOffsets(f.text, n)
	end := offs[len(offs)-1]
	if n.Style == yaml.DoubleQuotedStyle || n.Style == yaml.SingleQuotedStyle {
		end = max(end, start+1)
	}
	return off <= end
}

// valueOffset is the index in n.Value of the character at byte offset off
// of the source (the one after, between two), with the offsets of n.
func (f *parsedFile) valueOffset(n *yaml.Node, off int) (int, []int) {
	offs := scalarOffsets(f.text, n)
	i := 0
	for i < len(offs)-1 && offs[i] < off {
		i++
	}
	return i, offs
}
