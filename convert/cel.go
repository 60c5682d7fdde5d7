package convert

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// A seg is one step of a path into an object: a field (or a map's key),
// a list element chosen by a key's value (Gatekeeper's [name:foo], a
// strategic merge key), every element of a list ([name:*]), or a list
// index (a JSON patch's /0).
type seg struct {
	field string
	// key and val select list elements: val "*" selects them all.
	key, val string
	list     bool
	index    int // for a numeric segment (list && key == ""); -1 is "-"
	// fromEnd N > 0 is Kyverno's negative index -N: the Nth element from
	// the end (its patcher's SupportNegativeIndices).
	fromEnd int
	// indexExpr is the CEL of an index known only at admission (Kyverno's
	// {{elementIndex}}).
	indexExpr string
}

func (s seg) glob() bool { return s.list && s.key != "" && s.val == "*" }

// A leaf writes at the end of a path: exists gives the patch operations
// when the path's value exists (cur is it as CEL, ptr its JSON pointer as
// a CEL string), absent the CEL value to create when it does not (ok
// false: create nothing).
type leaf interface {
	exists(cur, ptr string) string
	absent() (value string, ok bool)
}

// A test is Gatekeeper's pathTest on a prefix of the path: mustExist
// creates nothing missing up to it, mustNotExist writes nothing when it
// exists.
type test int

const (
	noTest test = iota
	mustExist
	mustNotExist
)

// walker writes the CEL expression of a list(JSONPatch) that follows a
// path, creating what is missing as Gatekeeper and Kyverno do (MAP's
// JSONPatch fails on a missing parent).
type walker struct {
	segs  []seg
	leaf  leaf
	tests map[int]test // by the index of the path's last segment
}

func (w *walker) expr(root, ptr string) string {
	return w.at(0, root, ptr)
}

// at is the patch from segment i on, cur the CEL expression of the
// existing value that segment i steps into.
func (w *walker) at(i int, cur, ptr string) string {
	s := w.segs[i]
	last := i == len(w.segs)-1
	t := w.tests[i]
	present := func(child, childPtr string) string {
		if t == mustNotExist {
			return "[]"
		}
		if last {
			return w.leaf.exists(child, childPtr)
		}
		return w.at(i+1, child, childPtr)
	}
	create := func(childPtr string, appendTo bool) string {
		if t == mustExist {
			return "[]"
		}
		v, ok := w.build(i + 1)
		if !ok {
			return "[]"
		}
		if s.list && s.key != "" {
			v, ok = w.element(i, v)
			if !ok {
				return "[]"
			}
		}
		_ = appendTo
		return patchOp("add", childPtr, v)
	}
	switch {
	case !s.list:
		child, has := access(cur, s.field)
		cp := ptr + " + " + quote("/"+escapePointer(s.field))
		if ptr == `""` {
			cp = quote("/" + escapePointer(s.field))
		}
		return fmt.Sprintf("(%s ? %s : %s)", has, present(child, cp), create(cp, false))
	case s.key == "" && s.indexExpr != "":
		child := fmt.Sprintf("%s[%s]", cur, s.indexExpr)
		cp := ptr + ` + "/" + string(` + s.indexExpr + `)`
		return fmt.Sprintf("(size(%s) > %s ? %s : %s)", cur, s.indexExpr, present(child, cp), create(cp, false))
	case s.key == "" && s.fromEnd > 0:
		ix := fmt.Sprintf("(size(%s) - %d)", cur, s.fromEnd)
		child := fmt.Sprintf("%s[%s]", cur, ix)
		cp := ptr + ` + "/" + string(` + ix + `)`
		return fmt.Sprintf("(size(%s) >= %d ? %s : %s)", cur, s.fromEnd, present(child, cp), create(ptr+` + "/-"`, true))
	case s.key == "":
		if s.index < 0 {
			return create(ptr+` + "/-"`, true)
		}
		child := fmt.Sprintf("%s[%d]", cur, s.index)
		cp := ptr + " + " + quote("/"+strconv.Itoa(s.index))
		return fmt.Sprintf("(size(%s) > %d ? %s : %s)", cur, s.index, present(child, cp), create(cp, false))
	case s.val == "*":
		j, e := fmt.Sprintf("i%d", i), fmt.Sprintf("e%d", i)
		cp := ptr + ` + "/" + string(` + j + `)`
		return fmt.Sprintf("%s.transformList(%s, %s, %s).flatten()", cur, j, e, present(e, cp))
	default:
		ix := fmt.Sprintf("x%d", i)
		j := fmt.Sprintf("j%d", i)
		cond := fmt.Sprintf("%s[%s].?%s.orValue(\"\") == %s", cur, j, celField(s.key), quote(s.val))
		child := fmt.Sprintf("%s[%s[0]]", cur, ix)
		cp := ptr + ` + "/" + string(` + ix + `[0])`
		return bind(ix, fmt.Sprintf("lists.range(size(%s)).filter(%s, %s)", cur, j, cond),
			fmt.Sprintf("size(%s) > 0 ? %s : %s", ix, present(child, cp), create(ptr+` + "/-"`, true)))
	}
}

