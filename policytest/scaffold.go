package policytest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
)

// Scaffold writes the text of a new suite for the policies of paths
// (files or directories, as `mutatis test init` takes them): one case per
// binding (and, with `bindings: auto`, per policy that no binding names),
// each with a sample object derived from the rules — a resource the
// policy and the binding match, in a namespace and with labels their
// selectors select — and the expectation that the binding applied. The
// policies are named relative to dir, where the suite will be written.
func Scaffold(ctx context.Context, paths []string, dir, name string) ([]byte, error) {
	set, err := manifest.Load(ctx, paths, nil)
	if err != nil {
		return nil, err
	}
	vaps, vbindings := set.ValidatingAPIObjects()
	if len(set.Policies) == 0 && len(vaps) == 0 {
		return nil, fmt.Errorf("no MutatingAdmissionPolicy or ValidatingAdmissionPolicy in %s", strings.Join(paths, ", "))
	}
	// A suite of policies kube-apiserver would not create tests nothing.
	if err := validatePolicies(set.Policies); err != nil {
		return nil, err
	}
	policies, bindings := set.APIObjects()
	byName := map[string]*admissionregistrationv1.MutatingAdmissionPolicy{}
	for _, p := range policies {
		byName[p.Name] = p
	}
	auto := autoBindings(policies, bindings)
	all := append(slices.Clone(bindings), auto...)
	sortBindings(all)
	vbyName := map[string]*admissionregistrationv1.ValidatingAdmissionPolicy{}
	for _, p := range vaps {
		vbyName[p.Name] = p
	}
	vauto := autoValidatingBindings(vaps, vbindings)
	vall := append(slices.Clone(vbindings), vauto...)
	sort.SliceStable(vall, func(i, j int) bool {
		if vall[i].Spec.PolicyName != vall[j].Spec.PolicyName {
			return vall[i].Spec.PolicyName < vall[j].Spec.PolicyName
		}
		return vall[i].Name < vall[j].Name
	})

	var b strings.Builder
	fmt.Fprintf(&b, "# A suite scaffolded by `mutatis test init` (docs/testing.md): one case per\n")
	fmt.Fprintf(&b, "# binding, with a sample object the policy and the binding match. Say what\n")
	fmt.Fprintf(&b, "# each case must do (expect.objectContains, expect.patch, expect.denied …).\n")
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\n", APIVersion, Kind)
	if name != "" {
		fmt.Fprintf(&b, "metadata:\n  name: %s\n", quote(name))
	}
	b.WriteString("policies:\n")
	for _, p := range paths {
		fmt.Fprintf(&b, "- %s\n", quote(relativeTo(dir, p)))
	}
	if len(auto)+len(vauto) > 0 {
		b.WriteString("bindings: auto   # a binding of its own for every policy that no binding names\n")
	}
	b.WriteString("cases:\n")
	table := matching.DefaultTable()
	for _, bd := range all {
		p := byName[bd.Spec.PolicyName]
		if p == nil {
			fmt.Fprintf(&b, "# binding %q names policy %q, which is not among the policies: it does nothing.\n", bd.Name, bd.Spec.PolicyName)
			continue
		}
		writeCase(&b, table, p, bd, slices.Contains(auto, bd), nil)
	}
	for _, bd := range vall {
		p := vbyName[bd.Spec.PolicyName]
		if p == nil {
			fmt.Fprintf(&b, "# binding %q names policy %q, which is not among the policies: it does nothing.\n", bd.Name, bd.Spec.PolicyName)
			continue
		}
		// The sample object is drawn from the rules as for a mutating
		// policy: the same fields hold them.
		mp := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: p.ObjectMeta, Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: p.Spec.MatchConstraints, ParamKind: p.Spec.ParamKind}}
		mb := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: bd.ObjectMeta, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: bd.Spec.PolicyName, MatchResources: bd.Spec.MatchResources, ParamRef: bd.Spec.ParamRef}}
		auto := slices.Contains(vauto, bd)
		writeCase(&b, table, mp, mb, auto, bd)
		writeCase(&b, table, mp, mb, auto, bd, true)
	}
	return []byte(b.String()), nil
}

