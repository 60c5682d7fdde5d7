package convert

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/matching"
)

// kyvernoCELLibraries are the calls of Kyverno's own CEL libraries, which
// kube-apiserver's environment has not.
var kyvernoCELLibraries = regexp.MustCompile(`(?:^|[^.\w])(resource\.(?:Get|List|Post)\(|http\.(?:Get|Post|Client)\(|globalContext\.|gctx\.|image\(|image\.|imageData\(|parseImageReference\(|json\.unmarshal\(|yaml\.parse\(|x509\.decode\(|generator\.|time\.now\(|random\()`)

// kyvernoMutatingPolicy maps a Kyverno MutatingPolicy (policies.kyverno.io)
// to a MutatingAdmissionPolicy: its fields are MAP's, every match field
// kept (Kyverno's own generator drops namespace and object selectors,
// exclusions and matchPolicy).
func (r *Result) kyvernoMutatingPolicy(d doc) {
	src := d.src
	spec := obj(d.obj, "spec")
	refused := len(r.Refused)
	if ev := obj(spec, "evaluation"); ev != nil {
		if m := obj(ev, "mutateExisting"); truthy(m["enabled"]) {
			r.refuse(src, "spec.evaluation.mutateExisting.enabled", "mutateExisting changes other objects than the request's, in the background: MutatingAdmissionPolicy mutates the admitted object only")
		}
		if a := obj(ev, "admission"); a != nil {
			if b, ok := a["enabled"].(bool); ok && !b {
				r.Ignored = append(r.Ignored, src)
				return
			}
		}
		if m := str(ev, "mode"); m != "" && m != "Kubernetes" {
			r.refuse(src, "spec.evaluation.mode", "the mode %q evaluates JSON payloads, not Kubernetes requests", m)
		}
	}
	if spec["targetMatchConstraints"] != nil {
		r.refuse(src, "spec.targetMatchConstraints", "targets are mutateExisting's: MutatingAdmissionPolicy mutates the admitted object only")
	}
	if len(list(spec, "auditAnnotations")) > 0 {
		r.refuse(src, "spec.auditAnnotations", "a MutatingAdmissionPolicy has no audit annotations")
	}
	if obj(spec, "webhookConfiguration") != nil {
		r.note(src, "spec.webhookConfiguration", "Kyverno's webhook settings (timeoutSeconds) have no MutatingAdmissionPolicy equivalent: dropped")
	}
	check := func(field string, v any) {
		s, _ := v.(string)
		if m := kyvernoCELLibraries.FindStringSubmatch(s); m != nil {
			r.refuse(src, field, "%s is Kyverno's CEL library: kube-apiserver's CEL environment has no such function", m[1])
		}
	}
	for i, c := range list(spec, "matchConditions") {
		check(fmt.Sprintf("spec.matchConditions[%d].expression", i), obj(map[string]any{"c": c}, "c")["expression"])
	}
	for i, c := range list(spec, "variables") {
		check(fmt.Sprintf("spec.variables[%d].expression", i), obj(map[string]any{"c": c}, "c")["expression"])
	}
	for i, m := range list(spec, "mutations") {
		mm, _ := m.(map[string]any)
		check(fmt.Sprintf("spec.mutations[%d].applyConfiguration.expression", i), obj(mm, "applyConfiguration")["expression"])
		check(fmt.Sprintf("spec.mutations[%d].jsonPatch.expression", i), obj(mm, "jsonPatch")["expression"])
	}
	if len(r.Refused) > refused {
		return
	}
	var out admissionregistrationv1.MutatingAdmissionPolicySpec
	keep := map[string]any{}
	for _, k := range []string{"matchConstraints", "failurePolicy", "matchConditions", "variables", "mutations", "reinvocationPolicy", "paramKind"} {
		if v, ok := spec[k]; ok {
			keep[k] = v
		}
	}
	b, _ := json.Marshal(keep)
	if err := json.Unmarshal(b, &out); err != nil {
		r.refuse(src, "spec", "%v", err)
		return
	}
	autogen := r.kyvernoMutatingPolicyAutogen(src, spec, &out)
	r.inlineMatchConditionVariables(src, &out, true)
	for i := range autogen {
		r.inlineMatchConditionVariables(src, &autogen[i].spec, false)
	}
	if len(r.Refused) > refused {
		return
	}
	r.kyvernoMutatingPolicyNotes(src, spec, &out)
	for i := range autogen {
		r.unrewrittenAutogenNotes(src, mpolName(src, d), &autogen[i])
	}
	for i := range autogen {
		autogen[i].spec.Mutations = slices.DeleteFunc(autogen[i].spec.Mutations, func(m admissionregistrationv1.Mutation) bool {
			return inertPatch(m, autogen[i].spec.MatchConstraints)
		})
		r.undeclaredPatchNotes(src, &autogen[i].spec, true)
	}
	autogen = slices.DeleteFunc(autogen, func(a mpolAutogen) bool { return len(a.spec.Mutations) == 0 })
	r.addMutatingPolicy(d, mpolName(src, d), out)
	for _, a := range autogen {
		r.addMutatingPolicy(d, mpolName(src, d)+"-"+a.suffix, a.spec)
	}
}

