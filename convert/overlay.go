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

// merge is the patch of overlay map m onto the existing value cur (a CEL
// expression) at pointer ptr: the conditions its anchors set and the
// operations, as one CEL list(JSONPatch).
func (o *overlay) merge(m map[string]any, cur, ptr, field string) (string, error) {
	keys := sortedKeys(m)
	var conds, ops []string
	for _, k := range keys {
		a, name, err := parseAnchor(k)
		if err != nil {
			return "", fmt.Errorf("%s.%s: %v", field, k, err)
		}
		f := field + "." + k
		child, has := access(cur, name)
		cp := ptr + " + " + quote("/"+escapePointer(name))
		val := m[k]
		switch a {
		case conditional, global:
			c, err := o.condition(val, child, f)
			if err != nil {
				return "", err
			}
			conds = append(conds, has+" && "+c)
		case equality:
			c, err := o.condition(val, child, f)
			if err != nil {
				return "", err
			}
			conds = append(conds, "!"+has+" || "+c)
		case addIfMissing:
			// What +(key) adds is its value without anchors (Kyverno
			// strips the nested +(…) of a value it adds); a conditional
			// inside cannot hold on a missing key: nothing is added.
			clean, ok, err := strip(val)
			if err != nil {
				return "", fmt.Errorf("%s: %v", f, err)
			}
			if !ok {
				continue
			}
			v, err := o.value(clean, f)
			if err != nil {
				return "", err
			}
			ops = append(ops, fmt.Sprintf("(%s ? [] : %s)", has, patchOp("add", cp, v)))
		case plain:
			op, err := o.mergeKey(val, child, has, cp, f)
			if err != nil {
				return "", err
			}
			ops = append(ops, op)
		}
	}
	body := "[]"
	if len(ops) > 0 {
		body = strings.Join(ops, " + ")
	}
	if len(conds) == 0 {
		return body, nil
	}
	return fmt.Sprintf("(%s ? %s : [])", and(conds...), body), nil
}

// mergeKey is the patch of one plain key.
func (o *overlay) mergeKey(val any, child, has, cp, f string) (string, error) {
	switch x := val.(type) {
	case nil:
		return fmt.Sprintf("(%s ? %s : [])", has, patchOp("remove", cp, "")), nil
	case map[string]any:
		inner, err := o.merge(x, child, cp, f)
		if err != nil {
			return "", err
		}
		add, err := o.create(x, f)
		if err != nil {
			return "", err
		}
		if add == "" {
			return fmt.Sprintf("(%s ? %s : [])", has, inner), nil
		}
		return fmt.Sprintf("(%s ? %s : %s)", has, inner, patchOp("add", cp, add)), nil
	case []any:
		key := associativeKey(x)
		if key == "" {
			if hasAnchors(x) {
				return o.eachElement(x, child, has, cp, f)
			}
			v, err := o.value(x, f)
			if err != nil {
				return "", err
			}
			return patchOp("add", cp, v), nil
		}
		var parts []string
		var adds []string
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
			appendOp := "[]"
			if add != "" {
				appendOp = patchOp("add", cp+` + "/-"`, add)
				adds = append(adds, add)
			}
			parts = append(parts, bind(ix, fmt.Sprintf("lists.range(size(%s)).filter(%s, %s[%s].?%s == optional.of(%s))", child, j, child, j, celField(key), kv),
				fmt.Sprintf("size(%s) > 0 ? %s : %s", ix, inner, appendOp)))
		}
		present := strings.Join(parts, " + ")
		absent := "[]"
		if len(adds) > 0 {
			absent = patchOp("add", cp, "["+strings.Join(adds, ", ")+"]")
		}
		return fmt.Sprintf("(%s ? %s : %s)", has, present, absent), nil
	default:
		v, err := o.value(x, f)
		if err != nil {
			return "", err
		}
		return patchOp("add", cp, v), nil
	}
}

// eachElement merges overlay elements with conditional anchors into every
// existing element whose anchors hold.
func (o *overlay) eachElement(x []any, child, has, cp, f string) (string, error) {
	var parts []string
	for i, e := range x {
		em, ok := e.(map[string]any)
		if !ok {
			return "", fmt.Errorf("%s[%d]: a list mixing anchors and scalars", f, i)
		}
		d := o.depth
		o.depth++
		j, el := fmt.Sprintf("i%d", d), fmt.Sprintf("e%d", d)
		inner, err := o.merge(em, el, cp+` + "/" + string(`+j+`)`, fmt.Sprintf("%s[%d]", f, i))
		o.depth--
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s.transformList(%s, %s, %s).flatten()", child, j, el, inner))
	}
	return fmt.Sprintf("(%s ? %s : [])", has, strings.Join(parts, " + ")), nil
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
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		for k := range m {
			if a, _, _ := parseAnchor(k); a != plain {
				return true
			}
		}
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
