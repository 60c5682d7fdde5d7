package convert

import (
	"fmt"
	"strings"
)

// overlay converts a Kyverno patchStrategicMerge into the CEL of a
// list(JSONPatch): keys merged into what exists, missing parents created,
// lists of maps merged by their associative key (kyaml's, which Kyverno's
// strategic merge uses when no schema says otherwise: mountPath,
// devicePath, ip, type, topologyKey, name, containerPort), other lists
// replaced, and Kyverno's anchors: (key) conditional, +(key) added only
// when missing, =(key) checked only when present, <(key) global.
type overlay struct {
	v     vars
	depth int
}

var associativeKeys = []string{"mountPath", "devicePath", "ip", "type", "topologyKey", "name", "containerPort"}

type anchor int

const (
	plain anchor = iota
	conditional
	addIfMissing
	equality
	global
)

func parseAnchor(k string) (anchor, string, error) {
	switch {
	case strings.HasPrefix(k, "+(") && strings.HasSuffix(k, ")"):
		return addIfMissing, k[2 : len(k)-1], nil
	case strings.HasPrefix(k, "=(") && strings.HasSuffix(k, ")"):
		return equality, k[2 : len(k)-1], nil
	case strings.HasPrefix(k, "<(") && strings.HasSuffix(k, ")"):
		return global, k[2 : len(k)-1], nil
	case strings.HasPrefix(k, "X(") || strings.HasPrefix(k, "^("):
		return plain, "", fmt.Errorf("the anchor %s is a validate anchor", k[:2])
	case strings.HasPrefix(k, "(") && strings.HasSuffix(k, ")"):
		return conditional, k[1 : len(k)-1], nil
	}
	return plain, k, nil
}

// conds are the anchors' conditions a map's patch depends on, as
// Kyverno's preprocessing (pkg/engine/mutate/patch/strategicPreprocessing.go)
// checks them: a conditional anchor that fails skips the nearest enclosing
// list element, or the whole rule's patch when it is in no list element; a
// global anchor that fails skips the rule's patch unless another element
// of its list passes.
type conds struct{ local, global []string }

func (c *conds) lift(has string, in conds) {
	if len(in.local) > 0 {
		c.local = append(c.local, has+" && "+and(in.local...))
	}
	if len(in.global) > 0 {
		c.global = append(c.global, has+" && "+and(in.global...))
	}
}

// merge is the patch of overlay map m onto the existing value cur (a CEL
// expression) at pointer ptr, as one CEL list(JSONPatch): empty when one
// of the anchors' conditions does not hold (Kyverno then applies an empty
// patch: strategicMergePatch's ConditionError).
func (o *overlay) merge(m map[string]any, cur, ptr, field string) (string, error) {
	ops, c, err := o.mergeMap(m, cur, ptr, field)
	if err != nil {
		return "", err
	}
	all := append(append([]string{}, c.global...), c.local...)
	if len(all) == 0 {
		return ops, nil
	}
	return fmt.Sprintf("(%s ? %s : [])", and(all...), ops), nil
}