// mpolName is the converted MutatingAdmissionPolicy's name of the Kyverno
// MutatingPolicy src in d.
func mpolName(src Source, d doc) string {
	if src.Kind == "NamespacedMutatingPolicy" {
		return "kyverno-" + namespaceOf(d.obj) + "-" + src.Name
	}
	return "kyverno-" + src.Name
}

// podRead is a read of a Pod's own fields (its spec, labels or
// annotations) from the object, outside any template.
var podRead = regexp.MustCompile(`\b(object|oldObject)\.(spec|metadata\.labels|metadata\.annotations)\b`)

// unrewrittenAutogenNotes notes the mutations of a's policy that Kyverno's
// autogen leaves as the Pod policy wrote them: a jsonPatch expression
// reading the Pod's fields, or an applyConfiguration's Object.metadata{…}
// (only spec, labels and annotations paths are rewritten). On the
// controllers such a mutation reads or writes what the Pod has and the
// controller's template does not say there, in Kyverno as in the converted
// policy, which `mutatis lint` may report: a user is told here, with the
// converted policy's name.
func (r *Result) unrewrittenAutogenNotes(src Source, policy string, a *mpolAutogen) {
	for i, m := range a.spec.Mutations {
		switch {
		case inertPatch(m, a.spec.MatchConstraints): // left out of the policy
		case m.JSONPatch != nil && podRead.MatchString(m.JSONPatch.Expression):
			r.note(src, fmt.Sprintf("spec.mutations[%d].jsonPatch.expression", i), "Kyverno's autogen does not rewrite a jsonPatch expression: on the Pod controllers it reads the Pod's spec, labels or annotations at the controller's root, not in its template (where they are missing, the evaluation fails), in Kyverno as in %s-%s (mutatis lint names the reads): set spec.autogen.podControllers.controllers to [] or write the controllers' mutation by hand", policy, a.suffix)
		case m.ApplyConfiguration != nil && strings.Contains(m.ApplyConfiguration.Expression, "Object.metadata{"):
			r.note(src, fmt.Sprintf("spec.mutations[%d].applyConfiguration.expression", i), "Kyverno's autogen does not rewrite Object.metadata{…}: on the Pod controllers it stays inside the template's constructor, where the type check fails at run time 'type mismatch: unexpected type name \"Object.metadata\"' whenever the mutation runs, kept so in %s-%s (mutatis lint names it): set spec.autogen.podControllers.controllers to [] or write the controllers' mutation by hand", policy, a.suffix)
		}
	}
}

// addMutatingPolicy adds the converted policy spec of the Kyverno
// MutatingPolicy d, named name, and its binding.
func (r *Result) addMutatingPolicy(d doc, name string, out admissionregistrationv1.MutatingAdmissionPolicySpec) {
	if out.ReinvocationPolicy == "" {
		out.ReinvocationPolicy = admissionregistrationv1.NeverReinvocationPolicy
	}
	if d.src.Kind == "NamespacedMutatingPolicy" {
		out.MatchConditions = append(out.MatchConditions, admissionregistrationv1.MatchCondition{Name: "kyverno-namespace", Expression: "request.namespace == " + quote(namespaceOf(d.obj))})
	}
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       out,
	}
	bd := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
	}
	r.Converted = append(r.Converted, Converted{From: []Source{d.src}, Policy: p, Binding: bd})
}

