// Package rbac is an offline authorizer that evaluates RBAC objects (Roles,
// ClusterRoles with aggregation rules, RoleBindings, ClusterRoleBindings)
// the way kube-apiserver's RBAC authorizer does, with system:masters always
// allowed as kube-apiserver's privileged-group authorizer does. It backs the
// CEL "authorizer" variables when policies are evaluated without a cluster.
package rbac

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Authorizer decides from a fixed set of RBAC objects. It is immutable and
// safe for concurrent use.
type Authorizer struct {
	clusterRoles        map[string][]rbacv1.PolicyRule
	roles               map[string]map[string][]rbacv1.PolicyRule // namespace → name → rules
	clusterRoleBindings []rbacv1.ClusterRoleBinding
	roleBindings        map[string][]rbacv1.RoleBinding // namespace → bindings
}

// New builds an Authorizer. ClusterRoles with an aggregationRule get the
// rules of every ClusterRole whose labels match one of its selectors, as the
// clusterrole-aggregation controller would have written them.
func New(clusterRoles []rbacv1.ClusterRole, roles []rbacv1.Role, clusterRoleBindings []rbacv1.ClusterRoleBinding, roleBindings []rbacv1.RoleBinding) (*Authorizer, error) {
	a := &Authorizer{
		clusterRoles:        map[string][]rbacv1.PolicyRule{},
		roles:               map[string]map[string][]rbacv1.PolicyRule{},
		clusterRoleBindings: clusterRoleBindings,
		roleBindings:        map[string][]rbacv1.RoleBinding{},
	}
	for _, cr := range clusterRoles {
		rules := append([]rbacv1.PolicyRule(nil), cr.Rules...)
		if cr.AggregationRule != nil {
			for _, sel := range cr.AggregationRule.ClusterRoleSelectors {
				s, err := metav1.LabelSelectorAsSelector(&sel)
				if err != nil {
					return nil, fmt.Errorf("ClusterRole %q: aggregationRule: %w", cr.Name, err)
				}
				for _, other := range clusterRoles {
					if other.Name != cr.Name && other.AggregationRule == nil && s.Matches(labels.Set(other.Labels)) {
						rules = append(rules, other.Rules...)
					}
				}
			}
		}
		a.clusterRoles[cr.Name] = rules
	}
	for _, r := range roles {
		if a.roles[r.Namespace] == nil {
			a.roles[r.Namespace] = map[string][]rbacv1.PolicyRule{}
		}
		a.roles[r.Namespace][r.Name] = r.Rules
	}
	for _, rb := range roleBindings {
		a.roleBindings[rb.Namespace] = append(a.roleBindings[rb.Namespace], rb)
	}
	return a, nil
}

// Authorize implements authorizer.Authorizer.
func (a *Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	if u == nil {
		return authorizer.DecisionNoOpinion, "no user", nil
	}
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup {
			return authorizer.DecisionAllow, "", nil
		}
	}
	for _, crb := range a.clusterRoleBindings {
		if crb.RoleRef.Kind != "ClusterRole" || !appliesTo(u, crb.Subjects, "") {
			continue
		}
		if rulesAllow(a.clusterRoles[crb.RoleRef.Name], attrs) {
			return authorizer.DecisionAllow, fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q", crb.Name, crb.RoleRef.Name), nil
		}
	}
	if ns := attrs.GetNamespace(); ns != "" {
		for _, rb := range a.roleBindings[ns] {
			if !appliesTo(u, rb.Subjects, ns) {
				continue
			}
			var rules []rbacv1.PolicyRule
			switch rb.RoleRef.Kind {
			case "Role":
				rules = a.roles[ns][rb.RoleRef.Name]
			case "ClusterRole":
				rules = a.clusterRoles[rb.RoleRef.Name]
			}
			if rulesAllow(rules, attrs) {
				return authorizer.DecisionAllow, fmt.Sprintf("RBAC: allowed by RoleBinding %q of %s %q to User %q", rb.Name+"/"+ns, rb.RoleRef.Kind, rb.RoleRef.Name, u.GetName()), nil
			}
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// ConditionsAwareAuthorize implements authorizer.Authorizer; RBAC gives
// unconditional decisions.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions implements authorizer.Authorizer: RBAC has no
// conditions, so it fails closed.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// appliesTo reports whether a subject list names the user, as RBAC's
// appliesToUser does; bindingNamespace defaults ServiceAccount namespaces.
func appliesTo(u user.Info, subjects []rbacv1.Subject, bindingNamespace string) bool {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if u.GetName() == s.Name {
				return true
			}
		case rbacv1.GroupKind:
			for _, g := range u.GetGroups() {
				if g == s.Name {
					return true
				}
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			if ns != "" && serviceaccount.MakeUsername(ns, s.Name) == u.GetName() {
				return true
			}
		}
	}
	return false
}

func rulesAllow(rules []rbacv1.PolicyRule, attrs authorizer.Attributes) bool {
	for i := range rules {
		if ruleAllows(&rules[i], attrs) {
			return true
		}
	}
	return false
}

// ruleAllows is RBAC's RuleAllows: verbs, API groups, resources (with
// "*/subresource" forms) and resource names, or non-resource URLs.
func ruleAllows(r *rbacv1.PolicyRule, attrs authorizer.Attributes) bool {
	if !has(r.Verbs, attrs.GetVerb()) {
		return false
	}
	if !attrs.IsResourceRequest() {
		for _, u := range r.NonResourceURLs {
			if u == "*" || u == attrs.GetPath() || strings.HasSuffix(u, "*") && strings.HasPrefix(attrs.GetPath(), strings.TrimRight(u, "*")) {
				return true
			}
		}
		return false
	}
	if !has(r.APIGroups, attrs.GetAPIGroup()) {
		return false
	}
	combined := attrs.GetResource()
	if sub := attrs.GetSubresource(); sub != "" {
		combined += "/" + sub
	}
	resourceOK := false
	for _, res := range r.Resources {
		sub := attrs.GetSubresource()
		if res == rbacv1.ResourceAll || res == combined ||
			sub != "" && len(res) == len(sub)+2 && strings.HasPrefix(res, "*/") && strings.HasSuffix(res, sub) {
			resourceOK = true
			break
		}
	}
	if !resourceOK {
		return false
	}
	if len(r.ResourceNames) == 0 {
		return true
	}
	for _, n := range r.ResourceNames {
		if n == attrs.GetName() {
			return true
		}
	}
	return false
}

func has(items []string, want string) bool {
	for _, i := range items {
		if i == want || i == "*" {
			return true
		}
	}
	return false
}
