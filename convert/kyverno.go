package convert

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kyvernoPodControllers are the kinds Kyverno's autogen writes a Pod
// rule for by default, with the path of their Pod template.
var kyvernoPodControllers = []struct{ group, kind, template string }{
	{"apps", "DaemonSet", "spec.template"},
	{"apps", "Deployment", "spec.template"},
	{"batch", "Job", "spec.template"},
	{"apps", "StatefulSet", "spec.template"},
	{"apps", "ReplicaSet", "spec.template"},
	{"", "ReplicationController", "spec.template"},
	{"batch", "CronJob", "spec.jobTemplate.spec.template"},
}

const autogenAnnotation = "pod-policies.kyverno.io/autogen-controllers"

// target is where one mutation of a rule writes: the kind's check and the
// CEL and pointer of the object the rule's patch applies to (a Pod, or a
// controller's Pod template).
type target struct {
	kindCond string
	root     string
	ptr      string
	guard    string
}

func (r *Result) kyverno(d doc) {
	src := d.src
	spec := obj(d.obj, "spec")
	rules := list(spec, "rules")
	var mutating []int
	for i, ru := range rules {
		if obj(ru.(map[string]any), "mutate") != nil {
			mutating = append(mutating, i)
		}
	}
	if len(mutating) == 0 {
		r.Ignored = append(r.Ignored, src)
		return
	}
	refused := len(r.Refused)
	controllers := r.kyvernoAutogen(d, rules, mutating)
	autogen := len(controllers) > 0
	var rs ruleSet
	rs.ops = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	var muts []admissionregistrationv1.Mutation
	var conds []admissionregistrationv1.MatchCondition
	var params []map[string]any
	var paramRef *admissionregistrationv1.ParamRef
	var from []Source
	for _, i := range mutating {
		ru := rules[i].(map[string]any)
		rsrc := src
		rsrc.Rule = str(ru, "name")
		from = append(from, rsrc)
		field := fmt.Sprintf("spec.rules[%d]", i)
		mut := obj(ru, "mutate")
		if len(list(mut, "targets")) > 0 || truthy(spec["mutateExistingOnPolicyUpdate"]) {
			r.refuse(rsrc, field+".mutate.targets", "mutateExisting changes other objects than the request's, in the background: MutatingAdmissionPolicy mutates the admitted object only")
			continue
		}
		v := vars{object: "object", configs: map[string]bool{}}
		for j, c := range list(ru, "context") {
			cm, _ := c.(map[string]any)
			cf := fmt.Sprintf("%s.context[%d]", field, j)
			switch {
			case cm["configMap"] != nil:
				if paramRef != nil {
					r.refuse(rsrc, cf+".configMap", "a second configMap: a MutatingAdmissionPolicy has one param")
					continue
				}
				cfg := obj(cm, "configMap")
				if strings.Contains(str(cfg, "name"), "{{") || strings.Contains(str(cfg, "namespace"), "{{") {
					r.refuse(rsrc, cf+".configMap", "a configMap named by a variable: a binding's paramRef names its param")
					continue
				}
				deny := admissionregistrationv1.DenyAction
				paramRef = &admissionregistrationv1.ParamRef{Name: str(cfg, "name"), Namespace: str(cfg, "namespace"), ParameterNotFoundAction: &deny}
				v.configs[str(cm, "name")] = true
			case cm["apiCall"] != nil:
				r.refuse(rsrc, cf+".apiCall", "an API call at admission: CEL cannot read the cluster beyond a param")
			case cm["globalReference"] != nil:
				r.refuse(rsrc, cf+".globalReference", "a global context entry is Kyverno's cache of the cluster: CEL cannot read it")
			case cm["imageRegistry"] != nil:
				r.refuse(rsrc, cf+".imageRegistry", "an image registry lookup: CEL makes no outbound calls")
			default:
				r.refuse(rsrc, cf, "a context variable: not converted")
			}
		}
		rules, pred := r.kyvernoMatch(rsrc, field, ru, d, controllers)
		for _, rule := range rules {
			for _, res := range rule.Resources {
				rs.add(rule.APIGroups[0], rule.APIVersions[0], res, *rule.Scope)
			}
		}
		pre, err := kyvernoPreconditions(ru["preconditions"], v)
		if err != nil {
			r.refuse(rsrc, field+".preconditions", "%v", err)
			continue
		}
		targets := []target{{root: "object", ptr: `""`}}
		if autogen {
			targets[0].kindCond = `request.kind.group == "" && request.kind.kind == "Pod"`
			for _, c := range kyvernoPodControllers {
				if !slices.Contains(controllers, c.kind) {
					continue
				}
				root := "object." + c.template
				segs := strings.Split(c.template, ".")
				opt := "object"
				for _, s := range segs {
					opt += ".?" + s
				}
				ptr := quote("/" + strings.ReplaceAll(c.template, ".", "/"))
				targets = append(targets, target{kindCond: fmt.Sprintf("request.kind.group == %q && request.kind.kind == %q", c.group, c.kind), root: root, ptr: ptr, guard: opt + ".hasValue()"})
				res, _, _ := resourceFor(c.group, c.kind)
				for _, op := range rs.versionsOf("", "pods") {
					_ = op
				}
				rs.add(c.group, "*", res, admissionregistrationv1.NamespacedScope)
			}
		}
		for _, t := range targets {
			tv := v
			tv.object = t.root
			ops, err := r.kyvernoMutate(rsrc, field+".mutate", mut, t, tv)
			if err != nil {
				r.refuse(rsrc, field+".mutate", "%v", err)
				break
			}
			expr := ops
			if t.guard != "" {
				expr = fmt.Sprintf("%s ? (%s) : []", t.guard, expr)
			}
			guard := and(t.kindCond, pre)
			if len(mutating) > 1 {
				guard = and(t.kindCond, pred, pre)
			}
			if guard != "true" {
				expr = fmt.Sprintf("%s ? (%s) : []", guard, expr)
			}
			muts = append(muts, jsonPatchMutation(expr))
		}
		if len(mutating) == 1 && pred != "true" {
			conds = append(conds, admissionregistrationv1.MatchCondition{Name: "kyverno-match", Expression: pred})
		}
	}
	if len(r.Refused) > refused {
		return
	}
	if paramRef != nil {
		r.note(src, "spec.rules.context.configMap", "a missing configMap denies the request (parameterNotFoundAction: Deny), as Kyverno's rule fails")
	}
	fail := admissionregistrationv1.Fail
	if str(spec, "failurePolicy") == "Ignore" {
		fail = admissionregistrationv1.Ignore
	}
	name := "kyverno-" + src.Name
	if src.Kind == "Policy" {
		name = "kyverno-" + namespaceOf(d.obj) + "-" + src.Name
	}
	pol, b := newPolicy(name, rs.rules, conds, muts, fail, admissionregistrationv1.NeverReinvocationPolicy)
	if paramRef != nil {
		pol.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
		b.Spec.ParamRef = paramRef
	}
	r.Converted = append(r.Converted, Converted{From: from, Policy: pol, Binding: b, Params: params})
}

