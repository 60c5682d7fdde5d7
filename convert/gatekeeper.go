package convert

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
)

// gkMutator is one Gatekeeper mutator converted: its order key, the CEL of
// its list(JSONPatch), the paths it writes and reads (for the
// convergence analysis).
type gkMutator struct {
	src         Source
	group, kind string
	name        string
	expr        string
	writes      [][]seg
	reads       [][]seg
	rules       []admissionregistrationv1.NamedRuleWithOperations
	matchKinds  []string
}

// gatekeeperPolicyName is the one MutatingAdmissionPolicy of a set of
// Gatekeeper mutators: their order is Gatekeeper's, which one policy's
// mutation list keeps (the order of several policies is kube-apiserver's
// informer's, undefined).
const gatekeeperPolicyName = "gatekeeper-mutators"

func (r *Result) gatekeeper(docs []doc) {
	var ms []gkMutator
	for _, d := range docs {
		m, ok := r.gkMutator(d)
		if ok {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return
	}
	// Gatekeeper's order: group, kind, namespace, name (pkg/mutation ordered_ids.go).
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.group != b.group {
			return a.group < b.group
		}
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		return a.name < b.name
	})
	// Gatekeeper runs every mutator until the object stops changing (at
	// most len+1 iterations); MAP runs the list once (and once more only
	// when another admission plugin changed the object). A mutator that
	// reads what a later one writes needs more passes: the list is
	// repeated as many times as the longest such chain.
	passes := 1 + backwardChain(ms)
	const maxPasses = 3
	if passes > maxPasses {
		for _, m := range ms {
			r.note(m.src, "", "Gatekeeper iterates its mutators to convergence; the chain of mutators reading what later ones write is longer than the %d passes converted", maxPasses)
		}
		passes = maxPasses
	} else if passes > 1 {
		r.note(ms[0].src, "", "mutators read what later mutators write: the mutation list is repeated %d times, as Gatekeeper's convergence loop needs", passes)
	}
	var rs ruleSet
	rs.ops = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	var muts []admissionregistrationv1.Mutation
	var from []Source
	for p := 0; p < passes; p++ {
		for _, m := range ms {
			muts = append(muts, jsonPatchMutation(m.expr))
		}
	}
	for _, m := range ms {
		from = append(from, m.src)
		for _, rule := range m.rules {
			for _, res := range rule.Resources {
				rs.add(rule.APIGroups[0], rule.APIVersions[0], res, *rule.Scope)
			}
		}
	}
	pol, b := newPolicy(gatekeeperPolicyName, rs.rules, nil, muts, admissionregistrationv1.Ignore, admissionregistrationv1.IfNeededReinvocationPolicy)
	exact := admissionregistrationv1.Exact
	pol.Spec.MatchConstraints.MatchPolicy = &exact
	r.Converted = append(r.Converted, Converted{From: from, Policy: pol, Binding: b})
}

// backwardChain is the longest chain of mutators each reading a path an
// earlier-ordered… later-ordered one writes.
func backwardChain(ms []gkMutator) int {
	memo := make([]int, len(ms))
	for i := range memo {
		memo[i] = -1
	}
	var depth func(i int) int
	depth = func(i int) int {
		if memo[i] >= 0 {
			return memo[i]
		}
		memo[i] = 0
		best := 0
		for j := i + 1; j < len(ms); j++ {
			if dependsOn(ms[i], ms[j]) {
				if d := 1 + depth(j); d > best {
					best = d
				}
			}
		}
		memo[i] = best
		return best
	}
	best := 0
	for i := range ms {
		if d := depth(i); d > best {
			best = d
		}
	}
	return best
}

func dependsOn(a, b gkMutator) bool {
	for _, r := range a.reads {
		for _, w := range b.writes {
			if overlaps(r, w) {
				return true
			}
		}
	}
	return false
}

// overlaps tells that one path is a prefix of the other (wildcards match).
func overlaps(a, b []seg) bool {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		if x.list != y.list || x.field != y.field || x.key != y.key {
			return false
		}
		if x.val != y.val && x.val != "*" && y.val != "*" {
			return false
		}
	}
	return true
}

