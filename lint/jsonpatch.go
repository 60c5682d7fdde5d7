package lint

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"github.com/mutatis-dev/mutatis/compiler"
)

// checkJSONPatches checks the JSONPatch{…} operations of e whose path is a
// literal (or starts with one) against kind k (checks "jsonpatch-*"):
// paths that cannot exist in the schema, keys with "/" or "~" that are
// not escaped, adds into a list at an index that real lists may not
// reach, and adds under an often omitted field no guard tests. All are
// warnings: a path the schema does not declare fails once the patched
// object is decoded, but the other problems depend on the object.
func checkJSONPatches(e *compiler.Expression, k *kindSchema, guards map[string]bool, report func(id int64, check, msg string)) {
	if e.AST() == nil || e.Kind != compiler.KindJSONPatch {
		return
	}
	native := e.AST().NativeRep()
	local := guardsOf(native.Expr(), guards)
	// Paths an earlier operation of the expression adds create their
	// parents for the later ones.
	added := map[string]bool{}
	ast.PreOrderVisit(native.Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		if x.Kind() != ast.StructKind || x.AsStruct().TypeName() != "JSONPatch" {
			return
		}
		var op string
		var pathExpr ast.Expr
		for _, f := range x.AsStruct().Fields() {
			sf := f.AsStructField()
			switch sf.Name() {
			case "op":
				if s, ok := literalString(sf.Value()); ok {
					op = s
				}
			case "path":
				pathExpr = sf.Value()
			}
		}
		if pathExpr == nil {
			return
		}
		parts := concatenation(pathExpr)
		for i, p := range parts {
			// A literal appended as a key ("/metadata/labels/" + "a/b"); one
			// that starts with "/" continues the path ("…" + "/image").
			if s, ok := literalString(p); ok && i > 0 && !strings.HasPrefix(s, "/") && strings.ContainsAny(s, "/~") {
				report(p.ID(), "jsonpatch-escape", fmt.Sprintf("the key %q is appended to a JSON pointer without jsonpatch.escapeKey: its %s is read as a path separator; write jsonpatch.escapeKey(%q)", s, escapedChars(s), s))
				return // the path below is not what its author meant
			}
		}
		prefix, complete := literalPrefix(parts)
		if prefix == "" {
			return
		}
		segs := strings.Split(prefix, "/")
		if segs[0] != "" {
			return // not a pointer; the patch library reports it
		}
		segs = segs[1:]
		if !complete {
			// The last literal segment may be cut by what follows.
			segs = segs[:len(segs)-1]
		}
		checkPointer(k, x.ID(), op, prefix, segs, complete, local, added, report)
		if complete && op == "add" {
			added[prefix] = true
		}
	}))
}

// checkPointer walks the segments of a literal JSON pointer through the schema.
func checkPointer(k *kindSchema, id int64, op, pointer string, segs []string, complete bool, guards, added map[string]bool, report func(int64, string, string)) {
	tr := k.root
	var at []string // the object place, for guards
	var inMap bool
	for i, raw := range segs {
		seg := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		a, ok := k.s.Resolve(tr)
		if !ok || (a.Scalar != nil && *a.Scalar == smdschema.Untyped) {
			return
		}
		last := complete && i == len(segs)-1
		switch {
		case a.List != nil && a.Scalar == nil:
			if seg == "-" {
				if !last {
					report(id, "jsonpatch-path", fmt.Sprintf("path %q goes below \"-\", which only names the end of a list as the last segment", pointer))
					return
				}
			} else if n, err := strconv.Atoi(seg); err != nil || n < 0 {
				report(id, "jsonpatch-path", fmt.Sprintf("path %q: segment %q is not an index into the list /%s of %s", pointer, raw, strings.Join(segs[:i], "/"), k.gvkLabel()))
				return
			} else if last && op == "add" && n > 0 {
				report(id, "jsonpatch-index", fmt.Sprintf("path %q adds at index %d: objects whose list has fewer than %d items fail with %q; append with \"/%s/-\"", pointer, n, n,
					"add operation does not apply: doc is missing path", strings.Join(segs[:i], "/")))
			}
			tr = a.List.ElementType
			at = append(at, "[]")
			inMap = false
		case a.Map != nil && a.Scalar == nil && len(a.Map.Fields) > 0:
			f, ok := a.Map.FindField(seg)
			if !ok {
				report(id, "jsonpatch-path", fmt.Sprintf("path %q cannot exist in the schema of %s: %q is not a field of /%s", pointer, k.gvkLabel(), seg, strings.Join(segs[:i], "/")))
				return
			}
			// A failed test leaves the object unchanged: no failure.
			if tr.NamedType != nil && omitted(*tr.NamedType, seg) && !last && op != "test" {
				p := place{root: compiler.ObjectVar, segs: append(append([]string{}, at...), seg)}
				parent := "/" + strings.Join(segs[:i+1], "/")
				if !guards[p.key()] && !added[parent] {
					report(id, "jsonpatch-missing-parent", fmt.Sprintf("path %q goes below %s, which objects often lack: there the %s fails with %q; add %s first (an operation {op: \"add\", path: %q, value: …} when !has(%s))",
						pointer, parent, op, "doc is missing path", parent, parent, renderPlace(p)))
				}
			}
			tr = f.Type
			at = append(at, seg)
			inMap = false
		case a.Map != nil && a.Scalar == nil && !isEmptyRef(a.Map.ElementType):
			tr = a.Map.ElementType
			at = append(at, seg)
			inMap = true
		default:
			if inMap {
				key := strings.Join(segs[i-1:], "/")
				report(id, "jsonpatch-escape", fmt.Sprintf("path %q goes below the map value at /%s: the key %q holds a \"/\" that must be written ~1 (jsonpatch.escapeKey(%q))",
					pointer, strings.Join(segs[:i], "/"), strings.ReplaceAll(key, "~1", "/"), strings.ReplaceAll(key, "~1", "/")))
				return
			}
			report(id, "jsonpatch-path", fmt.Sprintf("path %q cannot exist in the schema of %s: /%s is a %s", pointer, k.gvkLabel(), strings.Join(segs[:i], "/"), describe(a)))
			return
		}
	}
}

func renderPlace(p place) string {
	return p.root + "." + strings.ReplaceAll(strings.Join(p.segs, "."), ".[]", "[…]")
}

func escapedChars(s string) string {
	switch {
	case strings.Contains(s, "/") && strings.Contains(s, "~"):
		return `"/" and "~"`
	case strings.Contains(s, "/"):
		return `"/"`
	}
	return `"~"`
}

// concatenation flattens a + b + c into its operands.
func concatenation(x ast.Expr) []ast.Expr {
	if x.Kind() == ast.CallKind && x.AsCall().FunctionName() == operators.Add && len(x.AsCall().Args()) == 2 {
		return append(concatenation(x.AsCall().Args()[0]), concatenation(x.AsCall().Args()[1])...)
	}
	return []ast.Expr{x}
}

// literalPrefix joins the leading literal strings of parts; complete
// tells that every part is literal.
func literalPrefix(parts []ast.Expr) (string, bool) {
	var b strings.Builder
	for _, p := range parts {
		s, ok := literalString(p)
		if !ok {
			return b.String(), false
		}
		b.WriteString(s)
	}
	return b.String(), true
}

func literalString(x ast.Expr) (string, bool) {
	if x.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := x.AsLiteral().(types.String)
	return string(s), ok
}
