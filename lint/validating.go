package lint

import (
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	upstream "k8s.io/apiserver/pkg/admission/plugin/policy/validating"

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
func (c *Checker) ValidatingPolicy(p manifest.ValidatingPolicy) []Finding {
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
