package lint

import (
	"encoding/json"
	"io"
	"sort"
	"strconv"

	"github.com/mutatis-dev/mutatis/manifest"
)

// Problems turns what loading, API validation and compilation found (the
// problems lint always reported) into findings of severity Error, so that
// the JSON and SARIF reports hold them too: check "api-validation" for a
// field error, "load" for a file or document that could not be read.
func Problems(l manifest.ErrorList) []Finding {
	var out []Finding
	for _, e := range l {
		if len(e.Errs) == 0 {
			msg := ""
			if e.Err != nil {
				msg = e.Err.Error()
			}
			out = append(out, Finding{Severity: Error, Check: "load", Source: e.Source, Kind: e.Kind, Name: e.Name, Message: msg, Line: e.Line, Column: column(e.Line)})
			continue
		}
		for _, fe := range e.Errs {
			out = append(out, Finding{Severity: Error, Check: "api-validation", Source: e.Source, Kind: e.Kind, Name: e.Name, Field: fe.Field, Message: fe.ErrorBody()})
		}
	}
	return out
}

func column(line int) int {
	if line > 0 {
		return 1
	}
	return 0
}

// jsonFinding is a Finding as -o json writes it.
type jsonFinding struct {
	Severity   string `json:"severity"`
	Check      string `json:"check"`
	File       string `json:"file"`
	Document   int    `json:"document"`
	Item       *int   `json:"item,omitempty"`
	Line       int    `json:"line,omitempty"`
	Column     int    `json:"column,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name,omitempty"`
	Field      string `json:"field,omitempty"`
	Message    string `json:"message"`
	Expression string `json:"expression,omitempty"`
	CELLine    int    `json:"celLine,omitempty"`
	CELColumn  int    `json:"celColumn,omitempty"`
}

// Summary counts what lint read and found.
type Summary struct {
	Policies int `json:"policies"`
	Bindings int `json:"bindings"`
	Problems int `json:"problems"`
	Warnings int `json:"warnings"`
}

// WriteJSON writes the findings and the summary as one JSON object:
// {"findings": [...], "summary": {...}}.
func WriteJSON(w io.Writer, fs []Finding, s Summary) error {
	out := struct {
		Findings []jsonFinding `json:"findings"`
		Summary  Summary       `json:"summary"`
	}{Findings: []jsonFinding{}, Summary: s}
	for _, f := range fs {
		jf := jsonFinding{Severity: f.Severity.String(), Check: f.Check, File: f.Source.File, Document: f.Source.Doc, Line: f.Line, Column: f.Column,
			Kind: f.Kind, Name: f.Name, Field: f.Field, Message: f.Message, Expression: f.Expression, CELLine: f.CELLine, CELColumn: f.CELColumn}
		if f.Source.Item >= 0 {
			item := f.Source.Item
			jf.Item = &item
		}
		out.Findings = append(out.Findings, jf)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// SARIF 2.1.0 (OASIS), the subset code-scanning services read: one run of
// the mutatis tool, one rule per check, one result per finding with its
// file, line and column.
type sarifLog struct {
	Version string     `json:"version"`
	Schema  string     `json:"$schema"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string       `json:"id"`
	ShortDescription sarifMessage `json:"shortDescription"`
	HelpURI          string       `json:"helpUri,omitempty"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

// checkDescriptions describes every check for SARIF's rules; docs/lint.md
// has the long form.
var checkDescriptions = map[string]string{
	"load":                     "A file or document cannot be read or decoded",
	"api-validation":           "kube-apiserver's API validation refuses the object, or an expression does not compile",
	"binding":                  "A binding or policy that does nothing",
	"cost":                     "An expression whose bounded cost estimate exceeds the per-call limit",
	"object-undeclared-field":  "Object{…} sets a field the kind's schema does not declare",
	"object-value-type":        "Object{…} sets a field to a value of the wrong type",
	"object-atomic":            "Object{…} writes into an atomic list, map or struct",
	"object-type-name":         "An Object type name does not follow the field path",
	"read-undeclared-field":    "An expression reads a field the kind's schema does not declare",
	"read-type":                "An expression applies an operation to values of the wrong type",
	"read-unguarded-optional":  "An expression reads an often absent field without has() or ?.",
	"jsonpatch-path":           "A JSON patch path that cannot exist in the kind's schema",
	"jsonpatch-escape":         "A JSON patch path key with / or ~ not escaped with jsonpatch.escapeKey",
	"jsonpatch-index":          "A JSON patch add at a list index real lists may not reach",
	"jsonpatch-missing-parent": "A JSON patch below an often absent field nothing creates or guards",
	"set-unserved-resource":    "A rule names a resource Kubernetes does not serve",
	"set-param-ref":            "A binding's paramRef cannot resolve",
	"set-param-kind":           "A paramKind nothing serves",
}

// WriteSARIF writes the findings as a SARIF 2.1.0 log.
func WriteSARIF(w io.Writer, fs []Finding) error {
	rules := map[string]bool{}
	run := sarifRun{Tool: sarifTool{Driver: sarifDriver{Name: "mutatis", InformationURI: "https://github.com/mutatis-dev/mutatis"}}, Results: []sarifResult{}}
	for _, f := range fs {
		rules[f.Check] = true
		level := "warning"
		if f.Severity == Error {
			level = "error"
		}
		msg := f.Message
		if f.Kind != "" {
			msg = f.Kind + " " + quote(f.Name) + ": " + msg
		}
		if f.Field != "" {
			msg = f.Field + ": " + msg
		}
		if f.CELLine > 0 {
			msg += " (CEL <input>:" + strconv.Itoa(f.CELLine) + ":" + strconv.Itoa(f.CELColumn) + ")"
		}
		loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: f.Source.File}}}
		if f.Line > 0 {
			loc.PhysicalLocation.Region = &sarifRegion{StartLine: f.Line, StartColumn: f.Column}
		}
		run.Results = append(run.Results, sarifResult{RuleID: f.Check, Level: level, Message: sarifMessage{Text: msg}, Locations: []sarifLocation{loc}})
	}
	ids := make([]string, 0, len(rules))
	for id := range rules {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		d := checkDescriptions[id]
		if d == "" {
			d = id
		}
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{ID: id, ShortDescription: sarifMessage{Text: d}, HelpURI: "https://github.com/mutatis-dev/mutatis/blob/main/docs/lint.md#" + id})
	}
	if run.Tool.Driver.Rules == nil {
		run.Tool.Driver.Rules = []sarifRule{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{Version: "2.1.0", Schema: "https://json.schemastore.org/sarif-2.1.0.json", Runs: []sarifRun{run}})
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