func (r *Result) gkMutator(d doc) (gkMutator, bool) {
	src := d.src
	spec := obj(d.obj, "spec")
	m := gkMutator{src: src, group: "mutations.gatekeeper.sh", kind: src.Kind, name: src.Name}
	refused := len(r.Refused)
	loc := str(spec, "location")
	segs, err := parseLocation(loc)
	if err != nil {
		r.refuse(src, "spec.location", "%v", err)
		return m, false
	}
	params := obj(spec, "parameters")
	tests := map[int]test{}
	for i, t := range list(params, "pathTests") {
		tm, _ := t.(map[string]any)
		sub, err := parseLocation(str(tm, "subPath"))
		field := fmt.Sprintf("spec.parameters.pathTests[%d]", i)
		if err != nil {
			r.refuse(src, field+".subPath", "%v", err)
			continue
		}
		if len(sub) > len(segs) || !overlaps(sub, segs) {
			r.refuse(src, field+".subPath", "%q is not a prefix of the location", str(tm, "subPath"))
			continue
		}
		switch str(tm, "condition") {
		case "MustExist":
			tests[len(sub)-1] = mustExist
		case "MustNotExist":
			tests[len(sub)-1] = mustNotExist
		default:
			r.refuse(src, field+".condition", "%q is neither MustExist nor MustNotExist", str(tm, "condition"))
		}
		m.reads = append(m.reads, sub)
	}
	var l leaf
	switch src.Kind {
	case "Assign":
		l = r.gkAssign(src, params, segs)
	case "AssignMetadata":
		if len(segs) != 3 || segs[0].field != "metadata" || (segs[1].field != "labels" && segs[1].field != "annotations") || segs[2].list {
			r.refuse(src, "spec.location", "AssignMetadata writes metadata.labels.<key> or metadata.annotations.<key>, not %q", loc)
			return m, false
		}
		v := r.gkAssign(src, params, segs)
		if v == nil {
			return m, false
		}
		// AssignMetadata never overwrites.
		tests[len(segs)-1] = mustNotExist
		l = v
	case "ModifySet":
		if len(segs) == 0 || segs[len(segs)-1].list {
			r.refuse(src, "spec.location", "ModifySet's location ends at a list field, not an element")
			return m, false
		}
		vals := list(obj(params, "values"), "fromList")
		var lits []string
		for _, v := range vals {
			s, err := literal(v)
			if err != nil {
				r.refuse(src, "spec.parameters.values.fromList", "%v", err)
				return m, false
			}
			lits = append(lits, s)
		}
		op := str(params, "operation")
		if op == "" {
			op = "merge"
		}
		switch op {
		case "merge":
			l = setMerge(lits)
		case "prune":
			l = setPrune(lits)
		default:
			r.refuse(src, "spec.parameters.operation", "%q is neither merge nor prune", op)
			return m, false
		}
	case "AssignImage":
		l = r.gkAssignImage(src, params)
	default:
		r.refuse(src, "kind", "not a Gatekeeper mutator kind this converter knows")
		return m, false
	}
	rules, cond := r.gkMatch(src, spec)
	if len(r.Refused) > refused || l == nil {
		return m, false
	}
	w := walker{segs: segs, leaf: l, tests: tests}
	m.expr = w.expr("object", `""`)
	if cond != "true" {
		m.expr = cond + " ? (" + m.expr + ") : []"
	}
	m.writes = [][]seg{segs}
	m.reads = append(m.reads, segs)
	m.rules = rules
	return m, true
}

func (r *Result) gkAssign(src Source, params map[string]any, segs []seg) leaf {
	a := obj(params, "assign")
	if _, ok := a["externalData"]; ok {
		r.refuse(src, "spec.parameters.assign.externalData", "external data providers are called by Gatekeeper: MutatingAdmissionPolicy has no outbound calls")
		return nil
	}
	if fm := obj(a, "fromMetadata"); fm != nil {
		switch str(fm, "field") {
		case "namespace":
			return setValue{value: "request.namespace"}
		case "name":
			return setValue{value: "object.metadata.name"}
		default:
			r.refuse(src, "spec.parameters.assign.fromMetadata.field", "%q is neither namespace nor name", str(fm, "field"))
			return nil
		}
	}
	v, ok := a["value"]
	if !ok {
		r.refuse(src, "spec.parameters.assign", "neither value, fromMetadata nor externalData")
		return nil
	}
	lit, err := literal(v)
	if err != nil {
		r.refuse(src, "spec.parameters.assign.value", "%v", err)
		return nil
	}
	if len(segs) > 0 && segs[len(segs)-1].list {
		last := segs[len(segs)-1]
		if last.glob() {
			r.refuse(src, "spec.location", "an Assign to every element of a list ([%s:*]) at the location's end", last.key)
			return nil
		}
		vm, _ := v.(map[string]any)
		if vm == nil || fmt.Sprint(vm[last.key]) != last.val {
			r.refuse(src, "spec.parameters.assign.value", "the value of a list element must have %s: %q", last.key, last.val)
			return nil
		}
	}
	return setValue{value: lit}
}

