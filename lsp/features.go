package lsp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
	yaml "go.yaml.in/yaml/v3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/policytest"
)

// requestFields are the fields of the request variable (k8s.io/api
// admission/v1 AdmissionRequest, as kube-apiserver declares it for CEL).
var requestFields = map[string][]string{
	"":                {"kind", "resource", "subResource", "requestKind", "requestResource", "requestSubResource", "name", "namespace", "operation", "userInfo", "dryRun", "options"},
	"kind":            {"group", "version", "kind"},
	"requestKind":     {"group", "version", "kind"},
	"resource":        {"group", "version", "resource"},
	"requestResource": {"group", "version", "resource"},
	"userInfo":        {"username", "uid", "groups", "extra"},
}

// topLevel are the variables of a policy's expressions and what they are.
var topLevel = []struct{ name, detail string }{
	{"object", "the object of the request (null for DELETE)"},
	{"oldObject", "the existing object (null for CREATE)"},
	{"request", "the admission request's attributes"},
	{"params", "the parameter resource of the binding (paramKind)"},
	{"namespaceObject", "the Namespace of a namespaced object"},
	{"variables", "the policy's variables, by name"},
	{"authorizer", "checks the request's user's permissions: authorizer.group(g).resource(r).namespace(ns).check(verb).allowed()"},
	{"authorizer.requestResource", "the authorizer for the request's resource"},
}

// functions are the CEL and Kubernetes library functions and macros a
// policy's expressions can call (kube-apiserver's environment for
// 1.37), with their signatures.
var functions = []struct{ name, sig string }{
	{"has", "has(x.f) -> bool: tests whether field f is set (macro)"},
	{"all", "list.all(x, p) -> bool (macro)"},
	{"exists", "list.exists(x, p) -> bool (macro)"},
	{"exists_one", "list.exists_one(x, p) -> bool (macro)"},
	{"map", "list.map(x, f) / list.map(x, p, f) -> list (macro)"},
	{"filter", "list.filter(x, p) -> list (macro)"},
	{"size", "size(x) -> int"},
	{"matches", "string.matches(re) -> bool"},
	{"startsWith", "string.startsWith(s) -> bool"},
	{"endsWith", "string.endsWith(s) -> bool"},
	{"contains", "string.contains(s) -> bool"},
	{"split", "string.split(sep) -> list(string)"},
	{"join", "list(string).join(sep) -> string"},
	{"lowerAscii", "string.lowerAscii() -> string"},
	{"upperAscii", "string.upperAscii() -> string"},
	{"replace", "string.replace(old, new) -> string"},
	{"trim", "string.trim() -> string"},
	{"substring", "string.substring(start, end) -> string"},
	{"indexOf", "string.indexOf(s) -> int"},
	{"format", "string.format(list) -> string"},
	{"orValue", "optional.orValue(v) -> T"},
	{"hasValue", "optional.hasValue() -> bool"},
	{"value", "optional.value() -> T"},
	{"optional.of", "optional.of(v) -> optional(T)"},
	{"optional.none", "optional.none() -> optional(T)"},
	{"int", "int(x) -> int"},
	{"string", "string(x) -> string"},
	{"double", "double(x) -> double"},
	{"duration", "duration(s) -> duration"},
	{"timestamp", "timestamp(s) -> timestamp"},
	{"quantity", "quantity(s) -> Quantity (Kubernetes)"},
	{"isQuantity", "isQuantity(s) -> bool (Kubernetes)"},
	{"url", "url(s) -> URL (Kubernetes)"},
	{"ip", "ip(s) -> IP (Kubernetes)"},
	{"cidr", "cidr(s) -> CIDR (Kubernetes)"},
	{"isSorted", "list.isSorted() -> bool (Kubernetes)"},
	{"sum", "list.sum() -> T (Kubernetes)"},
	{"min", "list.min() -> T (Kubernetes)"},
	{"max", "list.max() -> T (Kubernetes)"},
	{"indexOf", "list.indexOf(v) -> int (Kubernetes)"},
	{"jsonpatch.escapeKey", "jsonpatch.escapeKey(s) -> string: a key for a JSON pointer"},
	{"JSONPatch", "JSONPatch{op: …, path: …, value: …}: one operation of a JSONPatch mutation"},
	{"Object", "Object{…}: an ApplyConfiguration"},
}

// completion answers textDocument/completion.
func (s *Server) completion(path string, pos protocol.Position) *protocol.CompletionList {
	a := s.current()
	f := a.files[path]
	if f == nil {
		return &protocol.CompletionList{Items: []protocol.CompletionItem{}}
	}
	off := f.parsed.text.offset(pos)
	items := a.complete(path, off)
	if items == nil {
		items = []protocol.CompletionItem{}
	}
	return &protocol.CompletionList{Items: items}
}

