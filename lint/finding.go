package lint

import (
	"fmt"
	"strings"

	"github.com/mutatis-dev/mutatis/manifest"
)

// Severity tells whether a finding fails at run time (Error) or may (Warning).
type Severity int

const (
	// Error: every evaluation that reaches the expression fails, and every
	// evaluation reaches it.
	Error Severity = iota
	// Warning: a likely mistake that kube-apiserver accepts and that can
	// still succeed.
	Warning
)

func (s Severity) String() string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// Finding is one problem a static check found.
type Finding struct {
	Severity Severity
	// Check names the check that found it (e.g. "object-undeclared-field");
	// docs/lint.md lists them.
	Check string
	// Source, Kind and Name identify the object.
	Source manifest.Source
	Kind   string
	Name   string
	// Field is the field path in the object, e.g.
	// spec.mutations[0].applyConfiguration.expression.
	Field string
	// Message says what fails and, for errors, the runtime's own words.
	Message string
	// Expression is the CEL source when the finding is about an
	// expression; CELLine and CELColumn (1-based, 0 when unknown) locate
	// it there.
	Expression         string
	CELLine, CELColumn int
	// Line and Column (1-based, 0 when unknown) locate Field in the file.
	Line, Column int
}

// String formats the finding as lint prints it: the source with the
// YAML position, the object, the field path and the message, then the CEL
// line with a caret under the column, e.g.
//
//	p.yaml#0 (line 12:21): MutatingAdmissionPolicy "x": spec.mutations[0].applyConfiguration.expression: …
//	 | Object{spec: Object.spec{containerz: []}}
//	 | .........................^
func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.Source.String())
	if f.Line > 0 {
		fmt.Fprintf(&b, " (line %d:%d)", f.Line, f.Column)
	}
	b.WriteString(": ")
	b.WriteString(manifest.ObjectPrefix(f.Kind, f.Name))
	if f.Field != "" {
		b.WriteString(f.Field)
		b.WriteString(": ")
	}
	b.WriteString(f.Message)
	if f.Expression != "" && f.CELLine > 0 {
		lines := strings.Split(f.Expression, "\n")
		if f.CELLine <= len(lines) {
			fmt.Fprintf(&b, " (at <input>:%d:%d)\n | %s\n | %s^", f.CELLine, f.CELColumn, lines[f.CELLine-1], strings.Repeat(".", max(f.CELColumn-1, 0)))
		}
	}
	return b.String()
}

// Errors counts the findings of severity Error.
func Errors(fs []Finding) int {
	n := 0
	for _, f := range fs {
		if f.Severity == Error {
			n++
		}
	}
	return n
}
