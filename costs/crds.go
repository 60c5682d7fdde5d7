package costs

import (
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/costs/internal/kindschema"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
)

// CRDIndex holds the CustomResourceDefinitions found among loaded objects:
// their schemas, the kind each served resource version has, and the CRD
// object serving each kind.
type CRDIndex struct {
	schemas *applyconfig.Schemas
	kinds   map[schema.GroupVersionResource]schema.GroupVersionKind
	objects map[schema.GroupVersionKind]*unstructured.Unstructured
	// table resolves built-in resources to their kinds; builtins caches
	// their declaration types (nil: no schema), built from definitions,
	// read on first use.
	table       *matching.Table
	builtins    map[schema.GroupVersionKind]*apiservercel.DeclType
	definitions *kindschema.Definitions
}

// IndexCRDs registers every CustomResourceDefinition among objects; CRDs
// that cannot be registered are returned as problems.
func IndexCRDs(objects []manifest.Object) (*CRDIndex, manifest.ErrorList) {
	ix := &CRDIndex{
		schemas:  applyconfig.NewSchemas(),
		kinds:    map[schema.GroupVersionResource]schema.GroupVersionKind{},
		objects:  map[schema.GroupVersionKind]*unstructured.Unstructured{},
		table:    matching.DefaultTable(),
		builtins: map[schema.GroupVersionKind]*apiservercel.DeclType{},
	}
	var problems manifest.ErrorList
	for _, o := range objects {
		if o.Object.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if err := ix.schemas.AddCRD(o.Object); err != nil {
			problems = append(problems, &manifest.Error{Source: o.Source, Kind: o.Object.GetKind(), Name: o.Object.GetName(), Err: err})
			continue
		}
		for _, v := range manifest.CRDVersions(o.Object) {
			ix.kinds[v.Resource] = v.Kind
			ix.objects[v.Kind] = o.Object
		}
	}
	return ix, problems
}

// resources returns the served resources, sorted for a stable report.
func (ix *CRDIndex) resources() []schema.GroupVersionResource {
	out := make([]schema.GroupVersionResource, 0, len(ix.kinds))
	for gvr := range ix.kinds {
		out = append(out, gvr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// policyTargets lists the kinds p's matchConstraints can select: each
// loaded CRD kind its resource rules name (wildcards included), each
// built-in kind a rule without wildcards names (with its OpenAPI schema,
// costs/internal/kindschema), and one schema-less target for
// everything else (wildcards over built-in resources, CRDs not loaded).
func policyTargets(p *admissionregistrationv1.MutatingAdmissionPolicy, crds *CRDIndex) []*costTarget {
	var out []*costTarget
	seen := map[schema.GroupVersionKind]bool{}
	var others []string
	otherSeen := map[string]bool{}
	other := func(label string) {
		if !otherSeen[label] {
			otherSeen[label] = true
			others = append(others, label)
		}
	}
	if mc := p.Spec.MatchConstraints; mc != nil {
		for _, r := range mc.ResourceRules {
			for _, g := range r.APIGroups {
				for _, v := range r.APIVersions {
					for _, res := range r.Resources {
						plural, sub, _ := strings.Cut(res, "/")
						matched := false
						for _, gvr := range crds.resources() {
							if (g == "*" || g == gvr.Group) && (v == "*" || v == gvr.Version) && (plural == "*" || plural == gvr.Resource) {
								matched = true
								gvk := crds.kinds[gvr]
								if seen[gvk] {
									continue
								}
								seen[gvk] = true
								t := &costTarget{label: gvk.Kind + " " + gvk.GroupVersion().String(), crd: crds.objects[gvk], gvk: gvk}
								if dt, err := crds.schemas.DeclType(gvk); err == nil {
									t.decl = dt
								}
								out = append(out, t)
							}
						}
						label := res
						if g != "" {
							label += "." + g
						}
						if g == "*" || v == "*" || strings.Contains(res, "*") {
							other(label)
							continue
						}
						if matched {
							continue
						}
						gvk := crds.table.KindFor(schema.GroupVersionResource{Group: g, Version: v, Resource: plural}, sub)
						if gvk.Empty() {
							other(label)
							continue
						}
						if seen[gvk] {
							continue
						}
						seen[gvk] = true
						decl := crds.builtinDecl(gvk)
						if decl == nil {
							other(label)
							continue
						}
						out = append(out, &costTarget{label: gvk.Kind + " " + gvk.GroupVersion().String(), decl: decl, gvk: gvk, builtin: true})
					}
				}
			}
		}
	}
	if len(others) > 0 || len(out) == 0 {
		label := strings.Join(others, ", ")
		if label == "" {
			label = "any"
		}
		out = append(out, &costTarget{label: label + " (no schema)"})
	}
	return out
}

// builtinDecl returns the declaration type of a built-in kind (cached),
// nil when it has none.
func (ix *CRDIndex) builtinDecl(gvk schema.GroupVersionKind) *apiservercel.DeclType {
	if d, ok := ix.builtins[gvk]; ok {
		return d
	}
	if ix.definitions == nil {
		// The embedded definitions are held to their generator by
		// kindschema's tests: they always parse.
		ix.definitions, _ = kindschema.Builtin()
	}
	d := builtinDeclType(ix.definitions, gvk)
	ix.builtins[gvk] = d
	return d
}

// paramsDecl returns the declaration type of a paramKind: a loaded CRD's,
// or a built-in kind's (e.g. a ConfigMap), and the CRD serving it.
func (ix *CRDIndex) paramsDecl(gvk schema.GroupVersionKind) (*apiservercel.DeclType, *unstructured.Unstructured) {
	if crd, ok := ix.objects[gvk]; ok {
		if dt, err := ix.schemas.DeclType(gvk); err == nil {
			return dt, crd
		}
		return nil, nil
	}
	return ix.builtinDecl(gvk), nil
}

// TargetDeclType returns the schema type of the kind p targets when it
// targets exactly one custom resource kind whose CRD ix holds; nil
// otherwise (no single schema bounds the estimate).
func (ix *CRDIndex) TargetDeclType(p *admissionregistrationv1.MutatingAdmissionPolicy) *apiservercel.DeclType {
	if p.Spec.MatchConstraints == nil {
		return nil
	}
	var found *apiservercel.DeclType
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					gvk, ok := ix.kinds[schema.GroupVersionResource{Group: g, Version: v, Resource: strings.Split(res, "/")[0]}]
					if !ok {
						continue
					}
					dt, err := ix.schemas.DeclType(gvk)
					if err != nil {
						continue
					}
					if found != nil && found != dt {
						return nil // several kinds: no single schema bounds the estimate
					}
					found = dt
				}
			}
		}
	}
	return found
}