// complete lists the completions at offset off of file path.
func (a *Analysis) complete(path string, off int) []protocol.CompletionItem {
	site, ok := a.celSiteAt(path, off)
	if !ok {
		return a.completeKeys(path, off)
	}
	expr := []rune(site.node.Value)
	i := min(site.index, len(expr))
	if segs, partial, ok := objectLiteralAt(expr, i); ok {
		var items []protocol.CompletionItem
		for _, k := range a.rootKinds(site, "object") {
			items = append(items, fieldItems(literalSchema(k.schema, segs), partial, literalDocs(k, segs))...)
		}
		return dedupeItems(items)
	}
	if items, ok := a.completeMembers(site, expr, i); ok {
		return items
	}
	root, segs, partial, ok := selectorBefore(expr, i)
	if !ok {
		return nil
	}
	if root == "" {
		var items []protocol.CompletionItem
		for _, t := range topLevel {
			if strings.HasPrefix(t.name, partial) && !strings.Contains(t.name, ".") {
				items = append(items, protocol.CompletionItem{Label: t.name, Kind: protocol.CompletionItemKindVariable, Detail: t.detail})
			}
		}
		for _, fn := range functions {
			if strings.HasPrefix(fn.name, partial) {
				items = append(items, protocol.CompletionItem{Label: fn.name, Kind: protocol.CompletionItemKindFunction, Detail: fn.sig})
			}
		}
		return dedupeItems(items)
	}
	return a.completeSelection(site, root, segs, partial)
}

// completeSelection lists what can follow root.segs. (the fields of a
// schema, the variables, the request's fields), and the member functions.
func (a *Analysis) completeSelection(site *celSite, root string, segs []string, partial string) []protocol.CompletionItem {
	var items []protocol.CompletionItem
	switch root {
	case "object", "oldObject", "params", "namespaceObject":
		for _, k := range a.rootKinds(site, root) {
			items = append(items, fieldItems(schemaAt(k.schema, segs), partial, builtinDocs(k.gvk, segs))...)
		}
	case "variables":
		if len(segs) == 0 {
			types := a.variableTypes(site)
			for _, v := range site.variables() {
				if strings.HasPrefix(v.Name, partial) {
					items = append(items, protocol.CompletionItem{Label: v.Name, Kind: protocol.CompletionItemKindVariable, Detail: types[v.Name], Documentation: v.Expression})
				}
			}
		}
	case "request":
		for _, name := range requestFields[strings.Join(segs, ".")] {
			if strings.HasPrefix(name, partial) {
				items = append(items, protocol.CompletionItem{Label: name, Kind: protocol.CompletionItemKindField})
			}
		}
	}
	// The member functions, once a name is begun or where no field
	// follows (a list, a string, a variable's value).
	if (len(segs) > 0 || root != "variables") && (partial != "" || len(items) == 0) {
		for _, fn := range functions {
			if strings.HasPrefix(fn.name, partial) && !strings.Contains(fn.name, ".") && fn.name != "has" && fn.name != "Object" && fn.name != "JSONPatch" && fn.name != "quantity" && fn.name != "isQuantity" && fn.name != "url" && fn.name != "ip" && fn.name != "cidr" && fn.name != "duration" && fn.name != "timestamp" {
				items = append(items, protocol.CompletionItem{Label: fn.name, Kind: protocol.CompletionItemKindMethod, Detail: fn.sig})
			}
		}
	}
	return dedupeItems(items)
}

// literalSchema is the schema of an Object{…} type name's path: list
// fields step into their items, as MutatingAdmissionPolicy names item
// types (Object.spec.containers{…}).
func literalSchema(s *spec.Schema, segs []string) *spec.Schema {
	for _, seg := range segs {
		s = schemaAt(s, []string{seg})
		if s != nil && s.Items != nil && s.Items.Schema != nil {
			s = s.Items.Schema
		}
	}
	return s
}

// literalDocs are the built-in descriptions of the fields of an
// Object{…} type name's path (list fields stepped into, as literalSchema).
func literalDocs(k rootKind, segs []string) map[string]string {
	var path []string
	for _, seg := range segs {
		path = append(path, seg)
		if s := schemaAt(k.schema, path); s != nil && s.Items != nil {
			path = append(path, "[]")
		}
	}
	return builtinDocs(k.gvk, path)
}

// fieldItems are the fields of schema s whose names start with partial,
// documented by their schema's description or docs' (a built-in kind's).
func fieldItems(s *spec.Schema, partial string, docs map[string]string) []protocol.CompletionItem {
	if s == nil {
		return nil
	}
	var items []protocol.CompletionItem
	for name, p := range s.Properties {
		if !strings.HasPrefix(name, partial) {
			continue
		}
		it := protocol.CompletionItem{Label: name, Kind: protocol.CompletionItemKindField, Detail: typeName(&p)}
		if p.Description != "" {
			it.Documentation = p.Description
		} else if d := docs[name]; d != "" {
			it.Documentation = d
		}
		items = append(items, it)
	}
	return items
}