// inlineMatchConditionVariables writes into out's matchConditions the
// variables they read (kube-apiserver runs matchConditions before
// variables; Kyverno's may read them) and makes their names qualified;
// report: the refusals and notes are reported (once for a policy and the
// ones Kyverno generates from it).
func (r *Result) inlineMatchConditionVariables(src Source, out *admissionregistrationv1.MutatingAdmissionPolicySpec, report bool) {
	vars := map[string]string{}
	for _, v := range out.Variables {
		vars[v.Name] = v.Expression
	}
	for i := range out.MatchConditions {
		mc := &out.MatchConditions[i]
		for n := 0; n < 8 && variableRef.MatchString(mc.Expression); n++ {
			mc.Expression = variableRef.ReplaceAllStringFunc(mc.Expression, func(m string) string {
				e, ok := vars[variableRef.FindStringSubmatch(m)[1]]
				if !ok {
					return m
				}
				return "(" + e + ")"
			})
		}
		if variableRef.MatchString(mc.Expression) && report {
			r.refuse(src, fmt.Sprintf("spec.matchConditions[%d].expression", i), "reads variables kube-apiserver evaluates after the matchConditions")
		}
		if q := qualifiedName(mc.Name); q != mc.Name {
			if report {
				r.note(src, fmt.Sprintf("spec.matchConditions[%d].name", i), "%q is not a qualified name: written %q", mc.Name, q)
			}
			mc.Name = q
		}
	}
}

// jsonPatchPath is a literal JSONPatch path in a CEL expression, and
// whether more is added to it (its second group).
var jsonPatchPath = regexp.MustCompile(`path:\s*"(/[^"]*)"(\s*\+)?`)

// matchedKinds are the built-in kinds the resource rules of mc name.
func matchedKinds(mc *admissionregistrationv1.MatchResources) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	if mc == nil {
		return nil
	}
	for _, rule := range mc.ResourceRules {
		for _, res := range matching.BuiltinResources() {
			if slices.Contains(rule.APIGroups, res.Group) && slices.Contains(rule.APIVersions, res.Version) && slices.Contains(rule.Resources, res.Resource) {
				out = append(out, schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind})
			}
		}
	}
	return out
}

// emptyMapAdd is a JSONPatch add of an empty map in a CEL expression.
var emptyMapAdd = regexp.MustCompile(`op:\s*"add"[^}]*value:\s*\{\s*\}`)

// kyvernoMutatingPolicyNotes names where Kyverno v1.19's MutatingPolicy
// engine and kube-apiserver part on a policy that converts.
func (r *Result) kyvernoMutatingPolicyNotes(src Source, spec map[string]any, out *admissionregistrationv1.MutatingAdmissionPolicySpec) {
	r.undeclaredPatchNotes(src, out, false)
	for i, m := range out.Mutations {
		if m.JSONPatch == nil || i == len(out.Mutations)-1 || !emptyMapAdd.MatchString(m.JSONPatch.Expression) {
			continue
		}
		r.note(src, fmt.Sprintf("spec.mutations[%d].jsonPatch.expression", i), "adds an empty map for the next mutations to add into: kube-apiserver decodes the object between mutations and drops an empty map (its field is omitempty), so an add below it fails and the policy's failurePolicy decides; Kyverno keeps the map and adds")
	}
}

var variableRef = regexp.MustCompile(`\bvariables\.([A-Za-z_][A-Za-z0-9_]*)`)

// qualifiedName is a matchCondition's name as kube-apiserver accepts it:
// lowercase alphanumerics and '-', '_', '.', at most 63 characters.
func qualifiedName(s string) string {
	var b []byte
	dash := false
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-' || c == '_' || c == '.':
			b = append(b, c)
			dash = false
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
			dash = false
		default:
			if !dash && len(b) > 0 {
				b = append(b, '-')
				dash = true
			}
		}
	}
	for len(b) > 0 && !isAlnum(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	if len(b) > 63 {
		b = b[:63]
		for len(b) > 0 && !isAlnum(b[len(b)-1]) {
			b = b[:len(b)-1]
		}
	}
	if len(b) == 0 {
		return "condition"
	}
	return string(b)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z'
}

