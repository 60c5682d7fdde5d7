package migrate

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes the report for people: one block per object that
// differs (both outcomes, and the diff of the stored objects), one line
// per object that does not when verbose, and the summary.
func (r *Report) WriteText(w io.Writer, verbose bool) error {
	var b strings.Builder
	for _, res := range r.Results {
		if res.Difference == Same {
			if verbose {
				fmt.Fprintf(&b, "same     %s (%s): %s\n", res.Object, res.Source, res.Webhooks)
			}
			continue
		}
		fmt.Fprintf(&b, "%-8s %s (%s)\n", res.Difference, res.Object, res.Source)
		switch res.Difference {
		case Failed:
			fmt.Fprintf(&b, "  %s\n", res.Error)
		case Refusal:
			fmt.Fprintf(&b, "  with the webhooks: %s\n", res.Webhooks)
			fmt.Fprintf(&b, "  with the policies: %s\n", res.Policies)
		case Changed:
			for _, line := range strings.SplitAfter(strings.TrimSuffix(res.Diff, "\n"), "\n") {
				b.WriteString("  " + line)
			}
			b.WriteString("\n")
		}
	}
	s := r.Summary
	fmt.Fprintf(&b, "%d %s: %d same, %d stored differently, %d refused differently, %d failed\n",
		s.Objects, plural(s.Objects, "object", "objects"), s.Same, s.Changed, s.Refusal, s.Failed)
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