// dedupeItems drops repeated labels (the union of several kinds' fields)
// and sorts by label.
func dedupeItems(items []protocol.CompletionItem) []protocol.CompletionItem {
	seen := map[string]bool{}
	out := items[:0]
	for _, it := range items {
		if seen[it.Label] {
			continue
		}
		seen[it.Label] = true
		out = append(out, it)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out
}

// variableTypes are the CEL types of a policy's variables as the compiler
// checked them (a ValidatingAdmissionPolicy's through its cost surrogate,
// which declares the same variables in the same environment).
func (a *Analysis) variableTypes(site *celSite) map[string]string {
	out := map[string]string{}
	cp := a.compiledOf(site)
	if cp == nil {
		return out
	}
	for _, v := range cp.Variables {
		if v.OutputType != nil {
			out[v.Name] = v.OutputType.String()
		}
	}
	return out
}

// compiledOf is the compilation of a site's policy: a
// MutatingAdmissionPolicy's, or a ValidatingAdmissionPolicy's surrogate.
func (a *Analysis) compiledOf(site *celSite) *compiler.Policy {
	switch {
	case site.policy != nil:
		return a.compiled[site.policy.Policy.Name]
	case site.vap != nil:
		return a.surrogates[site.vap.Policy.Name].compiled
	}
	return nil
}

// expression is the compiled expression of a site's field path (of a
// ValidatingAdmissionPolicy, the surrogate's variable standing for it).
func (a *Analysis) expression(site *celSite) *compiler.Expression {
	cp := a.compiledOf(site)
	if cp == nil {
		return nil
	}
	path := site.path
	if site.vap != nil {
		for name, r := range a.surrogates[site.vap.Policy.Name].Roles {
			if r.Path == path {
				for i, v := range cp.Variables {
					if v.Name == name {
						path = fmt.Sprintf("spec.variables[%d].expression", i)
					}
				}
			}
		}
	}
	for _, e := range cp.Expressions() {
		if e.Path != nil && e.Path.String() == path {
			return e
		}
	}
	return nil
}

// documentKinds map a document's kind to the Go type of its fields, for
// the completion of YAML keys.
var documentKinds = map[string]reflect.Type{
	"MutatingAdmissionPolicy":          reflect.TypeFor[admissionregistrationv1.MutatingAdmissionPolicy](),
	"MutatingAdmissionPolicyBinding":   reflect.TypeFor[admissionregistrationv1.MutatingAdmissionPolicyBinding](),
	"ValidatingAdmissionPolicy":        reflect.TypeFor[admissionregistrationv1.ValidatingAdmissionPolicy](),
	"ValidatingAdmissionPolicyBinding": reflect.TypeFor[admissionregistrationv1.ValidatingAdmissionPolicyBinding](),
	"PolicyTest":                       reflect.TypeFor[policytest.Suite](),
}

// completeKeys lists the YAML keys that fit at offset off: the fields of
// the object at the cursor's indentation, found from the lines above it
// (so that the half-typed document need not parse).
func (a *Analysis) completeKeys(path string, off int) []protocol.CompletionItem {
	f := a.files[path]
	t := f.parsed.text
	line := lineOf(t.lines, off)
	cur := string(t.data[t.lines[line]:off])
	trimmed := strings.TrimLeft(cur, " ")
	indent := len(cur) - len(trimmed)
	trimmed = strings.TrimPrefix(trimmed, "- ")
	if strings.Contains(trimmed, ":") {
		return nil
	}
	if strings.HasPrefix(strings.TrimLeft(cur, " "), "- ") {
		indent += 2
	}
	// The keys of the enclosing mappings, innermost first, and the
	// document's kind.
	var keys []string
	kind := ""
	want := indent
	for l := line - 1; l >= 0; l-- {
		text := string(t.data[t.lines[l]:t.lineEnd(l)])
		if strings.TrimSpace(text) == "---" {
			break
		}
		body := strings.TrimLeft(text, " ")
		if body == "" || strings.HasPrefix(body, "#") {
			continue
		}
		ind := len(text) - len(body)
		if strings.HasPrefix(body, "- ") {
			if ind < want {
				want = ind
			}
			body = body[2:]
			ind += 2
		}
		k, _, ok := strings.Cut(body, ":")
		if ind == 0 && strings.TrimSpace(k) == "kind" {
			_, v, _ := strings.Cut(body, ":")
			kind = strings.TrimSpace(v)
		}
		if ok && ind < want {
			keys = append(keys, strings.TrimSpace(k))
			want = ind
		}
	}
	if kind == "" {
		kind = kindBelow(t, line)
	}
	typ, ok := documentKinds[kind]
	if !ok {
		return nil
	}
	for i := len(keys) - 1; i >= 0; i-- {
		typ = fieldType(typ, keys[i])
		if typ == nil {
			return nil
		}
	}
	var items []protocol.CompletionItem
	for _, name := range jsonFields(typ) {
		if strings.HasPrefix(name.name, trimmed) {
			items = append(items, protocol.CompletionItem{Label: name.name, Kind: protocol.CompletionItemKindProperty, Detail: name.typ, InsertText: name.name + ": "})
		}
	}
	return dedupeItems(items)
}

// kindBelow finds the kind of the document holding line from the lines
// after it.
func kindBelow(t *text, line int) string {
	for l := line + 1; l < len(t.lines); l++ {
		text := string(t.data[t.lines[l]:t.lineEnd(l)])
		if strings.TrimSpace(text) == "---" {
			break
		}
		if v, ok := strings.CutPrefix(text, "kind:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

type jsonField struct{ name, typ string }

// jsonFields are the JSON names of a struct type's fields, embedded
// structs' fields inlined.
func jsonFields(t reflect.Type) []jsonField {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []jsonField
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if sf.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			out = append(out, jsonFields(sf.Type)...)
			continue
		}
		if name == "" || !sf.IsExported() {
			continue
		}
		out = append(out, jsonField{name: name, typ: sf.Type.String()})
	}
	return out
}

// fieldType is the type of a struct's field of JSON name name, through
// pointers, slices and maps.
func fieldType(t reflect.Type, name string) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		n, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if sf.Anonymous && (n == "" || strings.Contains(opts, "inline")) {
			if ft := fieldType(sf.Type, name); ft != nil {
				return ft
			}
			continue
		}
		if n == name {
			return sf.Type
		}
	}
	return nil
}