// setValue is Assign's leaf: the value replaces what is there, or is added.
type setValue struct{ value string }

func (s setValue) exists(cur, ptr string) string { return patchOp("replace", ptr, s.value) }
func (s setValue) absent() (string, bool)        { return s.value, true }

// setMerge is ModifySet's merge: the values missing from the list are
// appended in order; a missing list is created with them.
type setMerge []string

func (s setMerge) exists(cur, ptr string) string {
	var parts []string
	seen := map[string]bool{}
	for i, v := range s {
		if seen[v] {
			continue
		}
		seen[v] = true
		prev := "[]"
		if i > 0 {
			prev = "[" + strings.Join(s[:i], ", ") + "]"
		}
		// a value appended once even when it occurs twice in the values
		parts = append(parts, fmt.Sprintf("(%s in %s || %s in %s ? [] : %s)", v, cur, v, prev, patchOp("add", ptr+` + "/-"`, v)))
	}
	if len(parts) == 0 {
		return "[]"
	}
	return strings.Join(parts, " + ")
}

func (s setMerge) absent() (string, bool) {
	var uniq []string
	seen := map[string]bool{}
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			uniq = append(uniq, v)
		}
	}
	return "[" + strings.Join(uniq, ", ") + "]", true
}

// setPrune is ModifySet's prune: the elements equal to a value are
// removed, from the last so that the indexes hold.
type setPrune []string

func (s setPrune) exists(cur, ptr string) string {
	vals := "[" + strings.Join(s, ", ") + "]"
	return fmt.Sprintf("lists.range(size(%s)).map(k, size(%s) - 1 - k).filter(k, %s[k] in %s).map(k, JSONPatch{op: \"remove\", path: %s + \"/\" + string(k)})",
		cur, cur, cur, vals, ptr)
}
func (s setPrune) absent() (string, bool) { return "", false }

// gkAssignImage is AssignImage: the image's domain, path and tag as
// Gatekeeper splits them (assignimage/imageparser.go), the parameters
// replacing those set.
func (r *Result) gkAssignImage(src Source, params map[string]any) leaf {
	d, p, t := str(params, "assignDomain"), str(params, "assignPath"), str(params, "assignTag")
	if d == "" && p == "" && t == "" {
		r.refuse(src, "spec.parameters", "none of assignDomain, assignPath, assignTag")
		return nil
	}
	return assignImage{domain: d, path: p, tag: t}
}

type assignImage struct{ domain, path, tag string }

func (a assignImage) exists(cur, ptr string) string {
	// i: the image; s: the first '/'; d: the domain; m: the rest; t: the tag.
	dom := `(s >= 0 && (i.substring(0, s).matches("[.:]") || i.substring(0, s) == "localhost") ? i.substring(0, s) : "")`
	rest := `(d == "" ? i : i.substring(size(d) + 1))`
	tag := `(m.matches("[:@]") ? m.substring(size(m.split(":")[0].split("@")[0])) : "")`
	nd, np, nt := `d`, `m.substring(0, size(m) - size(t))`, `t`
	if a.domain != "" {
		nd = quote(a.domain)
	}
	if a.path != "" {
		np = quote(a.path)
	}
	if a.tag != "" {
		nt = quote(a.tag)
	}
	img := bind("nd", nd, fmt.Sprintf(`(nd == "" ? "" : nd + "/") + %s + %s`, np, nt))
	body := bind("n", img, "n == i ? [] : "+patchOp("replace", ptr, "n"))
	return bind("i", "string("+cur+")", bind("s", `i.indexOf("/")`, bind("d", dom, bind("m", rest, bind("t", tag, body)))))
}

func (a assignImage) absent() (string, bool) {
	d := a.domain
	if d != "" {
		d += "/"
	}
	return quote(d + a.path + a.tag), true
}

