package coverage

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"sync"
)

// segment is a piece of an expression's source: plain text, or a decision
// span holding nested segments.
type segment struct {
	Text     string
	Class    string // "" for plain text
	Title    string
	Children []segment
}

// segments splits src[lo:hi] into plain text and decision spans. Decision
// ranges are nested like the AST they come from; a range that overlaps a
// previous sibling is clipped rather than dropped.
func segments(src string, ds []DecisionReport, lo, hi int) []segment {
	var out []segment
	pos := lo
	for i := 0; i < len(ds); {
		d := ds[i]
		start, end := max(d.Start, pos), min(d.End, hi)
		// The decisions inside this one follow it in the sorted slice.
		j := i + 1
		for j < len(ds) && ds[j].Start < d.End {
			j++
		}
		if start < end {
			if pos < start {
				out = append(out, segment{Text: src[pos:start]})
			}
			out = append(out, segment{Class: "decision " + d.State, Title: decisionTitle(d), Children: segments(src, ds[i+1:j], start, end)})
			pos = end
		}
		i = j
	}
	if pos < hi {
		out = append(out, segment{Text: src[pos:hi]})
	}
	return out
}

func decisionTitle(d DecisionReport) string {
	mark := func(seen bool) string {
		if seen {
			return "seen"
		}
		return "never"
	}
	return fmt.Sprintf("%s (%s %s, %s %s)", d.Kind, d.TrueLabel, mark(d.True), d.FalseLabel, mark(d.False))
}

// htmlExpression is an expression prepared for the template.
type htmlExpression struct {
	ExpressionReport
	Segments []segment
}

// htmlBindings are a policy's bindings for the template, with what a
// request through one did ("invoked": a MAP's mutations ran; "validations
// ran"). Only a MAP's bindings have FalseConditions.
type htmlBindings struct {
	Ran  string
	List []BindingReport
}

type htmlPolicy struct {
	PolicyReport
	Expressions []htmlExpression
}

// WriteHTML writes a self-contained HTML page: the summary table, then per
// policy its bindings and the source of every expression with each
// decision highlighted green (both outcomes seen), yellow (one) or red
// (none); then, with Validating, the ValidatingAdmissionPolicies' table
// and per policy its bindings and expressions, each source coloured by
// its state.
func (r *Report) WriteHTML(w io.Writer) error {
	data := struct {
		Report   *Report
		Policies []htmlPolicy
	}{Report: r}
	for _, p := range r.Policies {
		hp := htmlPolicy{PolicyReport: p}
		for _, e := range p.Expressions {
			ds := append([]DecisionReport(nil), e.Decisions...)
			sort.SliceStable(ds, func(i, j int) bool {
				if ds[i].Start != ds[j].Start {
					return ds[i].Start < ds[j].Start
				}
				return ds[i].End > ds[j].End
			})
			hp.Expressions = append(hp.Expressions, htmlExpression{ExpressionReport: e, Segments: segments(e.Source, ds, 0, len(e.Source))})
		}
		data.Policies = append(data.Policies, hp)
	}
	return page().Execute(w, data)
}

// page is parsed on first use, not at every process' start (the CLI
// links this package into every command).
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("coverage").Funcs(template.FuncMap{
		"percent": formatPercent,
		"cell":    Count.cell,
		"bindings": func(ran string, list []BindingReport) htmlBindings {
			return htmlBindings{Ran: ran, List: list}
		},
	}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>mutatis policy coverage</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; }