func (rs *ruleSet) versionsOf(group, resource string) []string { return nil }

func truthy(v any) bool { b, _ := v.(bool); return b }

func namespaceOf(o map[string]any) string { return str(obj(o, "metadata"), "namespace") }

// kyvernoAutogen gives the controllers Kyverno writes the policy's Pod
// rules for (pkg/autogen/v1 CanAutoGen of Kyverno 1.19): none when a rule
// generates, has a patchesJson6902 (its own or a foreach's), or matches or
// excludes by name, selector, annotations or other kinds than Pod; else
// the annotation's list, or all of them.
func (r *Result) kyvernoAutogen(d doc, rules []any, mutating []int) []string {
	ann := str(obj(obj(d.obj, "metadata"), "annotations"), autogenAnnotation)
	if ann == "none" {
		return nil
	}
	for _, ru := range rules {
		rm, _ := ru.(map[string]any)
		if rm["generate"] != nil {
			return nil
		}
		mut := obj(rm, "mutate")
		if mut["patchesJson6902"] != nil {
			return nil
		}
		for _, fe := range list(mut, "foreach") {
			if fm, _ := fe.(map[string]any); fm["patchesJson6902"] != nil {
				return nil
			}
		}
		for _, blk := range []string{"match", "exclude"} {
			for _, f := range filters(obj(rm, blk)) {
				res := obj(f, "resources")
				if len(strs(res["names"])) > 0 || str(res, "name") != "" || res["selector"] != nil || res["annotations"] != nil {
					return nil
				}
				for _, k := range strs(res["kinds"]) {
					if k != "Pod" && k != "v1/Pod" {
						return nil
					}
				}
			}
		}
	}
	var out []string
	for _, c := range kyvernoPodControllers {
		if ann == "" || ann == "all" || slices.Contains(strings.Split(ann, ","), c.kind) {
			out = append(out, c.kind)
		}
	}
	return out
}

