package convert

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/matching"
)

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func obj(m map[string]any, k string) map[string]any {
	o, _ := m[k].(map[string]any)
	return o
}

func list(m map[string]any, k string) []any {
	l, _ := m[k].([]any)
	return l
}

func strs(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// resourceFor gives the plural of a kind in a group, from the table of
// built-in resources; for another kind (a custom resource) its lowercase
// plural guessed, with guessed true.
func resourceFor(group, kind string) (res string, namespaced, guessed bool) {
	for _, r := range matching.BuiltinResources() {
		if r.Kind == kind && (group == "*" || r.Group == group) {
			return r.Resource, r.Namespaced, false
		}
	}
	l := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(l, "s"):
		l += "es"
	case strings.HasSuffix(l, "y"):
		l = l[:len(l)-1] + "ies"
	default:
		l += "s"
	}
	return l, true, true
}

// groupsOf are the built-in groups that serve kind.
func groupsOf(kind string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range matching.BuiltinResources() {
		if r.Kind == kind && !seen[r.Group] {
			seen[r.Group] = true
			out = append(out, r.Group)
		}
	}
	sort.Strings(out)
	return out
}

// ruleSet accumulates resource rules by (group, version, scope).
type ruleSet struct {
	ops   []admissionregistrationv1.OperationType
	rules []admissionregistrationv1.NamedRuleWithOperations
	seen  map[string]bool
}

func (rs *ruleSet) add(group, version, resource string, scope admissionregistrationv1.ScopeType) {
	key := group + "/" + version + "/" + resource + "/" + string(scope)
	if rs.seen == nil {
		rs.seen = map[string]bool{}
	}
	if rs.seen[key] {
		return
	}
	rs.seen[key] = true
	for i := range rs.rules {
		r := &rs.rules[i]
		if r.APIGroups[0] == group && r.APIVersions[0] == version && *r.Scope == scope {
			r.Resources = append(r.Resources, resource)
			return
		}
	}
	sc := scope
	rs.rules = append(rs.rules, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: rs.ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}, Scope: &sc},
	}})
}

// newPolicy is a MutatingAdmissionPolicy with its binding.
func newPolicy(name string, rules []admissionregistrationv1.NamedRuleWithOperations, conds []admissionregistrationv1.MatchCondition,
	muts []admissionregistrationv1.Mutation, fail admissionregistrationv1.FailurePolicyType, reinvoke admissionregistrationv1.ReinvocationPolicyType) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	equivalent := admissionregistrationv1.Equivalent
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints:   &admissionregistrationv1.MatchResources{ResourceRules: rules, MatchPolicy: &equivalent},
			MatchConditions:    conds,
			Mutations:          muts,
			FailurePolicy:      &fail,
			ReinvocationPolicy: reinvoke,
		},
	}
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
	}
	return p, b
}

func jsonPatchMutation(expr string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expr}}
}

// selectorCEL is the CEL test of a label selector against labels (a CEL
// map(string, string) expression that may be absent: lbl is an optional).
func selectorCEL(sel map[string]any, lbl string) (string, error) {
	var parts []string
	ml := obj(sel, "matchLabels")
	keys := sortedKeys(ml)
	for _, k := range keys {
		v, ok := ml[k].(string)
		if !ok {
			return "", fmt.Errorf("matchLabels.%s: not a string", k)
		}
		parts = append(parts, fmt.Sprintf("%s.orValue({})[?%s] == optional.of(%s)", lbl, quote(k), quote(v)))
	}
	for i, e := range list(sel, "matchExpressions") {
		m, _ := e.(map[string]any)
		k := str(m, "key")
		vals := strs(m["values"])
		vl, _ := literal(toAny(vals))
		get := fmt.Sprintf("%s.orValue({})[?%s]", lbl, quote(k))
		switch str(m, "operator") {
		case "In":
			parts = append(parts, fmt.Sprintf("%s.hasValue() && %s.value() in %s", get, get, vl))
		case "NotIn":
			parts = append(parts, fmt.Sprintf("!(%s.hasValue() && %s.value() in %s)", get, get, vl))
		case "Exists":
			parts = append(parts, get+".hasValue()")
		case "DoesNotExist":
			parts = append(parts, "!"+get+".hasValue()")
		default:
			return "", fmt.Errorf("matchExpressions[%d].operator: %q is not a label selector operator", i, str(m, "operator"))
		}
	}
	if len(parts) == 0 {
		return "true", nil
	}
	return strings.Join(parts, " && "), nil
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// globsCEL is the CEL test that the string expression x matches one of
// Gatekeeper's or Kyverno's name patterns (a trailing or any * a wildcard).
func globsCEL(x string, pats []string) string {
	var parts []string
	for _, p := range pats {
		if strings.ContainsAny(p, "*?") {
			parts = append(parts, fmt.Sprintf("%s.matches(%s)", x, quote(globRegexp(p))))
		} else {
			parts = append(parts, fmt.Sprintf("%s == %s", x, quote(p)))
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " || ") + ")"
}

// namespaceCEL is the namespace of a request as Gatekeeper and Kyverno
// match it: a Namespace's own name.
const namespaceCEL = `(request.kind.group == "" && request.kind.kind == "Namespace" ? object.metadata.name : request.namespace)`

func and(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" && p != "true" {
			keep = append(keep, p)
		}
	}
	switch len(keep) {
	case 0:
		return "true"
	case 1:
		return keep[0]
	}
	for i, k := range keep {
		keep[i] = "(" + k + ")"
	}
	return strings.Join(keep, " && ")
}
