package policytest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Convert reads a suite in another tool's format — a kat tests/
// directory, a Kyverno CLI test file, a kaptest manifest — or a PolicyTest
// file, and returns the PolicyTest it is (what `mutatis test` runs), as
// YAML, with its paths relative to dir, where it will be written.
func Convert(ctx context.Context, path, dir string) ([]byte, error) {
	var s *Suite
	var err error
	base := filepath.Dir(path) // the directory the suite's paths are relative to
	info, statErr := os.Stat(path)
	switch {
	case statErr != nil:
		return nil, statErr
	case info.IsDir():
		if !IsKatTestsDir(path) {
			return nil, fmt.Errorf("%s: a directory, and not kat's tests/ directory beside MutatingAdmissionPolicies", path)
		}
		s, err = KatSuite(ctx, path)
	case IsKyvernoTestFile(path):
		s, err = KyvernoSuite(ctx, path)
	case IsKaptestFile(path):
		s, err = KaptestSuite(ctx, path)
	default:
		s, err = readSuiteFile(path)
	}
	if err != nil {
		return nil, err
	}
	rel := func(p string) string { return relativeTo(dir, resolve(base, p)) }
	for i := range s.Policies {
		s.Policies[i] = rel(s.Policies[i])
	}
	relManifests(s.Resources, rel)
	for i := range s.Cases {
		c := &s.Cases[i]
		relManifests(c.Resources, rel)
		for _, m := range []*Manifest{c.Object, c.OldObject, c.Expect.Object, c.Expect.ObjectContains} {
			if m != nil && m.Path != "" {
				m.Path = rel(m.Path)
			}
		}
	}
	var doc yaml.Node
	doc.Kind = yaml.DocumentNode
	doc.Content = []*yaml.Node{node(reflect.ValueOf(s).Elem())}
	return encodeYAML(&doc)
}

func relManifests(ms []Manifest, rel func(string) string) {
	for i := range ms {
		if ms[i].Path != "" {
			ms[i].Path = rel(ms[i].Path)
		}
	}
}

// node is the YAML of v with the fields of structs in their declared
// order (their JSON names; empty omitempty fields left out), maps sorted.
func node(v reflect.Value) *yaml.Node {
	switch x := v.Interface().(type) {
	case Manifest:
		if x.Inline != nil {
			return anyNode(x.Inline)
		}
		return anyNode(x.Path)
	case *Manifest:
		return node(reflect.ValueOf(*x))
	case *Denial:
		if *x == (Denial{}) {
			return anyNode(true)
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		return node(v.Elem())
	case reflect.Struct:
		m := &yaml.Node{Kind: yaml.MappingNode}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name := jsonName(f)
			if name == "" || v.Field(i).IsZero() {
				continue
			}
			m.Content = append(m.Content, anyNode(name), node(v.Field(i)))
		}
		return m
	case reflect.Slice:
		s := &yaml.Node{Kind: yaml.SequenceNode}
		for i := range v.Len() {
			s.Content = append(s.Content, node(v.Index(i)))
		}
		return s
	}
	return anyNode(v.Interface())
}

func anyNode(v any) *yaml.Node {
	var n yaml.Node
	if err := n.Encode(plain(v)); err != nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(v)}
	}
	return &n
}

func encodeYAML(doc *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	err := enc.Close()
	return b.Bytes(), err
}

// finish is a suite read from another tool's format: s, or the problems
// met reading it (errs) and those of the suite it gives, as the
// InputError of file.
func finish(s *Suite, file string, errs field.ErrorList) (*Suite, error) {
	errs = append(errs, s.validate()...)
	if len(errs) > 0 {
		return nil, &InputError{File: file, Errs: errs}
	}
	return s, nil
}