func filters(m map[string]any) []map[string]any {
	var out []map[string]any
	for _, k := range []string{"any", "all"} {
		for _, f := range list(m, k) {
			if fm, ok := f.(map[string]any); ok {
				out = append(out, fm)
			}
		}
	}
	if m["resources"] != nil || m["subjects"] != nil || m["roles"] != nil || m["clusterRoles"] != nil {
		out = append(out, m)
	}
	return out
}

// kyvernoMatch converts match and exclude: the resource rules of the
// kinds matched, and the CEL of the rest.
func (r *Result) kyvernoMatch(src Source, field string, ru map[string]any, d doc, controllers []string) ([]admissionregistrationv1.NamedRuleWithOperations, string) {
	var rs ruleSet
	rs.ops = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	conv := func(blk string, f map[string]any, fi string, withRules bool) string {
		var parts []string
		res := obj(f, "resources")
		var kindParts []string
		for j, k := range strs(res["kinds"]) {
			group, version, kind, sub, err := parseKyvernoKind(k)
			if err != nil || sub != "" {
				if err == nil {
					err = fmt.Errorf("the subresource %q: a MutatingAdmissionPolicy of the object is written for the resource", sub)
				}
				r.refuse(src, fmt.Sprintf("%s.resources.kinds[%d]", fi, j), "%v", err)
				continue
			}
			gs := []string{group}
			if group == "*" {
				gs = groupsOf(kind)
				if len(gs) == 0 {
					r.refuse(src, fmt.Sprintf("%s.resources.kinds[%d]", fi, j), "%q is not a built-in kind: give its group (group/version/Kind)", k)
					continue
				}
			}
			if kind == "*" {
				if withRules {
					rs.add("*", "*", "*", admissionregistrationv1.AllScopes)
				}
				kindParts = append(kindParts, "true")
				continue
			}
			for _, g := range gs {
				resource, namespaced, guessed := resourceFor(g, kind)
				if guessed {
					r.note(src, fmt.Sprintf("%s.resources.kinds[%d]", fi, j), "%s is not a built-in kind: its resource is taken to be %q", kind, resource)
				}
				scope := admissionregistrationv1.ClusterScope
				if namespaced {
					scope = admissionregistrationv1.NamespacedScope
				}
				if guessed {
					scope = admissionregistrationv1.AllScopes
				}
				if withRules {
					rs.add(g, version, resource, scope)
				}
				kp := fmt.Sprintf("request.kind.group == %q && request.kind.kind == %q", g, kind)
				if version != "*" {
					kp += fmt.Sprintf(" && request.kind.version == %q", version)
				}
				kindParts = append(kindParts, "("+kp+")")
				if len(controllers) > 0 && g == "" && kind == "Pod" {
					// Kyverno's autogen rule: the same match for the controllers.
					for _, c := range kyvernoPodControllers {
						if !slices.Contains(controllers, c.kind) {
							continue
						}
						kindParts = append(kindParts, fmt.Sprintf("(request.kind.group == %q && request.kind.kind == %q)", c.group, c.kind))
					}
				}
			}
		}
		if len(kindParts) > 0 {
			parts = append(parts, "("+strings.Join(kindParts, " || ")+")")
		}
		names := strs(res["names"])
		if n := str(res, "name"); n != "" {
			names = append(names, n)
		}
		if len(names) > 0 {
			parts = append(parts, globsCEL(`object.metadata.?name.orValue("")`, names))
		}
		if ns := strs(res["namespaces"]); len(ns) > 0 {
			parts = append(parts, globsCEL(namespaceCEL, ns))
		}
		if ops := strs(res["operations"]); len(ops) > 0 {
			l, _ := literal(toAny(ops))
			parts = append(parts, "request.operation in "+l)
		}
		if ann := obj(res, "annotations"); ann != nil {
			keys := sortedKeys(ann)
			for _, k := range keys {
				v, _ := ann[k].(string)
				get := fmt.Sprintf("object.metadata.?annotations.orValue({})[?%s]", quote(k))
				parts = append(parts, fmt.Sprintf("%s.hasValue() && %s", get, globsCEL(get+".value()", []string{v})))
			}
		}
		if sel := obj(res, "selector"); sel != nil {
			c, err := selectorCEL(sel, "object.metadata.?labels")
			if err != nil {
				r.refuse(src, fi+".resources.selector", "%v", err)
			}
			parts = append(parts, c)
		}
		if sel := obj(res, "namespaceSelector"); sel != nil {
			c, err := selectorCEL(sel, "(namespaceObject != null ? namespaceObject.metadata.?labels : optional.none())")
			if err != nil {
				r.refuse(src, fi+".resources.namespaceSelector", "%v", err)
			}
			parts = append(parts, c)
		}
		if len(list(f, "roles")) > 0 || len(list(f, "clusterRoles")) > 0 {
			r.refuse(src, fi+".roles", "matching the user's Roles and ClusterRoles needs Kyverno's RBAC lookup: CEL sees the user's name and groups only")
		}
		for j, s := range list(f, "subjects") {
			sm, _ := s.(map[string]any)
			switch str(sm, "kind") {
			case "User":
				parts = append(parts, "request.userInfo.username == "+quote(str(sm, "name")))
			case "Group":
				parts = append(parts, quote(str(sm, "name"))+" in request.userInfo.groups")
			case "ServiceAccount":
				parts = append(parts, "request.userInfo.username == "+quote("system:serviceaccount:"+str(sm, "namespace")+":"+str(sm, "name")))
			default:
				r.refuse(src, fmt.Sprintf("%s.subjects[%d].kind", fi, j), "%q is not User, Group or ServiceAccount", str(sm, "kind"))
			}
		}
		return and(parts...)
	}
	match, exclude := obj(ru, "match"), obj(ru, "exclude")
	combine := func(blk string, m map[string]any, withRules bool) string {
		var anyP, allP []string
		for j, f := range list(m, "any") {
			anyP = append(anyP, conv(blk, f.(map[string]any), fmt.Sprintf("%s.%s.any[%d]", field, blk, j), withRules))
		}
		for j, f := range list(m, "all") {
			allP = append(allP, conv(blk, f.(map[string]any), fmt.Sprintf("%s.%s.all[%d]", field, blk, j), withRules))
		}
		if m["resources"] != nil {
			allP = append(allP, conv(blk, m, field+"."+blk, withRules))
		}
		a := ""
		if len(anyP) > 0 {
			for i := range anyP {
				anyP[i] = "(" + anyP[i] + ")"
			}
			a = strings.Join(anyP, " || ")
		}
		return and(a, and(allP...))
	}
	pred := combine("match", match, true)
	if exclude != nil {
		if ex := combine("exclude", exclude, false); ex != "true" {
			pred = and(pred, "!("+ex+")")
		} else if len(filters(exclude)) > 0 {
			pred = "false"
		}
	}
	if d.src.Kind == "Policy" {
		pred = and(pred, "request.namespace == "+quote(namespaceOf(d.obj)))
	}
	return rs.rules, pred
}