// mergeMap is the operations of overlay map m onto cur and the conditions
// they depend on.
func (o *overlay) mergeMap(m map[string]any, cur, ptr, field string) (string, conds, error) {
	keys := sortedKeys(m)
	var c conds
	var ops []string
	for _, k := range keys {
		a, name, err := parseAnchor(k)
		if err != nil {
			return "", c, fmt.Errorf("%s.%s: %v", field, k, err)
		}
		f := field + "." + k
		child, has := access(cur, name)
		cp := ptr + " + " + quote("/"+escapePointer(name))
		val := m[k]
		switch a {
		case conditional, global:
			t, err := o.condition(val, child, f)
			if err != nil {
				return "", c, err
			}
			if a == global {
				c.global = append(c.global, has+" && "+t)
			} else {
				c.local = append(c.local, has+" && "+t)
			}
		case equality:
			t, err := o.condition(val, child, f)
			if err != nil {
				return "", c, err
			}
			c.local = append(c.local, "!"+has+" || "+t)
		case addIfMissing:
			// What +(key) adds is its value without anchors (Kyverno
			// strips the nested +(…) of a value it adds); a conditional
			// inside cannot hold on a missing key: the patch is skipped.
			clean, ok, err := strip(val)
			if err != nil {
				return "", c, fmt.Errorf("%s: %v", f, err)
			}
			if !ok {
				c.local = append(c.local, has)
				continue
			}
			if opt, ok := o.nullable(clean); ok {
				ops = append(ops, fmt.Sprintf("(%s || !%s.hasValue() ? [] : %s)", has, opt, patchOp("add", cp, opt+".value()")))
				continue
			}
			v, err := o.value(clean, f)
			if err != nil {
				return "", c, err
			}
			ops = append(ops, fmt.Sprintf("(%s ? [] : %s)", has, patchOp("add", cp, v)))
		case plain:
			op, in, err := o.mergeKey(val, child, has, cp, f)
			if err != nil {
				return "", c, err
			}
			c.lift(has, in)
			ops = append(ops, op)
		}
	}
	body := "[]"
	if len(ops) > 0 {
		body = strings.Join(ops, " + ")
	}
	return body, c, nil
}

// mergeKey is the patch of one plain key and the conditions in it.
func (o *overlay) mergeKey(val any, child, has, cp, f string) (string, conds, error) {
	switch x := val.(type) {
	case nil:
		return fmt.Sprintf("(%s ? %s : [])", has, patchOp("remove", cp, "")), conds{}, nil
	case map[string]any:
		inner, c, err := o.mergeMap(x, child, cp, f)
		if err != nil {
			return "", c, err
		}
		add, err := o.create(x, f)
		if err != nil {
			return "", c, err
		}
		if add == "" {
			return fmt.Sprintf("(%s ? %s : [])", has, inner), c, nil
		}
		return fmt.Sprintf("(%s ? %s : %s)", has, inner, patchOp("add", cp, add)), c, nil
	case []any:
		if hasAnchors(x) {
			return o.anchoredList(x, child, has, cp, f)
		}
		s, err := o.plainList(x, child, has, cp, f)
		return s, conds{}, err
	default:
		if opt, ok := o.nullable(x); ok {
			// null (`a || b` with neither set) removes the key, as a
			// strategic merge patch's null does.
			return fmt.Sprintf("(%s.hasValue() ? %s : (%s ? %s : []))", opt, patchOp("add", cp, opt+".value()"), has, patchOp("remove", cp, "")), conds{}, nil
		}
		v, err := o.value(x, f)
		if err != nil {
			return "", conds{}, err
		}
		return patchOp("add", cp, v), conds{}, nil
	}
}

// nullable is the CEL optional of a value that is one Kyverno variable
// `a || b`: JMESPath gives null when neither is set, and the key is then
// not written.
func (o *overlay) nullable(v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		return "", false
	}
	e, err := o.v.template(s)
	if err != nil || !strings.HasSuffix(e, ").value()") || !strings.Contains(e, ".or(") || strings.HasPrefix(e, `"`) {
		return "", false
	}
	return strings.TrimSuffix(e, ".value()"), true
}

