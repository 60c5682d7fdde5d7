package lsp

import (
	"strings"

	yaml "go.yaml.in/yaml/v3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
)

// celSite is a cursor inside a CEL expression of a policy: the file, the
// expression's node and field path, the policy it belongs to, and the
// index of the cursor in the expression.
type celSite struct {
	file  *fileState
	path  string
	node  *yaml.Node
	index int
	offs  []int
	// policy is the MutatingAdmissionPolicy (or, vap, the
	// ValidatingAdmissionPolicy) whose expression it is.
	policy *manifest.Policy
	vap    *manifest.ValidatingPolicy
}

// expressionKeys are the fields that hold CEL.
var expressionKeys = map[string]bool{"expression": true, "messageExpression": true, "valueExpression": true, "key": false}

// celSiteAt finds the CEL expression at offset off of file path.
func (a *Analysis) celSiteAt(path string, off int) (*celSite, bool) {
	f := a.files[path]
	if f == nil {
		return nil, false
	}
	steps, ok := f.parsed.nodeAt(off)
	if !ok || len(steps) < 2 {
		return nil, false
	}
	last := steps[len(steps)-1]
	if last.node.Kind != yaml.ScalarNode || last.keyNode == last.node || !expressionKeys[last.key] {
		return nil, false
	}
	var b strings.Builder
	for _, s := range steps[1:] {
		if _, err := parseIndex(s.key); err == nil && s.keyNode == nil {
			b.WriteString("[" + s.key + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	site := &celSite{file: f, path: b.String(), node: last.node}
	site.index, site.offs = f.parsed.valueOffset(last.node, off)
	doc := docIndex(f.parsed, steps[0].node)
	// A policy API validation refuses (an expression being typed does
	// not compile) is still the one the cursor is in.
	for _, list := range [][]manifest.Policy{a.set.Policies, a.set.Rejected} {
		for i := range list {
			if p := &list[i]; p.Source.File == path && p.Source.Doc == doc {
				site.policy = p
			}
		}
	}
	for i := range a.set.ValidatingPolicies {
		if p := &a.set.ValidatingPolicies[i]; p.Source.File == path && p.Source.Doc == doc {
			site.vap = p
		}
	}
	return site, true
}

func docIndex(f *parsedFile, root *yaml.Node) int {
	for i, d := range f.docs {
		if d == root {
			return i
		}
	}
	return -1
}

func parseIndex(s string) (int, error) {
	n := 0
	if s == "" {
		return 0, errNotIndex
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errNotIndex
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

type constErr string

func (e constErr) Error() string { return string(e) }

const errNotIndex = constErr("not an index")

// matchConstraints of the policy of a site.
func (s *celSite) matchConstraints() *admissionregistrationv1.MatchResources {
	switch {
	case s.policy != nil:
		return s.policy.Policy.Spec.MatchConstraints
	case s.vap != nil:
		return s.vap.Policy.Spec.MatchConstraints
	}
	return nil
}

func (s *celSite) paramKind() *admissionregistrationv1.ParamKind {
	switch {
	case s.policy != nil:
		return s.policy.Policy.Spec.ParamKind
	case s.vap != nil:
		return s.vap.Policy.Spec.ParamKind
	}
	return nil
}

func (s *celSite) variables() []admissionregistrationv1.Variable {
	switch {
	case s.policy != nil:
		return s.policy.Policy.Spec.Variables
	case s.vap != nil:
		return s.vap.Policy.Spec.Variables
	}
	return nil
}

// targetKinds are the kinds a policy's matchConstraints can select: the
// built-in kinds its rules name without wildcards (matching's table), and
// every kind of a CustomResourceDefinition of the workspace its rules
// match, wildcards included.
func (a *Analysis) targetKinds(mc *admissionregistrationv1.MatchResources) []schema.GroupVersionKind {
	if mc == nil {
		return nil
	}
	table := matching.DefaultTable()
	var out []schema.GroupVersionKind
	seen := map[schema.GroupVersionKind]bool{}
	add := func(gvk schema.GroupVersionKind) {
		if !gvk.Empty() && !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	crds := a.crdKinds()
	for _, r := range mc.ResourceRules {
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					plural, sub, _ := strings.Cut(res, "/")
					for _, c := range crds {
						if (g == "*" || g == c.gvr.Group) && (v == "*" || v == c.gvr.Version) && (plural == "*" || plural == c.gvr.Resource) {
							add(c.gvk)
						}
					}
					if g != "*" && v != "*" && !strings.Contains(res, "*") {
						add(table.KindFor(schema.GroupVersionResource{Group: g, Version: v, Resource: plural}, sub))
					}
				}
			}
		}
	}
	return out
}

// crdKind is one version of a CustomResourceDefinition of the workspace.
type crdKind struct {
	gvr schema.GroupVersionResource
	gvk schema.GroupVersionKind
	obj manifest.Object
}

func (a *Analysis) crdKinds() []crdKind {
	var out []crdKind
	for _, o := range a.set.Objects {
		if o.Object.GetKind() != "CustomResourceDefinition" {
			continue
		}
		for _, v := range manifest.CRDVersions(o.Object) {
			out = append(out, crdKind{gvr: v.Resource, gvk: v.Kind, obj: o})
		}
	}
	return out
}

// schemaOf resolves a kind's OpenAPI schema as kube-apiserver's type
// checker does (costs.CRDIndex.ResolveSchema); nil when unknown.
func (a *Analysis) schemaOf(gvk schema.GroupVersionKind) *spec.Schema {
	if a.crds == nil {
		return nil
	}
	if s, ok := a.schemas[gvk]; ok {
		return s
	}
	s, err := a.crds.ResolveSchema(gvk)
	if err != nil {
		s = nil
	}
	a.schemas[gvk] = s
	return s
}

// paramGVK is the kind a paramKind names.
func paramGVK(pk *admissionregistrationv1.ParamKind) (schema.GroupVersionKind, bool) {
	if pk == nil {
		return schema.GroupVersionKind{}, false
	}
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, false
	}
	return gv.WithKind(pk.Kind), true
}

// rootKind is a kind a CEL variable can hold and its schema.
type rootKind struct {
	gvk    schema.GroupVersionKind
	schema *spec.Schema
}

// rootKinds are the kinds of a CEL variable at a site, with their
// schemas: object and oldObject the kinds the policy targets (several: a
// union), params its paramKind, namespaceObject a Namespace.
func (a *Analysis) rootKinds(s *celSite, root string) []rootKind {
	var gvks []schema.GroupVersionKind
	switch root {
	case "object", "oldObject":
		gvks = a.targetKinds(s.matchConstraints())
	case "params":
		if gvk, ok := paramGVK(s.paramKind()); ok {
			gvks = []schema.GroupVersionKind{gvk}
		}
	case "namespaceObject":
		gvks = []schema.GroupVersionKind{{Version: "v1", Kind: "Namespace"}}
	}
	var out []rootKind
	for _, gvk := range gvks {
		if sc := a.schemaOf(gvk); sc != nil {
			out = append(out, rootKind{gvk: gvk, schema: sc})
		}
	}
	return out
}

// description is the OpenAPI description of the field at segs of kind
// k: its schema's (a CRD's), else the built-in kind's Go documentation
// (builtinDocs).
func description(k rootKind, segs []string) string {
	if len(segs) == 0 {
		return ""
	}
	if fs := schemaAt(k.schema, segs); fs != nil && fs.Description != "" {
		return fs.Description
	}
	return builtinDocs(k.gvk, segs[:len(segs)-1])[segs[len(segs)-1]]
}

// schemaAt walks a schema along field names; list items are stepped
// through by a segment "[]" (or an index).
func schemaAt(s *spec.Schema, segs []string) *spec.Schema {
	for _, seg := range segs {
		if s == nil {
			return nil
		}
		if seg == "[]" || isAllDigits(seg) {
			if s.Items == nil || s.Items.Schema == nil {
				return nil
			}
			s = s.Items.Schema
			continue
		}
		if p, ok := s.Properties[seg]; ok {
			s = &p
			continue
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			s = s.AdditionalProperties.Schema
			continue
		}
		return nil
	}
	return s
}

func isAllDigits(s string) bool {
	_, err := parseIndex(s)
	return err == nil
}

// typeName names a schema's type as CEL sees it.
func typeName(s *spec.Schema) string {
	if s == nil {
		return "dyn"
	}
	t := ""
	if len(s.Type) > 0 {
		t = s.Type[0]
	}
	switch t {
	case "object":
		if len(s.Properties) == 0 && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			return "map(string, " + typeName(s.AdditionalProperties.Schema) + ")"
		}
		return "object"
	case "array":
		if s.Items != nil && s.Items.Schema != nil {
			return "list(" + typeName(s.Items.Schema) + ")"
		}
		return "list(dyn)"
	case "integer":
		return "int"
	case "number":
		return "double"
	case "boolean":
		return "bool"
	case "string":
		if s.Format == "date-time" {
			return "timestamp"
		}
		if s.Format == "duration" {
			return "duration"
		}
		return "string"
	}
	if s.Extensions != nil {
		if v, ok := s.Extensions.GetBool("x-kubernetes-int-or-string"); ok && v {
			return "int-or-string (dyn)"
		}
	}
	return "dyn"
}

// selectorBefore reads the selection chain that ends at the cursor: in
// "object.spec.contai" it is root "object", path ["spec"] and partial
// "contai". Index accesses ([0], ["key"]) step into list items and map
// values; ?. is read as ".". ok is false when the chain is not a
// variable's selection (a call's result, say).
func selectorBefore(expr []rune, i int) (root string, path []string, partial string, ok bool) {
	j := i
	for j > 0 && isIdentRune(expr[j-1]) {
		j--
	}
	partial = string(expr[j:i])
	var segs []string
	for j > 0 {
		k := j
		if expr[k-1] == '.' {
			k--
			if k > 0 && expr[k-1] == '?' {
				k--
			}
		} else {
			break
		}
		e := k
		if e > 0 && expr[e-1] == ']' {
			// An index: skip to its '['.
			depth := 0
			for e > 0 {
				e--
				if expr[e] == ']' {
					depth++
				} else if expr[e] == '[' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			segs = append(segs, "[]")
			k = e
		}
		s := k
		for s > 0 && isIdentRune(expr[s-1]) {
			s--
		}
		if s == k {
			return "", nil, partial, false
		}
		segs = append(segs, string(expr[s:k]))
		j = s
	}
	if len(segs) == 0 {
		return "", nil, partial, true
	}
	for l, r := 0, len(segs)-1; l < r; l, r = l+1, r-1 {
		segs[l], segs[r] = segs[r], segs[l]
	}
	// Read right to left, each "[]" was appended before the name it
	// follows: reversed, it is after it.
	fixed := segs
	if j > 0 && (expr[j-1] == '.' || expr[j-1] == ')') {
		return "", nil, partial, false
	}
	return fixed[0], fixed[1:], partial, true
}

// objectLiteralAt finds the Object{…} construction the cursor is inside
// at a field-name position: the type name's path ("Object.spec.template"
// → ["spec", "template"]), and the partial field name typed.
func objectLiteralAt(expr []rune, i int) (path []string, partial string, ok bool) {
	j := i
	for j > 0 && isIdentRune(expr[j-1]) {
		j--
	}
	partial = string(expr[j:i])
	k := j
	for k > 0 && (expr[k-1] == ' ' || expr[k-1] == '\t' || expr[k-1] == '\n') {
		k--
	}
	if k == 0 || (expr[k-1] != '{' && expr[k-1] != ',') {
		return nil, "", false
	}
	// The innermost unclosed brace before the cursor.
	depth := 0
	for p := k - 1; p >= 0; p-- {
		switch expr[p] {
		case '}', ']', ')':
			depth++
		case '[', '(':
			if depth == 0 {
				return nil, "", false
			}
			depth--
		case '{':
			if depth > 0 {
				depth--
				continue
			}
			e := p
			for e > 0 && expr[e-1] == ' ' {
				e--
			}
			s := e
			for s > 0 && (isIdentRune(expr[s-1]) || expr[s-1] == '.') {
				s--
			}
			name := string(expr[s:e])
			if name != "Object" && !strings.HasPrefix(name, "Object.") {
				return nil, "", false
			}
			segs := strings.Split(name, ".")[1:]
			return segs, partial, true
		}
	}
	return nil, "", false
}
