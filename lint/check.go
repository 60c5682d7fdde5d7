package lint

import (
	"fmt"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
)

// Policy runs the expression checks of one policy (cp is its compilation)
// against every kind it can match. Expressions that did not compile are
// left to the compiler's errors.
func (c *Checker) Policy(p manifest.Policy, cp *compiler.Policy) []Finding {
	var out []Finding
	add := func(e *compiler.Expression, sev Severity, id int64, check, msg string) {
		f := Finding{Severity: sev, Check: check, Source: p.Source, Kind: "MutatingAdmissionPolicy", Name: p.Policy.Name,
			Field: e.Path.String(), Message: msg, Expression: e.Source}
		if id != 0 && e.AST() != nil {
			loc := e.AST().NativeRep().SourceInfo().GetStartLocation(id)
			if loc.Line() > 0 {
				f.CELLine, f.CELColumn = loc.Line(), loc.Column()+1
			}
		}
		out = append(out, f)
	}
	params := c.paramSchema(p.Policy)
	// A matchCondition's has() guards every mutation.
	guards := map[string]bool{}
	for _, mc := range cp.MatchConditions {
		if mc.AST() != nil {
			collectGuards(mc.AST().NativeRep().Expr(), guards)
		}
	}
	for _, t := range c.targets(p.Policy) {
		if err := checkReads(c.envs, p.Policy, cp, t.schema, params, add); err != nil {
			out = append(out, Finding{Severity: Warning, Check: "read-type", Source: p.Source, Kind: "MutatingAdmissionPolicy", Name: p.Policy.Name,
				Field: "spec", Message: fmt.Sprintf("the expressions could not be typed by the schema of %s: %v", t.label(), err)})
		}
		for _, e := range cp.Expressions() {
			if e.Err != nil || e.AST() == nil {
				continue
			}
			e := e
			checkObjects(e, t.schema, func(id int64, check, msg string) { add(e, Error, id, check, msg) })
			checkJSONPatches(e, t.schema, guards, func(id int64, check, msg string) { add(e, Warning, id, check, msg) })
			checkOptionalReads(e, t.schema, guards, func(id int64, msg string) { add(e, Warning, id, "read-unguarded-optional", msg) })
		}
	}
	return dedupe(out)
}

// dedupe drops repeated findings (the same problem found for several
// kinds with the same schema), keeping the first.
func dedupe(fs []Finding) []Finding {
	seen := map[string]bool{}
	out := fs[:0]
	for _, f := range fs {
		k := f.String()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, f)
	}
	return out
}