// gkMatch converts applyTo and match: the resource rules, and the CEL of
// what rules cannot say (namespaces, names, selectors).
func (r *Result) gkMatch(src Source, spec map[string]any) ([]admissionregistrationv1.NamedRuleWithOperations, string) {
	match := obj(spec, "match")
	scope := admissionregistrationv1.AllScopes
	switch str(match, "scope") {
	case "", "*":
	case "Namespaced":
		scope = admissionregistrationv1.NamespacedScope
	case "Cluster":
		scope = admissionregistrationv1.ClusterScope
	default:
		r.refuse(src, "spec.match.scope", "%q is not *, Namespaced or Cluster", str(match, "scope"))
	}
	if s := str(match, "source"); s == "Generated" {
		r.refuse(src, "spec.match.source", "Generated resources are Gatekeeper's expansion templates: kube-apiserver admits no such objects")
	}
	// match.kinds narrows applyTo.
	kindOK := func(group, kind string) bool {
		ks := list(match, "kinds")
		if len(ks) == 0 {
			return true
		}
		for _, k := range ks {
			km, _ := k.(map[string]any)
			groups, kinds := strs(km["apiGroups"]), strs(km["kinds"])
			gok := len(groups) == 0
			for _, g := range groups {
				gok = gok || g == "*" || g == group
			}
			kok := len(kinds) == 0
			for _, k := range kinds {
				kok = kok || k == "*" || k == kind
			}
			if gok && kok {
				return true
			}
		}
		return false
	}
	var rules []admissionregistrationv1.NamedRuleWithOperations
	var rs ruleSet
	rs.ops = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	applyTo := list(spec, "applyTo")
	if src.Kind == "AssignMetadata" {
		// AssignMetadata applies to every kind match names.
		for _, k := range list(match, "kinds") {
			km, _ := k.(map[string]any)
			for _, g := range strs(km["apiGroups"]) {
				for _, kind := range strs(km["kinds"]) {
					if kind == "*" {
						rs.add(g, "*", "*", scope)
						continue
					}
					gs := []string{g}
					if g == "*" {
						gs = groupsOf(kind)
					}
					for _, g := range gs {
						res, _, guessed := resourceFor(g, kind)
						if guessed {
							r.note(src, "spec.match.kinds", "%s is not a built-in kind: its resource is taken to be %q", kind, res)
						}
						rs.add(g, "*", res, scope)
					}
				}
			}
		}
		if len(list(match, "kinds")) == 0 {
			rs.add("*", "*", "*", scope)
		}
	} else if len(applyTo) == 0 {
		r.refuse(src, "spec.applyTo", "required")
	}
	for i, a := range applyTo {
		am, _ := a.(map[string]any)
		for _, g := range strs(am["groups"]) {
			for _, v := range strs(am["versions"]) {
				for _, k := range strs(am["kinds"]) {
					if !kindOK(g, k) {
						continue
					}
					res, _, guessed := resourceFor(g, k)
					if guessed {
						r.note(src, fmt.Sprintf("spec.applyTo[%d]", i), "%s is not a built-in kind: its resource is taken to be %q", k, res)
					}
					if segs, err := parseLocation(str(spec, "location")); err == nil {
						if f := undeclared(g, v, k, segs); f != "" {
							r.note(src, "spec.location", "%s is not a field of %s/%s %s: kube-apiserver drops it from Gatekeeper's patch, but decodes a MutatingAdmissionPolicy's patched object strictly, so the request fails", f, g, v, k)
						}
					}
					rs.add(g, v, res, scope)
				}
			}
		}
	}
	rules = rs.rules
	var conds []string
	if ns := strs(match["namespaces"]); len(ns) > 0 {
		conds = append(conds, globsCEL(namespaceCEL, ns))
	}
	if ns := strs(match["excludedNamespaces"]); len(ns) > 0 {
		conds = append(conds, "!"+globsCEL(namespaceCEL, ns))
	}
	if n := str(match, "name"); n != "" {
		conds = append(conds, globsCEL("object.metadata.name", []string{n}))
	}
	if sel := obj(match, "labelSelector"); sel != nil {
		c, err := selectorCEL(sel, "object.metadata.?labels")
		if err != nil {
			r.refuse(src, "spec.match.labelSelector", "%v", err)
		}
		conds = append(conds, c)
	}
	if sel := obj(match, "namespaceSelector"); sel != nil {
		c, err := selectorCEL(sel, "(namespaceObject != null ? namespaceObject.metadata.?labels : optional.none())")
		if err != nil {
			r.refuse(src, "spec.match.namespaceSelector", "%v", err)
		}
		conds = append(conds, c)
	}
	// The rules of every mutator are the policy's: each mutator keeps its own.
	var kinds []string
	for _, rule := range rules {
		for _, res := range rule.Resources {
			kinds = append(kinds, fmt.Sprintf("(request.resource.group == %s && request.resource.resource == %s%s)", quote(rule.APIGroups[0]), quote(res), versionCond(rule.APIVersions[0])))
		}
	}
	kindCond := "false"
	if len(kinds) > 0 {
		kindCond = "(" + strings.Join(kinds, " || ") + ")"
	}
	if len(rules) == 1 && rules[0].APIGroups[0] == "*" {
		kindCond = ""
	}
	return rules, and(append([]string{kindCond}, conds...)...)
}