// hover answers textDocument/hover: in an expression, the type and the
// description of the field under the cursor, or a variable's type, and
// the expression's static cost against the per-call limit.
func (s *Server) hover(path string, pos protocol.Position) *protocol.Hover {
	a := s.current()
	f := a.files[path]
	if f == nil {
		return nil
	}
	off := f.parsed.text.offset(pos)
	site, ok := a.celSiteAt(path, off)
	if !ok {
		return nil
	}
	expr := []rune(site.node.Value)
	i := min(site.index, len(expr))
	// The whole word under the cursor.
	end := i
	for end < len(expr) && isIdentRune(expr[end]) {
		end++
	}
	var parts []string
	if root, segs, word, ok := selectorBefore(expr, end); ok && word != "" {
		all := append(append([]string{}, segs...), word)
		switch {
		case root == "":
			parts = append(parts, hoverWord(word))
		case root == "variables" && len(segs) == 0:
			types := a.variableTypes(site)
			parts = append(parts, fmt.Sprintf("`variables.%s`: `%s`", word, orDyn(types[word])))
		case root == "object" || root == "oldObject" || root == "params" || root == "namespaceObject":
			for _, k := range a.rootKinds(site, root) {
				fs := schemaAt(k.schema, all)
				if fs == nil {
					continue
				}
				text := fmt.Sprintf("`%s.%s`: `%s`", root, strings.ReplaceAll(strings.Join(all, "."), ".[]", "[]"), typeName(fs))
				if d := description(k, all); d != "" {
					text += "\n\n" + d
				}
				parts = append(parts, text)
				break
			}
		}
	}
	if e := a.expression(site); e != nil {
		var ty string
		if e.OutputType != nil {
			ty = e.OutputType.String()
		}
		cost := e.Cost
		if site.policy != nil {
			for _, est := range a.crds.Estimates(site.policy.Policy, a.compiled[site.policy.Policy.Name]) {
				if est.Expression == e {
					cost = est.Cost
				}
			}
		}
		parts = append(parts, fmt.Sprintf("expression type `%s`; static cost %s of the per-call limit %d (budget %d for the mutations of a policy, %d for matchConditions)",
			orDyn(ty), costText(cost), uint64(compiler.PerCallLimit), uint64(compiler.MutationBudget), uint64(compiler.MatchConditionsBudget)))
	}
	if len(parts) == 0 {
		return nil
	}
	begin := min(i, len(expr))
	for begin > 0 && isIdentRune(expr[begin-1]) {
		begin--
	}
	start, stop := site.offs[begin], site.offs[min(end, len(site.offs)-1)]
	r := protocol.Range{Start: f.parsed.text.position(start), End: f.parsed.text.position(stop)}
	return &protocol.Hover{Contents: protocol.MarkupContent{Kind: protocol.Markdown, Value: strings.Join(parts, "\n\n---\n\n")}, Range: &r}
}

func orDyn(s string) string {
	if s == "" {
		return "dyn"
	}
	return s
}

func costText(c compiler.CostEstimate) string {
	if c.Unbounded() {
		return fmt.Sprintf("%d..unbounded", c.Min)
	}
	return fmt.Sprintf("%d..%d", c.Min, c.Max)
}

func hoverWord(w string) string {
	for _, t := range topLevel {
		if t.name == w {
			return fmt.Sprintf("`%s`: %s", w, t.detail)
		}
	}
	for _, fn := range functions {
		if fn.name == w {
			return "`" + fn.sig + "`"
		}
	}
	return ""
}

