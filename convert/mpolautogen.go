package convert

import (
	"regexp"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// mpolController is a Pod controller Kyverno v1.19's MutatingPolicy
// autogen (pkg/cel/autogen ConfigsMap) writes a policy for, and the
// template its expressions are rewritten to ("defaults" or "cronjobs").
type mpolController struct{ name, group, resource, config string }

var mpolControllers = []mpolController{
	{"daemonsets", "apps", "daemonsets", "defaults"},
	{"deployments", "apps", "deployments", "defaults"},
	{"replicasets", "apps", "replicasets", "defaults"},
	{"statefulsets", "apps", "statefulsets", "defaults"},
	{"jobs", "batch", "jobs", "defaults"},
	{"cronjobs", "batch", "cronjobs", "cronjobs"},
}

// An mpolAutogen is one policy Kyverno generates from a Pod
// MutatingPolicy: its name's suffix and its spec.
type mpolAutogen struct {
	suffix string
	spec   admissionregistrationv1.MutatingAdmissionPolicySpec
}

// kyvernoMutatingPolicyAutogen gives the policies Kyverno v1.19 applies
// to the Pod controllers besides the Pod policy out (pkg/cel/policies/mpol/
// autogen): when the policy can be autogen'd (pkg/cel/autogen CanAutoGen),
// one per template path, matching the controllers' resources with the
// Pod rule's operations and namespace selector, their match conditions and
// applyConfiguration expressions rewritten to the template; variables and
// jsonPatch expressions are Kyverno's unchanged. controllers is the
// policy's spec.autogen.podControllers.controllers (nil: all).
func (r *Result) kyvernoMutatingPolicyAutogen(src Source, spec map[string]any, out *admissionregistrationv1.MutatingAdmissionPolicySpec) []mpolAutogen {
	mc := out.MatchConstraints
	if mc == nil || len(mc.ResourceRules) != 1 || len(mc.ExcludeResourceRules) != 0 ||
		(mc.ObjectSelector != nil && len(mc.ObjectSelector.MatchLabels)+len(mc.ObjectSelector.MatchExpressions) > 0) {
		return nil
	}
	rule := mc.ResourceRules[0]
	if len(rule.ResourceNames) != 0 || !slices.Equal(rule.APIGroups, []string{""}) || !slices.Equal(rule.APIVersions, []string{"v1"}) || !slices.Equal(rule.Resources, []string{"pods"}) {
		return nil
	}
	var wanted []string
	pc := obj(obj(spec, "autogen"), "podControllers")
	cs, set := pc["controllers"].([]any)
	if set {
		for _, c := range cs {
			s, _ := c.(string)
			if strings.Count(s, ".") >= 2 {
				r.refuse(src, "spec.autogen.podControllers.controllers", "%q is a custom controller, whose Pod template Kyverno finds when it evaluates: a MutatingAdmissionPolicy has no such rewrite", s)
				return nil
			}
			wanted = append(wanted, s)
		}
	}
	var out2 []mpolAutogen
	for _, config := range []string{"cronjobs", "defaults"} {
		rules := map[string][]string{}
		var groups []string
		for _, c := range mpolControllers {
			if c.config != config || (set && !slices.Contains(wanted, c.name)) {
				continue
			}
			if rules[c.group] == nil {
				groups = append(groups, c.group)
			}
			rules[c.group] = append(rules[c.group], c.resource)
		}
		if len(groups) == 0 {
			continue
		}
		slices.Sort(groups)
		s := *out.DeepCopy()
		s.MatchConstraints = &admissionregistrationv1.MatchResources{NamespaceSelector: mc.NamespaceSelector.DeepCopy()}
		for _, g := range groups {
			res := rules[g]
			slices.Sort(res)
			s.MatchConstraints.ResourceRules = append(s.MatchConstraints.ResourceRules, admissionregistrationv1.NamedRuleWithOperations{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: slices.Clone(rule.Operations),
					Rule: admissionregistrationv1.Rule{
						APIGroups:   []string{g},
						APIVersions: []string{"v1"},
						Resources:   res,
					},
				},
			})
		}
		for i := range s.MatchConditions {
			s.MatchConditions[i].Expression = podToTemplateExpression(s.MatchConditions[i].Expression, config)
		}
		for i := range s.Mutations {
			if ac := s.Mutations[i].ApplyConfiguration; ac != nil {
				ac.Expression = podToTemplateExpression(ac.Expression, config)
			}
		}
		out2 = append(out2, mpolAutogen{suffix: "autogen-" + config, spec: s})
	}
	return out2
}

var (
	mpolSpecRef        = regexp.MustCompile(`\b(object|oldObject|Object)\.spec`)
	mpolLabelsRef      = regexp.MustCompile(`\b(object|oldObject|Object)\.metadata\.labels`)
	mpolAnnotationsRef = regexp.MustCompile(`\b(object|oldObject|Object)\.metadata\.annotations`)
)

// podToTemplateExpression is a Pod policy's expression as Kyverno v1.19
// rewrites it for the controllers of config (pkg/cel/policies/mpol/autogen
// convertPodToTemplateExpression): the Pod's spec, labels and annotations
// read from the template, and a root Object{…} constructor wrapped in the
// controller's.
func podToTemplateExpression(e, config string) string {
	tmpl := "spec.template"
	wrapper, closing := "Object{spec: Object.spec{template: Object.spec.template{", "}}}"
	if config == "cronjobs" {
		tmpl = "spec.jobTemplate.spec.template"
		wrapper, closing = "Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: Object.spec.jobTemplate.spec{template: Object.spec.jobTemplate.spec.template{", "}}}}}"
	}
	e = mpolSpecRef.ReplaceAllString(e, "${1}."+tmpl+".spec")
	e = mpolLabelsRef.ReplaceAllString(e, "${1}."+tmpl+".metadata.labels")
	e = mpolAnnotationsRef.ReplaceAllString(e, "${1}."+tmpl+".metadata.annotations")
	rest, ok := strings.CutPrefix(strings.TrimSpace(e), "Object")
	if !ok {
		return e
	}
	content, ok := strings.CutPrefix(strings.TrimLeft(rest, " \t\r\n"), "{")
	if !ok {
		return e
	}
	depth, end := 1, 0
	for i, c := range content {
		if c == '{' {
			depth++
		} else if c == '}' {
			depth--
			if depth == 0 {
				end = i
				break
			}
		}
	}
	if end == 0 {
		return e
	}
	return wrapper + content[:end] + closing + content[end+1:]
}