// undeclaredPatchNotes names the literal JSONPatch paths of out's
// mutations that write a field the matched kinds do not declare. below:
// leave out the paths that write below such a field, and the fields the
// expression reads into (Kyverno's autogen of a Pod policy's patches for
// the controllers): no object kube-apiserver decoded has the field, so
// such a patch fails in both engines alike.
func (r *Result) undeclaredPatchNotes(src Source, out *admissionregistrationv1.MutatingAdmissionPolicySpec, below bool) {
	for i, m := range out.Mutations {
		if m.JSONPatch == nil {
			continue
		}
		// A mutation that tells the kinds apart (their templates, the
		// request's kind) is taken to write each its own fields.
		e := m.JSONPatch.Expression
		if strings.Contains(e, "template") || strings.Contains(e, "request.kind") || strings.Contains(e, "object.kind") {
			continue
		}
		var fields, kinds []string
		for _, p := range jsonPatchPath.FindAllStringSubmatch(e, -1) {
			segs, err := jsonPointerSegs(strings.TrimSuffix(p[1], "/"), vars{})
			if err != nil {
				continue
			}
			for _, k := range matchedKinds(out.MatchConstraints) {
				f := undeclared(k.Group, k.Version, k.Kind, segs)
				if f != "" && below && (p[2] != "" || fieldSegs(segs) > strings.Count(f, ".")+1 || segs[len(segs)-1].list || readsBelow(e, f)) {
					continue
				}
				if f != "" {
					if !slices.Contains(fields, f) {
						fields = append(fields, f)
					}
					if kk := k.Group + "/" + k.Version + " " + k.Kind; !slices.Contains(kinds, kk) {
						kinds = append(kinds, kk)
					}
				}
			}
		}
		if len(fields) > 0 {
			r.note(src, fmt.Sprintf("spec.mutations[%d].jsonPatch.expression", i), "writes %s, not a field of %s: kube-apiserver drops it from Kyverno's patch, but decodes a MutatingAdmissionPolicy's patched object strictly, so the request fails", strings.Join(fields, ", "), strings.Join(kinds, ", "))
		}
	}
}

// fieldSegs counts the fields (not list elements) of segs.
func fieldSegs(segs []seg) int {
	n := 0
	for _, s := range segs {
		if !s.list {
			n++
		}
	}
	return n
}

// readsBelow tells that the CEL expression e reads into object.<field>
// (a key or an element of it) other than in has(…): where the field is
// never there, e fails before it writes.
func readsBelow(e, field string) bool {
	ref := "object." + field
	for i := strings.Index(e, ref); i >= 0; {
		end := i + len(ref)
		if end < len(e) && (e[end] == '.' || e[end] == '[') && !strings.HasSuffix(e[:i], "has(") && (i == 0 || !isIdentByte(e[i-1])) {
			return true
		}
		j := strings.Index(e[end:], ref)
		if j < 0 {
			break
		}
		i = end + j
	}
	return false
}

func isIdentByte(c byte) bool { return c == '_' || c == '.' || isAlnum(c) }

// inertPatch tells that the JSONPatch mutation m writes, on every kind mc
// matches, only fields the kind does not declare, or below them, and reads
// none of them: Kyverno's autogen of a Pod policy's patch, which
// kube-apiserver's decoding of Kyverno's patched object undoes (no object
// it decoded has such a field to write below).
func inertPatch(m admissionregistrationv1.Mutation, mc *admissionregistrationv1.MatchResources) bool {
	if m.JSONPatch == nil {
		return false
	}
	e := m.JSONPatch.Expression
	paths := jsonPatchPath.FindAllStringSubmatch(e, -1)
	if len(paths) == 0 {
		return false
	}
	for _, p := range paths {
		segs, err := jsonPointerSegs(strings.TrimSuffix(p[1], "/"), vars{})
		if err != nil || len(segs) == 0 {
			return false
		}
		for _, k := range matchedKinds(mc) {
			f := undeclared(k.Group, k.Version, k.Kind, segs)
			if f == "" || readsBelow(e, f) {
				return false
			}
		}
	}
	return true
}