// definition answers textDocument/definition: variables.x → the
// variable's name; a binding's policyName → the policy; a paramKind's
// kind → the CustomResourceDefinition; a suite's policy name → the
// policy, its policy files → the files.
func (s *Server) definition(path string, pos protocol.Position) []protocol.Location {
	a := s.current()
	f := a.files[path]
	if f == nil {
		return nil
	}
	off := f.parsed.text.offset(pos)
	if site, ok := a.celSiteAt(path, off); ok {
		expr := []rune(site.node.Value)
		end := min(site.index, len(expr))
		for end < len(expr) && isIdentRune(expr[end]) {
			end++
		}
		if root, segs, word, ok := selectorBefore(expr, end); ok && root == "variables" && len(segs) == 0 {
			if loc, ok := a.variableLocation(path, site, word); ok {
				return []protocol.Location{loc}
			}
		}
		return nil
	}
	steps, ok := f.parsed.nodeAt(off)
	if !ok {
		return nil
	}
	last := steps[len(steps)-1]
	switch {
	case last.key == "policyName" && last.node.Kind == yaml.ScalarNode:
		return a.policyLocations(last.node.Value)
	case last.key == "kind" && len(steps) >= 3 && steps[len(steps)-2].key == "paramKind":
		return a.crdLocations(last.node.Value)
	case (f.suite || f.peer) && last.key == "policy" && last.node.Kind == yaml.ScalarNode:
		// A suite's case (PolicyTest, kaptest, Kyverno) names its policy.
		return a.policyLocations(last.node.Value)
	case (f.suite || f.peer) && len(steps) >= 3 && steps[len(steps)-2].key == "policies" && last.node.Kind == yaml.ScalarNode:
		// A suite's policy files, relative to it.
		file := filepath.Join(filepath.Dir(path), last.node.Value)
		if _, err := os.Stat(file); err == nil || a.files[file] != nil {
			return []protocol.Location{{URI: uri.File(file)}}
		}
	}
	return nil
}

// variableLocation is where the variable name of a site's policy is
// declared.
func (a *Analysis) variableLocation(path string, site *celSite, name string) (protocol.Location, bool) {
	if site.policy == nil && site.vap == nil {
		return protocol.Location{}, false
	}
	src := site.file.parsed
	doc := -1
	if site.policy != nil {
		doc = site.policy.Source.Doc
	} else {
		doc = site.vap.Source.Doc
	}
	if doc < 0 || doc >= len(src.docs) {
		return protocol.Location{}, false
	}
	vars := lookupValue(lookupValue(src.docs[doc], "spec"), "variables")
	if vars == nil {
		return protocol.Location{}, false
	}
	for _, v := range vars.Content {
		if n := lookupValue(v, "name"); n != nil && n.Value == name {
			return location(path, src, n), true
		}
	}
	return protocol.Location{}, false
}

// location is the Location of a scalar node of a file.
func location(path string, f *parsedFile, n *yaml.Node) protocol.Location {
	offs := scalarOffsets(f.text, n)
	start := f.text.yamlOffset(n.Line, n.Column)
	return protocol.Location{URI: uri.File(path), Range: protocol.Range{Start: f.text.position(start), End: f.text.position(max(offs[len(offs)-1], start))}}
}

// policyLocations are where the policies named name are declared (their
// metadata.name).
func (a *Analysis) policyLocations(name string) []protocol.Location {
	var out []protocol.Location
	add := func(file string, doc int) {
		f := a.files[file]
		if f == nil || doc < 0 || doc >= len(f.parsed.docs) {
			return
		}
		if n := lookupValue(lookupValue(f.parsed.docs[doc], "metadata"), "name"); n != nil {
			out = append(out, location(file, f.parsed, n))
		}
	}
	for _, p := range a.set.Policies {
		if p.Policy.Name == name {
			add(p.Source.File, p.Source.Doc)
		}
	}
	for _, p := range a.set.Rejected {
		if p.Policy.Name == name {
			add(p.Source.File, p.Source.Doc)
		}
	}
	for _, p := range a.set.ValidatingPolicies {
		if p.Policy.Name == name {
			add(p.Source.File, p.Source.Doc)
		}
	}
	return out
}

// crdLocations are the CustomResourceDefinitions of the workspace that
// serve kind (their spec.names.kind).
func (a *Analysis) crdLocations(kind string) []protocol.Location {
	var out []protocol.Location
	seen := map[string]bool{}
	for _, c := range a.crdKinds() {
		if c.gvk.Kind != kind {
			continue
		}
		f := a.files[c.obj.Source.File]
		if f == nil {
			continue
		}
		root := f.parsed.root(c.obj.Source)
		n, _, whole := fieldNode(root, "spec.names.kind")
		if !whole {
			continue
		}
		loc := location(c.obj.Source.File, f.parsed, n)
		if k := fmt.Sprint(loc); !seen[k] {
			seen[k] = true
			out = append(out, loc)
		}
	}
	return out
}

