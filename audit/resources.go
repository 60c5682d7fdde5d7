package audit

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/matching"
)

// Targets returns the resources the policies' rules can match for
// operation op, resolved against table (built-in resources and CRDs): one
// version of each group/resource (the first kube-apiserver installs, its
// preferred one), and of resources sharing storage (events and
// events.k8s.io events) only the first, so that an object is audited
// once. Only the resources themselves count: a rule that names only a
// subresource (pods/status) matches no object that is re-created or
// updated. kinds, when not empty, keeps the resources named there
// (ParseKinds). The rules are a necessary condition only: versions,
// scope, selectors and matchConditions are left to the evaluation.
func Targets(table *matching.Table, policies []*admissionregistrationv1.MutatingAdmissionPolicy, op admission.Operation, kinds []Kind) []matching.Resource {
	var sels []matching.Selector
	for _, p := range policies {
		sels = append(sels, matching.SelectorForPolicy(p))
	}
	return targets(table, sels, op, kinds)
}

// targets is Targets over the selectors of policies' matchConstraints.
func targets(table *matching.Table, sels []matching.Selector, op admission.Operation, kinds []Kind) []matching.Resource {
	var rules []admissionregistrationv1.RuleWithOperations
	all := false
	for _, sel := range sels {
		all = all || sel.All
		rules = append(rules, sel.Rules...)
	}
	seen := map[schema.GroupResource]bool{}
	storage := map[schema.GroupVersionResource]bool{}
	var out []matching.Resource
	for _, r := range table.Resources() {
		gr := schema.GroupResource{Group: r.Group, Resource: r.Resource}
		if seen[gr] {
			continue
		}
		seen[gr] = true
		if len(kinds) > 0 && !slices.ContainsFunc(kinds, func(k Kind) bool { return k.Names(r) }) {
			continue
		}
		if !all && !slices.ContainsFunc(rules, func(rule admissionregistrationv1.RuleWithOperations) bool { return ruleNames(rule, r, op) }) {
			continue
		}
		// Resources of one storage: the first registered stands for all.
		if slices.ContainsFunc(table.EquivalentResourcesFor(r.GroupVersionResource(), ""), func(eq schema.GroupVersionResource) bool { return storage[eq] }) {
			continue
		}
		for _, eq := range table.EquivalentResourcesFor(r.GroupVersionResource(), "") {
			storage[eq] = true
		}
		storage[r.GroupVersionResource()] = true
		out = append(out, r)
	}
	return out
}

// ruleNames tells whether rule names operation op on resource r itself
// (not only a subresource of it), whatever the versions.
func ruleNames(rule admissionregistrationv1.RuleWithOperations, r matching.Resource, op admission.Operation) bool {
	if !slices.ContainsFunc(rule.Operations, func(o admissionregistrationv1.OperationType) bool {
		return o == admissionregistrationv1.OperationAll || admission.Operation(o) == op
	}) {
		return false
	}
	if !slices.ContainsFunc(rule.APIGroups, func(g string) bool { return g == "*" || g == r.Group }) {
		return false
	}
	return slices.ContainsFunc(rule.Resources, func(s string) bool {
		res, sub, _ := strings.Cut(s, "/")
		// "pods", "*", "*/*", "pods/*": the resource with no subresource
		// is matched by an empty subresource or a "*".
		return (res == "*" || res == r.Resource) && (sub == "" || sub == "*")
	})
}

// Kind names resources as --kinds does: a kind or a resource (plural),
// case-insensitive, optionally qualified by its group (Deployment.apps,
// deployments.apps, ConfigMap, example.com's Widget as Widget.example.com).
type Kind struct {
	Name, Group string
	// Grouped tells that a group was given ("" for the core group then).
	Grouped bool
}

// ParseKinds parses --kinds values.
func ParseKinds(values []string) ([]Kind, error) {
	var out []Kind
	for _, v := range values {
		v = strings.TrimSpace(v)
		if v == "" {
			return nil, fmt.Errorf("--kinds: empty kind")
		}
		name, group, grouped := strings.Cut(v, ".")
		if name == "" {
			return nil, fmt.Errorf("--kinds %q: no kind before the group", v)
		}
		out = append(out, Kind{Name: strings.ToLower(name), Group: strings.ToLower(group), Grouped: grouped})
	}
	return out, nil
}

// Names tells whether k names resource r.
func (k Kind) Names(r matching.Resource) bool {
	if k.Grouped && k.Group != strings.ToLower(r.Group) {
		return false
	}
	return k.Name == strings.ToLower(r.Kind) || k.Name == r.Resource
}

// Resolve returns the resource k names in table: the first installed
// version of the first group/resource named, preferring the core group
// when no group is given.
func (k Kind) Resolve(table *matching.Table) (matching.Resource, error) {
	for _, r := range table.Resources() {
		if k.Names(r) {
			return r, nil
		}
	}
	return matching.Resource{}, fmt.Errorf("kind %q is not served by Kubernetes 1.37 nor by a CRD of the cluster", k)
}

func (k Kind) String() string {
	if k.Grouped {
		return k.Name + "." + k.Group
	}
	return k.Name
}

// resourceName is r as kubectl names it: plural.group.
func resourceName(r matching.Resource) string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}