// parseKyvernoKind splits Kyverno's kind forms: Kind, Version/Kind,
// Group/Version/Kind, Kind/subresource.
func parseKyvernoKind(k string) (group, version, kind, sub string, err error) {
	p := strings.Split(k, "/")
	switch len(p) {
	case 1:
		return "*", "*", p[0], "", nil
	case 2:
		if p[1] != "" && p[1][0] >= 'a' && p[1][0] <= 'z' {
			return "*", "*", p[0], p[1], nil
		}
		if p[0] == "v1" {
			return "", "v1", p[1], "", nil
		}
		return "*", p[0], p[1], "", nil
	case 3:
		return p[0], p[1], p[2], "", nil
	}
	return "", "", "", "", fmt.Errorf("the kind %q is not Kind, Version/Kind or Group/Version/Kind", k)
}

// kyvernoPreconditions is the CEL of a rule's preconditions (any/all, or a
// list, which is all).
func kyvernoPreconditions(p any, v vars) (string, error) {
	if p == nil {
		return "true", nil
	}
	var anyC, allC []any
	switch x := p.(type) {
	case []any:
		allC = x
	case map[string]any:
		anyC, allC = list(x, "any"), list(x, "all")
	}
	conv := func(cs []any, blk string) ([]string, error) {
		var out []string
		for i, c := range cs {
			cm, _ := c.(map[string]any)
			s, err := kyvernoCondition(cm, v)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %v", blk, i, err)
			}
			out = append(out, s)
		}
		return out, nil
	}
	a, err := conv(anyC, "any")
	if err != nil {
		return "", err
	}
	l, err := conv(allC, "all")
	if err != nil {
		return "", err
	}
	anyExpr := ""
	if len(a) > 0 {
		for i := range a {
			a[i] = "(" + a[i] + ")"
		}
		anyExpr = strings.Join(a, " || ")
	}
	return and(anyExpr, and(l...)), nil
}