// plainList is the patch of a list without anchors: merged by its
// associative key, or replaced. kustomize's strategic merge (Kyverno's
// patchstrategicmerge.Filter, ListIncreaseDirection Prepend) puts the
// patch's elements first, in the patch's order (merged into the existing
// element of the same key, or new), then the existing elements the patch
// does not name, in their order: the elements are merged in place first,
// then moved (or the new ones inserted) to the front one by one.
func (o *overlay) plainList(x []any, child, has, cp, f string) (string, error) {
	key := associativeKey(x)
	if key == "" {
		v, err := o.value(x, f)
		if err != nil {
			return "", err
		}
		return patchOp("add", cp, v), nil
	}
	var merges, moves, adds, keys []string
	for i, e := range x {
		em := e.(map[string]any)
		ef := fmt.Sprintf("%s[%d]", f, i)
		kv, err := o.value(em[key], ef+"."+key)
		if err != nil {
			return "", err
		}
		d := o.depth
		o.depth++
		ix, j := fmt.Sprintf("x%d", d), fmt.Sprintf("j%d", d)
		inner, err := o.merge(em, child+"["+ix+"[0]]", cp+` + "/" + string(`+ix+`[0])`, ef)
		o.depth--
		if err != nil {
			return "", err
		}
		add, err := o.create(em, ef)
		if err != nil {
			return "", err
		}
		find := fmt.Sprintf("lists.range(size(%s)).filter(%s, %s[%s].?%s == optional.of(%s))", child, j, child, j, celField(key), kv)
		if inner != "[]" {
			merges = append(merges, bind(ix, find, fmt.Sprintf("size(%s) > 0 ? %s : []", ix, inner)))
		}
		// Before this element's move, the list holds the i elements moved
		// or inserted before it, then the existing elements not moved, in
		// their order.
		moved := "true"
		if len(keys) > 0 {
			moved = fmt.Sprintf("![%s].exists(k, %s[%s].?%s == optional.of(k))", strings.Join(keys, ", "), child, j, celField(key))
		}
		from := fmt.Sprintf(`%s + "/" + string(%d + size(lists.range(%s[0]).filter(%s, %s)))`, cp, i, ix, j, moved)
		to := fmt.Sprintf(`%s + "/%d"`, cp, i)
		insert := "[]"
		if add != "" {
			insert = patchOp("add", to, add)
			adds = append(adds, add)
		}
		moves = append(moves, bind(ix, find, fmt.Sprintf("size(%s) > 0 ? [JSONPatch{op: \"move\", from: %s, path: %s}] : %s", ix, from, to, insert)))
		keys = append(keys, dynUnless(allStrings(x), kv))
	}
	present := strings.Join(append(merges, moves...), " + ")
	absent := "[]"
	if len(adds) > 0 {
		absent = patchOp("add", cp, "["+strings.Join(adds, ", ")+"]")
	}
	return fmt.Sprintf("(%s ? %s : %s)", has, present, absent), nil
}