// references answers textDocument/references: on a policy's metadata.name
// the bindings naming it; on a variable's name (or a use) every use of
// variables.name in the policy's expressions.
func (s *Server) references(path string, pos protocol.Position, withDecl bool) []protocol.Location {
	a := s.current()
	f := a.files[path]
	if f == nil {
		return nil
	}
	off := f.parsed.text.offset(pos)
	steps, ok := f.parsed.nodeAt(off)
	if !ok || len(steps) < 2 {
		return nil
	}
	last := steps[len(steps)-1]
	var out []protocol.Location
	if last.key == "name" && len(steps) == 3 && steps[1].key == "metadata" {
		name := last.node.Value
		if withDecl {
			out = append(out, location(path, f.parsed, last.node))
		}
		for _, b := range a.set.Bindings {
			if b.Binding.Spec.PolicyName == name {
				out = append(out, a.fieldLocations(b.Source.File, b.Source.Doc, "spec.policyName")...)
			}
		}
		for _, b := range a.set.ValidatingBindings {
			if b.Binding.Spec.PolicyName == name {
				out = append(out, a.fieldLocations(b.Source.File, b.Source.Doc, "spec.policyName")...)
			}
		}
		return out
	}
	name := ""
	if last.key == "name" && len(steps) >= 4 && steps[len(steps)-3].key == "variables" {
		name = last.node.Value
	} else if site, ok := a.celSiteAt(path, off); ok {
		expr := []rune(site.node.Value)
		end := min(site.index, len(expr))
		for end < len(expr) && isIdentRune(expr[end]) {
			end++
		}
		if root, segs, word, ok := selectorBefore(expr, end); ok && root == "variables" && len(segs) == 0 {
			name = word
		}
	}
	if name == "" {
		return nil
	}
	doc := docIndex(f.parsed, steps[0].node)
	if doc < 0 {
		return nil
	}
	out = append(out, usesOf(path, f.parsed, f.parsed.docs[doc], "variables."+name, 0)...)
	return out
}

// fieldLocations is the location of a field of a document, if it is there.
func (a *Analysis) fieldLocations(file string, doc int, path string) []protocol.Location {
	f := a.files[file]
	if f == nil || doc < 0 || doc >= len(f.parsed.docs) {
		return nil
	}
	n, _, whole := fieldNode(f.parsed.docs[doc], path)
	if !whole || n.Kind != yaml.ScalarNode {
		return nil
	}
	return []protocol.Location{location(file, f.parsed, n)}
}

// usesOf finds the uses of a selection (variables.x, not followed by an
// identifier character) in the expressions under n.
func usesOf(path string, f *parsedFile, n *yaml.Node, sel string, depth int) []protocol.Location {
	if n == nil || depth > maxDepth {
		return nil
	}
	var out []protocol.Location
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.ScalarNode && expressionKeys[k.Value] {
				runes := []rune(v.Value)
				target := []rune(sel)
				var offs []int
				for j := 0; j+len(target) <= len(runes); j++ {
					if string(runes[j:j+len(target)]) != sel || (j > 0 && (isIdentRune(runes[j-1]) || runes[j-1] == '.')) {
						continue
					}
					if e := j + len(target); e < len(runes) && isIdentRune(runes[e]) {
						continue
					}
					if offs == nil {
						offs = scalarOffsets(f.text, v)
					}
					out = append(out, protocol.Location{URI: uri.File(path), Range: protocol.Range{Start: f.text.position(offs[j]), End: f.text.position(offs[j+len(target)])}})
				}
				continue
			}
			out = append(out, usesOf(path, f, v, sel, depth+1)...)
		}
	}
	if n.Kind == yaml.SequenceNode {
		for _, c := range n.Content {
			out = append(out, usesOf(path, f, c, sel, depth+1)...)
		}
	}
	return out
}

// codeActions answers textDocument/codeAction with the fixes that are
// certain: a MutatingAdmissionPolicy without reinvocationPolicy gets the
// field (Never, or IfNeeded); an unguarded read of an optional field its
// guard, an ApplyConfiguration writing an atomic list its JSONPatch
// (fixes.go).
func (s *Server) codeActions(path string, rng protocol.Range) []protocol.CodeAction {
	a := s.current()
	f := a.files[path]
	if f == nil {
		return nil
	}
	var out []protocol.CodeAction
	for _, d := range a.Diagnostics[path] {
		if d.Range.Start.Line > rng.End.Line || d.Range.End.Line < rng.Start.Line {
			continue
		}
		switch d.Code {
		case "read-unguarded-optional":
			if act, ok := a.guardAction(path, d); ok {
				out = append(out, act)
			}
			continue
		case "object-atomic":
			if act, ok := a.jsonPatchAction(path, d); ok {
				out = append(out, act)
			}
			continue
		}
		if !strings.Contains(d.Message, "Required value") || d.Range.Start.Line > rng.End.Line || d.Range.End.Line < rng.Start.Line {
			continue
		}
		for _, p := range a.set.Rejected {
			if p.Source.File != path || p.Policy.Spec.ReinvocationPolicy != "" {
				continue
			}
			if p.Source.Doc < 0 || p.Source.Doc >= len(f.parsed.docs) {
				continue
			}
			_, specKey := lookup(f.parsed.docs[p.Source.Doc], "spec")
			specNode := lookupValue(f.parsed.docs[p.Source.Doc], "spec")
			if specKey == nil || specNode == nil || specNode.Kind != yaml.MappingNode || len(specNode.Content) == 0 {
				continue
			}
			first := specNode.Content[0]
			t := f.parsed.text
			at := t.lines[first.Line-1]
			indent := strings.Repeat(" ", first.Column-1)
			for _, v := range []string{"Never", "IfNeeded"} {
				edit := protocol.TextEdit{Range: protocol.Range{Start: t.position(at), End: t.position(at)}, NewText: indent + "reinvocationPolicy: " + v + "\n"}
				out = append(out, protocol.CodeAction{
					Title: "Add reinvocationPolicy: " + v, Kind: protocol.QuickFix, Diagnostics: []protocol.Diagnostic{d}, IsPreferred: v == "Never",
					Edit: &protocol.WorkspaceEdit{Changes: map[uri.URI][]protocol.TextEdit{uri.File(path): {edit}}},
				})
			}
		}
	}
	return out
}

