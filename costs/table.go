package costs

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes r for people, as `mutatis cost` prints it: a table of
// the expressions and one of the budgets, then what exceeds its limit
// (failOver is --fail-over) with the inputs that drive it, the
// super-linear terms and measurements, and a total.
func (r *Report) WriteTable(w io.Writer, failOver float64) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tEXPRESSION\tTARGET\tMIN\tMAX\tOF PER-CALL LIMIT\tSTATUS\tGATE\tSCHEMA\tREQUEST\tPROFILE\tFORMULA")
	for _, p := range r.all() {
		for _, e := range p.Expressions {
			label := e.Path
			if e.Name != "" {
				label += " (" + e.Name + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", p.Name, label, e.Target, e.Min, formatMax(e.Max), formatPercent(e.Percent), e.Status,
				e.Gate, pointColumns(e.Points, e.Formula))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tBUDGET\tINCLUDES\tWORST CASE\tLIMIT\tOF LIMIT\tSTATUS\tGATE\tSCHEMA\tREQUEST\tPROFILE\tFORMULA")
	for _, p := range r.all() {
		for _, b := range p.Budgets {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", p.Name, b.Name, includes(b), formatMax(b.Max), b.Limit, formatPercent(b.Percent), b.Status,
				b.Gate, pointColumns(b.Points, b.Formula))
		}
	}
	tw.Flush()

	for _, p := range r.all() {
		for _, e := range p.Expressions {
			if e.Status == StatusOK {
				continue
			}
			limit := "the per-call limit (1000000)"
			if e.Status == StatusOverFailOver {
				limit = fmt.Sprintf("%g%% of the per-call limit (--fail-over)", failOver)
			}
			fmt.Fprintf(w, "\n%s: %s: worst case %s exceeds %s for %s\n", p.Name, e.Path, formatMax(e.Max), limit, e.Target)
			if len(e.Drivers) == 0 {
				fmt.Fprintln(w, "  no single input drives it: the cost comes from the expression's size itself")
			}
			for _, d := range e.Drivers {
				fmt.Fprintf(w, "  - %s (%.0f%% of the worst case)\n    suggestion: %s\n", d.Reason, d.Share*100, d.Suggestion)
			}
		}
		for _, b := range p.Budgets {
			if b.Status == StatusOK {
				continue
			}
			fmt.Fprintf(w, "\n%s: %s: worst case %s of %s exceeds %s for %s\n", p.Name, b.Name, formatMax(b.Max), strings.Join(b.Expressions, " + "),
				budgetLimit(b, failOver), b.Target)
		}
	}
	printGrowth(w, r)
	policies := "policies"
	if len(r.all()) == 1 {
		policies = "policy"
	}
	fmt.Fprintf(w, "\n%d %s, %d not within the limits\n", len(r.all()), policies, r.Failed)
}

// includes summarizes what a budget sums: "1 mutation + 2 variables".
func includes(b Budget) string {
	own, vars := 0, 0
	for _, e := range b.Expressions {
		if strings.HasPrefix(e, "variables.") {
			vars++
		} else {
			own++
		}
	}
	what := "mutation"
	switch {
	case strings.HasPrefix(b.Name, "spec.matchConditions"):
		what = "condition"
	case b.Name == "spec.validations" || b.Name == "spec.auditAnnotations":
		what = "expression"
	}
	out := plural(own, what)
	if vars > 0 {
		out += " + " + plural(vars, "variable")
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func budgetLimit(b Budget, failOver float64) string {
	if b.Status == StatusOverFailOver {
		return fmt.Sprintf("%g%% of the budget %d (--fail-over)", failOver, b.Limit)
	}
	return fmt.Sprintf("the budget %d", b.Limit)
}

// pointColumns are the SCHEMA, REQUEST, PROFILE and FORMULA columns.
func pointColumns(points map[Point]PointCost, f *Formula) string {
	var cols []string
	for _, pt := range Points() {
		pc, ok := points[pt]
		if !ok {
			cols = append(cols, "-")
			continue
		}
		cols = append(cols, formatMax(pc.Max))
	}
	formula := "-"
	if f != nil {
		formula = f.Text
	}
	return strings.Join(append(cols, formula), "\t")
}

// printGrowth lists the super-linear terms and the --measure results.
func printGrowth(w io.Writer, r *Report) {
	for _, p := range r.all() {
		for _, e := range p.Expressions {
			for _, sl := range e.SuperLinear {
				uses := ""
				if len(sl.Uses) > 0 {
					uses = " (used by " + strings.Join(sl.Uses, ", ") + ")"
				}
				fmt.Fprintf(w, "\n%s: %s: super-linear: %s in %s: %s%s\n", p.Name, e.Path, sl.Growth, strings.Join(sl.Inputs, ", "), sl.Term, uses)
			}
			if m := e.Measured; m != nil {
				var pts []string
				for i, s := range m.Scales {
					pts = append(pts, fmt.Sprintf("%d at ×%d", m.RuntimeCost[i], s))
				}
				verdict := "not compared (no formula)"
				switch {
				case m.Static != "" && m.Agrees:
					verdict = "as the formula predicts (" + m.Static + ")"
				case m.Static != "":
					verdict = "the formula predicts " + m.Static
				}
				fmt.Fprintf(w, "\n%s: %s: measured runtime cost %s: grows as scale^%g (%s), %s\n", p.Name, e.Path, strings.Join(pts, ", "), m.Exponent, m.Growth, verdict)
				for _, er := range m.Errors {
					fmt.Fprintf(w, "  error: %s\n", er)
				}
			}
		}
	}
}

func formatMax(m *uint64) string {
	if m == nil {
		return "unbounded"
	}
	return fmt.Sprint(*m)
}

func formatPercent(p *float64) string {
	if p == nil {
		return "unbounded"
	}
	return fmt.Sprintf("%.2f%%", *p)
}
