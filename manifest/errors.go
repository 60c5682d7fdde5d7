package manifest

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Source says where an object came from.
type Source struct {
	// File is the path as given (or found while walking a directory); "-"
	// means stdin.
	File string
	// Doc is the 0-based index of the YAML document or JSON value in File.
	Doc int
	// Item is the 0-based index inside a List object, or -1.
	Item int
}

// String formats the Source as "file#doc" or "file#doc[item]".
func (s Source) String() string {
	file := s.File
	if file == "-" {
		file = "<stdin>"
	}
	if s.Item >= 0 {
		return fmt.Sprintf("%s#%d[%d]", file, s.Doc, s.Item)
	}
	return fmt.Sprintf("%s#%d", file, s.Doc)
}

// Error is every problem found in one document or object: either a list of
// field errors (API validation, as kube-apiserver reports them) or a single
// error (I/O, syntax, decoding).
type Error struct {
	Source Source
	// Line is the 1-based line in Source.File the error refers to, or 0.
	Line int
	// Kind and Name identify the object when they are known.
	Kind string
	Name string
	// Errs holds validation errors; Err is set instead when the object
	// could not be read or decoded.
	Errs field.ErrorList
	Err  error
}

func (e *Error) prefix() string {
	var b strings.Builder
	b.WriteString(e.Source.String())
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	b.WriteString(": ")
	b.WriteString(ObjectPrefix(e.Kind, e.Name))
	return b.String()
}

// ObjectPrefix names an object at the start of an error or a finding as
// mutatis prints them: `Kind "name": `, `Kind: ` without a name, nothing
// without a kind.
func ObjectPrefix(kind, name string) string {
	switch {
	case kind == "":
		return ""
	case name == "":
		return kind + ": "
	}
	return kind + " " + strconv.Quote(name) + ": "
}

// Error prints one line per field error, each prefixed with the source and
// the object, e.g.
//
//	policies/bad.yaml#1: MutatingAdmissionPolicy "x": spec.reinvocationPolicy: Required value
func (e *Error) Error() string {
	p := e.prefix()
	if len(e.Errs) == 0 {
		if e.Err == nil {
			return strings.TrimSuffix(p, ": ")
		}
		return p + e.Err.Error()
	}
	lines := make([]string, len(e.Errs))
	for i, fe := range e.Errs {
		lines[i] = p + fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the underlying error, if any.
func (e *Error) Unwrap() error { return e.Err }

// ErrorList is every problem found while loading, in input order.
type ErrorList []*Error

// Error prints every error, one per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// err returns l as an error, or nil when l is empty (so that a nil ErrorList
// never becomes a non-nil error interface).
func (l ErrorList) err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}