// sortBindings sorts bindings by policy, then name.
func sortBindings(all []*admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Spec.PolicyName != all[j].Spec.PolicyName {
			return all[i].Spec.PolicyName < all[j].Spec.PolicyName
		}
		return all[i].Name < all[j].Name
	})
}

// writeCase writes the case of one binding of p. For a
// ValidatingAdmissionPolicy (vb, its binding; p and bd hold its rules),
// the case expects the request to pass its validations, or, when failing
// is set, the outcome of the binding's validationActions (a denial, a
// warning, an audited failure) once the object breaks a validation.
func writeCase(b *strings.Builder, table *matching.Table, p *admissionregistrationv1.MutatingAdmissionPolicy, bd *admissionregistrationv1.MutatingAdmissionPolicyBinding, auto bool, vb *admissionregistrationv1.ValidatingAdmissionPolicyBinding, failing ...bool) {
	caseName := fmt.Sprintf("%s applies through %s", p.Name, bd.Name)
	if auto {
		caseName = fmt.Sprintf("%s applies", p.Name)
	}
	fails := len(failing) > 0 && failing[0]
	if vb != nil {
		caseName = fmt.Sprintf("%s admits through %s", p.Name, bd.Name)
		if fails {
			caseName = fmt.Sprintf("%s %s through %s", p.Name, actionVerb(vb.Spec.ValidationActions), bd.Name)
		}
	}
	fmt.Fprintf(b, "- name: %s\n", quote(caseName))
	res, op, ok := sampleResource(table, p, bd)
	if !ok {
		fmt.Fprintf(b, "  # No built-in resource matches the rules of %q (a custom resource?):\n", p.Name)
		fmt.Fprintf(b, "  # write the object under admission, and give its CRD in resources.\n")
		fmt.Fprintf(b, "  object: %s\n", quote(p.Name+"-object.yaml"))
		writeExpect(b, p.Name+"/"+bd.Name, vb, fails)
		return
	}
	nsLabels := selectedLabels(p.Spec.MatchConstraints.NamespaceSelector, bindingSelector(bd, true))
	objLabels := selectedLabels(p.Spec.MatchConstraints.ObjectSelector, bindingSelector(bd, false))
	namespace := ""
	if res.Namespaced {
		namespace = "default"
		if len(nsLabels) > 0 {
			namespace = "selected"
			ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": namespace, "labels": nsLabels}}
			b.WriteString("  resources:   # a namespace the namespaceSelector selects\n")
			writeObject(b, "  - ", "    ", ns)
		}
	}
	if op != "CREATE" {
		fmt.Fprintf(b, "  operation: %s\n", op)
	}
	if bd.Spec.ParamRef != nil {
		fmt.Fprintf(b, "  # The binding takes params (%s): give them in resources.\n", paramKindText(p))
	}
	obj := sampleObject(res, "example", namespace, objLabels)
	if fails {
		b.WriteString("  # Change the object so that a validation of the policy fails.\n")
	}
	b.WriteString("  object:\n")
	writeObject(b, "    ", "    ", obj)
	if op == "UPDATE" {
		b.WriteString("  oldObject:   # the stored object: change it to what the update starts from\n")
		writeObject(b, "    ", "    ", obj)
	}
	writeExpect(b, p.Name+"/"+bd.Name, vb, fails)
}

