package costs

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/compiler"
)

// explainDrivers turns the size drivers (ExplainCost) into reasons and
// suggestions.
func explainDrivers(ds []SizeDriver, t *costTarget, paramsCRD *unstructured.Unstructured, paramKind string) []Driver {
	var out []Driver
	for _, d := range ds {
		path := renderPath(d.Path)
		if d.Path == nil {
			path = d.Source
		}
		dc := Driver{Path: path, Kind: d.Kind, Share: math.Round(d.Share*1000) / 1000, Uses: d.Uses}
		if !d.Unbounded() {
			b := d.Bound
			dc.Bound = &b
		}
		dc.Reason, dc.Suggestion = driverReason(d, t, paramsCRD, paramKind)
		out = append(out, dc)
	}
	return out
}

// limitKeyword is the schema keyword that bounds a value of kind.
func limitKeyword(kind string) string {
	switch kind {
	case "list":
		return "maxItems"
	case "map":
		return "maxProperties"
	case "string", "bytes":
		return "maxLength"
	}
	return "maxItems/maxProperties/maxLength"
}

func driverReason(d SizeDriver, t *costTarget, paramsCRD *unstructured.Unstructured, paramKind string) (string, string) {
	kw := limitKeyword(d.Kind)
	uses := ""
	if len(d.Uses) > 0 {
		uses = " (used by " + strings.Join(d.Uses, ", ") + ")"
	}
	if len(d.Path) == 0 {
		return fmt.Sprintf("%s%s is a computed value whose size kube-apiserver's cost model does not know", d.Source, uses),
			"keep the expression as it is (x.?f.orValue(d) is the safe idiom): the profile point (--gate profile, the default for built-in kinds) sizes it as the field it reads"
	}
	root, rest := d.Path[0], d.Path[1:]
	field := renderPath(d.Path)
	var crd *unstructured.Unstructured
	var what string
	switch root {
	case compiler.ObjectVar, compiler.OldObjectVar:
		crd, what = t.crd, "the target kind "+t.label
	case compiler.ParamsVar:
		crd, what = paramsCRD, "the paramKind "+paramKind
	case compiler.VariablesVar:
		return fmt.Sprintf("%s%s: the cost model does not carry the size of a variable into the expressions that use it (kube-apiserver's neither), so it is unbounded here", field, uses),
			fmt.Sprintf("do the size-dependent work inside variable %q, whose inputs the schema sizes, or bound those inputs", rest[0])
	default:
		return fmt.Sprintf("%s%s has no size limit: %s has no schema with %s", field, uses, root, kw),
			fmt.Sprintf("avoid iterating %s, or check its runtime cost on real requests (mutatis apply --explain)", field)
	}
	schemaPath := renderPath(append([]string{""}, rest...))[1:]
	if crd == nil && t.builtin && root != compiler.ParamsVar {
		bound := "nothing bounds it"
		if !d.Unbounded() {
			bound = fmt.Sprintf("kube-apiserver's estimator counts up to %d from the 3 MiB request limit", d.Bound)
		}
		return fmt.Sprintf("%s%s has no %s in the schema of the built-in kind %s: %s", field, uses, kw, t.label, bound),
			fmt.Sprintf("gate on the realistic profile (--gate auto or profile; size %s with --assume or --profile), or iterate a bounded input", schemaPath)
	}
	if crd == nil {
		return fmt.Sprintf("%s%s has no size limit: %s has no schema with maxItems, maxProperties or maxLength (built-in kinds carry none offline)", field, uses, what),
			"iterate a bounded input instead (e.g. a param whose CRD sets maxItems), or measure the runtime cost on real objects (mutatis apply --explain); the per-call limit still stops it at run time"
	}
	version := t.gvk.Version
	if root == compiler.ParamsVar {
		version = ""
	}
	declared, found := declaredLimit(crd, version, rest, kw)
	switch {
	case !found:
		return fmt.Sprintf("%s%s is not declared in the schema of %s, so nothing bounds it", field, uses, what),
			fmt.Sprintf("declare %s in the openAPIV3Schema of CRD %s with %s", schemaPath, crd.GetName(), kw)
	case declared < 0:
		bound := ""
		if !d.Unbounded() {
			bound = fmt.Sprintf(" (kube-apiserver then estimates it from the 3 MiB request limit: up to %d)", d.Bound)
		}
		return fmt.Sprintf("%s%s has no %s in the schema of %s%s", field, uses, kw, what, bound),
			fmt.Sprintf("add %s to %s in the openAPIV3Schema of CRD %s", kw, schemaPath, crd.GetName())
	default:
		return fmt.Sprintf("%s%s: %s %d lets the cost model count up to %d", field, uses, kw, declared, d.Bound),
			lowerSuggestion(kw, schemaPath, crd.GetName())
	}
}

func lowerSuggestion(kw, schemaPath, crd string) string {
	s := fmt.Sprintf("lower %s of %s in CRD %s", kw, schemaPath, crd)
	if kw == "maxItems" {
		s += ", or iterate the list once instead of in nested comprehensions"
	}
	return s
}

// declaredLimit walks a CRD version's openAPIV3Schema along path and
// returns the value of keyword at its end (-1 when not set); found is false
// when the path leaves the declared schema.
func declaredLimit(crd *unstructured.Unstructured, version string, path []string, keyword string) (int64, bool) {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var node map[string]any
	for _, v := range versions {
		vm, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if name, _ := vm["name"].(string); version == "" || name == version {
			node, _, _ = unstructured.NestedMap(vm, "schema", "openAPIV3Schema")
			if version == "" {
				if storage, _ := vm["storage"].(bool); !storage {
					continue
				}
			}
			break
		}
	}
	if node == nil {
		return -1, false
	}
	for _, name := range path {
		var next map[string]any
		switch name {
		case "@items":
			next, _ = node["items"].(map[string]any)
		case "@values":
			next, _ = node["additionalProperties"].(map[string]any)
		case "@keys":
			// A comprehension over a dynamically typed list binds its
			// elements; map keys have no schema of their own.
			next, _ = node["items"].(map[string]any)
			if next == nil {
				return -1, true
			}
		default:
			props, _ := node["properties"].(map[string]any)
			next, _ = props[name].(map[string]any)
		}
		if next == nil {
			return -1, false
		}
		node = next
	}
	for _, kw := range strings.Split(keyword, "/") {
		switch v := node[kw].(type) {
		case int64:
			return v, true
		case float64:
			return int64(v), true
		}
	}
	return -1, true
}

// renderPath shows a cost-checker path as a CEL-like field path:
// object.spec.items[*].name (elements, map keys and values alike).
func renderPath(path []string) string {
	var b strings.Builder
	for i, p := range path {
		switch p {
		case "@items", "@values", "@keys":
			b.WriteString("[*]")
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		}
	}
	return b.String()
}