// anchoredList is the patch of a list of maps some of whose elements carry
// anchors, as Kyverno v1.19's processListOfMaps and handlePatternName do:
// an element with anchors is never added; it is checked against every
// existing element, and where its conditions hold (and the existing
// element has a name) a copy of it, its anchors and empty maps removed and
// its name the existing element's, is merged into that element. Its
// top-level +(key)s are decided once, on the first existing element (the
// copy is shared: the first element that has key drops it, one that lacks
// it makes it a plain key for every element after). An element with a
// global anchor merges nothing: its conditions hold the rule's whole patch
// unless one element passes them. The elements without anchors merge as a
// plain list.
func (o *overlay) anchoredList(x []any, child, has, cp, f string) (string, conds, error) {
	var c conds
	var plainEls []any
	var parts []string
	anchored := 0
	for i, e := range x {
		em, ok := e.(map[string]any)
		if !ok {
			return "", c, fmt.Errorf("%s[%d]: a list mixing anchored maps and scalars is not converted", f, i)
		}
		if !hasAnchors([]any{em}) {
			plainEls = append(plainEls, em)
			continue
		}
		anchored++
		if anchored > 1 {
			// deleteAnchorsInList deletes by the indexes the list had
			// before its first deletion: a second anchored element
			// deletes another element (or panics).
			return "", c, fmt.Errorf("%s[%d]: a second list element with anchors: Kyverno's preprocessing (deleteAnchorsInList) then deletes the wrong element", f, i)
		}
		ef := fmt.Sprintf("%s[%d]", f, i)
		d := o.depth
		o.depth++
		j, el := fmt.Sprintf("i%d", d), fmt.Sprintf("e%d", d)
		// The shared copy: top-level +(key) decided on the first element.
		em2 := map[string]any{}
		var firstOps []string
		for _, k := range sortedKeys(em) {
			a, name, err := parseAnchor(k)
			if err != nil {
				o.depth--
				return "", c, fmt.Errorf("%s.%s: %v", ef, k, err)
			}
			if name == "name" && (a == plain || a == addIfMissing) {
				// handlePatternName sets the copy's name to the element's.
				continue
			}
			if a != addIfMissing {
				em2[k] = em[k]
				continue
			}
			clean, ok, err := strip(em[k])
			if err != nil {
				o.depth--
				return "", c, fmt.Errorf("%s.%s: %v", ef, k, err)
			}
			if !ok {
				o.depth--
				return "", c, fmt.Errorf("%s.%s: a condition inside an add anchor of a list element is not converted", ef, k)
			}
			if pm, ok := prune(clean).(map[string]any); ok && len(pm) == 0 {
				// deleteAnchors drops the empty map the key renamed to.
				continue
			}
			_, firstHas := access(child+"[0]", name)
			ech, ehas := access(el, name)
			op, _, err := o.mergeKey(prune(clean), ech, ehas, cp+` + "/" + string(`+j+`) + `+quote("/"+escapePointer(name)), ef+"."+k)
			if err != nil {
				o.depth--
				return "", c, err
			}
			firstOps = append(firstOps, fmt.Sprintf("(%s ? [] : %s)", firstHas, op))
		}
		ops, ec, err := o.mergeMap(prune(em2).(map[string]any), el, cp+` + "/" + string(`+j+`)`, ef)
		o.depth--
		if err != nil {
			return "", c, err
		}
		local := and(ec.local...)
		if len(ec.global) > 0 {
			g := and(ec.global...)
			c.global = append(c.global, fmt.Sprintf("%s && (%s.exists(%s, %s && %s) || %s.all(%s, %s))", has, child, el, g, local, child, el, g))
			continue
		}
		all := append([]string{}, firstOps...)
		if ops != "[]" {
			all = append(all, ops)
		}
		if len(all) == 0 {
			continue
		}
		guard := and(el+`.?name.orValue("") != ""`, local)
		parts = append(parts, fmt.Sprintf("%s.transformList(%s, %s, %s ? %s : []).flatten()", child, j, el, guard, strings.Join(all, " + ")))
	}
	if len(plainEls) > 0 {
		if associativeKey(plainEls) == "" {
			return "", c, fmt.Errorf("%s: a list with anchored elements and elements without a name is not converted", f)
		}
		p, err := o.plainList(plainEls, child, has, cp, f)
		if err != nil {
			return "", c, err
		}
		parts = append([]string{p}, parts...)
	}
	if len(parts) == 0 {
		return "[]", c, nil
	}
	return fmt.Sprintf("(%s ? %s : [])", has, strings.Join(parts, " + ")), c, nil
}

// prune removes what Kyverno's deleteAnchors removes from an element's
// copy: maps left empty (emptyDir: {}), and so maps of only those.
func prune(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, e := range m {
		if a, _, _ := parseAnchor(k); a != plain {
			out[k] = e
			continue
		}
		if em, ok := e.(map[string]any); ok {
			p := prune(em).(map[string]any)
			if len(p) == 0 {
				continue
			}
			out[k] = p
			continue
		}
		out[k] = e
	}
	return out
}

// create is the value a missing map is created with: the overlay without
// its anchors, or "" when a conditional anchor in it cannot hold (its key
// is missing).
func (o *overlay) create(m map[string]any, f string) (string, error) {
	clean, ok, err := strip(m)
	if err != nil {
		return "", fmt.Errorf("%s: %v", f, err)
	}
	if !ok {
		return "", nil
	}
	return o.value(clean, f)
}

// strip removes anchors: +(k) becomes k, =(k) goes; ok is false when a
// conditional or global anchor is in it.
func strip(v any) (any, bool, error) {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			a, name, err := parseAnchor(k)
			if err != nil {
				return nil, false, err
			}
			switch a {
			case conditional, global:
				return nil, false, nil
			case equality:
				continue
			}
			c, ok, err := strip(e)
			if err != nil || !ok {
				return nil, ok, err
			}
			out[name] = c
		}
		return out, true, nil
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			c, ok, err := strip(e)
			if err != nil {
				return nil, false, err
			}
			if ok {
				out = append(out, c)
			}
		}
		return out, true, nil
	}
	return v, true, nil
}

