package lint

import (
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mutatis-dev/mutatis/internal/spelling"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
)

// Set runs the checks of the policy set as a whole (checks "set-*"), all
// warnings: rules naming resources Kubernetes 1.37 does not serve, with
// what the author may have meant (ValidatingAdmissionPolicies' and their
// bindings' too); param references whose scope the
// policy's resources rule out; and, when the cluster's objects were given
// (NewChecker's resources), param references no object supplies. The
// bindings without a policy and the policies without a binding are
// binding.Check's.
func (c *Checker) Set(set *manifest.Set) []Finding {
	var out []Finding
	policies := map[string]manifest.Policy{}
	constraints, resources := field.NewPath("spec", "matchConstraints"), field.NewPath("spec", "matchResources")
	for _, p := range set.Policies {
		policies[p.Policy.Name] = p
		out = append(out, c.paramKind(p)...)
		out = append(out, c.unservedMatch(p.Source, "MutatingAdmissionPolicy", p.Policy.Name, constraints, p.Policy.Spec.MatchConstraints)...)
	}
	for _, p := range set.ValidatingPolicies {
		out = append(out, c.unservedMatch(p.Source, "ValidatingAdmissionPolicy", p.Policy.Name, constraints, p.Policy.Spec.MatchConstraints)...)
	}
	for _, b := range set.ValidatingBindings {
		out = append(out, c.unservedMatch(b.Source, "ValidatingAdmissionPolicyBinding", b.Binding.Name, resources, b.Binding.Spec.MatchResources)...)
	}
	for _, b := range set.Bindings {
		out = append(out, c.unservedMatch(b.Source, "MutatingAdmissionPolicyBinding", b.Binding.Name, resources, b.Binding.Spec.MatchResources)...)
		p, ok := policies[b.Binding.Spec.PolicyName]
		if !ok || p.Policy.Spec.ParamKind == nil || b.Binding.Spec.ParamRef == nil {
			continue
		}
		out = append(out, c.paramRef(p, b)...)
	}
	return out
}

// unservedMatch is unservedResources over the resourceRules and
// excludeResourceRules of mr (a policy's matchConstraints or a binding's
// matchResources, at base), if any.
func (c *Checker) unservedMatch(src manifest.Source, kind, name string, base *field.Path, mr *admissionregistrationv1.MatchResources) []Finding {
	if mr == nil {
		return nil
	}
	out := c.unservedResources(src, kind, name, base.Child("resourceRules"), mr.ResourceRules)
	return append(out, c.unservedResources(src, kind, name, base.Child("excludeResourceRules"), mr.ExcludeResourceRules)...)
}

// unservedResources reports the resources of rules Kubernetes 1.37 does
// not serve in any group/version the rule names (matching's table of
// built-in resources and the loaded CRDs).
func (c *Checker) unservedResources(src manifest.Source, kind, name string, path *field.Path, rules []admissionregistrationv1.NamedRuleWithOperations) []Finding {
	var out []Finding
	all := c.table.Resources()
	for i, r := range rules {
		for j, res := range r.Resources {
			plural, sub, _ := strings.Cut(res, "/")
			if strings.Contains(plural, "*") {
				continue
			}
			served := false
			for _, t := range all {
				if !nameMatches(r.APIGroups, t.Group) || !nameMatches(r.APIVersions, t.Version) || t.Resource != plural {
					continue
				}
				if sub == "" || sub == "*" {
					served = true
					break
				}
				if _, ok := t.Subresource(sub); ok {
					served = true
					break
				}
			}
			if served {
				continue
			}
			msg := fmt.Sprintf("Kubernetes %s serves no resource %q in %s; the rule never matches it", matching.BuiltinVersion, res, groupVersions(r.APIGroups, r.APIVersions))
			if s := suggest(all, r.APIGroups, r.APIVersions, plural); s != "" {
				msg += "; did you mean " + s + "?"
			}
			out = append(out, Finding{Severity: Warning, Check: "set-unserved-resource", Source: src, Kind: kind, Name: name,
				Field: path.Index(i).Child("resources").Index(j).String(), Message: msg})
		}
	}
	return out
}

func nameMatches(names []string, s string) bool {
	for _, n := range names {
		if n == "*" || n == s {
			return true
		}
	}
	return false
}

func groupVersions(groups, versions []string) string {
	var gs []string
	for _, g := range groups {
		if g == "" {
			g = `""`
		}
		gs = append(gs, g)
	}
	return "group " + strings.Join(gs, ", ") + " version " + strings.Join(versions, ", ")
}

