package lint

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	upstream "k8s.io/apiserver/pkg/admission/plugin/policy/validating"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/costs"
	"github.com/mutatis-dev/mutatis/manifest"
)

// ValidatingPolicy runs on a ValidatingAdmissionPolicy the type checking
// kube-controller-manager runs on every policy it sees and writes to its
// status.typeChecking.expressionWarnings: k8s.io/apiserver's own
// validating.TypeChecker, imported, over the kinds the policy's
// matchConstraints name (no wildcard, at most 10, as upstream) and the
// schemas kube-controller-manager resolves for them (costs.CRDIndex's
// ResolveSchema: the built-in kinds' OpenAPI definitions, the OpenAPI v3 a
// loaded CRD serves) and the REST mapping of the resources Kubernetes 1.37
// serves and the loaded CRDs. Each warning is a finding of check
// "type-checking", a Warning (kube-apiserver admits the policy and runs
// it: the expression fails, or is never true, on objects of that kind),
// whose message is the warning's text verbatim.
//
// With comp (nil: none), the read-unguarded-optional check of
// MutatingAdmissionPolicies runs on every expression too (variables,
// matchConditions, validations, messageExpressions, auditAnnotations),
// compiled as the policy's cost surrogate (costs.Surrogate) in the same
// environment: reads of fields real objects often omit, unguarded. The
// undeclared fields and type errors of the typed reads are the type
// checker's here, upstream's own.
func (c *Checker) ValidatingPolicy(comp *compiler.Compiler, p manifest.ValidatingPolicy) []Finding {
	out := c.typeCheck(p)
	if comp != nil {
		out = append(out, c.validatingOptionalReads(comp, p)...)
	}
	return dedupe(out)
}

// typeCheck is kube-controller-manager's type checking of p.
func (c *Checker) typeCheck(p manifest.ValidatingPolicy) []Finding {
	var out []Finding
	for _, w := range c.typeChecker().Check(p.Policy) {
		f := Finding{Severity: Warning, Check: "type-checking", Source: p.Source, Kind: "ValidatingAdmissionPolicy", Name: p.Policy.Name,
			Field: w.FieldRef, Message: "kube-controller-manager's type checking warns (status.typeChecking.expressionWarnings): " + strings.TrimRight(w.Warning, "\n")}
		if m := celPosition.FindStringSubmatch(w.Warning); m != nil {
			f.CELLine, _ = strconv.Atoi(m[1])
			f.CELColumn, _ = strconv.Atoi(m[2])
		}
		out = append(out, f)
	}
	return out
}

// validatingOptionalReads runs checkOptionalReads on p's expressions for
// every kind p matches, each finding named by its own field.
func (c *Checker) validatingOptionalReads(comp *compiler.Compiler, p manifest.ValidatingPolicy) []Finding {
	sur := costs.SurrogateOf(p.Policy)
	cp, err := comp.Compile(sur.Policy)
	if err != nil {
		return nil
	}
	comp.Forget(sur.Policy.Name) // the surrogate's, not a policy's
	paths := map[string]string{} // the surrogate's field path → the policy's
	for k, v := range sur.Policy.Spec.Variables {
		if r, ok := sur.Roles[v.Name]; ok {
			paths[fmt.Sprintf("spec.variables[%d].expression", k)] = r.Path
		}
	}
	guards := map[string]bool{}
	for _, mc := range cp.MatchConditions {
		if mc.AST() != nil {
			collectGuards(mc.AST().NativeRep().Expr(), guards)
		}
	}
	var out []Finding
	for _, t := range c.targets(sur.Policy) {
		for _, e := range cp.Expressions() {
			if e.Err != nil || e.AST() == nil {
				continue
			}
			field := e.Path.String()
			if own, ok := paths[field]; ok {
				field = own
			}
			checkOptionalReads(e, t.schema, guards, func(id int64, msg string) {
				f := Finding{Severity: Warning, Check: "read-unguarded-optional", Source: p.Source, Kind: "ValidatingAdmissionPolicy", Name: p.Policy.Name,
					Field: field, Message: msg, Expression: e.Source}
				if loc := e.AST().NativeRep().SourceInfo().GetStartLocation(id); loc.Line() > 0 {
					f.CELLine, f.CELColumn = loc.Line(), loc.Column()+1
				}
				out = append(out, f)
			})
		}
	}
	return out
}

// celPosition is the first position in a CEL error's text ("ERROR:
// <input>:1:13: …"); CEL prints 1-based lines and columns.
var celPosition = regexp.MustCompile(`<input>:(\d+):(\d+):`)

// typeChecker returns the Checker's validating.TypeChecker, built on first
// use.
func (c *Checker) typeChecker() *upstream.TypeChecker {
	if c.vapTypeChecker != nil {
		return c.vapTypeChecker
	}
	crds, _ := costs.IndexCRDs(c.objects) // CRDs that do not load are reported by lint already
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, r := range c.table.Resources() {
		scope := meta.RESTScopeRoot
		if r.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		// The singular is never asked: the type checker maps plurals.
		mapper.AddSpecific(r.GroupVersionKind(), r.GroupVersionResource(), r.GroupVersionResource(), scope)
	}
	c.vapTypeChecker = &upstream.TypeChecker{SchemaResolver: crds, RestMapper: mapper}
	return c.vapTypeChecker
}