func kyvernoCondition(c map[string]any, v vars) (string, error) {
	operand := func(x any, what string) (string, error) {
		if s, ok := x.(string); ok {
			e, err := v.template(s)
			if err != nil {
				return "", fmt.Errorf("%s: %v", what, err)
			}
			// A path that is missing is JMESPath's "Unknown key": Kyverno's
			// rule ends in an error (its webhook then denies, with Fail);
			// .value() errors there too. `a || b` with neither set is
			// null, which Kyverno compares as "".
			if strings.HasSuffix(e, ").value()") && strings.Contains(e, ".or(") {
				e = strings.TrimSuffix(e, ".value()") + `.orValue("")`
			}
			return e, nil
		}
		l, err := literal(x)
		if err != nil {
			return "", fmt.Errorf("%s: %v", what, err)
		}
		return l, nil
	}
	key, err := operand(c["key"], "key")
	if err != nil {
		return "", err
	}
	value := c["value"]
	if value == nil {
		value = ""
	}
	val, err := operand(value, "value")
	if err != nil {
		return "", err
	}
	vs, isStr := value.(string)
	glob := isStr && strings.ContainsAny(vs, "*?") && !strings.Contains(vs, "{{")
	op := str(c, "operator")
	if strings.HasSuffix(op, "In") {
		key = "dyn(" + key + ")"
	}
	switch op {
	case "Equals", "Equal":
		if glob {
			return fmt.Sprintf("string(%s).matches(%s)", key, quote(globRegexp(vs))), nil
		}
		return fmt.Sprintf("%s == %s", key, val), nil
	case "NotEquals", "NotEqual":
		if glob {
			return fmt.Sprintf("!string(%s).matches(%s)", key, quote(globRegexp(vs))), nil
		}
		return fmt.Sprintf("%s != %s", key, val), nil
	case "AnyIn", "In":
		return fmt.Sprintf("(type(%s) == list ? %s.exists(k, k in %s) : %s in %s)", key, key, val, key, val), nil
	case "AllIn":
		return fmt.Sprintf("(type(%s) == list ? %s.all(k, k in %s) : %s in %s)", key, key, val, key, val), nil
	case "AnyNotIn", "NotIn":
		return fmt.Sprintf("(type(%s) == list ? %s.exists(k, !(k in %s)) : !(%s in %s))", key, key, val, key, val), nil
	case "AllNotIn":
		return fmt.Sprintf("(type(%s) == list ? %s.all(k, !(k in %s)) : !(%s in %s))", key, key, val, key, val), nil
	case "GreaterThan", "GreaterThanOrEquals", "LessThan", "LessThanOrEquals":
		sym := map[string]string{"GreaterThan": ">", "GreaterThanOrEquals": ">=", "LessThan": "<", "LessThanOrEquals": "<="}[op]
		return fmt.Sprintf("double(%s) %s double(%s)", key, sym, val), nil
	}
	return "", fmt.Errorf("the operator %q is not converted", op)
}

