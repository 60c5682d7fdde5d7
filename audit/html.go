package audit

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"html/template"
	"io"
	"strings"
	"sync"
)

//go:embed report.html.tmpl
var htmlTemplate string

// reportHTML is parsed on first use, not at every process' start (the
// CLI links this package into every command).
var reportHTML = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"join": strings.Join,
		"mean": func(total, n int64) int64 { return total / max(n, 1) },
		"indent": func(patch string) string {
			var b bytes.Buffer
			if json.Indent(&b, []byte(patch), "", "  ") != nil {
				return patch
			}
			return b.String()
		},
	}).Parse(htmlTemplate))
})

// WriteHTML writes r as one self-contained HTML page (no external style,
// script or font): the summary, the per-policy counts, the heaviest
// costs and every finding with its patch or message, with filters by
// outcome and by text (also given in the address: #outcome=deny&q=team-a).
func (r *Report) WriteHTML(w io.Writer) error {
	return reportHTML().Execute(w, struct {
		*Report
		Headline string
		Outcomes []Outcome
	}{r, r.Headline(), Outcomes})
}