// writeExpect writes the expectations of a case of the binding named
// policyBinding ("POLICY/BINDING"): that it applied, and what a
// ValidatingAdmissionPolicy's failing validation (fails) gives under its
// binding vb's validationActions.
func writeExpect(b *strings.Builder, policyBinding string, vb *admissionregistrationv1.ValidatingAdmissionPolicyBinding, fails bool) {
	fmt.Fprintf(b, "  expect:\n    applied: [%s]\n", quote(policyBinding))
	if vb == nil {
		b.WriteString("    # objectContains: {…}   the fields the policy sets\n")
		return
	}
	if !fails {
		return
	}
	policy, binding, _ := strings.Cut(policyBinding, "/")
	actions := vb.Spec.ValidationActions
	if slices.Contains(actions, admissionregistrationv1.Deny) {
		fmt.Fprintf(b, "    denied:\n      by: ValidatingAdmissionPolicy\n      message: %s\n", quote(fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: ", policy, binding)))
		return
	}
	if slices.Contains(actions, admissionregistrationv1.Warn) {
		fmt.Fprintf(b, "    warnings:\n    - %s\n", quote(fmt.Sprintf("^Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': ", policy, binding)))
	}
	if slices.Contains(actions, admissionregistrationv1.Audit) {
		fmt.Fprintf(b, "    validationFailures:\n    - {policy: %s, binding: %s}\n", quote(policy), quote(binding))
	}
}

// actionVerb says what a binding's validationActions do to a request
// that fails a validation.
func actionVerb(actions []admissionregistrationv1.ValidationAction) string {
	switch {
	case slices.Contains(actions, admissionregistrationv1.Deny):
		return "denies"
	case slices.Contains(actions, admissionregistrationv1.Warn) && slices.Contains(actions, admissionregistrationv1.Audit):
		return "warns and audits"
	case slices.Contains(actions, admissionregistrationv1.Warn):
		return "warns"
	}
	return "audits"
}

// paramKindText names a policy's paramKind.
func paramKindText(p *admissionregistrationv1.MutatingAdmissionPolicy) string {
	if pk := p.Spec.ParamKind; pk != nil {
		return pk.APIVersion + " " + pk.Kind
	}
	return "the policy has no paramKind"
}

// bindingSelector is a binding's namespace or object selector, if any.
func bindingSelector(bd *admissionregistrationv1.MutatingAdmissionPolicyBinding, namespace bool) *metav1.LabelSelector {
	mr := bd.Spec.MatchResources
	if mr == nil {
		return nil
	}
	if namespace {
		return mr.NamespaceSelector
	}
	return mr.ObjectSelector
}

// selectedLabels are labels that every selector selects: matchLabels as
// they are, In its first value, Exists any value; NotIn and DoesNotExist
// are met by leaving the key out (or, for NotIn on a key a selector
// requires, are not met: the case then shows it).
func selectedLabels(selectors ...*metav1.LabelSelector) map[string]any {
	out := map[string]any{}
	for _, s := range selectors {
		if s == nil {
			continue
		}
		for k, v := range s.MatchLabels {
			out[k] = v
		}
		for _, r := range s.MatchExpressions {
			switch r.Operator {
			case metav1.LabelSelectorOpIn:
				if len(r.Values) > 0 {
					out[r.Key] = r.Values[0]
				}
			case metav1.LabelSelectorOpExists:
				if _, ok := out[r.Key]; !ok {
					out[r.Key] = "true"
				}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// preferred are the resources a sample is drawn from first, among those a
// rule matches: common kinds whose sample objects are valid.
var preferred = []string{"pods", "deployments", "configmaps", "services", "statefulsets", "daemonsets", "jobs", "cronjobs", "replicasets", "secrets", "serviceaccounts", "namespaces"}

// sampleResource is a built-in resource that p's rules (and bd's, if it
// has some) match, with an operation they match, CREATE first.
func sampleResource(table *matching.Table, p *admissionregistrationv1.MutatingAdmissionPolicy, bd *admissionregistrationv1.MutatingAdmissionPolicyBinding) (matching.Resource, string, bool) {
	resources := table.Resources()
	rank := func(r matching.Resource) int {
		if i := slices.Index(preferred, r.Resource); i >= 0 && r.Version == "v1" {
			return i
		}
		return len(preferred)
	}
	sort.SliceStable(resources, func(i, j int) bool { return rank(resources[i]) < rank(resources[j]) })
	mc := p.Spec.MatchConstraints
	for _, rule := range mc.ResourceRules {
		op := ""
		// A DELETE last: only ValidatingAdmissionPolicies see it (its
		// object is the deleted one).
		for _, want := range []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete} {
			if slices.Contains(rule.Operations, want) || slices.Contains(rule.Operations, admissionregistrationv1.OperationAll) {
				op = string(want)
				break
			}
		}
		if op == "" {
			continue
		}
		for _, r := range resources {
			if ruleMatches(rule.Rule, r) && !excluded(mc.ExcludeResourceRules, r) && bindingAllows(bd, r) {
				return r, op, true
			}
		}
	}
	return matching.Resource{}, "", false
}

func ruleMatches(rule admissionregistrationv1.Rule, r matching.Resource) bool {
	in := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	if rule.Scope != nil {
		switch *rule.Scope {
		case admissionregistrationv1.NamespacedScope:
			if !r.Namespaced {
				return false
			}
		case admissionregistrationv1.ClusterScope:
			if r.Namespaced {
				return false
			}
		}
	}
	return in(rule.APIGroups, r.Group) && in(rule.APIVersions, r.Version) && in(rule.Resources, r.Resource)
}

func excluded(rules []admissionregistrationv1.NamedRuleWithOperations, r matching.Resource) bool {
	return slices.ContainsFunc(rules, func(x admissionregistrationv1.NamedRuleWithOperations) bool {
		return len(x.ResourceNames) == 0 && ruleMatches(x.Rule, r)
	})
}

// bindingAllows tells whether a binding's own resource rules, if it has
// some, match r.
func bindingAllows(bd *admissionregistrationv1.MutatingAdmissionPolicyBinding, r matching.Resource) bool {
	mr := bd.Spec.MatchResources
	if mr == nil || len(mr.ResourceRules) == 0 {
		return true
	}
	return slices.ContainsFunc(mr.ResourceRules, func(x admissionregistrationv1.NamedRuleWithOperations) bool {
		return ruleMatches(x.Rule, r)
	}) && !excluded(mr.ExcludeResourceRules, r)
}

// sampleObject is a small object of r's kind that kube-apiserver accepts:
// the fields its validation requires for the common workload kinds.
func sampleObject(r matching.Resource, name, namespace string, labels map[string]any) map[string]any {
	apiVersion := r.Version
	if r.Group != "" {
		apiVersion = r.Group + "/" + r.Version
	}
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	if labels != nil {
		meta["labels"] = labels
	}
	obj := map[string]any{"apiVersion": apiVersion, "kind": r.Kind, "metadata": meta}
	container := []any{map[string]any{"name": "app", "image": "nginx:1.27"}}
	podTemplate := func(restart string) map[string]any {
		spec := map[string]any{"containers": container}
		if restart != "" {
			spec["restartPolicy"] = restart
		}
		return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}}, "spec": spec}
	}
	selector := map[string]any{"matchLabels": map[string]any{"app": name}}
	switch r.Kind {
	case "Pod":
		obj["spec"] = map[string]any{"containers": container}
	case "Deployment", "ReplicaSet", "DaemonSet":
		obj["spec"] = map[string]any{"selector": selector, "template": podTemplate("")}
	case "StatefulSet":
		obj["spec"] = map[string]any{"selector": selector, "serviceName": name, "template": podTemplate("")}
	case "Job":
		obj["spec"] = map[string]any{"template": podTemplate("Never")}
	case "CronJob":
		obj["spec"] = map[string]any{"schedule": "0 * * * *", "jobTemplate": map[string]any{"spec": map[string]any{"template": podTemplate("Never")}}}
	case "Service":
		obj["spec"] = map[string]any{"selector": map[string]any{"app": name}, "ports": []any{map[string]any{"port": 80}}}
	case "ConfigMap":
		obj["data"] = map[string]any{"key": "value"}
	}
	return obj
}

// writeObject writes obj as YAML, its first line after first, the others
// after indent.
func writeObject(b *strings.Builder, first, indent string, obj map[string]any) {
	data, err := yaml.Marshal(obj)
	if err != nil {
		// Cannot happen: maps of strings, lists and maps.
		panic(err)
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if i == 0 {
			b.WriteString(first + line + "\n")
		} else {
			b.WriteString(indent + line + "\n")
		}
	}
}

// quote writes s as a YAML scalar, quoted when plain would not read back
// as the same string.
func quote(s string) string {
	data, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Sprintf("%q", s)
	}
	return strings.TrimSuffix(string(data), "\n")
}

// relativeTo is path p (relative to the working directory) relative to
// dir, where the suite lives.
func relativeTo(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" || dir == "." {
		return p
	}
	abs, err1 := filepath.Abs(p)
	absDir, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return p
	}
	rel, err := filepath.Rel(absDir, abs)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}