func versionCond(v string) string {
	if v == "*" {
		return ""
	}
	return " && request.resource.version == " + quote(v)
}

// parseLocation parses a Gatekeeper location: fields separated by dots,
// quoted when they hold dots, and [key: value] list selectors (value * for
// every element).
func parseLocation(loc string) ([]seg, error) {
	if loc == "" {
		return nil, fmt.Errorf("empty location")
	}
	var out []seg
	i := 0
	readName := func() (string, error) {
		if i < len(loc) && (loc[i] == '"' || loc[i] == '\'') {
			q := loc[i]
			j := strings.IndexByte(loc[i+1:], q)
			if j < 0 {
				return "", fmt.Errorf("location %q: unterminated quote", loc)
			}
			s := loc[i+1 : i+1+j]
			i += j + 2
			return s, nil
		}
		j := i
		for j < len(loc) && loc[j] != '.' && loc[j] != '[' && loc[j] != ':' && loc[j] != ']' {
			j++
		}
		s := strings.TrimSpace(loc[i:j])
		i = j
		if s == "" {
			return "", fmt.Errorf("location %q: empty field at %d", loc, i)
		}
		return s, nil
	}
	for i < len(loc) {
		name, err := readName()
		if err != nil {
			return nil, err
		}
		out = append(out, seg{field: name})
		for i < len(loc) && loc[i] == '[' {
			i++
			key, err := readName()
			if err != nil {
				return nil, err
			}
			if i >= len(loc) || loc[i] != ':' {
				return nil, fmt.Errorf("location %q: list selector without ':'", loc)
			}
			i++
			for i < len(loc) && loc[i] == ' ' {
				i++
			}
			val, err := readName()
			if err != nil {
				return nil, err
			}
			if i >= len(loc) || loc[i] != ']' {
				return nil, fmt.Errorf("location %q: list selector without ']'", loc)
			}
			i++
			out = append(out, seg{list: true, key: key, val: val})
		}
		if i < len(loc) {
			if loc[i] != '.' {
				return nil, fmt.Errorf("location %q: unexpected %q at %d", loc, loc[i], i)
			}
			i++
			if i == len(loc) {
				return nil, fmt.Errorf("location %q: ends with '.'", loc)
			}
		}
	}
	return out, nil
}

var _ = strconv.Itoa

// undeclared is the first field of a location that the built-in kind's
// Go type (client-go's scheme) does not declare, "" when every field is
// declared or the kind is not built in. Gatekeeper writes such a field
// and kube-apiserver drops it from the webhook's patch; a
// MutatingAdmissionPolicy's patched object is decoded strictly and the
// request fails.
func undeclared(group, version, kind string, segs []seg) string {
	o, err := clientscheme.Scheme.New(schema.GroupVersionKind{Group: group, Version: version, Kind: kind})
	if err != nil {
		return ""
	}
	t := reflect.TypeOf(o)
	var path []string
	for _, s := range segs {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if s.list {
			if t.Kind() != reflect.Slice {
				return ""
			}
			t = t.Elem()
			continue
		}
		path = append(path, s.field)
		if t.Kind() != reflect.Struct {
			return ""
		}
		f, ok := jsonField(t, s.field)
		if !ok {
			return strings.Join(path, ".")
		}
		t = f
	}
	return ""
}

// jsonField is the type of the field of struct t that JSON names name,
// inlined structs included.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name {
			return f.Type, true
		}
		if tag == "" && f.Anonymous {
			if ft, ok := jsonField(f.Type, name); ok {
				return ft, true
			}
		}
	}
	return nil, false
}