// build is the CEL value of what segments i… create, ending in the leaf's.
func (w *walker) build(i int) (string, bool) {
	if i == len(w.segs) {
		return w.leaf.absent()
	}
	if w.tests[i] == mustExist {
		return "", false
	}
	s := w.segs[i]
	v, ok := w.build(i + 1)
	if !ok {
		return "", false
	}
	switch {
	case !s.list:
		return "{" + quote(s.field) + ": " + v + "}", true
	case s.glob():
		return "", false
	case s.key == "":
		return "[" + v + "]", true
	default:
		e, ok := w.element(i, v)
		if !ok {
			return "", false
		}
		return "[" + e + "]", true
	}
}

// element is the new list element of a key selector: {key: val} and the
// rest of the path's fields.
func (w *walker) element(i int, rest string) (string, bool) {
	s := w.segs[i]
	kv := quote(s.key) + ": " + quote(s.val)
	if i == len(w.segs)-1 {
		// The leaf's value is the element: it must carry the key.
		return rest, true
	}
	// rest is {"field": …} of the next segment.
	if !strings.HasPrefix(rest, "{") {
		return "", false
	}
	return "{" + kv + ", " + rest[1:], true
}

func patchOp(op, ptr, value string) string {
	if value == "" {
		return fmt.Sprintf("[JSONPatch{op: %q, path: %s}]", op, ptr)
	}
	return fmt.Sprintf("[JSONPatch{op: %q, path: %s, value: %s}]", op, ptr, value)
}

var identRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

var celReserved = map[string]bool{"in": true, "as": true, "break": true, "const": true, "continue": true, "else": true,
	"for": true, "function": true, "if": true, "import": true, "let": true, "loop": true, "package": true,
	"namespace": true, "return": true, "var": true, "void": true, "while": true, "true": true, "false": true, "null": true}

// celField is a field name as CEL selects it on an object (kube's escaping
// of reserved words).
func celField(f string) string {
	if celReserved[f] {
		return "__" + f + "__"
	}
	return f
}

// access gives the CEL of cur's field f and the test that it is set:
// names that are identifiers are selected (objects and maps alike), others
// indexed (only maps have them: labels, annotations).
func access(cur, f string) (child, has string) {
	if identRE.MatchString(f) {
		return cur + "." + celField(f), cur + ".?" + celField(f) + ".hasValue()"
	}
	return cur + "[" + quote(f) + "]", quote(f) + " in " + cur
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// literal is the CEL literal of a JSON-shaped value.
func literal(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(x), nil
	case string:
		return quote(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int:
		return strconv.Itoa(x), nil
	case float64:
		if x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10), nil
		}
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return x.String(), nil
		}
		f, err := x.Float64()
		if err != nil {
			return "", err
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := literal(e)
			if err != nil {
				return "", err
			}
			parts[i] = dynUnless(allStrings(x), s)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case map[string]any:
		keys := sortedKeys(x)
		parts := make([]string, len(keys))
		for i, k := range keys {
			s, err := literal(x[k])
			if err != nil {
				return "", err
			}
			parts[i] = quote(k) + ": " + dynUnless(allStrings(x), s)
		}
		return "{" + strings.Join(parts, ", ") + "}", nil
	}
	return "", fmt.Errorf("a value of type %T", v)
}

// globRegexp is the RE2 of a Kyverno or Gatekeeper wildcard pattern
// (* any run, ? one character).
func globRegexp(p string) string {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range p {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return b.String()
}

// bind is the CEL that evaluates body with name bound to value (the
// environment of stored expressions has no cel.bind).
func bind(name, value, body string) string {
	return fmt.Sprintf("[%s].map(%s, %s)[0]", value, name, body)
}

// dynUnless wraps a literal of a map or list in dyn() unless every value
// of it is a plain string: CEL's literals must otherwise have one type.
func dynUnless(homogeneous bool, s string) string {
	if homogeneous {
		return s
	}
	return "dyn(" + s + ")"
}

// allStrings tells that every value of a map or list is a string without
// Kyverno variables.
func allStrings(v any) bool {
	check := func(e any) bool {
		s, ok := e.(string)
		return ok && !strings.Contains(s, "{{")
	}
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if !check(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !check(e) {
				return false
			}
		}
	}
	return true
}

// sortedKeys are the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