func hasAnchors(l []any) bool {
	for _, e := range l {
		if anchored(e) {
			return true
		}
	}
	return false
}

// anchored tells that a value has, at any depth, a conditional, global or
// add anchor (Kyverno's hasAnchors with hasAnchor: equality anchors do not
// count).
func anchored(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if a, _, _ := parseAnchor(k); a != plain && a != equality {
				return true
			}
			if anchored(e) {
				return true
			}
		}
	case []any:
		return hasAnchors(x)
	}
	return false
}

// associativeKey is the key every element of a list of maps has, in
// kyaml's order, "" for another list.
func associativeKey(l []any) string {
	if len(l) == 0 {
		return ""
	}
	for _, k := range associativeKeys {
		all := true
		for _, e := range l {
			m, ok := e.(map[string]any)
			if !ok {
				return ""
			}
			if _, ok := m[k]; !ok {
				all = false
				break
			}
		}
		if all {
			return k
		}
	}
	return ""
}

// value is the CEL value of an overlay value, Kyverno's variables
// substituted.
func (o *overlay) value(v any, f string) (string, error) {
	switch x := v.(type) {
	case string:
		s, err := o.v.template(x)
		if err != nil {
			return "", fmt.Errorf("%s: %v", f, err)
		}
		return s, nil
	case map[string]any:
		keys := sortedKeys(x)
		parts := make([]string, len(keys))
		for i, k := range keys {
			if opt, ok := o.nullable(x[k]); ok {
				// A null value: the key is not created.
				parts[i] = "?" + quote(k) + ": " + opt
				continue
			}
			s, err := o.value(x[k], f+"."+k)
			if err != nil {
				return "", err
			}
			parts[i] = quote(k) + ": " + dynUnless(allStrings(x), s)
		}
		return "{" + strings.Join(parts, ", ") + "}", nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := o.value(e, fmt.Sprintf("%s[%d]", f, i))
			if err != nil {
				return "", err
			}
			parts[i] = dynUnless(allStrings(x), s)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	}
	s, err := literal(v)
	if err != nil {
		return "", fmt.Errorf("%s: %v", f, err)
	}
	return s, nil
}

// condition is the CEL test of an anchor's pattern on the value cur: a
// wildcard string, a scalar, or a map of patterns.
func (o *overlay) condition(p any, cur, f string) (string, error) {
	switch x := p.(type) {
	case map[string]any:
		var parts []string
		keys := sortedKeys(x)
		for _, k := range keys {
			a, name, err := parseAnchor(k)
			if err != nil || (a != plain && a != conditional && a != equality) {
				return "", fmt.Errorf("%s.%s: an anchor inside a condition", f, k)
			}
			child, has := access(cur, name)
			c, err := o.condition(x[k], child, f+"."+k)
			if err != nil {
				return "", err
			}
			if a == equality {
				parts = append(parts, "(!"+has+" || "+c+")")
			} else {
				parts = append(parts, has+" && "+c)
			}
		}
		return and(parts...), nil
	case string:
		if strings.Contains(x, "{{") && !strings.ContainsAny(varRE.ReplaceAllString(x, ""), "<>!|&*?") {
			e, err := o.v.template(x)
			if err != nil {
				return "", fmt.Errorf("%s: %v", f, err)
			}
			return fmt.Sprintf("string(%s) == string(%s)", cur, e), nil
		}
		if strings.ContainsAny(x, "<>!|&") || strings.Contains(x, "{{") {
			return "", fmt.Errorf("%s: the pattern %q (operators, variables) is not converted", f, x)
		}
		if strings.ContainsAny(x, "*?") {
			return fmt.Sprintf("string(%s).matches(%s)", cur, quote(globRegexp(x))), nil
		}
		return fmt.Sprintf("string(%s) == %s", cur, quote(x)), nil
	case bool, float64, int64, nil:
		l, _ := literal(x)
		return cur + " == " + l, nil
	}
	return "", fmt.Errorf("%s: a %T pattern is not converted", f, p)
}