// guardAction is the quick fix of an unguarded read (guardFix).
func (a *Analysis) guardAction(path string, d protocol.Diagnostic) (protocol.CodeAction, bool) {
	f := a.files[path]
	site, ok := a.celSiteAt(path, f.parsed.text.offset(d.Range.Start))
	if !ok {
		return protocol.CodeAction{}, false
	}
	edits, title, ok := guardFix(site.node.Value, site.index)
	if !ok {
		return protocol.CodeAction{}, false
	}
	for i := range edits {
		t, ok := yamlEscape(site.node, edits[i].text)
		if !ok {
			return protocol.CodeAction{}, false
		}
		edits[i].text = t
	}
	return quickFix(path, title, d, celFixEdits(f.parsed, site.node, edits)), true
}

// yamlEscape writes text as it must appear inside scalar n's source;
// ok is false where a plain scalar cannot hold it.
func yamlEscape(n *yaml.Node, text string) (string, bool) {
	switch n.Style {
	case yaml.DoubleQuotedStyle:
		return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(text), true
	case yaml.SingleQuotedStyle:
		return strings.ReplaceAll(text, "'", "''"), true
	case yaml.LiteralStyle, yaml.FoldedStyle:
		return text, !strings.Contains(text, "\n")
	}
	return text, !strings.Contains(text, ": ") && !strings.Contains(text, " #") && !strings.Contains(text, "\n")
}

// jsonPatchAction is the quick fix of an ApplyConfiguration writing an
// atomic list (jsonPatchFix): the mutation becomes a JSONPatch one, its
// expression a literal block scalar.
func (a *Analysis) jsonPatchAction(path string, d protocol.Diagnostic) (protocol.CodeAction, bool) {
	f := a.files[path]
	site, ok := a.celSiteAt(path, f.parsed.text.offset(d.Range.Start))
	if !ok || site.policy == nil {
		return protocol.CodeAction{}, false
	}
	mutation, ok := strings.CutSuffix(site.path, ".applyConfiguration.expression")
	if !ok {
		return protocol.CodeAction{}, false
	}
	kinds := a.rootKinds(site, "object")
	isList := func(p []string) bool {
		for _, k := range kinds {
			if sc := schemaAt(k.schema, p); sc == nil || typeName(sc) == "dyn" || !strings.HasPrefix(typeName(sc), "list(") {
				return false
			}
		}
		return len(kinds) > 0
	}
	expr, ok := jsonPatchFix(site.node.Value, site.index, isList)
	if !ok {
		return protocol.CodeAction{}, false
	}
	root := f.parsed.root(site.policy.Source)
	patchType, _, whole := fieldNode(root, mutation+".patchType")
	_, acKey, whole2 := fieldNode(root, mutation+".applyConfiguration")
	_, exprKey, whole3 := fieldNode(root, site.path)
	if !whole || !whole2 || !whole3 || patchType.Kind != yaml.ScalarNode || acKey == nil || exprKey == nil {
		return protocol.CodeAction{}, false
	}
	t := f.parsed.text
	n := site.node
	start := t.yamlOffset(n.Line, n.Column)
	end := scalarEnd(t, n)
	edits := []protocol.TextEdit{
		{Range: nodeRange(f.parsed, patchType, nil, true), NewText: "JSONPatch"},
		{Range: nodeRange(f.parsed, acKey, nil, true), NewText: "jsonPatch"},
		{Range: protocol.Range{Start: t.position(start), End: t.position(end)}, NewText: blockScalar(expr, exprKey.Column-1+2)},
	}
	return quickFix(path, "Rewrite as the equivalent JSONPatch (an ApplyConfiguration may not write an atomic list)", d, edits), true
}

// scalarEnd is the offset after scalar n's source: its closing quote, or
// its last character (a block scalar's last one before its line breaks).
func scalarEnd(t *text, n *yaml.Node) int {
	offs := scalarOffsets(t, n)
	runes := []rune(n.Value)
	switch n.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		return min(offs[len(offs)-1]+1, len(t.data))
	case yaml.LiteralStyle, yaml.FoldedStyle:
		k := len(runes)
		for k > 0 && runes[k-1] == '\n' {
			k--
		}
		if k == 0 {
			return offs[0]
		}
		return offs[k-1] + len(string(runes[k-1]))
	}
	return offs[len(offs)-1]
}