th, td { padding: .2em .8em; border-bottom: 1px solid #ddd; text-align: left; }
pre.source { background: #f8f8f8; padding: .6em; border: 1px solid #ddd; white-space: pre-wrap; }
.decision { border-radius: 3px; padding: 0 1px; }
.covered { background: #c6f0c2; }
.partial { background: #fbe8a6; }
.uncovered { background: #f7c1c1; }
.expression h4 { margin-bottom: .2em; font-weight: normal; }
.legend span { padding: 0 .5em; margin-right: .5em; }
</style>
</head>
<body>
<h1>Policy coverage: {{percent .Report.Percent}}</h1>
<p class="legend"><span class="covered">both outcomes seen</span><span class="partial">one outcome seen</span><span class="uncovered">never seen</span></p>
<table>
<tr><th>policy</th><th>mutations</th><th>bindings</th><th>matchConditions</th><th>variables</th><th>branches</th><th>total</th></tr>
{{- range .Report.Policies}}
<tr><td><a href="#policy-{{.Name}}">{{.Name}}</a></td><td>{{cell .Counts.Mutations}}</td><td>{{cell .Counts.Bindings}}</td><td>{{cell .Counts.MatchConditions}}</td><td>{{cell .Counts.Variables}}</td><td>{{cell .Counts.Branches}}</td><td>{{percent .Counts.Total.Percent}}</td></tr>
{{- end}}
<tr><th>TOTAL</th><th>{{cell .Report.Totals.Mutations}}</th><th>{{cell .Report.Totals.Bindings}}</th><th>{{cell .Report.Totals.MatchConditions}}</th><th>{{cell .Report.Totals.Variables}}</th><th>{{cell .Report.Totals.Branches}}</th><th>{{percent .Report.Totals.Total.Percent}}</th></tr>
</table>
{{- range $p := .Policies}}
<section class="policy" id="policy-{{.Name}}">
<h2>{{.Name}} — {{percent .Counts.Total.Percent}}</h2>
{{- if .Error}}<p class="uncovered">{{.Error}}</p>{{end}}{{template "bindings" bindings "invoked" .Bindings}}
<h3>Expressions</h3>
{{- range .Expressions}}
<div class="expression {{.State}}" data-path="{{.Path}}">
<h4><code>{{.Path}}</code> {{.Kind}}{{if .Name}} <b>{{.Name}}</b>{{end}}: evaluated {{.Evaluations}} times{{if eq .Kind "matchCondition"}}, seen true: {{.True}}, seen false: {{.False}}{{end}}{{if .Branches.Total}}, branches {{cell .Branches}}{{end}}</h4>
{{- if .CompileError}}<pre class="uncovered">{{.CompileError}}</pre>{{end}}
<pre class="source" data-key="{{$p.Name}}/{{.Path}}">{{range .Segments}}{{template "segment" .}}{{end}}</pre>
</div>
{{- end}}
</section>
{{- end}}
{{- with .Report.Validating}}
<h2>ValidatingAdmissionPolicies</h2>
<table>
<tr><th>policy</th><th>validations</th><th>messages</th><th>auditAnnotations</th><th>bindings</th><th>matchConditions</th><th>variables</th><th>total</th></tr>
{{- range .Policies}}
<tr><td><a href="#validating-{{.Name}}">{{.Name}}</a></td><td>{{cell .Counts.Validations}}</td><td>{{cell .Counts.MessageExpressions}}</td><td>{{cell .Counts.AuditAnnotations}}</td><td>{{cell .Counts.Bindings}}</td><td>{{cell .Counts.MatchConditions}}</td><td>{{cell .Counts.Variables}}</td><td>{{percent .Counts.Total.Percent}}</td></tr>
{{- end}}
<tr><th>TOTAL</th><th>{{cell .Totals.Validations}}</th><th>{{cell .Totals.MessageExpressions}}</th><th>{{cell .Totals.AuditAnnotations}}</th><th>{{cell .Totals.Bindings}}</th><th>{{cell .Totals.MatchConditions}}</th><th>{{cell .Totals.Variables}}</th><th>{{percent .Totals.Total.Percent}}</th></tr>
</table>
{{- range $p := .Policies}}
<section class="policy" id="validating-{{.Name}}">
<h2>{{.Name}} — {{percent .Counts.Total.Percent}}</h2>{{template "bindings" bindings "validations ran" .Bindings}}
<h3>Expressions</h3>
{{- range .Expressions}}
<div class="expression {{.State}}" data-path="{{.Path}}">
<h4><code>{{.Path}}</code> {{.Kind}}{{if .Name}} <b>{{.Name}}</b>{{end}}: evaluated {{.Evaluations}} times{{if or (eq .Kind "matchCondition") (eq .Kind "validation")}}, seen true: {{.True}}, seen false: {{.False}}{{end}}</h4>
<pre class="source {{.State}}" data-key="{{$p.Name}}/{{.Path}}">{{.Source}}</pre>
</div>
{{- end}}
</section>
{{- end}}
{{- end}}
</body>
</html>
{{define "bindings"}}
<h3>Bindings</h3>
{{- if .List}}
<ul>
{{- range .List}}
<li class="binding {{.State}}">{{.Name}}: {{$.Ran}} {{.Invocations}} times, selected {{.Selected}} times{{if .FalseConditions}}; filtered out by {{range $i, $c := .FalseConditions}}{{if $i}}, {{end}}{{$c}}{{end}}{{end}}</li>
{{- end}}
</ul>
{{- else}}
<p>none</p>
{{- end}}
{{- end}}{{define "segment"}}{{if .Class}}<span class="{{.Class}}" title="{{.Title}}">{{range .Children}}{{template "segment" .}}{{end}}</span>{{else}}{{.Text}}{{end}}{{end}}
`))
})