// kyvernoMutate is the CEL list(JSONPatch) of a mutate block at a target.
func (r *Result) kyvernoMutate(src Source, field string, mut map[string]any, t target, v vars) (string, error) {
	var parts []string
	if p := obj(mut, "patchStrategicMerge"); p != nil {
		o := &overlay{v: v}
		body, err := o.patchAt(p, t, field+".patchStrategicMerge")
		if err != nil {
			return "", err
		}
		parts = append(parts, body)
	}
	if s, ok := mut["patchesJson6902"].(string); ok {
		ops, err := kyvernoJSONPatch(s, v, t)
		if err != nil {
			return "", fmt.Errorf("patchesJson6902: %v", err)
		}
		parts = append(parts, ops)
	}
	for i, fe := range list(mut, "foreach") {
		fm, _ := fe.(map[string]any)
		ops, err := r.kyvernoForeach(fm, t, v, fmt.Sprintf("%s.foreach[%d]", field, i))
		if err != nil {
			return "", err
		}
		parts = append(parts, ops)
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("no patchStrategicMerge, patchesJson6902 or foreach")
	}
	return strings.Join(parts, " + "), nil
}

// patchAt applies an overlay at a target: a Pod controller's template
// takes the Pod patch's metadata and spec.
func (o *overlay) patchAt(p map[string]any, t target, field string) (string, error) {
	return o.merge(p, t.root, t.ptr, field)
}

// kyvernoForeach converts a foreach over a list of the request's object:
// each element's patch (its variables the element's) on the object as it
// is before the foreach.
func (r *Result) kyvernoForeach(fm map[string]any, t target, v vars, field string) (string, error) {
	l := str(fm, "list")
	if fm["context"] != nil || fm["foreach"] != nil || fm["patchesJson6902"] != nil && fm["patchStrategicMerge"] != nil {
		return "", fmt.Errorf("%s: a foreach with its own context, a nested foreach or both patches is not converted", field)
	}
	lv := vars{object: v.object, configs: v.configs}
	lx, err := lv.path(strings.TrimSpace(l))
	if err != nil {
		return "", fmt.Errorf("%s.list: %v", field, err)
	}
	pre, err := kyvernoPreconditions(fm["preconditions"], vars{object: v.object, configs: v.configs, element: "el", index: "ix"})
	if err != nil {
		return "", fmt.Errorf("%s.preconditions: %v", field, err)
	}
	ev := vars{object: v.object, configs: v.configs, element: "el", index: "ix"}
	var body string
	switch {
	case obj(fm, "patchStrategicMerge") != nil:
		o := &overlay{v: ev, depth: 50}
		body, err = o.merge(obj(fm, "patchStrategicMerge"), t.root, t.ptr, field+".patchStrategicMerge")
	case fm["patchesJson6902"] != nil:
		s, _ := fm["patchesJson6902"].(string)
		body, err = kyvernoJSONPatch(s, ev, t)
	default:
		return "", fmt.Errorf("%s: neither patchStrategicMerge nor patchesJson6902", field)
	}
	if err != nil {
		return "", err
	}
	if pre != "true" {
		body = fmt.Sprintf("(%s ? %s : [])", pre, body)
	}
	return fmt.Sprintf("%s.orValue([]).transformList(ix, el, %s).flatten()", lx, body), nil
}