// suggest names the served resources closest to plural: the same plural
// in other groups or versions, else plurals at most two edits away.
func suggest(all []matching.Resource, groups, versions []string, plural string) string {
	seen := map[string]bool{}
	var exact, near []string
	for _, t := range all {
		label := fmt.Sprintf("%s in %s/%s", t.Resource, t.Group, t.Version)
		if t.Group == "" {
			label = fmt.Sprintf("%s in core/%s (apiGroups: [\"\"])", t.Resource, t.Version)
		}
		if seen[label] {
			continue
		}
		switch {
		case t.Resource == plural:
			seen[label] = true
			exact = append(exact, label)
		case nameMatches(groups, t.Group) && spelling.Distance(t.Resource, plural) <= 2:
			seen[label] = true
			near = append(near, label)
		}
	}
	l := exact
	if len(l) == 0 {
		l = near
	}
	sort.Strings(l)
	if len(l) > 3 {
		l = l[:3]
	}
	return strings.Join(l, ", or ")
}

// paramRef reports a binding's param reference that cannot resolve: its
// scope against the paramKind's (kube-apiserver's errors when it tries),
// and, with the cluster's objects, a name or selector no object answers.
func (c *Checker) paramRef(p manifest.Policy, b manifest.Binding) []Finding {
	pk := p.Policy.Spec.ParamKind
	ref := b.Binding.Spec.ParamRef
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil {
		return nil
	}
	gvk := gv.WithKind(pk.Kind)
	warn := func(fieldPath, msg string) Finding {
		return Finding{Severity: Warning, Check: "set-param-ref", Source: b.Source, Kind: "MutatingAdmissionPolicyBinding", Name: b.Binding.Name, Field: fieldPath, Message: msg}
	}
	resources := c.table.ResourcesForKind(gvk)
	if len(resources) == 0 {
		return nil // paramKind's
	}
	namespaced := resources[0].Namespaced
	var out []Finding
	switch {
	case !namespaced && ref.Namespace != "":
		out = append(out, warn("spec.paramRef.namespace", fmt.Sprintf("paramKind %s is cluster-scoped: every request fails with %q", gvk, "paramRef.namespace must not be provided for a cluster-scoped `paramKind`")))
	case namespaced && ref.Namespace == "" && c.clusterScopedOnly(p.Policy):
		out = append(out, warn("spec.paramRef.namespace", fmt.Sprintf("paramKind %s is namespaced and the policy matches only cluster-scoped resources: every request fails with %q", gvk, "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")))
	}
	if !c.resources || len(out) > 0 {
		return out
	}
	found := false
	for _, o := range c.objects {
		u := o.Object
		if u.GroupVersionKind() != gvk {
			continue
		}
		if ref.Namespace != "" && u.GetNamespace() != ref.Namespace {
			continue
		}
		if ref.Name != "" {
			if u.GetName() == ref.Name {
				found = true
			}
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err == nil && sel.Matches(labels.Set(u.GetLabels())) {
			found = true
		}
	}
	if !found {
		consequence := "the binding does nothing (parameterNotFoundAction Allow)"
		if ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == admissionregistrationv1.DenyAction {
			consequence = fmt.Sprintf("every request fails with %q", "no params found for policy binding with `Deny` parameterNotFoundAction")
		}
		what := "selected by spec.paramRef.selector"
		if ref.Name != "" {
			what = fmt.Sprintf("named %q", ref.Name)
		}
		out = append(out, warn("spec.paramRef", fmt.Sprintf("no object of paramKind %s %s is among the files given: %s", gvk, what, consequence)))
	}
	return out
}

// clusterScopedOnly tells whether every kind p's rules name is
// cluster-scoped (and there is at least one).
func (c *Checker) clusterScopedOnly(p *admissionregistrationv1.MutatingAdmissionPolicy) bool {
	mc := p.Spec.MatchConstraints
	if mc == nil {
		return false
	}
	n := 0
	for _, r := range mc.ResourceRules {
		if r.Scope != nil && *r.Scope == admissionregistrationv1.ClusterScope {
			n++
			continue
		}
		if hasWildcard(r.APIGroups) || hasWildcard(r.APIVersions) || hasWildcard(r.Resources) {
			return false
		}
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					plural, _, _ := strings.Cut(res, "/")
					t, ok := c.table.Resource(schema.GroupVersionResource{Group: g, Version: v, Resource: plural})
					if !ok {
						continue
					}
					if t.Namespaced {
						return false
					}
					n++
				}
			}
		}
	}
	return n > 0
}

// paramKind reports, when the cluster's objects were given, a paramKind
// no built-in resource or loaded CustomResourceDefinition serves: every
// request the policy matches then fails.
func (c *Checker) paramKind(p manifest.Policy) []Finding {
	pk := p.Policy.Spec.ParamKind
	if pk == nil || !c.resources {
		return nil
	}
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil {
		return nil
	}
	gvk := gv.WithKind(pk.Kind)
	if len(c.table.ResourcesForKind(gvk)) > 0 {
		return nil
	}
	return []Finding{{Severity: Warning, Check: "set-param-kind", Source: p.Source, Kind: "MutatingAdmissionPolicy", Name: p.Policy.Name, Field: "spec.paramKind",
		Message: fmt.Sprintf("no built-in resource or CustomResourceDefinition among the files serves %s: every request the policy matches fails with %q", gvk,
			fmt.Sprintf("failed to find resource referenced by paramKind: '%v'", gvk))}}
}
