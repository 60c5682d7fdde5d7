package convert

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// vars is how Kyverno's variables become CEL in one place of a rule: the
// root request.object stands for (a Pod's template in an autogen'd
// mutation), the foreach element, the configMap contexts.
type vars struct {
	object  string // CEL of request.object's spec and metadata
	element string // CEL of the foreach element, "" outside foreach
	index   string // CEL of the foreach index
	configs map[string]bool
}

var varRE = regexp.MustCompile(`\{\{-?\s*(.*?)\s*-?\}\}`)

// template is the CEL of a string with Kyverno variables: a string
// expression, or the variable's own value when it is the whole string.
func (v vars) template(s string) (string, error) {
	locs := varRE.FindAllStringSubmatchIndex(s, -1)
	if len(locs) == 0 {
		return quote(s), nil
	}
	if len(locs) == 1 && locs[0][0] == 0 && locs[0][1] == len(s) {
		return v.jmes(s[locs[0][2]:locs[0][3]])
	}
	var parts []string
	last := 0
	for _, l := range locs {
		if l[0] > last {
			parts = append(parts, quote(s[last:l[0]]))
		}
		e, err := v.jmes(s[l[2]:l[3]])
		if err != nil {
			return "", err
		}
		parts = append(parts, "string("+e+")")
		last = l[1]
	}
	if last < len(s) {
		parts = append(parts, quote(s[last:]))
	}
	return strings.Join(parts, " + "), nil
}

var jmesIdent = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_]*|"[^"]*"|\[[0-9]+\])`)

// jmes is the CEL of the JMESPath expressions Kyverno's mutate policies
// use: a path into the request, the element or a configMap, and
// `path || 'default'`. Anything else (functions, filters, pipes) has no
// translation here.
func (v vars) jmes(e string) (string, error) {
	e = strings.TrimSpace(e)
	if a, b, ok := strings.Cut(e, "||"); ok {
		x, err := v.path(strings.TrimSpace(a))
		if err != nil {
			return "", err
		}
		d := strings.TrimSpace(b)
		if y, err := v.path(d); err == nil {
			// path || path: the first that is set.
			return x + ".or(" + y + ").value()", nil
		}
		var lit string
		switch {
		case len(d) >= 2 && (d[0] == '\'' || d[0] == '`') && d[len(d)-1] == d[0]:
			lit = quote(strings.Trim(d[1:len(d)-1], `"`))
		default:
			if _, err := strconv.Atoi(d); err != nil {
				return "", fmt.Errorf("JMESPath %q: the default %q is not a literal", e, d)
			}
			lit = d
		}
		return x + ".orValue(" + lit + ")", nil
	}
	x, err := v.path(e)
	if err != nil {
		return "", err
	}
	return x + ".value()", nil
}

// path is the CEL optional of a JMESPath path.
func (v vars) path(e string) (string, error) {
	var steps []string
	// A trailing [] flattens a list of scalars or maps: the list itself.
	rest := strings.TrimSuffix(e, "[]")
	for rest != "" {
		m := jmesIdent.FindString(rest)
		if m == "" {
			return "", fmt.Errorf("JMESPath %q: only paths (a.b.\"c\"[0]) and `|| default` are converted", e)
		}
		steps = append(steps, m)
		rest = rest[len(m):]
		if strings.HasPrefix(rest, ".") {
			rest = rest[1:]
			if rest == "" {
				return "", fmt.Errorf("JMESPath %q: ends with '.'", e)
			}
		} else if rest != "" && !strings.HasPrefix(rest, "[") {
			return "", fmt.Errorf("JMESPath %q: only paths (a.b.\"c\"[0]) and `|| default` are converted", e)
		}
	}
	var root string
	var i int
	switch {
	case len(steps) >= 2 && steps[0] == "request" && steps[1] == "object":
		root, i = "optional.of(object)", 2
		if len(steps) > 2 && (steps[2] == "spec" || steps[2] == "metadata") && v.object != "object" {
			root = "optional.of(" + v.object + ")"
		}
	case len(steps) >= 2 && steps[0] == "request" && steps[1] == "oldObject":
		root, i = "optional.ofNonZeroValue(oldObject)", 2
	case len(steps) == 2 && steps[0] == "request" && (steps[1] == "operation" || steps[1] == "namespace" || steps[1] == "name"):
		return "optional.of(request." + steps[1] + ")", nil
	case len(steps) >= 2 && steps[0] == "request" && (steps[1] == "userInfo" || steps[1] == "kind"):
		root, i = "optional.of(request."+steps[1]+")", 2
	case steps[0] == "element" && v.element != "":
		root, i = "optional.of("+v.element+")", 1
	case steps[0] == "elementIndex" && v.index != "" && len(steps) == 1:
		return "optional.of(" + v.index + ")", nil
	case v.configs[steps[0]] && len(steps) == 3 && steps[1] == "data":
		k := strings.Trim(steps[2], `"`)
		return "params.?data[?" + quote(k) + "]", nil
	default:
		return "", fmt.Errorf("JMESPath %q: the variable %s has no CEL equivalent here", e, steps[0])
	}
	for _, s := range steps[i:] {
		switch {
		case strings.HasPrefix(s, "["):
			root += "[?" + s[1:len(s)-1] + "]"
		case strings.HasPrefix(s, `"`):
			root += "[?" + s + "]"
		default:
			root += ".?" + celField(s)
		}
	}
	return root, nil
}
