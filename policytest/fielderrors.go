package policytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mutatis-dev/mutatis/internal/spelling"
)

// fieldProblem is a problem of the field at p told in words, with no
// value to quote: "cases[0].object: kind … is not served".
func fieldProblem(p *field.Path, detail string) *field.Error {
	return field.Invalid(p, field.OmitValueType{}, detail)
}

// fieldErrorText is how a suite's field error reads: a fieldProblem as
// "path: detail", every other error as apimachinery writes it.
func fieldErrorText(fe *field.Error) string {
	if fe.Type == field.ErrorTypeInvalid && fe.BadValue == (field.OmitValueType{}) {
		return fe.Field + ": " + fe.Detail
	}
	return fe.Error()
}

var unknownFieldError = regexp.MustCompile(`^unknown field "(.+)"$`)

// unknownField turns a strict decoding error of a suite (an unknown
// field, with its path from the root) into a field error that suggests
// the closest known field; other errors keep their text.
func unknownField(err error) *field.Error {
	m := unknownFieldError.FindStringSubmatch(err.Error())
	if m == nil {
		return fieldProblem(nil, err.Error())
	}
	return unknownFieldAt(m[1], reflect.TypeFor[Suite]())
}

// unknownFieldAt is the error of the unknown field at path ("a[0].b.c")
// in a value of type root.
func unknownFieldAt(path string, root reflect.Type) *field.Error {
	segments := strings.Split(path, ".")
	t := root
	for _, seg := range segments[:len(segments)-1] {
		name, _, _ := strings.Cut(seg, "[")
		t = fieldType(t, name)
		if t == nil {
			break
		}
	}
	detail := "unknown field"
	if t != nil {
		if s := spelling.Closest(segments[len(segments)-1], jsonFields(t)); s != "" {
			detail += fmt.Sprintf("; did you mean %q?", s)
		}
	}
	return fieldProblem(pathOf(path), detail)
}

// pathOf turns "cases[0].expect.x" into a field.Path that prints the same.
func pathOf(s string) *field.Path {
	var p *field.Path
	for _, seg := range strings.Split(s, ".") {
		name, rest, _ := strings.Cut(seg, "[")
		if p == nil {
			p = field.NewPath(name)
		} else {
			p = p.Child(name)
		}
		for rest != "" {
			var i int
			if _, err := fmt.Sscanf(rest, "%d]", &i); err != nil {
				p = p.Key(strings.TrimSuffix(rest, "]"))
				break
			}
			p = p.Index(i)
			_, rest, _ = strings.Cut(rest, "[")
		}
	}
	return p
}

// elem is t without pointers, slices and maps around it.
func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	return t
}

// fieldType is the type of t's field named name in JSON, or nil.
func fieldType(t reflect.Type, name string) reflect.Type {
	t = elem(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	for _, f := range reflect.VisibleFields(t) {
		if jsonName(f) == name {
			return f.Type
		}
	}
	return nil
}

// jsonFields are the JSON names of t's fields, with those of the structs
// it embeds untagged (which encoding/json decodes as t's own).
func jsonFields(t reflect.Type) []string {
	t = elem(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for _, f := range reflect.VisibleFields(t) {
		if n := jsonName(f); n != "" {
			names = append(names, n)
		}
	}
	return names
}

func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// pathAt is the field path ("cases[1].expect.unchanged") of the value
// that ends at offset in the JSON document js (where a decoding error
// was met), or "" when there is none.
func pathAt(js []byte, offset int64) string {
	type level struct {
		array     bool
		index     int
		key       string
		expectKey bool
	}
	var stack []*level
	path := func() string {
		var b strings.Builder
		for i, l := range stack {
			switch {
			case l.array:
				fmt.Fprintf(&b, "[%d]", l.index)
			default:
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(l.key)
			}
		}
		return b.String()
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && !stack[len(stack)-1].array {
				stack[len(stack)-1].expectKey = true
			}
			continue
		}
		if top != nil && !top.array && top.expectKey {
			top.key, top.expectKey = tok.(string), false
			continue
		}
		if top != nil && top.array {
			top.index++
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, &level{array: d == '[', index: -1, expectKey: d == '{'})
			continue
		}
		if dec.InputOffset() >= offset {
			return path()
		}
		if top != nil && !top.array {
			top.expectKey = true
		}
	}
}
