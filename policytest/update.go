package policytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Updated is what Report.Update did to one case.
type Updated struct {
	// File is the file written: the suite's, or the file an expectation
	// names (a golden file).
	File string
	// Case is "suite/case"; Expectations are the fields written.
	Case         string
	Expectations []string
}

// NotUpdated is a failing case Report.Update could not mend, and why.
type NotUpdated struct {
	Case, Reason string
}

// Update writes the actual results of the failing cases into their
// expectations, as `mutatis test --update` does: expect.object,
// objectContains and patch (inline in the suite, or in the file they
// name), denied's message, messageRegex, code and by, warnings,
// auditAnnotations and validationFailures. An edit replaces
// the expectation's value in the file's text and nothing else, so the
// rest of the file — comments, order, layout — stays as it was; inside
// the value, comments and the order of the fields that remain are kept.
// A failure no expectation's value mends (a denial where an admission was
// expected, applied, idempotence, …) is returned as NotUpdated.
func (r *Report) Update() ([]Updated, []NotUpdated, error) {
	var done []Updated
	var notDone []NotUpdated
	for _, s := range r.Suites {
		if s.Loaded == nil {
			continue
		}
		edits := map[string][]suiteEdit{}
		for _, c := range s.Cases {
			if c.Status != Fail {
				continue
			}
			sc := s.Loaded.caseNamed(c.Name)
			var written []string
			for _, f := range c.Failures {
				if f.field == nil || sc == nil {
					notDone = append(notDone, NotUpdated{Case: c.FullName(), Reason: f.Expectation + ": no expectation's value says what happened; edit the case"})
					continue
				}
				if m := sc.manifestOf(f.field[0]); m != nil && m.Path != "" {
					// A golden file: written whole.
					file := resolve(filepath.Dir(s.File), m.Path)
					if err := writeGolden(file, f.actual); err != nil {
						return done, notDone, err
					}
					done = append(done, Updated{File: file, Case: c.FullName(), Expectations: []string{f.Expectation}})
					continue
				}
				if s.Loaded.isKat() {
					notDone = append(notDone, NotUpdated{Case: c.FullName(), Reason: f.Expectation + ": kat's files hold no such expectation"})
					continue
				}
				if slices.ContainsFunc(edits[s.File], func(e suiteEdit) bool { return e.caseName == c.Name && slices.Equal(e.field, f.field) }) {
					continue // one edit writes every failure of the field (warnings)
				}
				edits[s.File] = append(edits[s.File], suiteEdit{caseName: c.Name, field: f.field, value: f.actual})
				written = append(written, f.Expectation)
			}
			if len(written) > 0 {
				done = append(done, Updated{File: s.File, Case: c.FullName(), Expectations: written})
			}
		}
		for file, es := range edits {
			if err := editSuite(file, es); err != nil {
				return done, notDone, fmt.Errorf("updating %s: %w", file, err)
			}
		}
	}
	return done, notDone, nil
}

// caseNamed is the case of the suite named name.
func (l *Loaded) caseNamed(name string) *Case {
	for i := range l.Suite.Cases {
		if l.Suite.Cases[i].Name == name {
			return &l.Suite.Cases[i]
		}
	}
	return nil
}

// isKat tells whether the suite is a kat tests/ directory.
func (l *Loaded) isKat() bool { return !IsSuiteFile(l.File) }

// manifestOf is the case's expectation field, when it is an object
// given inline or as a path.
func (c *Case) manifestOf(field string) *Manifest {
	switch field {
	case "object":
		return c.Expect.Object
	case "objectContains":
		return c.Expect.ObjectContains
	}
	return nil
}

// writeGolden writes an expected object's file: its YAML document merged
// with the actual value (comments and field order kept), or the actual
// value as YAML when the file is not YAML.
func writeGolden(file string, actual any) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || isJSON(data) {
		return writeFileAtomic(file, marshalJSONOrYAML(data, actual))
	}
	if err := merge(doc.Content[0], plain(actual)); err != nil {
		return err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	return writeFileAtomic(file, b.Bytes())
}

func isJSON(data []byte) bool {
	t := bytes.TrimSpace(data)
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

func marshalJSONOrYAML(orig []byte, v any) []byte {
	if isJSON(orig) {
		b, _ := json.MarshalIndent(v, "", "  ")
		return append(b, '\n')
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	_ = enc.Encode(plain(v))
	return b.Bytes()
}

func writeFileAtomic(file string, data []byte) error {
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	tmp := file + ".mutatis-update"
	if err := os.WriteFile(tmp, data, info.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// suiteEdit sets expect.<field…> of a case to value.
type suiteEdit struct {
	caseName string
	field    []string
	value    any
}

// editSuite applies edits to a suite file's text.
func editSuite(file string, edits []suiteEdit) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if isJSON(data) {
		return fmt.Errorf("a JSON suite is not rewritten; write the expectations in it by hand")
	}
	// One edit at a time, each on the text the previous one left: the
	// positions yaml gives are those of the current text.
	for _, e := range edits {
		if data, err = applyEdit(data, e); err != nil {
			return fmt.Errorf("case %q: %w", e.caseName, err)
		}
	}
	return writeFileAtomic(file, data)
}

// applyEdit replaces the value of the edit's expectation in text.
func applyEdit(text []byte, e suiteEdit) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("not a YAML document")
	}
	_, cases := mappingValue(doc.Content[0], "cases")
	if cases == nil || cases.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("no cases")
	}
	var c *yaml.Node
	for _, item := range cases.Content {
		if _, n := mappingValue(item, "name"); n != nil && n.Value == e.caseName {
			c = item
		}
	}
	if c == nil {
		return nil, fmt.Errorf("no such case")
	}
	_, expect := mappingValue(c, "expect")
	if expect == nil {
		return nil, fmt.Errorf("no expect")
	}
	key, value := mappingValue(expect, e.field[0])
	if key == nil {
		return nil, fmt.Errorf("no expect.%s", e.field[0])
	}
	newValue := plain(e.value)
	if len(e.field) == 2 {
		// denied: a string is the message; a mapping has the field.
		if value.Kind == yaml.MappingNode && value.Style&yaml.FlowStyle != 0 {
			// A flow mapping ({by: X}) is rewritten whole, on its line.
			var m map[string]any
			if err := value.Decode(&m); err != nil {
				return nil, err
			}
			m[e.field[1]] = newValue
			newValue = m
		} else if value.Kind == yaml.MappingNode {
			if k, v := mappingValue(value, e.field[1]); k != nil {
				key, value = k, v
			}
		} else if e.field[1] != "message" {
			return nil, fmt.Errorf("expect.denied is not a mapping")
		}
	}
	return replaceValue(text, key, value, newValue)
}