// codeLenses answers textDocument/codeLens: a suite file gets "Run
// suite", whose command runs it through policytest; a policy, the
// bindings of the workspace that bind it and the params they name.
func (s *Server) codeLenses(path string) []protocol.CodeLens {
	if policytest.IsSuiteFile(path) {
		return []protocol.CodeLens{{
			Range:   protocol.Range{},
			Command: &protocol.Command{Title: "▶ Run suite", Command: CommandRunSuite, Arguments: []any{string(uri.File(path))}},
		}}
	}
	a := s.current()
	f := a.files[path]
	if f == nil {
		return nil
	}
	var out []protocol.CodeLens
	lens := func(doc int, title string) {
		if doc < 0 || doc >= len(f.parsed.docs) {
			return
		}
		n, _, whole := fieldNode(f.parsed.docs[doc], "metadata.name")
		if !whole || n.Kind != yaml.ScalarNode {
			return
		}
		loc := location(path, f.parsed, n)
		out = append(out, protocol.CodeLens{Range: loc.Range, Command: &protocol.Command{Title: title}})
	}
	for _, p := range a.set.Policies {
		if p.Source.File != path {
			continue
		}
		var names, params []string
		for _, b := range a.set.Bindings {
			if b.Binding.Spec.PolicyName != p.Policy.Name {
				continue
			}
			names = append(names, b.Binding.Name)
			if pr := b.Binding.Spec.ParamRef; pr != nil {
				switch {
				case pr.Name != "":
					params = append(params, pr.Name)
				case pr.Selector != nil:
					params = append(params, "selector "+metav1LabelSelector(pr.Selector))
				}
			}
		}
		lens(p.Source.Doc, bindingsTitle(names, params))
	}
	for _, p := range a.set.ValidatingPolicies {
		if p.Source.File != path {
			continue
		}
		var names, params []string
		for _, b := range a.set.ValidatingBindings {
			if b.Binding.Spec.PolicyName == p.Policy.Name {
				names = append(names, b.Binding.Name)
				if pr := b.Binding.Spec.ParamRef; pr != nil && pr.Name != "" {
					params = append(params, pr.Name)
				}
			}
		}
		lens(p.Source.Doc, bindingsTitle(names, params))
	}
	return out
}

// bindingsTitle says which bindings bind a policy and with which params.
func bindingsTitle(names, params []string) string {
	if len(names) == 0 {
		return "no binding in the workspace: the policy never runs"
	}
	t := "bound by " + strings.Join(names, ", ")
	if len(params) > 0 {
		t += " · params " + strings.Join(params, ", ")
	}
	return t
}

func metav1LabelSelector(sel *metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "?"
	}
	return s.String()
}

// executeCommand runs the suite a code lens names (policytest.RunFiles,
// in this process) and publishes its failures as diagnostics of the suite
// file (on each case's name), with a summary message.
func (s *Server) executeCommand(ctx context.Context, p protocol.ExecuteCommandParams) (any, error) {
	if p.Command != CommandRunSuite || len(p.Arguments) != 1 {
		return nil, fmt.Errorf("unknown command %q", p.Command)
	}
	u, _ := p.Arguments[0].(string)
	path := uri.URI(u).Filename()
	summary, diags := runSuite(ctx, s.comp, path, s.files[path])
	if err := s.conn.Notify(ctx, protocol.MethodTextDocumentPublishDiagnostics, &protocol.PublishDiagnosticsParams{URI: uri.File(path), Diagnostics: append(append([]protocol.Diagnostic{}, s.current().Diagnostics[path]...), diags...)}); err != nil {
		return nil, err
	}
	typ := protocol.MessageTypeInfo
	if len(diags) > 0 {
		typ = protocol.MessageTypeError
	}
	if err := s.conn.Notify(ctx, protocol.MethodWindowShowMessage, &protocol.ShowMessageParams{Type: typ, Message: summary}); err != nil {
		return nil, err
	}
	return summary, nil
}

// runSuite runs the suite file at path and returns a summary and a
// diagnostic for each case that did not pass.
func runSuite(ctx context.Context, comp *compiler.Compiler, path string, fs *fileState) (string, []protocol.Diagnostic) {
	rep, err := policytest.RunFiles(ctx, []string{path}, policytest.Options{NewCompiler: func() (*compiler.Compiler, error) { return comp, nil }})
	if err != nil {
		return "mutatis test: " + err.Error(), nil
	}
	passed, failed, errored, bad := rep.Counts()
	var diags []protocol.Diagnostic
	for _, sr := range rep.Suites {
		if sr.Err != nil {
			diags = append(diags, protocol.Diagnostic{Severity: protocol.DiagnosticSeverityError, Source: "mutatis test", Message: sr.Err.Error()})
		}
		for i, c := range sr.Cases {
			if c.Status == policytest.Pass {
				continue
			}
			msg := string(c.Status)
			for _, fl := range c.Failures {
				msg += "\n" + fl.Expectation + ": " + fl.Message
			}
			if c.Err != "" {
				msg += "\n" + c.Err
			}
			d := protocol.Diagnostic{Severity: protocol.DiagnosticSeverityError, Source: "mutatis test", Code: "case", Message: c.FullName() + ": " + msg}
			if fs != nil {
				if root := fs.parsed.root(manifest.Source{Item: -1}); root != nil {
					n, key, whole := fieldNode(root, fmt.Sprintf("cases[%d].name", i))
					d.Range = nodeRange(fs.parsed, n, key, whole)
				}
			}
			diags = append(diags, d)
		}
	}
	return fmt.Sprintf("mutatis test %s: %d passed, %d failed, %d errors, %d bad suites", path, passed, failed, errored, bad), diags
}