// kyvernoJSONPatch converts patchesJson6902 with Kyverno's semantics: add
// creates missing parents, remove of a missing path does nothing.
func kyvernoJSONPatch(s string, v vars, t target) (string, error) {
	var ops []map[string]any
	if err := yaml.Unmarshal([]byte(s), &ops); err != nil {
		return "", err
	}
	var parts []string
	for i, op := range ops {
		path, err := jsonPointerSegs(str(op, "path"), v)
		if err != nil {
			return "", fmt.Errorf("[%d].path: %v", i, err)
		}
		o := &overlay{v: v}
		switch str(op, "op") {
		case "add", "replace":
			val, err := o.value(op["value"], fmt.Sprintf("[%d].value", i))
			if err != nil {
				return "", err
			}
			w := walker{segs: path, leaf: jsonAdd{value: val, op: str(op, "op")}}
			parts = append(parts, w.expr(t.root, t.ptr))
		case "remove":
			w := walker{segs: path, leaf: jsonRemove{}, tests: map[int]test{}}
			for k := range path {
				w.tests[k] = mustExist
			}
			parts = append(parts, w.expr(t.root, t.ptr))
		default:
			return "", fmt.Errorf("[%d].op: %q is not converted (add, replace, remove)", i, str(op, "op"))
		}
	}
	if len(parts) == 0 {
		return "[]", nil
	}
	return strings.Join(parts, " + "), nil
}

type jsonAdd struct{ value, op string }

func (a jsonAdd) exists(cur, ptr string) string { return patchOp(a.op, ptr, a.value) }
func (a jsonAdd) absent() (string, bool)        { return a.value, true }

type jsonRemove struct{}

func (jsonRemove) exists(cur, ptr string) string { return patchOp("remove", ptr, "") }
func (jsonRemove) absent() (string, bool)        { return "", false }

func jsonPointerSegs(p string, v vars) ([]seg, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer", p)
	}
	var out []seg
	for _, s := range strings.Split(p[1:], "/") {
		if m := varRE.FindStringSubmatch(s); m != nil && m[0] == s && strings.TrimSpace(m[1]) == "elementIndex" && v.index != "" {
			out = append(out, seg{list: true, indexExpr: v.index})
			continue
		}
		if strings.Contains(s, "{{") {
			return nil, fmt.Errorf("%q: a path with variables other than {{elementIndex}} is not converted", p)
		}
		s = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
		if s == "-" {
			out = append(out, seg{list: true, index: -1})
			continue
		}
		if n, err := strconv.Atoi(s); err == nil && n < 0 && s == strconv.Itoa(n) {
			// Kyverno's patcher takes negative indexes from the end.
			out = append(out, seg{list: true, fromEnd: -n})
			continue
		}
		if n, err := fmt.Sscanf(s, "%d", new(int)); err == nil && n == 1 && strings.Trim(s, "0123456789") == "" {
			var idx int
			fmt.Sscanf(s, "%d", &idx)
			out = append(out, seg{list: true, index: idx})
			continue
		}
		out = append(out, seg{field: s})
	}
	return out, nil
}

var _ = metav1.Now