// mappingValue is the key and value nodes of key in the mapping m.
func mappingValue(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// replaceValue replaces the text of the value node v of key k with the
// YAML of newValue: merged into v (its comments and field order kept),
// written in v's style — on the key's line for a scalar or a flow
// collection, as a block below it otherwise.
func replaceValue(text []byte, k, v *yaml.Node, newValue any) ([]byte, error) {
	// Where v was: merge may replace the node.
	vLine, vColumn, vKind := v.Line, v.Column, v.Kind
	if err := merge(v, newValue); err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(text), "\n")
	keyIndent := k.Column - 1
	// The value's last line: the lines after the key's that are indented
	// deeper (or, for a sequence, items at the key's column), not counting
	// blank lines and comments after it.
	last := k.Line // 1-based
scan:
	for i := k.Line; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		indent := len(l) - len(strings.TrimLeft(l, " "))
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case indent > keyIndent, vKind == yaml.SequenceNode && indent == keyIndent && strings.HasPrefix(t, "-") && vLine > k.Line:
			last = i + 1
		default:
			break scan
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	sameLine := vLine == k.Line
	if sameLine && v.Kind != yaml.ScalarNode {
		v.Style |= yaml.FlowStyle
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	rendered := strings.TrimSuffix(b.String(), "\n")
	var out strings.Builder
	for _, l := range lines[:k.Line-1] {
		out.WriteString(l)
	}
	keyLine := lines[k.Line-1]
	if sameLine {
		if strings.Contains(rendered, "\n") {
			// A block scalar, or a value flow style cannot hold.
			out.WriteString(strings.TrimRight(keyLine[:vColumn-1], " ") + "\n")
			out.WriteString(indentLines(rendered, strings.Repeat(" ", keyIndent+2)))
		} else {
			out.WriteString(keyLine[:vColumn-1])
			out.WriteString(rendered)
			if v.LineComment == "" && k.LineComment != "" {
				out.WriteString(" " + k.LineComment)
			}
			out.WriteString("\n")
		}
	} else {
		out.WriteString(keyLine)
		out.WriteString(indentLines(rendered, strings.Repeat(" ", keyIndent+2)))
	}
	for _, l := range lines[last:] {
		out.WriteString(l)
	}
	return []byte(out.String()), nil
}

func indentLines(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if l == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString(prefix + l + "\n")
	}
	return b.String()
}

// merge makes the node n hold value: mappings keep the keys value has, in
// their order and with their comments, drop the others and add the new
// ones sorted; sequences are merged element by element; anything else is
// replaced (its comments kept).
func merge(n *yaml.Node, value any) error {
	switch v := value.(type) {
	case map[string]any:
		if n.Kind == yaml.MappingNode {
			var content []*yaml.Node
			seen := map[string]bool{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				key := n.Content[i].Value
				nv, ok := v[key]
				if !ok {
					continue
				}
				seen[key] = true
				if err := merge(n.Content[i+1], nv); err != nil {
					return err
				}
				content = append(content, n.Content[i], n.Content[i+1])
			}
			var added []string
			for key := range v {
				if !seen[key] {
					added = append(added, key)
				}
			}
			sort.Strings(added)
			for _, key := range added {
				var kn, vn yaml.Node
				if err := kn.Encode(key); err != nil {
					return err
				}
				if err := vn.Encode(v[key]); err != nil {
					return err
				}
				content = append(content, &kn, &vn)
			}
			n.Content = content
			return nil
		}
	case []any:
		if n.Kind == yaml.SequenceNode {
			content := n.Content
			if len(content) > len(v) {
				content = content[:len(v)]
			}
			for i, item := range v {
				if i < len(content) {
					if err := merge(content[i], item); err != nil {
						return err
					}
					continue
				}
				var in yaml.Node
				if err := in.Encode(item); err != nil {
					return err
				}
				content = append(content, &in)
			}
			n.Content = content
			return nil
		}
	}
	var fresh yaml.Node
	if err := fresh.Encode(value); err != nil {
		return err
	}
	fresh.HeadComment, fresh.LineComment, fresh.FootComment = n.HeadComment, n.LineComment, n.FootComment
	switch {
	case fresh.Kind == n.Kind && n.Kind != yaml.ScalarNode:
		fresh.Style = n.Style
	case fresh.Kind == yaml.ScalarNode && n.Kind == yaml.ScalarNode && fresh.Tag == "!!str" && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		fresh.Style = n.Style // the quotes the author chose
	}
	*n = fresh
	return nil
}

// plain is v with json.Number turned into int64 or float64, which YAML
// writes as numbers.
func plain(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plain(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}
