// Package binding associates MutatingAdmissionPolicies with their bindings,
// as kube-apiserver does: bindings are grouped by spec.policyName; a binding
// naming a missing policy is ignored, and a policy without a binding does
// nothing. It also reports the cross-object problems that kube-apiserver
// accepts silently but that are almost always mistakes.
package binding

import (
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// Hook is one policy with the bindings that select it, in the deterministic
// order mutatis evaluates them: bindings by name.
type Hook struct {
	Policy   *admissionregistrationv1.MutatingAdmissionPolicy
	Bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
}

// Group returns one Hook per policy that has at least one binding, ordered
// by policy name (kube-apiserver's order is undefined; mutatis documents
// this one). Bindings naming a policy that does not exist are dropped.
func Group(policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) []Hook {
	var hooks []Hook
	for p, bs := range group(policies, bindings,
		func(p *admissionregistrationv1.MutatingAdmissionPolicy) string { return p.Name },
		func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) (string, string) {
			return b.Spec.PolicyName, b.Name
		}) {
		hooks = append(hooks, Hook{Policy: p, Bindings: bs})
	}
	return hooks
}

// ValidatingHook is a ValidatingAdmissionPolicy with the bindings that
// select it, in the order of Hook.
type ValidatingHook struct {
	Policy   *admissionregistrationv1.ValidatingAdmissionPolicy
	Bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// GroupValidating is Group for ValidatingAdmissionPolicies: kube-apiserver
// groups them alike (its generic policy source), in the same order.
func GroupValidating(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) []ValidatingHook {
	var hooks []ValidatingHook
	for p, bs := range group(policies, bindings,
		func(p *admissionregistrationv1.ValidatingAdmissionPolicy) string { return p.Name },
		func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (string, string) {
			return b.Spec.PolicyName, b.Name
		}) {
		hooks = append(hooks, ValidatingHook{Policy: p, Bindings: bs})
	}
	return hooks
}

// group yields each policy that has bindings with them, policies by name
// and bindings by name. names gives a binding's policy name and its own.
func group[P, B any](policies []P, bindings []B, name func(P) string, names func(B) (policy, binding string)) iter.Seq2[P, []B] {
	return func(yield func(P, []B) bool) {
		// A later policy of the same name replaces an earlier one.
		byName := make(map[string]P, len(policies))
		for _, p := range policies {
			byName[name(p)] = p
		}
		bound := make(map[string][]B, len(byName))
		for _, b := range bindings {
			pn, _ := names(b)
			if _, ok := byName[pn]; ok {
				bound[pn] = append(bound[pn], b)
			}
		}
		for _, pn := range slices.Sorted(maps.Keys(bound)) {
			bs := bound[pn]
			slices.SortStableFunc(bs, func(a, b B) int {
				_, an := names(a)
				_, bn := names(b)
				return strings.Compare(an, bn)
			})
			if !yield(byName[pn], bs) {
				return
			}
		}
	}
}

// Warning is a cross-object problem that kube-apiserver accepts.
type Warning struct {
	// Kind and Name identify the object the warning is about.
	Kind, Name string
	// Field is the field path the warning is about.
	Field string
	// Message explains the consequence.
	Message string
}

func (w Warning) String() string {
	return fmt.Sprintf("%s %q: %s: %s", w.Kind, w.Name, w.Field, w.Message)
}

// Check reports bindings whose policy does not exist, policies that no
// binding selects, param references the policy cannot use, and policies with
// a paramKind whose bindings give no paramRef.
func Check(policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) []Warning {
	byName := make(map[string]*admissionregistrationv1.MutatingAdmissionPolicy, len(policies))
	bound := map[string]bool{}
	for _, p := range policies {
		byName[p.Name] = p
	}
	var out []Warning
	for _, b := range bindings {
		p, ok := byName[b.Spec.PolicyName]
		if !ok {
			out = append(out, Warning{Kind: "MutatingAdmissionPolicyBinding", Name: b.Name, Field: "spec.policyName",
				Message: fmt.Sprintf("policy %q does not exist; the binding does nothing until it does", b.Spec.PolicyName)})
			continue
		}
		bound[p.Name] = true
		switch {
		case p.Spec.ParamKind == nil && b.Spec.ParamRef != nil:
			out = append(out, Warning{Kind: "MutatingAdmissionPolicyBinding", Name: b.Name, Field: "spec.paramRef",
				Message: fmt.Sprintf("policy %q has no paramKind; the paramRef is ignored", p.Name)})
		case p.Spec.ParamKind != nil && b.Spec.ParamRef == nil:
			out = append(out, Warning{Kind: "MutatingAdmissionPolicyBinding", Name: b.Name, Field: "spec.paramRef",
				Message: fmt.Sprintf("policy %q has a paramKind but the binding has no paramRef; expressions see params = null", p.Name)})
		}
	}
	for _, p := range policies {
		if !bound[p.Name] {
			out = append(out, Warning{Kind: "MutatingAdmissionPolicy", Name: p.Name, Field: "metadata.name",
				Message: "no binding selects this policy; it does nothing"})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind > out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}
